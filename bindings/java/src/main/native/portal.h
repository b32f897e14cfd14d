// The JNI portal (RocksDB's shape): handle conversion, strings, references
// that outlive a native call, and the one Status <-> Java exception table
// (bindings/common's ErrorKind; the message is the Status message).
#ifndef FERRY_JAVA_PORTAL_H_
#define FERRY_JAVA_PORTAL_H_

#include <jni.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/cache/ttl_cache.h"

namespace ferry::java {

// The classes and method ids the glue calls, looked up once in JNI_OnLoad
// (a FindClass per call costs microseconds; an id stays valid while its
// class is loaded, and the global references here keep them loaded). The
// binding's one process-wide state: JNI offers a library no other slot.
// Immutable after JNI_OnLoad, so any thread may read it.
struct JniIds {
  jclass entry;                  // io.ferry.Entry
  jmethodID entry_init;          // (path, kind, size, mtimeNanos, id, mode, uid, gid)
  jclass irods_stat;             // io.ferry.IrodsStat
  jmethodID irods_stat_of;       // static of(type, size, id, modifyTime, mode, owner, checksum)
  jclass irods_entry;            // io.ferry.IrodsEntry
  jmethodID irods_entry_of;      // static of(name, type, size, id, modifyTime)
  jclass irods_access;           // io.ferry.IrodsAccess
  jmethodID irods_access_of;     // static of(user, access)
  jclass irods_avu;              // io.ferry.IrodsAvu
  jmethodID irods_avu_of;        // static of(attribute, value, units)
  jmethodID cache_loader_load;   // io.ferry.CacheLoader.load(String)
  jmethodID weigher_apply;       // ToLongBiFunction.applyAsLong(Object, Object)
  jmethodID predicate_test;      // Predicate.test(Object)
  jmethodID progress_on_progress;  // io.ferry.ProgressListener.onProgress(long, long)
  jclass thread;                 // java.lang.Thread
  jmethodID thread_current;      // static Thread.currentThread()
  jmethodID thread_is_interrupted;  // Thread.isInterrupted() (leaves the flag set)
  jclass interrupted_io;         // java.io.InterruptedIOException
  jmethodID throwable_get_message;
  jmethodID class_get_name;
  jclass illegal_state;          // java.lang.IllegalStateException
  jclass exceptions[16];         // kExceptions' classes, in its order (portal.cc)
};
// REQUIRES: JNI_OnLoad succeeded (it did, or the library would not load).
const JniIds& Ids();

// Throws the Java exception for `status` (REQUIRES: !status.ok()).
void ThrowStatus(JNIEnv* env, const absl::Status& status);
// True when `v` holds a value; otherwise throws the Java exception for its
// status and answers false (the caller returns at once).
template <typename T>
bool OkOrThrow(JNIEnv* env, const absl::StatusOr<T>& v) {
  if (v.ok()) return true;
  ThrowStatus(env, v.status());
  return false;
}
// Throws IllegalStateException("<what> is closed").
void ThrowClosed(JNIEnv* env, const char* what);

// The status a Java exception stands for (the reverse of ThrowStatus:
// FileNotFoundException and NoSuchFileException -> NotFound, ...), with the
// message "<context>: <exception class>: <its message>".
absl::Status StatusFromThrowable(JNIEnv* env, jthrowable t, std::string_view context);

// A Java string as UTF-8 (surrogate pairs joined; null -> ""), and back.
// Not JNI's "modified UTF-8", which spells U+0000 and characters beyond
// the BMP in ways no server expects.
std::string ToStd(JNIEnv* env, jstring s);
// As ToStd, into `*out` (reusing its capacity: the cache's hot path).
void ToStd(JNIEnv* env, jstring s, std::string* out);
jstring ToJava(JNIEnv* env, std::string_view s);
// ToJava's string, its local reference deleted with this object: for the
// arguments of one constructor or factory call (a loop making many must
// not fill the local frame).
class LocalString {
 public:
  LocalString(JNIEnv* env, std::string_view s) : env_(env), s_(ToJava(env, s)) {}
  ~LocalString() { env_->DeleteLocalRef(s_); }
  LocalString(const LocalString&) = delete;
  LocalString& operator=(const LocalString&) = delete;
  jstring get() const { return s_; }

 private:
  JNIEnv* const env_;
  const jstring s_;
};
// A local reference made by the static factory `of` of `cls` (JniIds'
// `*_of` ids), or null with an exception pending.
jobject CallOf(JNIEnv* env, jclass cls, jmethodID of, ...);

// The Java array of `cls` for `items`, each made by `make` (a local
// reference, deleted once stored); null with an exception pending.
template <typename T, typename Make>
jobjectArray ToArray(JNIEnv* env, jclass cls, const std::vector<T>& items, Make make) {
  jobjectArray out = env->NewObjectArray(static_cast<jsize>(items.size()), cls, nullptr);
  for (jsize i = 0; out != nullptr && i < static_cast<jsize>(items.size()); ++i) {
    jobject o = make(items[i]);
    if (o == nullptr) return nullptr;  // exception pending
    env->SetObjectArrayElement(out, i, o);
    env->DeleteLocalRef(o);
  }
  return out;
}

// A new byte[] holding `bytes` (records.proto messages); null with
// OutOfMemoryError pending.
jbyteArray ToJavaBytes(JNIEnv* env, std::string_view bytes);

// A cache's counters as records.proto CacheStats bytes (io.ferry.TtlCacheStats
// decodes them).
jbyteArray CacheStatsBytes(JNIEnv* env, const TtlCacheStats& s, int64_t entries, int64_t weight);

// The JNIEnv of the calling thread, attaching it as a daemon thread when
// it is one of ferry's (a Runtime thread running a refresh-ahead loader or
// a progress callback); such a thread is detached when it exits. Null if
// the JVM refuses.
JNIEnv* AttachedEnv(JavaVM* vm);

// A JNI global reference, deleted on whichever thread drops the last owner.
// Thread-safety: immutable after construction.
class GlobalRef {
 public:
  GlobalRef(JNIEnv* env, jobject obj);
  ~GlobalRef();
  GlobalRef(const GlobalRef&) = delete;
  GlobalRef& operator=(const GlobalRef&) = delete;
  jobject get() const { return ref_; }

 private:
  JavaVM* vm_ = nullptr;
  jobject ref_ = nullptr;
};

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
