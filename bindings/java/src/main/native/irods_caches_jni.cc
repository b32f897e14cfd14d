// io.ferry.IrodsCaches: NFSRODS's query caches (ferry::irods::IrodsCacheSet)
// over one iRODS login, configured from NFSRODS's server.json keys. No
// logic beyond the adapter's: the values cross into Java records.
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ferry/irods/irods_cache.h"
#include "ferry/irods/irods_file_system.h"
#include "portal.h"

namespace ferry::java {
namespace {

using ferry::irods::IrodsCacheSet;

struct NativeIrodsCaches {
  std::shared_ptr<ferry::irods::IrodsFileSystem> fs;  // owns the client and the caches
  IrodsCacheSet& caches() { return *fs->caches(); }
};

IrodsCacheSet& Caches(jlong handle) { return FromHandle<NativeIrodsCaches>(handle)->caches(); }

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_io_ferry_IrodsCaches_connect0(JNIEnv* env, jclass, jstring url,
                                                          jstring nfsrods_json, jint connections) {
  absl::StatusOr<ferry::irods::IrodsUrl> parsed = ferry::irods::ParseIrodsUrl(ToStd(env, url));
  if (!OkOrThrow(env, parsed)) return 0;
  ferry::irods::IrodsFileSystemOptions options;
  if (connections > 0) options.client.connections = connections;
  const std::string json = nfsrods_json == nullptr ? "{}" : ToStd(env, nfsrods_json);
  absl::StatusOr<ferry::irods::IrodsCacheOptions> cache =
      ferry::irods::IrodsCacheOptions::FromNfsrodsJson(json);
  if (!OkOrThrow(env, cache)) return 0;
  options.cache = *cache;
  auto fs = ferry::irods::IrodsFileSystem::Connect(std::move(parsed->account), options);
  if (!OkOrThrow(env, fs)) return 0;
  return ToHandle(new NativeIrodsCaches{std::move(*fs)});
}

JNIEXPORT void JNICALL Java_io_ferry_IrodsCaches_dispose(JNIEnv*, jclass, jlong handle) {
  delete FromHandle<NativeIrodsCaches>(handle);
}

JNIEXPORT jobject JNICALL Java_io_ferry_IrodsCaches_stat(JNIEnv* env, jclass, jlong handle, jstring user,
                                                         jstring path) {
  auto st = Caches(handle).Stat(ToStd(env, user), ToStd(env, path));
  if (!OkOrThrow(env, st)) return nullptr;
  const ferry::irods::IrodsStat& s = **st;
  const LocalString owner(env, s.owner), checksum(env, s.checksum);
  const ferry::java::JniIds& ids = ferry::java::Ids();
  return CallOf(env, ids.irods_stat, ids.irods_stat_of, static_cast<jint>(s.type),
                static_cast<jlong>(s.size), static_cast<jlong>(s.id), static_cast<jlong>(s.modify_time),
                static_cast<jint>(s.mode), owner.get(), checksum.get());
}

JNIEXPORT jint JNICALL Java_io_ferry_IrodsCaches_objectType(JNIEnv* env, jclass, jlong handle,
                                                            jstring path) {
  auto t = Caches(handle).ObjectType(ToStd(env, path));
  if (!OkOrThrow(env, t)) return 0;
  return static_cast<jint>(*t);
}

JNIEXPORT jobjectArray JNICALL Java_io_ferry_IrodsCaches_list(JNIEnv* env, jclass, jlong handle,
                                                              jstring user, jstring collection) {
  auto listing = Caches(handle).List(ToStd(env, user), ToStd(env, collection));
  if (!OkOrThrow(env, listing)) return nullptr;
  const ferry::java::JniIds& ids = ferry::java::Ids();
  return ToArray(env, ids.irods_entry, **listing, [&](const ferry::irods::IrodsEntry& e) {
    const LocalString name(env, e.name);
    return CallOf(env, ids.irods_entry, ids.irods_entry_of, name.get(), static_cast<jint>(e.type),
                  static_cast<jlong>(e.size), static_cast<jlong>(e.id),
                  static_cast<jlong>(e.modify_time));
  });
}

JNIEXPORT jobjectArray JNICALL Java_io_ferry_IrodsCaches_permissions(JNIEnv* env, jclass, jlong handle,
                                                                     jstring path, jboolean is_collection) {
  auto acl = Caches(handle).Permissions(ToStd(env, path), is_collection == JNI_TRUE);
  if (!OkOrThrow(env, acl)) return nullptr;
  const ferry::java::JniIds& ids = ferry::java::Ids();
  return ToArray(env, ids.irods_access, **acl, [&](const std::pair<std::string, std::string>& p) {
    const LocalString user(env, p.first), access(env, p.second);
    return CallOf(env, ids.irods_access, ids.irods_access_of, user.get(), access.get());
  });
}

JNIEXPORT jstring JNICALL Java_io_ferry_IrodsCaches_userType(JNIEnv* env, jclass, jlong handle,
                                                             jstring user) {
  auto t = Caches(handle).UserType(ToStd(env, user));
  if (!OkOrThrow(env, t)) return nullptr;
  return ToJava(env, *t);
}

JNIEXPORT void JNICALL Java_io_ferry_IrodsCaches_changed(JNIEnv* env, jclass, jlong handle, jstring path) {
  Caches(handle).Changed(ToStd(env, path));
}

JNIEXPORT void JNICALL Java_io_ferry_IrodsCaches_renamed(JNIEnv* env, jclass, jlong handle, jstring from,
                                                         jstring to) {
  Caches(handle).Renamed(ToStd(env, from), ToStd(env, to));
}

JNIEXPORT void JNICALL Java_io_ferry_IrodsCaches_aclChanged(JNIEnv* env, jclass, jlong handle, jstring path,
                                                            jboolean recursive) {
  Caches(handle).AclChanged(ToStd(env, path), recursive == JNI_TRUE);
}

JNIEXPORT jbyteArray JNICALL Java_io_ferry_IrodsCaches_listStats(JNIEnv* env, jclass, jlong handle) {
  IrodsCacheSet& caches = Caches(handle);
  return ferry::java::CacheStatsBytes(env, caches.list_stats(), caches.list_entries(), caches.list_weight());
}

}  // extern "C"

}  // namespace ferry::java
