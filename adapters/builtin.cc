// The one place that knows every adapter built into this ferry.
#include "ferry/adapters/builtin.h"

#include <algorithm>

#include "ferry/base/status_macros.h"
#include "ferry/irods/irods_file_system.h"
#include "ferry/nfs/nfs_file_system.h"
#include "ferry/s3/s3_file_system.h"

namespace ferry {
namespace {

// The one timeout bounds each request and each connect (and login), so a
// tool's --timeout holds however the server fails.
void SetTimeout(absl::Duration timeout, CallTimeouts& t) {
  t.call = timeout;
  t.connect = std::min(t.connect, timeout);
}

}  // namespace

absl::Status RegisterBuiltinFileSystems(fs::FileSystemRegistry& registry,
                                        const BuiltinFileSystemOptions& options) {
  nfs::NfsFileSystemOptions nfs_options{.parallelism = options.nfs_parallelism};
  if (options.nfs_connections > 0) nfs_options.client.connections = options.nfs_connections;
  if (options.io_timeout > absl::ZeroDuration()) SetTimeout(options.io_timeout, nfs_options.client.timeouts);
  FERRY_RETURN_IF_ERROR(registry.Register("nfs", nfs::NewNfsProvider(nfs_options)));
  FERRY_RETURN_IF_ERROR(registry.Register(
      "s3", s3::NewS3Provider({.chunks = options.s3_chunks,
                               .make_bucket = options.s3_make_bucket,
                               .stall_timeout = options.io_timeout,
                               .config_overrides = {.endpoint_url = options.s3_endpoint_url,
                                                    .profile = options.s3_profile,
                                                    .region = options.s3_region,
                                                    .no_sign_request = options.s3_no_sign_request,
                                                    .access_key_id = options.s3_access_key_id,
                                                    .secret_access_key = options.s3_secret_access_key,
                                                    .session_token = options.s3_session_token}})));
  irods::IrodsFileSystemOptions irods_options{
      .chunks = {.parallelism = options.irods_parallelism}};
  if (options.irods_connections > 0) irods_options.client.connections = options.irods_connections;
  irods_options.client_user = options.irods_client_user;
  irods_options.password = options.irods_password;
  if (options.io_timeout > absl::ZeroDuration()) SetTimeout(options.io_timeout, irods_options.client.timeouts);
  FERRY_RETURN_IF_ERROR(registry.Register("irods", irods::NewIrodsProvider(irods_options)));
  return absl::OkStatus();
}

}  // namespace ferry
