// The JNI portal (RocksDB's shape): cached classes and method ids, handle
// conversion, and the one Status -> Java exception mapping
// (bindings/common's ErrorKind table; the message is the Status message).
#ifndef FERRY_JAVA_PORTAL_H_
#define FERRY_JAVA_PORTAL_H_

#include <jni.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace ferry::java {

// Throws the Java exception for `status` (REQUIRES: !status.ok()).
void ThrowStatus(JNIEnv* env, const absl::Status& status);
// Throws IllegalStateException("<what> is closed").
void ThrowClosed(JNIEnv* env, const char* what);
// A Java string as UTF-8 (modified UTF-8 decoded; null -> "").
std::string ToStd(JNIEnv* env, jstring s);
jstring ToJava(JNIEnv* env, const std::string& s);

template <typename T>
T* FromHandle(jlong handle) {
  return reinterpret_cast<T*>(static_cast<intptr_t>(handle));
}
template <typename T>
jlong ToHandle(T* p) {
  return static_cast<jlong>(reinterpret_cast<intptr_t>(p));
}

}  // namespace ferry::java

#endif  // FERRY_JAVA_PORTAL_H_
