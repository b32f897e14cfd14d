// io.ferry.Walk: a bindings::WalkStream pulled by a Java Spliterator, one
// records.proto WalkBatch (serialized) per call, decoded in Java.
#include <memory>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "ferry/bindings/walk_stream.h"
#include "file_systems.h"
#include "portal.h"

namespace ferry::java {
namespace {

struct NativeWalk {
  // Declared first, destroyed last: the stream's walk runs on its filesystem.
  FileSystemsHandle fs;
  std::unique_ptr<ferry::bindings::WalkStream> stream;
};

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_io_ferry_Walk_start(JNIEnv* env, jclass, jlong file_systems, jstring url,
                                                 jint batch_entries, jint max_in_flight) {
  FileSystemsHandle fs = *FromHandle<FileSystemsHandle>(file_systems);
  absl::StatusOr<ferry::fs::Location> where = fs->registry->Resolve(ToStd(env, url));
  if (!OkOrThrow(env, where)) return 0;
  ferry::bindings::WalkStream::Options o;
  o.walk.batch_entries = static_cast<size_t>(batch_entries);
  // Full batches only: each costs a JNI crossing, a byte[] and a decode.
  o.walk.min_batch_entries = o.walk.batch_entries;
  o.walk.max_in_flight = max_in_flight;
  o.walk.max_queued_batches = static_cast<int>(o.max_queued);
  o.walk_id = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  auto walk = std::make_unique<NativeWalk>();
  walk->stream = ferry::bindings::WalkStream::Start(*fs->runtime, where->fs, where->path, std::move(o));
  walk->fs = std::move(fs);
  return ToHandle(walk.release());
}

// The next batch's bytes, null at the end; the walk's error (mapped) once
// the batches before it were delivered.
JNIEXPORT jbyteArray JNICALL Java_io_ferry_Walk_next(JNIEnv* env, jclass, jlong handle) {
  absl::StatusOr<std::optional<std::string>> bytes = FromHandle<NativeWalk>(handle)->stream->Next();
  if (!OkOrThrow(env, bytes)) return nullptr;
  if (!bytes->has_value()) return nullptr;
  return ferry::java::ToJavaBytes(env, **bytes);
}

// Stops the walk, waits for its task, frees it.
JNIEXPORT void JNICALL Java_io_ferry_Walk_dispose(JNIEnv*, jclass, jlong handle) {
  std::unique_ptr<NativeWalk> walk(FromHandle<NativeWalk>(handle));
  walk->stream->Close();
}

}  // extern "C"

}  // namespace ferry::java
