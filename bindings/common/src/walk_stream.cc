#include "ferry/bindings/walk_stream.h"

#include <deque>
#include <utility>

#include "ferry/base/mutex.h"
#include "ferry/records/fs_records.h"
#include "ferry/runtime/runtime.h"

namespace ferry::bindings {

// Shared by the stream (consumer) and the walk task (producer). Thread-safe.
struct WalkStream::Channel {
  explicit Channel(size_t max_queued) : max_queued(std::max<size_t>(max_queued, 1)) {}

  // Producer: queues `bytes`, waiting while the queue is full. False once
  // the consumer closed (the walk should stop).
  bool Push(std::string bytes) {
    MutexLock l(&mu);
    while (!closed && queue.size() >= max_queued) cv.Wait(&mu);
    if (closed) return false;
    queue.push_back(std::move(bytes));
    cv.SignalAll();
    return true;
  }
  bool IsClosed() {
    MutexLock l(&mu);
    return closed;
  }
  // Producer, its last touch.
  void Finish(absl::Status s, std::optional<fs::WalkStats> st) {
    MutexLock l(&mu);
    status = std::move(s);
    walk_stats = st;
    finished = true;
    cv.SignalAll();
  }

  const size_t max_queued;
  Mutex mu;
  CondVar cv;
  std::deque<std::string> queue ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;
  bool finished ABSL_GUARDED_BY(mu) = false;
  bool status_reported ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::optional<fs::WalkStats> walk_stats ABSL_GUARDED_BY(mu);
};

namespace {

// Runs the walk; if destroyed unrun (a Runtime shutting down dropped it),
// still finishes the channel, so the consumer never waits forever.
class WalkTask {
 public:
  WalkTask(std::shared_ptr<WalkStream::Channel> channel, std::shared_ptr<fs::FileSystem> fs,
           std::string root, WalkStream::Options options)
      : channel_(std::move(channel)),
        fs_(std::move(fs)),
        root_(std::move(root)),
        options_(std::move(options)) {}
  WalkTask(WalkTask&&) noexcept = default;
  WalkTask(const WalkTask&) = delete;
  WalkTask& operator=(const WalkTask&) = delete;
  ~WalkTask() {
    fs_.reset();  // before Finish: see operator()
    if (channel_ != nullptr) {
      channel_->Finish(absl::CancelledError("walk: the Runtime dropped the walk"), std::nullopt);
    }
  }

  void operator()() {
    std::shared_ptr<WalkStream::Channel> channel = std::move(channel_);
    records::WalkBatchContext context{.walk_id = options_.walk_id};
    std::optional<fs::WalkBatch> held;  // sent once the next one (or the end) is known
    auto send_held = [&](bool last) {
      context.last = last;
      const bool more = channel->Push(records::SerializeWalkBatch(*held, context));
      ++context.sequence;
      held.reset();
      return more;
    };
    absl::StatusOr<fs::WalkStats> stats =
        fs_->Walk(root_, options_.walk, [&](fs::WalkBatch& batch) {
          if (held.has_value() && !send_held(false)) return false;
          held = std::move(batch);
          return !channel->IsClosed();
        });
    if (stats.ok() && !stats->stopped_early) {
      if (!held.has_value()) held.emplace();  // an empty tree: one empty, last batch
      send_held(true);
    } else if (!stats.ok() && held.has_value()) {
      send_held(false);  // what was read before the error
    }
    // Let go of the filesystem before the consumer can see the end: once
    // it has, it may drop its own references and then the Runtime, and the
    // last reference must never be this pool thread's (destroying an NFS
    // client waits for the Runtime's I/O threads, which are stopping).
    fs_.reset();
    channel->Finish(stats.status(),
                    stats.ok() ? std::optional<fs::WalkStats>(*stats) : std::nullopt);
  }

 private:
  std::shared_ptr<WalkStream::Channel> channel_;
  std::shared_ptr<fs::FileSystem> fs_;
  std::string root_;
  WalkStream::Options options_;
};

}  // namespace

std::unique_ptr<WalkStream> WalkStream::Start(Runtime& runtime,
                                              std::shared_ptr<fs::FileSystem> fs,
                                              std::string root, Options options) {
  auto channel = std::make_shared<Channel>(options.max_queued);
  runtime.PostBlocking(WalkTask(channel, std::move(fs), std::move(root), std::move(options)));
  return std::unique_ptr<WalkStream>(new WalkStream(std::move(channel)));
}

WalkStream::WalkStream(std::shared_ptr<Channel> channel) : channel_(std::move(channel)) {}

WalkStream::~WalkStream() { Close(); }

absl::StatusOr<std::optional<std::string>> WalkStream::Next() {
  Channel& c = *channel_;
  MutexLock l(&c.mu);
  while (c.queue.empty() && !c.finished && !c.closed) c.cv.Wait(&c.mu);
  if (!c.queue.empty()) {
    std::string bytes = std::move(c.queue.front());
    c.queue.pop_front();
    c.cv.SignalAll();
    return std::optional<std::string>(std::move(bytes));
  }
  if (!c.status_reported && c.finished) {
    c.status_reported = true;
    if (!c.status.ok()) return c.status;
  }
  return std::optional<std::string>();
}

std::optional<fs::WalkStats> WalkStream::stats() const {
  MutexLock l(&channel_->mu);
  return channel_->walk_stats;
}

void WalkStream::Close() {
  Channel& c = *channel_;
  MutexLock l(&c.mu);
  c.closed = true;
  c.queue.clear();
  c.cv.SignalAll();
  while (!c.finished) c.cv.Wait(&c.mu);
}

}  // namespace ferry::bindings
