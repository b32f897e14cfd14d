// RpcPool metrics: counters and round-trip histograms, as a snapshot.
//
// RpcPool keeps these figures per connection and per pool and hands out a
// copy on request; reading them never blocks calls for long (one short lock).
//
//   ferry::RpcPoolMetrics m = pool->metrics();
//   std::printf("%llu calls, p50 %s p99 %s, %llu reconnects\n",
//               (unsigned long long)m.calls_succeeded,
//               absl::FormatDuration(m.round_trip.Percentile(0.5)).c_str(),
//               absl::FormatDuration(m.round_trip.Percentile(0.99)).c_str(),
//               (unsigned long long)m.reconnects);
#ifndef FERRY_RPC_RPC_METRICS_H_
#define FERRY_RPC_RPC_METRICS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace ferry {

// A histogram of durations in log2 buckets of microseconds: bucket 0 holds
// durations under 1 us, bucket i (i >= 1) holds [2^(i-1), 2^i) us, and the
// last bucket everything longer. Coarse (a factor of two), but recording is a
// few instructions and the p50/p99 it gives are what a transfer engine needs
// to see (is it 100 us or 10 ms?). A plain value type; not thread-safe.
struct RpcHistogram {
  // 2^38 us is about 3 days: nothing an RPC waits for is longer.
  static constexpr int kBuckets = 40;

  std::array<uint64_t, kBuckets> buckets{};
  uint64_t count = 0;
  // Sum of the recorded durations, in microseconds (for the mean).
  uint64_t sum_micros = 0;

  // Adds one duration (negative counts as zero).
  void Record(absl::Duration d);
  // Adds every sample of `other`.
  void Merge(const RpcHistogram& other);
  // An upper bound of the `q`-quantile (0 <= q <= 1): the upper edge of the
  // bucket holding it. ZeroDuration when empty.
  absl::Duration Percentile(double q) const;
  absl::Duration p50() const { return Percentile(0.5); }
  absl::Duration p99() const { return Percentile(0.99); }
  absl::Duration Mean() const;
};

// One connection's figures.
struct RpcConnectionMetrics {
  int index = 0;
  // "idle" (not opened yet: RpcPoolOptions::connections_at_start),
  // "connecting", "handshaking", "ready", "backoff" or "closed".
  std::string state;
  uint64_t calls_sent = 0;       // call records written (retries included)
  uint64_t replies = 0;          // replies matched to a live call
  uint64_t in_flight = 0;        // calls assigned to it and not yet completed
  uint64_t bytes_sent = 0;       // framed bytes written
  uint64_t bytes_received = 0;   // bytes read
  uint64_t reconnects = 0;       // connections re-established after the first
  uint64_t failures = 0;         // failed connects, failed handshakes, lost connections
  RpcHistogram round_trip;       // write of the call to arrival of its reply
};

// The pool's figures; sums over connections where that makes sense.
struct RpcPoolMetrics {
  uint64_t calls_started = 0;        // accepted by CallAsync/Call/CallBlocking
  uint64_t calls_succeeded = 0;
  uint64_t calls_failed = 0;         // completed with any error (all below included)
  uint64_t calls_cancelled = 0;      // Cancel() or pool destruction
  uint64_t calls_timed_out = 0;      // DeadlineExceeded
  uint64_t calls_rejected = 0;       // ResourceExhausted by back-pressure
  uint64_t retries = 0;              // idempotent calls re-sent after a lost connection
  uint64_t resent_after_timeout = 0; // idempotent calls re-sent once when unanswered past their deadline
  uint64_t reconnects = 0;
  uint64_t connection_failures = 0;
  uint64_t in_flight = 0;            // written or assigned to a connection
  uint64_t queued = 0;               // waiting for a connection slot
  uint64_t queued_bytes = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  // Replies whose bulk the reader placed into the caller's buffer
  // (RpcReplyPlacer), and the bytes so placed, counted when a placement
  // begins (one voided by a lost connection and made again counts twice).
  uint64_t replies_placed = 0;
  uint64_t bytes_placed = 0;
  // Of the bytes placed in a file, those taken from the socket by splice
  // rather than read (none for a reply whose placed bytes came with its
  // header, nor for a range's last 64 KiB or less); they count even if
  // the file's write then failed, or went through memory for a file that
  // takes no splice.
  uint64_t bytes_spliced = 0;
  // Calls written by the calling thread itself, their connection being
  // idle (no hand-off to the I/O thread; see RpcPool's class comment).
  uint64_t sent_by_caller = 0;
  RpcHistogram queue_time;           // call accepted to call written
  RpcHistogram round_trip;           // call written to reply read
  std::vector<RpcConnectionMetrics> connections;
};

}  // namespace ferry

#endif  // FERRY_RPC_RPC_METRICS_H_
