// io.ferry.FileSystems: the registry of every built-in adapter on a Runtime,
// stat and copy through the core engine. No logic beyond the core's.
#include <memory>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/adapters/builtin.h"
#include "ferry/bindings/copy_urls.h"
#include "ferry/bindings/sync_urls.h"
#include "ferry/bindings/irods_ops.h"
#include "ferry/bindings/url_ops.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"
#include "file_systems.h"
#include "portal.h"
#include "progress.h"

namespace ferry::java {
namespace {

const char* KindName(ferry::fs::EntryKind k) {
  switch (k) {
    case ferry::fs::EntryKind::kFile: return "file";
    case ferry::fs::EntryKind::kDirectory: return "directory";
    case ferry::fs::EntryKind::kSymlink: return "symlink";
    case ferry::fs::EntryKind::kOther: return "other";
    case ferry::fs::EntryKind::kUnknown: break;
  }
  return "unknown";
}


// A reference of the call's own: a close() on another thread then frees
// nothing this call still uses.
FileSystemsHandle Get(jlong handle) { return *FromHandle<FileSystemsHandle>(handle); }

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_io_ferry_FileSystems_newFileSystems(JNIEnv* env, jclass, jlong runtime,
                                                                 jint irods_connections,
                                                                 jint irods_parallelism,
                                                                 jstring irods_client_user,
                                                                 jboolean s3_make_bucket) {
  auto fs = std::make_shared<NativeFileSystems>();
  fs->runtime = *FromHandle<std::shared_ptr<ferry::Runtime>>(runtime);
  fs->registry = std::make_unique<ferry::fs::FileSystemRegistry>(*fs->runtime);
  absl::Status s = ferry::RegisterBuiltinFileSystems(
      *fs->registry, {.s3_make_bucket = s3_make_bucket == JNI_TRUE,
                      .irods_parallelism = irods_parallelism,
                      .irods_connections = irods_connections,
                      .irods_client_user = irods_client_user == nullptr ? "" : ToStd(env, irods_client_user)});
  if (!s.ok()) {
    ThrowStatus(env, s);
    return 0;
  }
  return ToHandle(new FileSystemsHandle(std::move(fs)));
}

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_disposeFileSystems(JNIEnv*, jclass, jlong handle) {
  delete FromHandle<FileSystemsHandle>(handle);
}

JNIEXPORT jobject JNICALL Java_io_ferry_FileSystems_stat(JNIEnv* env, jclass, jlong handle, jstring url) {
  FileSystemsHandle fs = Get(handle);
  absl::StatusOr<ferry::fs::Location> where = fs->registry->Resolve(ToStd(env, url));
  if (!OkOrThrow(env, where)) return nullptr;
  absl::StatusOr<ferry::fs::Entry> e = where->fs->Stat(where->path);
  if (!OkOrThrow(env, e)) return nullptr;
  const jlong mtime = e->mtime == absl::InfinitePast() ? -1 : absl::ToUnixNanos(e->mtime);
  jstring path = ferry::java::ToJava(env, e->path);
  jstring kind = env->NewStringUTF(KindName(e->kind));
  const ferry::java::JniIds& ids = ferry::java::Ids();
  jobject out = env->NewObject(ids.entry, ids.entry_init, path, kind, static_cast<jlong>(e->size), mtime,
                               static_cast<jlong>(e->id), static_cast<jint>(e->mode),
                               static_cast<jint>(e->uid), static_cast<jint>(e->gid));
  env->DeleteLocalRef(path);
  env->DeleteLocalRef(kind);
  return out;
}

// TransferStats as records.proto bytes (bindings/common's CopyUrls), decoded in Java.
JNIEXPORT jbyteArray JNICALL Java_io_ferry_FileSystems_copy(JNIEnv* env, jclass, jlong handle, jstring src,
                                                            jstring dst, jboolean recursive,
                                                            jobject listener) {
  FileSystemsHandle fs = Get(handle);
  JavaProgress progress(env, listener);
  if (env->ExceptionCheck()) return nullptr;
  ferry::CopyOptions options;
  options.progress = progress.Callback();
  absl::StatusOr<std::string> stats = ferry::bindings::CopyUrls(
      *fs->runtime, *fs->registry, ToStd(env, src), ToStd(env, dst), recursive == JNI_TRUE, std::move(options));
  if (progress.RethrowIfThrown(env)) return nullptr;
  if (!OkOrThrow(env, stats)) return nullptr;
  return ferry::java::ToJavaBytes(env, *stats);
}

}  // extern "C"

namespace {

std::vector<std::string> ToStdVector(JNIEnv* env, jobjectArray a) {
  std::vector<std::string> out;
  const jsize n = a == nullptr ? 0 : env->GetArrayLength(a);
  for (jsize i = 0; i < n; ++i) {
    auto s = static_cast<jstring>(env->GetObjectArrayElement(a, i));
    out.push_back(ToStd(env, s));
    env->DeleteLocalRef(s);
  }
  return out;
}

jobjectArray ToJavaStrings(JNIEnv* env, const std::vector<std::string>& items) {
  jclass string_class = env->FindClass("java/lang/String");
  if (string_class == nullptr) return nullptr;
  jobjectArray out = ferry::java::ToArray(env, string_class, items, [&](const std::string& s) {
    return static_cast<jobject>(ferry::java::ToJava(env, s));
  });
  env->DeleteLocalRef(string_class);
  return out;
}

}  // namespace

extern "C" {

// bindings/common's SyncUrls; {long[] counts, String[] copied, deleted,
// warnings}, in SyncResult.fromNative's order. `compare`: SyncOptions.Compare's ordinal.
JNIEXPORT jobjectArray JNICALL Java_io_ferry_FileSystems_sync(
    JNIEnv* env, jclass, jlong handle, jstring src, jstring dst, jint compare, jboolean del,
    jboolean dry_run, jlong max_delete, jobjectArray include, jobjectArray exclude,
    jobjectArray filter, jobject listener) {
  static constexpr ferry::SkipRule kRules[] = {ferry::SkipRule::kSizeAndTime, ferry::SkipRule::kSizeOnly,
                                               ferry::SkipRule::kChecksum, ferry::SkipRule::kExisting,
                                               ferry::SkipRule::kNever};
  if (compare < 0 || compare >= static_cast<jint>(std::size(kRules))) {
    ThrowStatus(env, absl::InvalidArgumentError(absl::StrCat("sync: no compare rule ", compare)));
    return nullptr;
  }
  FileSystemsHandle fs = Get(handle);
  JavaProgress progress(env, listener);
  if (env->ExceptionCheck()) return nullptr;
  ferry::bindings::SyncRequest req;
  req.options.skip = kRules[compare];
  req.options.delete_extraneous = del == JNI_TRUE;
  req.options.dry_run = dry_run == JNI_TRUE;
  req.options.max_delete = max_delete;
  req.options.progress = progress.Callback();
  req.filter = {ToStdVector(env, include), ToStdVector(env, exclude), ToStdVector(env, filter)};
  absl::StatusOr<ferry::bindings::SyncReport> r = ferry::bindings::SyncUrls(
      *fs->runtime, *fs->registry, ToStd(env, src), ToStd(env, dst), std::move(req));
  if (progress.RethrowIfThrown(env)) return nullptr;
  if (!OkOrThrow(env, r)) return nullptr;
  const ferry::TreeCopyResult& t = r->result;
  const jlong counts[] = {t.dry_run ? 1 : 0,    t.totals.files,  t.files_up_to_date,
                          t.times_updated,      t.files_deleted, t.files_excluded,
                          t.entries_refused,    t.totals.bytes,  r->files.copied_unlisted,
                          r->files.deleted_unlisted};
  jlongArray jcounts = env->NewLongArray(static_cast<jsize>(std::size(counts)));
  if (jcounts == nullptr) return nullptr;
  env->SetLongArrayRegion(jcounts, 0, static_cast<jsize>(std::size(counts)), counts);
  jclass object_class = env->FindClass("java/lang/Object");
  if (object_class == nullptr) return nullptr;
  jobjectArray out = env->NewObjectArray(4, object_class, nullptr);
  env->DeleteLocalRef(object_class);
  if (out == nullptr) return nullptr;
  env->SetObjectArrayElement(out, 0, jcounts);
  const std::vector<std::string>* lists[] = {&r->files.copied, &r->files.deleted, &t.warnings};
  for (int i = 0; i < 3; ++i) {
    jobjectArray a = ToJavaStrings(env, *lists[i]);
    if (a == nullptr) return nullptr;
    env->SetObjectArrayElement(out, i + 1, a);
    env->DeleteLocalRef(a);
  }
  return out;
}

}  // extern "C"

// Namespace operations by URL (bindings/common's url_ops: one place for
// every binding).
extern "C" {

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_mkdir(JNIEnv* env, jclass, jlong handle, jstring url,
                                                       jboolean parents) {
  absl::Status s = ferry::bindings::MakeDirectory(*Get(handle)->registry, ToStd(env, url), parents == JNI_TRUE);
  if (!s.ok()) ThrowStatus(env, s);
}

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_remove(JNIEnv* env, jclass, jlong handle, jstring url) {
  absl::Status s = ferry::bindings::RemoveFile(*Get(handle)->registry, ToStd(env, url));
  if (!s.ok()) ThrowStatus(env, s);
}

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_rmdir(JNIEnv* env, jclass, jlong handle, jstring url) {
  absl::Status s = ferry::bindings::RemoveDirectory(*Get(handle)->registry, ToStd(env, url));
  if (!s.ok()) ThrowStatus(env, s);
}

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_rename(JNIEnv* env, jclass, jlong handle, jstring from,
                                                        jstring to) {
  absl::Status s = ferry::bindings::Rename(*Get(handle)->registry, ToStd(env, from), ToStd(env, to));
  if (!s.ok()) ThrowStatus(env, s);
}

// iRODS's own calls by URL (bindings/common's irods_ops): AVU metadata and
// access control.
JNIEXPORT jobjectArray JNICALL Java_io_ferry_FileSystems_irodsMetadata(JNIEnv* env, jclass,
                                                                      jlong handle, jstring url) {
  auto avus = ferry::bindings::ListIrodsMetadata(*Get(handle)->registry, ToStd(env, url));
  if (!OkOrThrow(env, avus)) return nullptr;
  const JniIds& ids = Ids();
  return ToArray(env, ids.irods_avu, *avus, [&](const ferry::irods::IrodsAvu& a) {
    const LocalString attribute(env, a.attribute), value(env, a.value), units(env, a.units);
    return CallOf(env, ids.irods_avu, ids.irods_avu_of, attribute.get(), value.get(), units.get());
  });
}

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_irodsModifyMetadata(JNIEnv* env, jclass, jlong handle,
                                                                    jstring url, jboolean add,
                                                                    jstring attribute, jstring value,
                                                                    jstring units) {
  const ferry::irods::IrodsAvu avu{ToStd(env, attribute), ToStd(env, value), ToStd(env, units)};
  ferry::fs::FileSystemRegistry& registry = *Get(handle)->registry;
  const absl::Status s = add == JNI_TRUE
                             ? ferry::bindings::AddIrodsMetadata(registry, ToStd(env, url), avu)
                             : ferry::bindings::RemoveIrodsMetadata(registry, ToStd(env, url), avu);
  if (!s.ok()) ThrowStatus(env, s);
}

JNIEXPORT jobjectArray JNICALL Java_io_ferry_FileSystems_irodsAccess(JNIEnv* env, jclass, jlong handle,
                                                                    jstring url) {
  auto acl = ferry::bindings::GetIrodsAccess(*Get(handle)->registry, ToStd(env, url));
  if (!OkOrThrow(env, acl)) return nullptr;
  const JniIds& ids = Ids();
  return ToArray(env, ids.irods_access, *acl, [&](const std::pair<std::string, std::string>& p) {
    const LocalString user(env, p.first), access(env, p.second);
    return CallOf(env, ids.irods_access, ids.irods_access_of, user.get(), access.get());
  });
}

JNIEXPORT void JNICALL Java_io_ferry_FileSystems_setIrodsAccess(JNIEnv* env, jclass, jlong handle,
                                                               jstring url, jstring user, jstring level,
                                                               jboolean recursive) {
  const absl::Status s =
      ferry::bindings::SetIrodsAccess(*Get(handle)->registry, ToStd(env, url), ToStd(env, user),
                                      ToStd(env, level), recursive == JNI_TRUE);
  if (!s.ok()) ThrowStatus(env, s);
}

JNIEXPORT jstring JNICALL Java_io_ferry_FileSystems_irodsPathOfId(JNIEnv* env, jclass, jlong handle,
                                                                  jstring url, jlong id,
                                                                  jboolean collection) {
  auto path = ferry::bindings::IrodsPathOfId(*Get(handle)->registry, ToStd(env, url), id,
                                             collection == JNI_TRUE);
  if (!OkOrThrow(env, path)) return nullptr;
  return ToJava(env, *path);
}

}  // extern "C"

}  // namespace ferry::java
