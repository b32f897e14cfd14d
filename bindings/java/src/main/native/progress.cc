#include "progress.h"

#include "portal.h"

namespace ferry::java {

JavaProgress::JavaProgress(JNIEnv* env, jobject listener) : env_(env) {
  if (listener == nullptr || env->GetJavaVM(&vm_) != JNI_OK) return;
  on_progress_ = Ids().progress_on_progress;
  // Global: the reference must hold on whichever thread reports.
  listener_ = env->NewGlobalRef(listener);
}

JavaProgress::~JavaProgress() {
  if (listener_ != nullptr) env_->DeleteGlobalRef(listener_);
  if (thrown_ != nullptr) env_->DeleteGlobalRef(thrown_);
}

ProgressCallback JavaProgress::Callback() {
  if (listener_ == nullptr) return nullptr;
  return [this](const TransferProgress& p) { return Call(p); };
}

absl::Status JavaProgress::Call(const TransferProgress& p) {
  if (thrown_ != nullptr) return absl::CancelledError("copy stopped: the progress listener threw");
  JNIEnv* env = AttachedEnv(vm_);
  if (env == nullptr) return absl::InternalError("progress: cannot attach the thread to the JVM");
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
  if (thrown_ == nullptr) return false;
  env->Throw(thrown_);
  env->DeleteGlobalRef(thrown_);
  thrown_ = nullptr;
  return true;
}

}  // namespace ferry::java
