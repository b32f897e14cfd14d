// io.ferry.TtlCache: ferry::TtlCache<std::string, CachedValue> holding Java
// objects (global references), with Java CacheLoaders.
//
// A foreground load runs the loader on the Java thread that missed, with
// that thread's JNIEnv; the loader's exception is kept (a global reference)
// and rethrown to that thread unchanged, while threads that waited on the
// same load get the exception ferry maps its status to. Refresh-ahead
// reloads run on a Runtime blocking thread, attached as a daemon thread,
// with a global reference to the loader. Values are released on whichever
// thread drops them (GlobalRef).
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/strings.h"
#include "ferry/cache/ttl_cache.h"
#include "ferry/runtime/runtime.h"
#include "portal.h"

namespace ferry::java {
namespace {

// One cached Java value and its weight (the Java weigher's answer, asked
// once at load time so the cache never calls Java under its locks).
struct CachedValue {
  CachedValue(JNIEnv* env, jobject value, int64_t weight) : object(env, value), weight(weight) {}
  GlobalRef object;
  int64_t weight;
};
using ValuePtr = std::shared_ptr<const CachedValue>;
using Cache = ferry::TtlCache<std::string, CachedValue>;

// What every loader call needs: the methods to call and the weigher.
struct Hooks {
  JavaVM* vm = nullptr;
  jmethodID load = nullptr;           // CacheLoader.load(String)
  std::unique_ptr<GlobalRef> weigher;  // ToLongBiFunction<String, V>, or null
  jmethodID weigh = nullptr;           // ToLongBiFunction.applyAsLong(Object, Object)
};

// Pops the local frame it pushed (a ferry thread never returns to Java, so
// its local references would otherwise pile up).
class LocalFrame {
 public:
  explicit LocalFrame(JNIEnv* env) : env_(env), pushed_(env->PushLocalFrame(8) == 0) {}
  ~LocalFrame() {
    if (pushed_) env_->PopLocalFrame(nullptr);
  }
  LocalFrame(const LocalFrame&) = delete;
  LocalFrame& operator=(const LocalFrame&) = delete;

 private:
  JNIEnv* env_;
  bool pushed_;
};

// The loader handed to the C++ cache. The foreground one uses the calling
// thread's env and local references and records the loader's exception in
// `*raised`; a copy (what the cache hands the executor for refresh-ahead)
// holds a global reference and records nothing.
class JavaLoader {
 public:
  JavaLoader(JNIEnv* env, jobject fn, jstring jkey, const Hooks* hooks,
             std::unique_ptr<GlobalRef>* raised)
      : env_(env), fn_(fn), jkey_(jkey), hooks_(hooks), raised_(raised) {}
  JavaLoader(const JavaLoader& o)
      : fn_global_(o.fn_global_ != nullptr ? o.fn_global_ : std::make_shared<GlobalRef>(o.env_, o.fn_)),
        hooks_(o.hooks_) {}
  JavaLoader& operator=(const JavaLoader&) = delete;

  absl::StatusOr<ValuePtr> operator()(const std::string& key) const {
    JNIEnv* env = env_ != nullptr ? env_ : AttachedEnv(hooks_->vm);
    if (env == nullptr) {
      return absl::CancelledError(ferry::Cat("TtlCache loader for \"", key, "\": the JVM refused a thread"));
    }
    LocalFrame frame(env);
    jstring jkey = jkey_ != nullptr ? jkey_ : ferry::java::ToJava(env, key);
    jobject fn = env_ != nullptr ? fn_ : fn_global_->get();
    jobject value = env->CallObjectMethod(fn, hooks_->load, jkey);
    if (absl::Status s = Raised(env, key, "loader"); !s.ok()) return s;
    if (value == nullptr) {
      return absl::NotFoundError(ferry::Cat("TtlCache loader for \"", key, "\" returned null"));
    }
    int64_t weight = 1;
    if (hooks_->weigher != nullptr) {
      weight = env->CallLongMethod(hooks_->weigher->get(), hooks_->weigh, jkey, value);
      if (absl::Status s = Raised(env, key, "weigher"); !s.ok()) return s;
      if (weight < 0) {
        return absl::InvalidArgumentError(
            ferry::Cat("TtlCache weigher for \"", key, "\" returned ", weight, " (must be >= 0)"));
      }
    }
    return std::make_shared<const CachedValue>(env, value, weight);
  }

 private:
  // The pending Java exception as a status (cleared; kept for the caller).
  absl::Status Raised(JNIEnv* env, const std::string& key, const char* what) const {
    jthrowable t = env->ExceptionOccurred();
    if (t == nullptr) return absl::OkStatus();
    env->ExceptionClear();
    absl::Status s =
        ferry::java::StatusFromThrowable(env, t, ferry::Cat("TtlCache ", what, " for \"", key, "\""));
    if (raised_ != nullptr) *raised_ = std::make_unique<GlobalRef>(env, t);
    return s;
  }

  JNIEnv* env_ = nullptr;
  jobject fn_ = nullptr;
  jstring jkey_ = nullptr;
  std::shared_ptr<GlobalRef> fn_global_;
  const Hooks* hooks_;
  std::unique_ptr<GlobalRef>* raised_ = nullptr;
};

// The native side of one io.ferry.TtlCache.
struct NativeCache {
  std::shared_ptr<ferry::Runtime> runtime;  // refresh-ahead's threads, or null
  std::unique_ptr<Hooks> hooks;             // read by loaders: outlives the cache
  std::unique_ptr<GlobalRef> default_loader;
  std::unique_ptr<Cache> cache;
  ~NativeCache() { cache.reset(); }  // waits for reloads, which read hooks
};

// Java passes nanoseconds; Long.MAX_VALUE is "never", Long.MIN_VALUE "the
// C++ default".
constexpr jlong kDefault = std::numeric_limits<jlong>::min();
absl::Duration FromNanos(jlong nanos) {
  return nanos == std::numeric_limits<jlong>::max() ? absl::InfiniteDuration() : absl::Nanoseconds(nanos);
}

// A call's key as UTF-8, in a per-thread buffer so a hit allocates
// nothing. One buffer per nesting level: a loader may use the cache for
// other keys while the outer call still reads its own.
class Key {
 public:
  Key(JNIEnv* env, jstring key) : level_(Levels().depth++) {
    ferry::java::ToStd(env, key, &get_mutable());
  }
  ~Key() { --Levels().depth; }
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;
  const std::string& get() { return get_mutable(); }

 private:
  static constexpr int kLevels = 4;
  struct PerThread {
    int depth = 0;
    std::string keys[kLevels];
  };
  static PerThread& Levels() {
    thread_local PerThread levels;
    return levels;
  }
  std::string& get_mutable() { return level_ < kLevels ? Levels().keys[level_] : deep_; }

  const int level_;
  std::string deep_;  // beyond kLevels nested calls
};

jobject Result(JNIEnv* env, const ValuePtr& v) {
  return v == nullptr ? nullptr : env->NewLocalRef(v->object.get());
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_newCache(JNIEnv* env, jclass, jlong runtime,
                                                        jlong refresh_nanos, jlong refresh_after_nanos,
                                                        jlong negative_nanos, jlong max_entries,
                                                        jlong max_weight, jint shards,
                                                        jobject weigher, jobject loader) {
  auto native = std::make_unique<NativeCache>();
  native->hooks = std::make_unique<Hooks>();
  Hooks& hooks = *native->hooks;
  env->GetJavaVM(&hooks.vm);
  hooks.load = ferry::java::Ids().cache_loader_load;
  Cache::Options o;
  if (refresh_nanos != kDefault) o.refresh_time = FromNanos(refresh_nanos);
  if (refresh_after_nanos != kDefault) o.refresh_after = FromNanos(refresh_after_nanos);
  if (negative_nanos != kDefault) o.negative_refresh_time = FromNanos(negative_nanos);
  if (max_entries != kDefault) o.max_entries = max_entries;
  if (max_weight != kDefault) o.max_weight = max_weight;
  o.shards = shards;
  if (weigher != nullptr) {
    hooks.weigh = ferry::java::Ids().weigher_apply;
    hooks.weigher = std::make_unique<GlobalRef>(env, weigher);
    o.weigher = [](const std::string&, const CachedValue& v) { return v.weight; };
  }
  if (runtime != 0) {
    // Reloads run on the Runtime's blocking threads; the cache keeps the
    // Runtime alive (a closed Java Runtime only drops its own reference).
    native->runtime = *FromHandle<std::shared_ptr<ferry::Runtime>>(runtime);
    ferry::Runtime* rt = native->runtime.get();
    o.executor = [rt](absl::AnyInvocable<void()> fn) { rt->PostBlocking(std::move(fn)); };
  }
  if (loader != nullptr) native->default_loader = std::make_unique<GlobalRef>(env, loader);
  native->cache = std::make_unique<Cache>(std::move(o));
  return ToHandle(native.release());
}

JNIEXPORT void JNICALL Java_io_ferry_TtlCache_disposeCache(JNIEnv*, jclass, jlong handle) {
  delete FromHandle<NativeCache>(handle);
}

JNIEXPORT jobject JNICALL Java_io_ferry_TtlCache_get(JNIEnv* env, jclass, jlong handle, jstring key,
                                                     jobject loader) {
  NativeCache* native = FromHandle<NativeCache>(handle);
  if (loader == nullptr) {
    if (native->default_loader == nullptr) {
      ThrowStatus(env, absl::FailedPreconditionError(
                           "TtlCache.get: no loader; pass one, or build the cache with loader(...)"));
      return nullptr;
    }
    loader = native->default_loader->get();
  }
  std::unique_ptr<GlobalRef> raised;
  const JavaLoader l(env, loader, key, native->hooks.get(), &raised);
  absl::StatusOr<ValuePtr> r = native->cache->Get(Key(env, key).get(), l);
  if (r.ok()) return Result(env, *r);
  if (raised != nullptr) {
    env->Throw(static_cast<jthrowable>(env->NewLocalRef(raised->get())));  // the loader's own
  } else {
    ThrowStatus(env, r.status());
  }
  return nullptr;
}

JNIEXPORT jobject JNICALL Java_io_ferry_TtlCache_getIfPresent(JNIEnv* env, jclass, jlong handle,
                                                              jstring key) {
  return Result(env, FromHandle<NativeCache>(handle)->cache->GetIfPresent(Key(env, key).get()));
}

JNIEXPORT void JNICALL Java_io_ferry_TtlCache_put(JNIEnv* env, jclass, jlong handle, jstring key,
                                                  jobject value, jlong weight, jlong refresh_nanos) {
  auto v = std::make_shared<const CachedValue>(env, value, weight);
  Cache& cache = *FromHandle<NativeCache>(handle)->cache;
  if (refresh_nanos == kDefault) {
    cache.Put(Key(env, key).get(), std::move(v));
  } else {
    cache.Put(Key(env, key).get(), std::move(v), FromNanos(refresh_nanos));
  }
}

JNIEXPORT jboolean JNICALL Java_io_ferry_TtlCache_invalidate(JNIEnv* env, jclass, jlong handle,
                                                             jstring key) {
  return FromHandle<NativeCache>(handle)->cache->Invalidate(Key(env, key).get()) ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_invalidatePrefix(JNIEnv* env, jclass, jlong handle,
                                                                jstring prefix) {
  const std::string p = ferry::java::ToStd(env, prefix);
  return static_cast<jlong>(FromHandle<NativeCache>(handle)->cache->InvalidatePrefix(p));
}

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_invalidateIf(JNIEnv* env, jclass, jlong handle,
                                                            jobject predicate) {
  const jmethodID test = ferry::java::Ids().predicate_test;
  jthrowable raised = nullptr;
  const size_t n = FromHandle<NativeCache>(handle)->cache->InvalidateIf([&](const std::string& key) {
    if (raised != nullptr) return false;  // stop matching after an exception
    jstring k = ferry::java::ToJava(env, key);
    const bool match = env->CallBooleanMethod(predicate, test, k) == JNI_TRUE;
    env->DeleteLocalRef(k);
    if ((raised = env->ExceptionOccurred()) != nullptr) {
      env->ExceptionClear();
      return false;
    }
    return match;
  });
  if (raised != nullptr) env->Throw(raised);
  return static_cast<jlong>(n);
}

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_invalidateAll(JNIEnv*, jclass, jlong handle) {
  return static_cast<jlong>(FromHandle<NativeCache>(handle)->cache->InvalidateAll());
}

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_purgeExpired(JNIEnv*, jclass, jlong handle) {
  return static_cast<jlong>(FromHandle<NativeCache>(handle)->cache->PurgeExpired());
}

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_size(JNIEnv*, jclass, jlong handle) {
  return FromHandle<NativeCache>(handle)->cache->size();
}

JNIEXPORT jlong JNICALL Java_io_ferry_TtlCache_weight(JNIEnv*, jclass, jlong handle) {
  return FromHandle<NativeCache>(handle)->cache->weight();
}

JNIEXPORT jint JNICALL Java_io_ferry_TtlCache_shardCount(JNIEnv*, jclass, jlong handle) {
  return FromHandle<NativeCache>(handle)->cache->shard_count();
}

JNIEXPORT jbyteArray JNICALL Java_io_ferry_TtlCache_stats(JNIEnv* env, jclass, jlong handle) {
  const Cache& cache = *FromHandle<NativeCache>(handle)->cache;
  return ferry::java::CacheStatsBytes(env, cache.stats(), cache.size(), cache.weight());
}

}  // extern "C"

}  // namespace ferry::java
