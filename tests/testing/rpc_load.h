// A closed-loop load driver for RpcPool, shared by the integration tests and
// the rpc benchmark: it keeps `depth` copies of one request in flight (each
// completion starts the next call) until a call count or a duration is
// reached, then waits for the calls in flight to end.
//
//   ferry::peers::RpcLoad load{.request = null_call, .depth = 64,
//                              .max_calls = 20000};
//   ferry::peers::RpcLoadResult r = ferry::peers::RunClosedLoop(*pool, load);
//   EXPECT_EQ(r.succeeded, 20000) << r.first_error;
//
// Header-only: the bench programs link only ferry::core.
#ifndef FERRY_TESTING_RPC_LOAD_H_
#define FERRY_TESTING_RPC_LOAD_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/rpc/rpc_pool.h"

namespace ferry::peers {

struct RpcLoad {
  // Sent as is for every call (the pool stamps the id).
  std::string request;
  // Calls kept in flight.
  int depth = 1;
  // Stop starting calls after this many, or once `duration` has passed,
  // whichever comes first.
  int64_t max_calls = std::numeric_limits<int64_t>::max();
  absl::Duration duration = absl::InfiniteDuration();
  RpcCallOptions call_options;
  // Judges each reply record (e.g. ferry::DecodeReply); a non-OK result
  // counts the call as failed. Called on I/O threads, concurrently: must be
  // thread-safe. Null: any reply is a success.
  std::function<absl::Status(const std::string&)> check_reply;
};

struct RpcLoadResult {
  int64_t started = 0;
  int64_t succeeded = 0;
  int64_t failed = 0;
  // The first error seen (OK if none).
  absl::Status first_error;
  // From the first call started to the last one ended.
  absl::Duration elapsed;
};

namespace rpc_load_internal {

// Shared by the driver and every callback, so the last callback may still
// touch it (unlocking) after the driver has woken and returned.
struct LoopState {
  RpcPool* pool;
  const RpcLoad* load;
  absl::Time stop_at;
  Mutex mu;
  CondVar all_done;
  int64_t started ABSL_GUARDED_BY(mu) = 0;
  int64_t ended ABSL_GUARDED_BY(mu) = 0;
  int64_t succeeded ABSL_GUARDED_BY(mu) = 0;
  absl::Status first_error ABSL_GUARDED_BY(mu);

  // Claims the next call, if the limits allow one more.
  bool ClaimNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (started >= load->max_calls || MonotonicNow() >= stop_at) return false;
    ++started;
    return true;
  }
};

inline void StartCall(std::shared_ptr<LoopState> state) {
  RpcPool* pool = state->pool;
  const RpcLoad* load = state->load;
  pool->CallAsync(
      load->request,
      [state = std::move(state)](absl::StatusOr<std::string> reply) mutable {
        absl::Status status = reply.status();
        if (status.ok() && state->load->check_reply) status = state->load->check_reply(*reply);
        bool next = false;
        {
          MutexLock l(&state->mu);
          ++state->ended;
          if (status.ok()) {
            ++state->succeeded;
          } else if (state->first_error.ok()) {
            state->first_error = status;
          }
          next = state->ClaimNext();
          if (!next && state->ended == state->started) state->all_done.SignalAll();
        }
        if (next) StartCall(std::move(state));
      },
      load->call_options);
}

}  // namespace rpc_load_internal

// Runs `load` on `pool` and blocks until every call it started has ended.
// REQUIRES: not on an I/O thread of the pool's Runtime; load.depth >= 1.
inline RpcLoadResult RunClosedLoop(RpcPool& pool, const RpcLoad& load) {
  auto state = std::make_shared<rpc_load_internal::LoopState>();
  state->pool = &pool;
  state->load = &load;
  const absl::Time start = MonotonicNow();
  state->stop_at = start + load.duration;
  int initial = 0;
  {
    MutexLock l(&state->mu);
    while (initial < load.depth && state->ClaimNext()) ++initial;
  }
  for (int i = 0; i < initial; ++i) rpc_load_internal::StartCall(state);
  RpcLoadResult result;
  MutexLock l(&state->mu);
  while (state->ended != state->started) state->all_done.Wait(&state->mu);
  result.elapsed = MonotonicNow() - start;
  result.started = state->started;
  result.succeeded = state->succeeded;
  result.failed = state->ended - state->succeeded;
  result.first_error = state->first_error;
  return result;
}

}  // namespace ferry::peers

#endif  // FERRY_TESTING_RPC_LOAD_H_
