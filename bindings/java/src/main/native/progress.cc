#include "progress.h"

#include "portal.h"

namespace ferry::java {

JavaProgress::JavaProgress(JNIEnv* env, jobject listener) : env_(env) {
  if (env->GetJavaVM(&vm_) != JNI_OK) vm_ = nullptr;
  if (listener == nullptr || vm_ == nullptr) return;
  on_progress_ = Ids().progress_on_progress;
  // Global: the reference must hold on whichever thread reports.
  listener_ = env->NewGlobalRef(listener);
}

JavaProgress::~JavaProgress() {
  if (listener_ != nullptr) env_->DeleteGlobalRef(listener_);
  if (thrown_ != nullptr) env_->DeleteGlobalRef(thrown_);
}

// Installed even without a listener: each report is also where the
// calling thread's interrupt flag is read, so Thread.interrupt() stops a
// copy within one progress interval.
ProgressCallback JavaProgress::Callback() {
  if (vm_ == nullptr) return nullptr;
  return [this](const TransferProgress& p) { return Call(p); };
}

// Reads the flag without clearing it (isInterrupted, not interrupted()):
// the caller that catches the InterruptedIOException still sees it set.
bool JavaProgress::Interrupted(JNIEnv* env) {
  const JniIds& ids = Ids();
  jobject thread = env->CallStaticObjectMethod(ids.thread, ids.thread_current);
  if (thread == nullptr) return false;
  const bool set = env->CallBooleanMethod(thread, ids.thread_is_interrupted) == JNI_TRUE;
  env->DeleteLocalRef(thread);
  return set;
}

absl::Status JavaProgress::Call(const TransferProgress& p) {
  if (thrown_ != nullptr) return absl::CancelledError("copy stopped: the progress listener threw");
  if (interrupted_) return absl::CancelledError("copy stopped: the thread was interrupted");
  JNIEnv* env = AttachedEnv(vm_);
  if (env == nullptr) return absl::InternalError("progress: cannot attach the thread to the JVM");
  if (Interrupted(env)) {
    interrupted_ = true;
    return absl::CancelledError("copy stopped: the thread was interrupted");
  }
  if (listener_ == nullptr) return absl::OkStatus();
  if (env->PushLocalFrame(4) != 0) {  // OutOfMemoryError pending: it stops the copy
    thrown_ = static_cast<jthrowable>(env->NewGlobalRef(env->ExceptionOccurred()));
    env->ExceptionClear();
    return absl::ResourceExhaustedError("progress: no room for a JNI local frame");
  }
  env->CallVoidMethod(listener_, on_progress_, static_cast<jlong>(p.bytes_done),
                      static_cast<jlong>(p.bytes_total));
  absl::Status status;
  if (jthrowable t = env->ExceptionOccurred()) {
    env->ExceptionClear();
    thrown_ = static_cast<jthrowable>(env->NewGlobalRef(t));
    status = absl::CancelledError("copy stopped: the progress listener threw");
  }
  env->PopLocalFrame(nullptr);
  return status;
}

bool JavaProgress::RethrowIfThrown(JNIEnv* env) {
  if (thrown_ == nullptr && interrupted_) {
    env->ThrowNew(Ids().interrupted_io,
                  "copy interrupted: Thread.interrupt() stopped it; files in flight were discarded "
                  "and their targets left as they were");
    return true;
  }
  if (thrown_ == nullptr) return false;
  env->Throw(thrown_);
  env->DeleteGlobalRef(thrown_);
  thrown_ = nullptr;
  return true;
}

}  // namespace ferry::java
