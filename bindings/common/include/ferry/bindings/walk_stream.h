// WalkStream: a filesystem walk as a stream of records.proto WalkBatch
// bytes that a binding pulls (Python's iterator, Java's Stream<Entry>):
// the "callback -> pull" bridge every binding needs once.
//
//   FERRY_ASSIGN_OR_RETURN(auto stream, WalkStream::Start(runtime, fs, root, options));
//   while (true) {                                    // binding: lock released
//     absl::StatusOr<std::optional<std::string>> bytes = stream->Next();
//     if (!bytes.ok()) Raise(bytes.status());         // after the batches before it
//     if (!bytes->has_value()) break;                 // the end
//     Deliver(**bytes);                               // decode in the language
//   }
//
// The walk runs on one of the Runtime's blocking threads. Its callback
// serializes each batch (ferry::records::SerializeWalkBatch) and queues the
// bytes; while `max_queued` are waiting it blocks, and since a walk lists
// nothing new while its callback is behind, the walk pauses with the
// consumer (bounded memory). One batch is held back so the final one can
// carry `last`. Close() (also the destructor) stops the walk and waits for
// its task, so nothing runs once it returns.
//
// Thread-safety: Next and Close may be called from any one consumer
// thread; the walk task is internal. REQUIRES: the Runtime and the
// filesystem outlive the stream.
#ifndef FERRY_BINDINGS_WALK_STREAM_H_
#define FERRY_BINDINGS_WALK_STREAM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/fs/file_system.h"

namespace ferry {
class Runtime;
}  // namespace ferry

namespace ferry::bindings {

class WalkStream {
 public:
  struct Options {
    fs::WalkOptions walk;
    // Serialized batches waiting for the consumer before the walk pauses.
    // Two keep the walker busy while the consumer decodes one.
    size_t max_queued = 2;
    uint64_t walk_id = 0;  // copied into every batch
  };

  // Starts walking `root` of `fs`. The walk's own errors (a missing root)
  // come from Next, after any batches before them.
  static std::unique_ptr<WalkStream> Start(Runtime& runtime, std::shared_ptr<fs::FileSystem> fs,
                                           std::string root, Options options);
  ~WalkStream();
  WalkStream(const WalkStream&) = delete;
  WalkStream& operator=(const WalkStream&) = delete;

  // The next batch's bytes; nullopt at the end; the walk's error once the
  // batches before it are delivered. Blocks until one is ready.
  absl::StatusOr<std::optional<std::string>> Next();

  // The walk's figures once Next returned nullopt (nullopt before).
  std::optional<fs::WalkStats> stats() const;

  // Stops the walk and waits for its task. Idempotent.
  void Close();

  struct Channel;

 private:
  explicit WalkStream(std::shared_ptr<Channel> channel);
  std::shared_ptr<Channel> channel_;
};

}  // namespace ferry::bindings

#endif  // FERRY_BINDINGS_WALK_STREAM_H_
