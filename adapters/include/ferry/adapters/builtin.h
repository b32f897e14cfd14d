// RegisterBuiltinFileSystems: every adapter built into this ferry, registered
// with one call, so a tool or binding resolves nfs://, s3:// (and, once
// built, irods://) URLs without naming a protocol.
//
//   ferry::Runtime runtime;
//   ferry::fs::FileSystemRegistry registry(runtime);          // file:// built in
//   FERRY_RETURN_IF_ERROR(ferry::RegisterBuiltinFileSystems(registry));
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Location src, registry.Resolve(argv[1]));
//
// Thread-safety: call before the registry is shared.
#ifndef FERRY_ADAPTERS_BUILTIN_H_
#define FERRY_ADAPTERS_BUILTIN_H_

#include <cstdint>
#include <string>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"

namespace ferry {

// Settings a tool may pass to the adapters; 0 / false keep each adapter's
// own defaults (and, for S3, what the AWS environment says).
struct BuiltinFileSystemOptions {
  // S3: part and ranged-GET size, requests in flight per file.
  fs::ChunkPreferences s3_chunks;
  // S3: CreateDir of a bucket that does not exist creates it.
  bool s3_make_bucket = false;
  // S3, as the AWS CLI's flags (empty / false: the AWS environment and
  // ~/.aws decide): --endpoint-url (scheme://host[:port]), --profile,
  // --region, --no-sign-request (unsigned requests, public buckets).
  std::string s3_endpoint_url;
  std::string s3_profile;
  std::string s3_region;
  bool s3_no_sign_request = false;
  // S3: credentials given by the caller (both key and secret, or neither;
  // empty: the AWS chain as above).
  std::string s3_access_key_id;
  std::string s3_secret_access_key;
  std::string s3_session_token;
  // NFS: chunks in flight per file (NFS's chunk is the server's size); TCP
  // connections per mount.
  int nfs_parallelism = 0;
  int nfs_connections = 0;
  // iRODS: streams per file; connections (logins) per zone endpoint.
  int irods_parallelism = 0;
  int irods_connections = 0;
  // iRODS: act for this user (IrodsFileSystemOptions::client_user).
  std::string irods_client_user;
  // iRODS: the password, instead of $IRODS_PASSWORD / $IRODS_PASSWORD_FILE
  // (empty: those).
  std::string irods_password;
  // Every adapter, the one timeout setting: a request unanswered this long
  // after it was sent fails DeadlineExceeded (NFS: a call unanswered this
  // long after it was written, one that is safe to repeat first sent once
  // more; S3: a transfer that moves no byte this long, sent once more;
  // iRODS: each send and each reply wait on its session), connects (and
  // logins) get at most this long, and a wait for a free iRODS session
  // ends after this long without one coming back. So a call on a server
  // that stops answering ends within about twice this. Zero keeps each
  // adapter's default (60 s). Tools set it from a --timeout flag.
  absl::Duration io_timeout = absl::ZeroDuration();
};

// Registers nfs://, s3:// and irods:// (file:// is the registry's own).
absl::Status RegisterBuiltinFileSystems(fs::FileSystemRegistry& registry,
                                        const BuiltinFileSystemOptions& options = {});

}  // namespace ferry

#endif  // FERRY_ADAPTERS_BUILTIN_H_
