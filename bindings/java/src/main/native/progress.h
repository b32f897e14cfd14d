// JavaProgress: an io.ferry.ProgressListener as a ferry::ProgressCallback.
//
// The copy engine calls its callback on the thread that called the copy
// (transfer_stats.h), here the Java thread inside the JNI call; a thread
// that is not attached (should the core ever report from its own pool) is
// attached as a daemon (AttachedEnv: detached when it exits). Each call runs in its own local frame,
// so a long copy's reports leak no local reference. A Throwable from the
// listener stops the copy (the callback returns Cancelled) and is kept,
// to be rethrown unchanged -- the same object -- once the copy returned.
// With or without a listener, an interrupted calling thread
// (Thread.interrupt()) stops the copy at its next report, and the copy
// throws java.io.InterruptedIOException with the flag left set.
//
//   JavaProgress progress(env, listener);   // listener may be null
//   auto stats = ferry::CopyFile(..., {.progress = progress.Callback()});
//   if (progress.RethrowIfThrown(env)) return nullptr;
//
// Thread-compatible: one copy, one caller.
#ifndef FERRY_JAVA_PROGRESS_H_
#define FERRY_JAVA_PROGRESS_H_

#include <jni.h>

#include "absl/status/status.h"
#include "ferry/transfer/transfer_stats.h"

namespace ferry::java {

class JavaProgress {
 public:
  // REQUIRES: `env` is the calling thread's; `listener` null or a
  // ProgressListener. A pending Java exception if the method lookup fails.
  JavaProgress(JNIEnv* env, jobject listener);
  JavaProgress(const JavaProgress&) = delete;
  JavaProgress& operator=(const JavaProgress&) = delete;
  ~JavaProgress();  // REQUIRES: on the constructing thread

  // Checks the thread's interrupt flag, then calls the listener (if any).
  // REQUIRES: *this outlives the copy.
  ProgressCallback Callback();

  // Throws what the listener threw, or InterruptedIOException if the
  // thread was interrupted; true then.
  bool RethrowIfThrown(JNIEnv* env);

 private:
  absl::Status Call(const TransferProgress& p);
  static bool Interrupted(JNIEnv* env);

  JNIEnv* const env_;  // the constructing thread's, for the destructor
  JavaVM* vm_ = nullptr;
  jobject listener_ = nullptr;  // global ref
  jmethodID on_progress_ = nullptr;
  jthrowable thrown_ = nullptr;  // global ref
  bool interrupted_ = false;
};

}  // namespace ferry::java

#endif  // FERRY_JAVA_PROGRESS_H_
