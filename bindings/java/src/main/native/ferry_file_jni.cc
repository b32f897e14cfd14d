// io.ferry.FerryFile: one descriptor of its FileSystems' fs::FileTable.
// The offset lives in the table; a direct ByteBuffer is read into and
// written from in place, a heap array through one bounded native copy
// (a critical region would stop the GC for a network round trip).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/types/span.h"
#include "file_systems.h"
#include "portal.h"

namespace ferry::java {
namespace {

// Bytes of a heap array moved per call: bounds the native copy.
constexpr jint kHeapChunk = 8 << 20;

struct NativeFile {
  FileSystemsHandle fs;  // the table, its filesystems and Runtime
  int fd;
};

NativeFile& Get(jlong handle) { return *FromHandle<NativeFile>(handle); }

// The file's Read / Write at its offset: the bytes moved, or 0 with the
// Java exception pending.
jint ReadInto(JNIEnv* env, jlong handle, absl::Span<char> into) {
  NativeFile& f = Get(handle);
  absl::StatusOr<size_t> n = f.fs->files.Read(f.fd, into);
  return OkOrThrow(env, n) ? static_cast<jint>(*n) : 0;
}

jint WriteFrom(JNIEnv* env, jlong handle, absl::Span<const char> from) {
  NativeFile& f = Get(handle);
  absl::StatusOr<size_t> n = f.fs->files.Write(f.fd, from);
  return OkOrThrow(env, n) ? static_cast<jint>(*n) : 0;
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_io_ferry_FerryFile_open(JNIEnv* env, jclass, jlong file_systems,
                                                     jstring url, jboolean write, jlong size) {
  FileSystemsHandle fs = *FromHandle<FileSystemsHandle>(file_systems);
  absl::StatusOr<ferry::fs::Location> where = fs->registry->Resolve(ToStd(env, url));
  if (!OkOrThrow(env, where)) return 0;
  absl::StatusOr<int> fd =
      fs->files.Open(*where->fs, where->path, write ? ferry::OpenMode::kWrite : ferry::OpenMode::kRead,
                     {.size = size});
  if (!OkOrThrow(env, fd)) return 0;
  return ToHandle(new NativeFile{std::move(fs), *fd});
}

JNIEXPORT jint JNICALL Java_io_ferry_FerryFile_readDirect(JNIEnv* env, jclass, jlong handle,
                                                          jobject buffer, jint offset, jint length) {
  char* base = static_cast<char*>(env->GetDirectBufferAddress(buffer));
  return ReadInto(env, handle, absl::MakeSpan(base + offset, static_cast<size_t>(length)));
}

JNIEXPORT jint JNICALL Java_io_ferry_FerryFile_readArray(JNIEnv* env, jclass, jlong handle,
                                                         jbyteArray array, jint offset, jint length) {
  const jint want = std::min(length, kHeapChunk);
  std::unique_ptr<char[]> buf(new char[static_cast<size_t>(want)]);
  const jint n = ReadInto(env, handle, absl::MakeSpan(buf.get(), static_cast<size_t>(want)));
  if (n > 0) env->SetByteArrayRegion(array, offset, n, reinterpret_cast<jbyte*>(buf.get()));
  return n;
}

JNIEXPORT jint JNICALL Java_io_ferry_FerryFile_writeDirect(JNIEnv* env, jclass, jlong handle,
                                                           jobject buffer, jint offset, jint length) {
  const char* base = static_cast<const char*>(env->GetDirectBufferAddress(buffer));
  return WriteFrom(env, handle, absl::MakeConstSpan(base + offset, static_cast<size_t>(length)));
}

JNIEXPORT jint JNICALL Java_io_ferry_FerryFile_writeArray(JNIEnv* env, jclass, jlong handle,
                                                          jbyteArray array, jint offset, jint length) {
  const jint take = std::min(length, kHeapChunk);
  std::unique_ptr<char[]> buf(new char[static_cast<size_t>(take)]);
  env->GetByteArrayRegion(array, offset, take, reinterpret_cast<jbyte*>(buf.get()));
  if (env->ExceptionCheck()) return 0;
  return WriteFrom(env, handle, absl::MakeConstSpan(buf.get(), static_cast<size_t>(take)));
}

JNIEXPORT jlong JNICALL Java_io_ferry_FerryFile_seek(JNIEnv* env, jclass, jlong handle, jlong offset,
                                                     jboolean from_current) {
  NativeFile& f = Get(handle);
  absl::StatusOr<int64_t> pos = f.fs->files.Lseek(f.fd, offset, from_current ? SEEK_CUR : SEEK_SET);
  return OkOrThrow(env, pos) ? static_cast<jlong>(*pos) : 0;
}

JNIEXPORT jlong JNICALL Java_io_ferry_FerryFile_size(JNIEnv* env, jclass, jlong handle) {
  NativeFile& f = Get(handle);
  absl::StatusOr<int64_t> size = f.fs->files.Size(f.fd);
  return OkOrThrow(env, size) ? static_cast<jlong>(*size) : 0;
}

JNIEXPORT void JNICALL Java_io_ferry_FerryFile_close(JNIEnv* env, jclass, jlong handle) {
  std::unique_ptr<NativeFile> f(FromHandle<NativeFile>(handle));
  absl::Status s = f->fs->files.Close(f->fd);
  f.reset();  // may be the last reference to the FileSystems
  if (!s.ok()) ThrowStatus(env, s);
}

JNIEXPORT void JNICALL Java_io_ferry_FerryFile_discard(JNIEnv*, jclass, jlong handle) {
  std::unique_ptr<NativeFile> f(FromHandle<NativeFile>(handle));
  // The Cleaner's path: nobody is left to hear a failed clean-up.
  (void)f->fs->files.Discard(f->fd);
}

}  // extern "C"

}  // namespace ferry::java
