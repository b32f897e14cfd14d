// IrodsFileSystem: an iRODS zone as a ferry::fs::FileSystem (scheme
// "irods"), over IrodsClient.
//
// URLs: irods://[user@]host[:port]/zone/path. The account comes from
// LoadIrodsAccount (irods_environment.json, IRODS_*; password from
// IRODS_PASSWORD or IRODS_PASSWORD_FILE); the URL's host, port and user
// override it. Paths on the filesystem are logical paths without the
// leading '/' ("tempZone/home/rods/x").
//
// With IrodsFileSystemOptions::cache, Stat and List are served from
// NFSRODS's caches (IrodsCacheSet), which this filesystem's own writes,
// removes and renames invalidate.
//
// Collections are directories, data objects files. Stat is ObjStat; List
// is GenQuery paged by continuation index; Walk the core's breadth-first
// walk over List. A reader or writer opens one primary stream and, as the
// transfer engine reads or writes chunks in parallel, joins more streams
// to the same replica by its token on other connections (the model
// python-irodsclient uses), up to the filesystem's parallelism; joined
// streams close before the primary, which finalizes the replica. A writer
// writes to a hidden temporary name beside the target and renames it into
// place at Close, so the target never holds a partial object; Discard (or
// a failed transfer) removes the temporary.
//
// Thread-safety: thread-safe. Blocking calls: not on an I/O thread.
#ifndef FERRY_IRODS_IRODS_FILE_SYSTEM_H_
#define FERRY_IRODS_IRODS_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"
#include <optional>

#include "ferry/irods/irods_cache.h"
#include "ferry/irods/irods_client.h"

namespace ferry::irods {

struct IrodsFileSystemOptions {
  IrodsClientOptions client;
  // Bytes per engine chunk (one read or write call) and streams per file;
  // 0: 8 MiB and 4.
  fs::ChunkPreferences chunks;
  // NFSRODS's caches for Stat and List (off by default: a one-shot copy
  // gains nothing). Changes made through this filesystem invalidate them;
  // changes by other clients show after the refresh times.
  std::optional<IrodsCacheOptions> cache;
  // Act for this user on every URL (a proxy login, as NFSRODS acts for the
  // NFS caller: the URL's user logs in and must be a rodsadmin; the
  // server then checks each call's permissions as this user's). Empty:
  // act as the URL's user.
  std::string client_user;
  // The password of every login, instead of the account's
  // ($IRODS_PASSWORD, $IRODS_PASSWORD_FILE). Empty: the account's.
  std::string password;
};

// The fs::FileSystem operations are those of the interface (see the top of
// this file for how iRODS carries them out); this class adds only what is
// iRODS's own. Made by Connect.
class IrodsFileSystem : public fs::FileSystem {
 public:
  static absl::StatusOr<std::shared_ptr<IrodsFileSystem>> Connect(IrodsAccount account,
                                                                  const IrodsFileSystemOptions& options = {});
  virtual IrodsClient& client() = 0;
  // The caches, or null when IrodsFileSystemOptions::cache was not set.
  virtual IrodsCacheSet* caches() = 0;

  // Drops cached state for a logical path its files changed (IrodsFile's
  // Close calls it).
  virtual void NoteChanged(std::string_view logical_path) = 0;

  // iRODS's own calls on a filesystem path, a data object or a collection
  // (told apart by a Stat, so callers need not say which): AVU metadata,
  // and access control. Levels are "read", "write", "own" or "null" (which
  // revokes); GetAccess answers (user, access name) pairs as the catalog
  // names them ("read_object", "modify_object", "own"). SetAccess drops the
  // path's cached permissions (below it too when recursive); GetAccess is
  // served from the permissions cache when there is one.
  virtual absl::Status AddMetadata(std::string_view path, const IrodsAvu& avu) = 0;
  virtual absl::Status RemoveMetadata(std::string_view path, const IrodsAvu& avu) = 0;
  virtual absl::StatusOr<std::vector<IrodsAvu>> ListMetadata(std::string_view path) = 0;
  virtual absl::Status SetAccess(std::string_view path, std::string_view user, std::string_view level,
                                 bool recursive) = 0;
  virtual absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetAccess(
      std::string_view path) = 0;
};

// The logical path of a filesystem path: "/" + path.
std::string LogicalPath(std::string_view path);

// What an irods:// URL names: LoadIrodsAccount's account with the URL's
// user, host and port (the zone from the path when the environment names
// none), and the filesystem path (normalized, no leading '/').
// InvalidArgument for a URL that is not irods://[user@]host[:port]/zone/...
struct IrodsUrl {
  IrodsAccount account;
  std::string path;
};
absl::StatusOr<IrodsUrl> ParseIrodsUrl(std::string_view url);

// irods:// URLs -> one IrodsFileSystem per host, port and user.
std::unique_ptr<fs::FileSystemProvider> NewIrodsProvider(const IrodsFileSystemOptions& options = {});

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_FILE_SYSTEM_H_
