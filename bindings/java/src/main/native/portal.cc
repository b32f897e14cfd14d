#include "portal.h"

#include <array>
#include <cstdarg>
#include <memory>
#include <iterator>

#include "ferry/base/strings.h"
#include "ferry/bindings/error_kind.h"
#include "ferry/records/cache_records.h"

namespace ferry::java {
namespace {

using bindings::ErrorKind;

// One table both ways. Most specific classes first: the reverse lookup
// takes the first the exception is an instance of; ThrowStatus the first
// row of the status's kind.
struct ExceptionRow {
  ErrorKind kind;  // what a Java exception of this class stands for
  const char* cls;
};
constexpr std::array<ExceptionRow, 14> kExceptions = {{
    {ErrorKind::kNotFound, "java/io/FileNotFoundException"},
    {ErrorKind::kNotFound, "java/nio/file/NoSuchFileException"},
    {ErrorKind::kAlreadyExists, "java/nio/file/FileAlreadyExistsException"},
    {ErrorKind::kPermissionDenied, "java/nio/file/AccessDeniedException"},
    {ErrorKind::kUnauthenticated, "io/ferry/FerryAuthenticationException"},
    {ErrorKind::kTimeout, "io/ferry/FerryTimeoutException"},
    {ErrorKind::kTimeout, "java/util/concurrent/TimeoutException"},
    {ErrorKind::kProtocol, "io/ferry/ProtocolException"},
    {ErrorKind::kInvalidArgument, "java/lang/IllegalArgumentException"},
    {ErrorKind::kFailedPrecondition, "java/lang/IllegalStateException"},
    {ErrorKind::kCancelled, "java/util/concurrent/CancellationException"},
    {ErrorKind::kOther, "io/ferry/FerryException"},
    // Last: the bases of several rows above.
    {ErrorKind::kUnavailable, "java/io/IOException"},
    {ErrorKind::kOther, "java/lang/Throwable"},
}};

// The class name of `obj`, dotted ("java.io.FileNotFoundException").
std::string ClassName(JNIEnv* env, jobject obj) {
  jclass cls = env->GetObjectClass(obj);
  auto name = static_cast<jstring>(env->CallObjectMethod(cls, Ids().class_get_name));
  std::string out = env->ExceptionCheck() ? "?" : ToStd(env, name);
  env->ExceptionClear();
  env->DeleteLocalRef(name);
  env->DeleteLocalRef(cls);
  return out;
}

// Set once by JNI_OnLoad, read-only after (see JniIds).
const JniIds* g_ids = nullptr;

// A global reference to class `name`, or null with an exception pending.
jclass GlobalClass(JNIEnv* env, const char* name) {
  jclass local = env->FindClass(name);
  if (local == nullptr) return nullptr;
  auto global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return global;
}

jmethodID Method(JNIEnv* env, const char* cls, const char* name, const char* sig) {
  jclass c = env->FindClass(cls);
  if (c == nullptr) return nullptr;
  jmethodID m = env->GetMethodID(c, name, sig);
  env->DeleteLocalRef(c);
  return m;
}

// Every lookup JniIds holds; false with an exception pending if one fails.
bool LoadIds(JNIEnv* env, JniIds* ids) {
  static_assert(std::size(JniIds{}.exceptions) >= kExceptions.size());
  for (size_t i = 0; i < kExceptions.size(); ++i) {
    if ((ids->exceptions[i] = GlobalClass(env, kExceptions[i].cls)) == nullptr) return false;
  }
  ids->illegal_state = GlobalClass(env, "java/lang/IllegalStateException");
  ids->entry = GlobalClass(env, "io/ferry/Entry");
  ids->irods_stat = GlobalClass(env, "io/ferry/IrodsStat");
  ids->irods_entry = GlobalClass(env, "io/ferry/IrodsEntry");
  ids->irods_access = GlobalClass(env, "io/ferry/IrodsAccess");
  ids->irods_avu = GlobalClass(env, "io/ferry/IrodsAvu");
  ids->thread = GlobalClass(env, "java/lang/Thread");
  ids->interrupted_io = GlobalClass(env, "java/io/InterruptedIOException");
  if (ids->thread == nullptr || ids->interrupted_io == nullptr ||
      ids->illegal_state == nullptr || ids->entry == nullptr || ids->irods_stat == nullptr ||
      ids->irods_entry == nullptr || ids->irods_access == nullptr || ids->irods_avu == nullptr) {
    return false;
  }
  ids->entry_init = env->GetMethodID(ids->entry, "<init>", "(Ljava/lang/String;Ljava/lang/String;JJJIII)V");
  ids->irods_stat_of = env->GetStaticMethodID(
      ids->irods_stat, "of", "(IJJJILjava/lang/String;Ljava/lang/String;)Lio/ferry/IrodsStat;");
  ids->irods_entry_of =
      env->GetStaticMethodID(ids->irods_entry, "of", "(Ljava/lang/String;IJJJ)Lio/ferry/IrodsEntry;");
  ids->irods_access_of = env->GetStaticMethodID(
      ids->irods_access, "of", "(Ljava/lang/String;Ljava/lang/String;)Lio/ferry/IrodsAccess;");
  ids->irods_avu_of = env->GetStaticMethodID(
      ids->irods_avu, "of",
      "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)Lio/ferry/IrodsAvu;");
  ids->cache_loader_load =
      Method(env, "io/ferry/CacheLoader", "load", "(Ljava/lang/String;)Ljava/lang/Object;");
  ids->weigher_apply = Method(env, "java/util/function/ToLongBiFunction", "applyAsLong",
                              "(Ljava/lang/Object;Ljava/lang/Object;)J");
  ids->predicate_test = Method(env, "java/util/function/Predicate", "test", "(Ljava/lang/Object;)Z");
  ids->progress_on_progress = Method(env, "io/ferry/ProgressListener", "onProgress", "(JJ)V");
  ids->throwable_get_message = Method(env, "java/lang/Throwable", "getMessage", "()Ljava/lang/String;");
  ids->class_get_name = Method(env, "java/lang/Class", "getName", "()Ljava/lang/String;");
  ids->thread_current = env->GetStaticMethodID(ids->thread, "currentThread", "()Ljava/lang/Thread;");
  ids->thread_is_interrupted = env->GetMethodID(ids->thread, "isInterrupted", "()Z");
  return ids->thread_current != nullptr && ids->thread_is_interrupted != nullptr && ids->entry_init != nullptr && ids->irods_stat_of != nullptr && ids->irods_entry_of != nullptr &&
         ids->irods_access_of != nullptr && ids->irods_avu_of != nullptr &&
         ids->cache_loader_load != nullptr &&
         ids->weigher_apply != nullptr && ids->predicate_test != nullptr &&
         ids->progress_on_progress != nullptr && ids->throwable_get_message != nullptr &&
         ids->class_get_name != nullptr;
}

// Detaches a thread AttachedEnv attached, when the thread exits.
struct Attachment {
  JavaVM* vm = nullptr;
  ~Attachment() {
    if (vm != nullptr) vm->DetachCurrentThread();
  }
};

}  // namespace

const JniIds& Ids() { return *g_ids; }

void ThrowStatus(JNIEnv* env, const absl::Status& status) {
  const ErrorKind kind = bindings::ErrorKindFor(status.code());
  size_t row = 0;
  while (row + 1 < kExceptions.size() && kExceptions[row].kind != kind) ++row;
  const std::string msg(status.message());
  env->ThrowNew(Ids().exceptions[row], msg.c_str());
}

void ThrowClosed(JNIEnv* env, const char* what) {
  env->ThrowNew(Ids().illegal_state, (std::string(what) + " is closed").c_str());
}

absl::Status StatusFromThrowable(JNIEnv* env, jthrowable t, std::string_view context) {
  absl::StatusCode code = absl::StatusCode::kUnknown;
  for (size_t i = 0; i < kExceptions.size(); ++i) {
    if (env->IsInstanceOf(t, Ids().exceptions[i])) {
      code = bindings::StatusCodeFor(kExceptions[i].kind);
      break;
    }
  }
  auto message = static_cast<jstring>(env->CallObjectMethod(t, Ids().throwable_get_message));
  std::string text = env->ExceptionCheck() ? "?" : ToStd(env, message);
  env->ExceptionClear();
  env->DeleteLocalRef(message);
  return absl::Status(code, Cat(context, ": ", ClassName(env, t), ": ", text));
}

void ToStd(JNIEnv* env, jstring s, std::string* out) {
  out->clear();
  if (s == nullptr) return;
  const jsize n = env->GetStringLength(s);
  // GetStringRegion into a buffer, not GetStringCritical: with compact
  // (Latin-1) strings the JVM would inflate a UTF-16 copy on the heap.
  jchar stack[256];
  std::u16string heap;
  jchar* chars = stack;
  if (n > static_cast<jsize>(std::size(stack))) {
    heap.resize(static_cast<size_t>(n));
    chars = reinterpret_cast<jchar*>(heap.data());
  }
  env->GetStringRegion(s, 0, n, chars);
  out->reserve(static_cast<size_t>(n));
  for (jsize i = 0; i < n; ++i) {
    uint32_t c = chars[i];
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      continue;
    }
    if (c >= 0xD800 && c < 0xDC00 && i + 1 < n && chars[i + 1] >= 0xDC00 && chars[i + 1] < 0xE000) {
      c = 0x10000 + ((c - 0xD800) << 10) + (chars[i + 1] - 0xDC00);
      ++i;
    }
    AppendUtf8(c, out);  // a lone surrogate stays its own code point (WTF-8)
  }
}

std::string ToStd(JNIEnv* env, jstring s) {
  std::string out;
  ToStd(env, s, &out);
  return out;
}

jstring ToJava(JNIEnv* env, std::string_view s) {
  std::u16string utf16;
  utf16.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    if (b < 0x80) {
      cp = b;
    } else if ((b >> 5) == 0x6 && i + 1 < s.size()) {
      cp = ((b & 0x1F) << 6) | (s[i + 1] & 0x3F);
      len = 2;
    } else if ((b >> 4) == 0xE && i + 2 < s.size()) {
      cp = ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
      len = 3;
    } else if ((b >> 3) == 0x1E && i + 3 < s.size()) {
      cp = ((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) |
           (s[i + 3] & 0x3F);
      len = 4;
    }
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      utf16.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      utf16.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      utf16.push_back(static_cast<char16_t>(cp));
    }
  }
  return env->NewString(reinterpret_cast<const jchar*>(utf16.data()),
                        static_cast<jsize>(utf16.size()));
}

jobject CallOf(JNIEnv* env, jclass cls, jmethodID of, ...) {
  va_list args;
  va_start(args, of);
  jobject out = env->CallStaticObjectMethodV(cls, of, args);
  va_end(args);
  return out;
}

jbyteArray ToJavaBytes(JNIEnv* env, std::string_view bytes) {
  jbyteArray out = env->NewByteArray(static_cast<jsize>(bytes.size()));
  if (out == nullptr) return nullptr;
  env->SetByteArrayRegion(out, 0, static_cast<jsize>(bytes.size()),
                          reinterpret_cast<const jbyte*>(bytes.data()));
  return out;
}

jbyteArray CacheStatsBytes(JNIEnv* env, const TtlCacheStats& s, int64_t entries, int64_t weight) {
  return ToJavaBytes(env, records::SerializeCacheStats(s, entries, weight));
}

JNIEnv* AttachedEnv(JavaVM* vm) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) == JNI_OK) return env;
  // Thread-local, not global: one per thread ferry attached, so the thread
  // detaches itself as it exits (a JVM must not outlive attached threads'
  // Thread objects).
  thread_local Attachment attachment;
  JavaVMAttachArgs args{JNI_VERSION_1_8, const_cast<char*>("ferry"), nullptr};
  if (vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&env), &args) != JNI_OK) {
    return nullptr;
  }
  attachment.vm = vm;
  return env;
}

GlobalRef::GlobalRef(JNIEnv* env, jobject obj) {
  env->GetJavaVM(&vm_);
  ref_ = obj == nullptr ? nullptr : env->NewGlobalRef(obj);
}

GlobalRef::~GlobalRef() {
  if (ref_ == nullptr) return;
  if (JNIEnv* env = AttachedEnv(vm_)) env->DeleteGlobalRef(ref_);
}

}  // namespace ferry::java

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  auto ids = std::make_unique<ferry::java::JniIds>();
  if (!ferry::java::LoadIds(env, ids.get())) return JNI_ERR;  // the lookup's error is pending
  ferry::java::g_ids = ids.release();  // for the life of the process (no JNI_OnUnload for jars)
  return JNI_VERSION_1_8;
}
