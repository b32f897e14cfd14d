#include "portal.h"

#include "ferry/bindings/error_kind.h"

namespace ferry::java {

void ThrowStatus(JNIEnv* env, const absl::Status& status) {
  using bindings::ErrorKind;
  const char* cls = "io/ferry/FerryException";
  switch (bindings::ErrorKindFor(status.code())) {
    case ErrorKind::kNotFound: cls = "java/io/FileNotFoundException"; break;
    case ErrorKind::kAlreadyExists: cls = "java/nio/file/FileAlreadyExistsException"; break;
    case ErrorKind::kPermissionDenied: cls = "java/nio/file/AccessDeniedException"; break;
    case ErrorKind::kUnauthenticated: cls = "java/lang/SecurityException"; break;
    case ErrorKind::kTimeout: cls = "io/ferry/FerryTimeoutException"; break;
    case ErrorKind::kUnavailable: cls = "java/io/IOException"; break;
    case ErrorKind::kProtocol: cls = "io/ferry/ProtocolException"; break;
    case ErrorKind::kInvalidArgument: cls = "java/lang/IllegalArgumentException"; break;
    case ErrorKind::kFailedPrecondition: cls = "java/lang/IllegalStateException"; break;
    case ErrorKind::kCancelled: cls = "java/util/concurrent/CancellationException"; break;
    case ErrorKind::kOther: break;
  }
  jclass c = env->FindClass(cls);
  if (c == nullptr) return;  // NoClassDefFoundError pending
  const std::string msg(status.message());
  env->ThrowNew(c, msg.c_str());
  env->DeleteLocalRef(c);
}

void ThrowClosed(JNIEnv* env, const char* what) {
  jclass c = env->FindClass("java/lang/IllegalStateException");
  if (c == nullptr) return;
  env->ThrowNew(c, (std::string(what) + " is closed").c_str());
  env->DeleteLocalRef(c);
}

std::string ToStd(JNIEnv* env, jstring s) {
  if (s == nullptr) return {};
  const char* chars = env->GetStringUTFChars(s, nullptr);
  if (chars == nullptr) return {};
  std::string out(chars);
  env->ReleaseStringUTFChars(s, chars);
  return out;
}

jstring ToJava(JNIEnv* env, const std::string& s) { return env->NewStringUTF(s.c_str()); }

}  // namespace ferry::java
