// NFSv3 and MOUNT v3 value types (RFC 1813): what NfsClient's calls take
// and return (file handles, attributes, status codes, directory entries,
// FSINFO). Plain values; the XDR that carries them is private to the
// adapter (src/internal/ferry/nfs/nfs3_xdr.h).
//
// Thread-safety: plain value types.
#ifndef FERRY_NFS_NFS3_TYPES_H_
#define FERRY_NFS_NFS3_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace ferry::nfs {

inline constexpr uint32_t kNfsProgram = 100003;
inline constexpr uint32_t kNfsVersion3 = 3;
inline constexpr uint32_t kMountProgram = 100005;
inline constexpr uint32_t kMountVersion3 = 3;
// NFS's well-known port (RFC 1813 section 1.6 / IANA).
inline constexpr uint16_t kNfsDefaultPort = 2049;

// RFC 1813 limits: NFS3_FHSIZE (nfs_fh3 data<64>), FHSIZE3 for MOUNT, the
// cookie and write verifiers (8 bytes), MNTPATHLEN.
inline constexpr uint32_t kMaxFileHandleSize = 64;
inline constexpr uint32_t kVerifierSize = 8;
inline constexpr uint32_t kMaxMountPathLength = 1024;
// Longest file name ferry accepts from a server. RFC 1813 leaves
// filename3 unbounded; NAME_MAX is 255 on every server we know, and 4 KiB
// bounds a hostile one generously.
inline constexpr uint32_t kMaxFileNameSize = 4096;

enum class Nfs3Proc : uint32_t {
  kNull = 0,
  kGetAttr = 1,
  kSetAttr = 2,
  kLookup = 3,
  kAccess = 4,
  kReadLink = 5,
  kRead = 6,
  kWrite = 7,
  kCreate = 8,
  kMkdir = 9,
  kSymlink = 10,
  kMknod = 11,
  kRemove = 12,
  kRmdir = 13,
  kRename = 14,
  kLink = 15,
  kReaddir = 16,
  kReaddirplus = 17,
  kFsStat = 18,
  kFsInfo = 19,
  kPathConf = 20,
  kCommit = 21,
};

enum class Mount3Proc : uint32_t {
  kNull = 0,
  kMnt = 1,
  kDump = 2,
  kUmnt = 3,
  kUmntAll = 4,
  kExport = 5,
};


// nfsstat3. Values outside the list are kept as they come.
enum class Nfs3Status : uint32_t {
  kOk = 0,
  kPerm = 1,
  kNoEnt = 2,
  kIo = 5,
  kNxio = 6,
  kAcces = 13,
  kExist = 17,
  kXdev = 18,
  kNoDev = 19,
  kNotDir = 20,
  kIsDir = 21,
  kInval = 22,
  kFBig = 27,
  kNoSpc = 28,
  kRofs = 30,
  kMLink = 31,
  kNameTooLong = 63,
  kNotEmpty = 66,
  kDQuot = 69,
  kStale = 70,
  kRemote = 71,
  kBadHandle = 10001,
  kNotSync = 10002,
  kBadCookie = 10003,
  kNotSupp = 10004,
  kTooSmall = 10005,
  kServerFault = 10006,
  kBadType = 10007,
  kJukebox = 10008,
};

// mountstat3.
enum class Mount3Status : uint32_t {
  kOk = 0,
  kPerm = 1,
  kNoEnt = 2,
  kIo = 5,
  kAcces = 13,
  kNotDir = 20,
  kInval = 22,
  kNameTooLong = 63,
  kNotSupp = 10004,
  kServerFault = 10006,
};

// ftype3.
enum class FileType : uint32_t {
  kRegular = 1,
  kDirectory = 2,
  kBlock = 3,
  kCharacter = 4,
  kSymlink = 5,
  kSocket = 6,
  kFifo = 7,
};

// "file", "dir", "symlink", "block", "char", "socket", "fifo", or
// "type N" for values RFC 1813 does not define.
std::string FileTypeName(FileType type);

// nfstime3.
struct NfsTime {
  uint32_t seconds = 0;
  uint32_t nseconds = 0;
  friend bool operator==(const NfsTime&, const NfsTime&) = default;
};

// As absl::Time; nseconds past a second carry over, as the sum says.
inline absl::Time ToAbslTime(const NfsTime& t) {
  return absl::FromUnixSeconds(t.seconds) + absl::Nanoseconds(t.nseconds);
}

// fattr3.
struct Fattr3 {
  FileType type = FileType::kRegular;
  uint32_t mode = 0;  // permission bits (07777), without the type
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;
  uint32_t rdev_major = 0;
  uint32_t rdev_minor = 0;
  uint64_t fsid = 0;
  uint64_t fileid = 0;
  NfsTime atime;
  NfsTime mtime;
  NfsTime ctime;
  friend bool operator==(const Fattr3&, const Fattr3&) = default;
};

// wcc_attr (pre-operation attributes).
struct WccAttr {
  uint64_t size = 0;
  NfsTime mtime;
  NfsTime ctime;
};

// wcc_data.
struct WccData {
  std::optional<WccAttr> before;
  std::optional<Fattr3> after;
};

// sattr3: which attributes SETATTR/CREATE/MKDIR set (nullopt: leave alone).
// Times are left alone (DONT_CHANGE) or set to the server's time.
struct Sattr3 {
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint64_t> size;
  bool atime_to_server_time = false;
  bool mtime_to_server_time = false;
  // Set to this client time (SET_TO_CLIENT_TIME): a copy keeps its
  // source's time.
  std::optional<NfsTime> mtime;
};

// An opaque file handle (nfs_fh3 data, at most 64 bytes).
using FileHandle = std::string;

// ACCESS3 bits.
inline constexpr uint32_t kAccessRead = 0x0001;
inline constexpr uint32_t kAccessLookup = 0x0002;
inline constexpr uint32_t kAccessModify = 0x0004;
inline constexpr uint32_t kAccessExtend = 0x0008;
inline constexpr uint32_t kAccessDelete = 0x0010;
inline constexpr uint32_t kAccessExecute = 0x0020;

// stable_how.
enum class StableHow : uint32_t { kUnstable = 0, kDataSync = 1, kFileSync = 2 };

// createmode3.
enum class CreateMode : uint32_t { kUnchecked = 0, kGuarded = 1, kExclusive = 2 };

// One entryplus3. `name` and `handle` view the reply record.
struct DirEntryPlus {
  uint64_t fileid = 0;
  std::string_view name;
  uint64_t cookie = 0;
  std::optional<Fattr3> attributes;
  std::optional<std::string_view> handle;
};

struct ReaddirplusResult {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<Fattr3> dir_attributes;
  uint64_t cookieverf = 0;
  std::vector<DirEntryPlus> entries;
  bool eof = false;
};

struct FsStat {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t available_bytes = 0;
  uint64_t total_files = 0;
  uint64_t free_files = 0;
  uint64_t available_files = 0;
  uint32_t invarsec = 0;
};

struct FsInfo {
  uint32_t rtmax = 0;
  uint32_t rtpref = 0;
  uint32_t rtmult = 0;
  uint32_t wtmax = 0;
  uint32_t wtpref = 0;
  uint32_t wtmult = 0;
  uint32_t dtpref = 0;
  uint64_t maxfilesize = 0;
  NfsTime time_delta;
  uint32_t properties = 0;
};

// One exportnode: the path and the groups allowed to mount it.
struct ExportEntry {
  std::string path;
  std::vector<std::string> groups;
};

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS3_TYPES_H_
