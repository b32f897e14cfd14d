#include "ferry/rpc/rpc_pool.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "rpc/rpc_pool_core.h"

namespace ferry {
namespace {

using rpc_pool_internal::PoolCore;

absl::Status ValidateOptions(const RpcPoolOptions& o) {
  auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("RpcPool for ", o.host, ":", o.port, ": ", ToAbsl(what)));
  };
  if (o.host.empty()) return bad("host is empty");
  if (o.port == 0) return bad("port is 0");
  if (o.framing == nullptr) return bad("no framing given");
  if (o.connections < 1) return bad(absl::StrCat("connections is ", o.connections, "; need at least 1"));
  if (o.matching == RpcReplyMatching::kById && o.max_in_flight_per_connection < 1) {
    return bad(absl::StrCat("max_in_flight_per_connection is ", o.max_in_flight_per_connection));
  }
  if (o.max_queued_calls < 1) return bad("max_queued_calls is 0");
  if (o.max_connect_attempts < 1) return bad("max_connect_attempts must be at least 1");
  if (o.max_attempts < 1) return bad("max_attempts must be at least 1");
  if (o.read_buffer_bytes < 1) return bad("read_buffer_bytes is 0");
  if (o.connect_timeout <= absl::ZeroDuration()) return bad("connect_timeout must be positive");
  if (o.initial_backoff < absl::ZeroDuration() || o.max_backoff < o.initial_backoff) {
    return bad("need 0 <= initial_backoff <= max_backoff");
  }
  return absl::OkStatus();
}

}  // namespace

struct RpcPool::Impl {
  Impl(Runtime& runtime, RpcPoolOptions options) : core(runtime, std::move(options)) {}
  PoolCore core;
};

absl::StatusOr<std::unique_ptr<RpcPool>> RpcPool::Create(Runtime& runtime, RpcPoolOptions options) {
  FERRY_RETURN_IF_ERROR(ValidateOptions(options));
  auto impl = std::make_unique<Impl>(runtime, std::move(options));
  impl->core.Start();
  return std::unique_ptr<RpcPool>(new RpcPool(std::move(impl)));
}

RpcPool::RpcPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcPool::~RpcPool() { impl_->core.Shutdown(); }

RpcCallId RpcPool::CallAsync(std::string request, Callback<std::string> done, const RpcCallOptions& options) {
  return impl_->core.Submit(std::move(request), std::move(done), options, /*blocking_caller=*/false);
}

Future<std::string> RpcPool::Call(std::string request, const RpcCallOptions& options, RpcCallId* id) {
  Promise<std::string> p;
  Future<std::string> f = p.GetFuture();
  const RpcCallId i = impl_->core.Submit(
      std::move(request), std::move(p).AsCallback(),
      options, /*blocking_caller=*/false);
  if (id != nullptr) *id = i;
  return f;
}

absl::StatusOr<std::string> RpcPool::CallBlocking(std::string request, const RpcCallOptions& options) {
  return BlockOn<std::string>([&](Callback<std::string> done) {
    impl_->core.Submit(std::move(request), std::move(done), options, /*blocking_caller=*/true);
  });
}

bool RpcPool::Cancel(RpcCallId id) { return impl_->core.Cancel(id); }

absl::Status RpcPool::WaitUntilReady(int connections, absl::Time deadline) {
  return impl_->core.WaitUntilReady(connections, deadline);
}

RpcPoolMetrics RpcPool::metrics() const { return impl_->core.Metrics(); }

const std::string& RpcPool::target() const { return impl_->core.target(); }

}  // namespace ferry
