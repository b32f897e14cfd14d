// IrodsClient: a pooled iRODS protocol client (XML protocol, iRODS 4.2/4.3
// servers and ferry's test peer).
//
// iRODS answers one request at a time per connection and keeps descriptors
// on the connection, so the client leases whole sessions from a core
// SessionPool: the start-up and login are paid once per connection, then
// reused; parallelism comes from the connection count. A stat, a query page
// or a collection call leases a session for one exchange (idempotent ones
// are retried once on a fresh connection if theirs dropped); a stream holds
// its session for as long as its descriptor is open.
//
//   ferry::irods::IrodsAccount a{.host = "127.0.0.1", .port = 1247,
//                                .zone = "tempZone", .user = "rods", .password = "rods"};
//   FERRY_ASSIGN_OR_RETURN(auto client, ferry::irods::IrodsClient::Connect(a));
//   FERRY_ASSIGN_OR_RETURN(ferry::irods::IrodsStat st, client->Stat("/tempZone/home/rods"));
//
// Errors: iRODS error codes become NotFound, PermissionDenied,
// Unauthenticated, AlreadyExists, FailedPrecondition, InvalidArgument or
// Unknown, each message naming the code, its name, the call and the path; a
// lost connection is Unavailable; a malformed reply DataLoss.
//
// Thread-safety: IrodsClient is thread-safe; an IrodsStream is not (one
// user at a time). REQUIRES: streams end before their client.
#ifndef FERRY_IRODS_IRODS_CLIENT_H_
#define FERRY_IRODS_IRODS_CLIENT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/large_buffer.h"
#include "ferry/rpc/session_pool.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/buffer_pool.h"
#include "ferry/runtime/retry_policy.h"

namespace ferry::irods {

struct IrodsAccount {
  std::string host;
  uint16_t port = 1247;
  std::string zone;
  // Who logs in (the proxy user, whose password this is) and, if another,
  // whom the session acts for (an admin acting for a user).
  std::string user;
  std::string password;
  // Where `password` came from, for a failed login's message ("$IRODS_PASSWORD",
  // "$IRODS_PASSWORD_FILE (/path)"); empty: set by the caller, or unset
  // when `password` is empty too.
  std::string password_source;
  std::string client_user;
  // Use 703/704 even against a 4.3 server (what Jargon and NFSRODS do).
  bool force_legacy_auth = false;
};

// The account the iCommands and python-irodsclient would use: the
// environment file ($IRODS_ENVIRONMENT_FILE, else
// ~/.irods/irods_environment.json: irods_host, irods_port,
// irods_user_name, irods_zone_name), then $IRODS_HOST, $IRODS_PORT,
// $IRODS_USER_NAME, $IRODS_ZONE_NAME; the password from $IRODS_PASSWORD or
// the first line of the file $IRODS_PASSWORD_FILE. Fields missing
// everywhere stay empty (the caller fills them, e.g. from a URL).
absl::StatusOr<IrodsAccount> LoadIrodsAccount();

struct IrodsClientOptions {
  // Connections open at most (each a login).
  int connections = 8;
  // GenQuery rows per page.
  int query_page_rows = 500;
  // Connects (start-up and login), calls, and the retry window. Retried
  // within the window on a new connection: stat, GenQuery before its
  // first page was handed out, read-only opens, reads of a read-only file,
  // collection creation with parents, ACL changes. Writes, removals,
  // renames and metadata changes are never sent twice.
  CallTimeouts timeouts;
  // The bound on read-ahead buffers (a stream reading small pieces keeps
  // one of 8 MiB), taken only when it has room and never waited for: a
  // stream that finds none reads as asked. Not owned; must outlive the
  // client. nullptr: a bound of the client's own, of
  // kDefaultReadAheadBytes. The filesystem registry's iRODS provider
  // passes its Runtime's read_ahead_budget().
  MemoryBudget* read_ahead_budget = nullptr;
};

// The read-ahead bound of a client given none: eight streams' windows.
inline constexpr int64_t kDefaultReadAheadBytes = int64_t{64} << 20;

enum class IrodsObjectType { kNone = 0, kDataObject = 1, kCollection = 2 };

struct IrodsStat {
  IrodsObjectType type = IrodsObjectType::kNone;
  int64_t size = 0;
  int64_t id = 0;
  int64_t modify_time = 0;  // epoch seconds
  uint32_t mode = 0;
  std::string owner;
  std::string checksum;
};

struct IrodsEntry {
  std::string name;  // last path component
  IrodsObjectType type = IrodsObjectType::kNone;
  int64_t size = 0;
  int64_t id = 0;
  int64_t modify_time = 0;
};

struct IrodsAvu {
  std::string attribute, value, units;
};

class IrodsClient;

// A reply: status (intInfo, >= 0), the packed message and the bs payload.
struct Reply {
  int64_t status = 0;
  std::string msg;
  std::string bs;
};

// One open data-object descriptor on its own leased session.
//
// Sequential reads are read ahead where the owner allows it
// (AllowReadAhead): iRODS answers a connection's requests in order, so
// once a read continues the one before it, the stream asks for the bytes
// after it before taking this reply, keeping up to a window (1 MiB,
// doubling per read to 8 MiB) of DATA_OBJ_READs in flight beyond the read
// being answered: the server sends the next bytes while the caller uses
// these. Reads of 1 MiB or more are asked ahead in pieces of their own
// size, each reply landing in the caller's buffer; smaller ones in whole
// windows, whose bytes wait in the stream's buffer, so a reader of small
// pieces pays a round trip per window, not per piece. That buffer is held
// under the client's read-ahead bound (IrodsClientOptions::
// read_ahead_budget) while anything is read ahead: with no room there,
// small pieces are read as asked, and the rest of a reply asked ahead is
// dropped (the next read seeks). A seek outside the bytes buffered, or
// any other call, first takes the replies in flight and drops what is
// left.
class IrodsStream {
 public:
  ~IrodsStream();  // closes (finalizing if primary) if still open
  // Reads up to n bytes at the stream position; 0 at the end.
  absl::StatusOr<size_t> Read(char* buf, size_t n);
  // Lets Read ask ahead for bytes below `end` (the object's size as the
  // owner knows it: never past it); 0 stops new read-ahead. Off at open.
  void AllowReadAhead(int64_t end) { read_ahead_end_ = end; }
  // As Read, into the local file range `to` (up to to.size bytes;
  // IrodsClient::CallIntoFile).
  absl::StatusOr<size_t> ReadIntoFile(const FileRange& to);
  // Writes all of `data` at the stream position.
  absl::Status Write(std::string_view data);
  // Writes `n` bytes of the local file `fd` from `offset` at the stream
  // position, sent by sendfile (Session::SendFileRange: never through this
  // process's memory). Returns `n`, or fewer if the file ended first: the
  // stream is then broken and the write did not happen.
  absl::StatusOr<size_t> WriteFromFile(int fd, int64_t offset, size_t n);
  // Moves the stream position; within bytes already read ahead, without
  // a call.
  absl::Status Seek(int64_t offset);
  int64_t position() const { return position_; }
  // The token other sessions join this replica with (GET_FILE_DESCRIPTOR_INFO).
  absl::StatusOr<std::string> ReplicaToken();
  // Closes the descriptor. A primary stream (the first opener) finalizes the
  // replica in the catalog (size, status); a joined one does not (it must
  // close before the primary, as iRODS requires).
  absl::Status Close();
  const std::string& path() const { return path_; }
  bool primary() const { return primary_; }
  // True once the stream's connection failed: its descriptor died with it.
  bool broken() const { return lease_ && lease_->broken(); }
  // Lets go of a broken stream without a close call (there is no
  // descriptor left to close); its session is closed, not reused.
  void Abandon();

 private:
  friend class IrodsClient;
  IrodsStream(IrodsClient* client, SessionLease lease, int64_t fd, std::string path, bool primary)
      : client_(client), lease_(std::move(lease)), fd_(fd), path_(std::move(path)), primary_(primary) {}
  // Bytes read ahead and not yet taken (they start at position_).
  size_t buffered() const { return ahead_end_ - ahead_begin_; }
  // Sends a DATA_OBJ_READ of `n` bytes at the server's position.
  absl::Status SendRead(size_t n);
  // Takes the reply to a read of `asked` bytes sent earlier: up to `n` of
  // its bytes into `buf` (how many is returned), the rest kept as read
  // ahead (REQUIRES: buffered() == 0).
  absl::StatusOr<size_t> ReceiveRead(size_t asked, char* buf, size_t n);
  // Before taking the reply to a read of `n` bytes that continues the
  // one before it: asks for the bytes after everything asked for, up to a
  // window beyond that read, where allowed.
  absl::Status ReadAhead(size_t n);
  // Makes the read-ahead buffer hold at least `rest` bytes, its bytes
  // under a ticket of the client's read-ahead bound; false when the bound
  // has no room for them (no buffer is held then).
  bool HoldAheadBuffer(size_t rest);
  // Gives the buffer back while nothing is read ahead (buffered or in
  // flight).
  void ReleaseIdleBuffer();
  // Gives the read-ahead buffer back to the client's pool, and its bytes
  // to the bound.
  void GiveBackBuffer();
  // Takes the reply in flight and drops every byte read ahead; the server's
  // position is then its own, not necessarily position_.
  absl::Status DropReadAhead();
  // DropReadAhead, the next read no longer sequential, and the stream at
  // `offset`, the server's position moved there if it is elsewhere: what a
  // seek outside the bytes read ahead, and any call but Read, needs first.
  absl::Status Settle(int64_t offset);
  // DATA_OBJ_LSEEK to `offset`, which the server must confirm.
  absl::Status SeekServer(int64_t offset);

  IrodsClient* client_;
  SessionLease lease_;
  int64_t fd_;
  std::string path_;
  bool primary_;
  bool open_ = true;
  int64_t position_ = 0;  // where the next Read reads
  // The descriptor's offset at the server once every request sent is
  // answered (-1: unknown, after a failed read, write or seek: the next
  // call seeks).
  int64_t server_position_ = 0;
  // Read-ahead: bytes [ahead_begin_, ahead_end_) of ahead_ are the
  // object's from position_; after them come the replies to the reads in
  // in_flight_ (their sizes, in the order sent; in_flight_bytes_ in all).
  // `window_` is how far beyond a read the last read-ahead asked (0 until
  // reads are sequential; each read that reaches the server doubles it);
  // `continues_`: reads since the last Settle (the next one is sequential).
  int64_t read_ahead_end_ = 0;
  // From the client's read_ahead_buffers_, its bytes under the client's
  // read-ahead bound; given back once nothing is read ahead.
  BoundedBuffer ahead_;
  size_t ahead_begin_ = 0;
  size_t ahead_end_ = 0;
  std::deque<size_t> in_flight_;
  size_t in_flight_bytes_ = 0;
  size_t window_ = 0;
  bool continues_ = false;
};

class IrodsClient {
 public:
  // Logs in once (so a wrong password or an unreachable server fails here)
  // and keeps that session for reuse.
  static absl::StatusOr<std::unique_ptr<IrodsClient>> Connect(IrodsAccount account,
                                                              IrodsClientOptions options = {});
  ~IrodsClient();

  absl::StatusOr<IrodsStat> Stat(std::string_view path);
  // Subcollections, then data objects, each in pages of query_page_rows
  // read by continuation index (never by counting rows, so entries added or
  // removed meanwhile cannot make a page skip or repeat). `on_batch` may
  // take the entries; returning false stops.
  absl::Status List(std::string_view collection,
                    absl::FunctionRef<bool(std::vector<IrodsEntry>&)> on_batch);
  absl::Status CreateCollection(std::string_view path, bool parents);
  absl::Status RemoveCollection(std::string_view path, bool recursive);
  absl::Status RemoveDataObject(std::string_view path);
  // Sets a data object's modification time (seconds; iRODS 4.3's touch,
  // never creating one).
  absl::Status SetModifyTime(std::string_view path, absl::Time mtime);
  // The data object's checksum as the server computes and records it
  // (DATA_OBJ_CHKSUM: "sha2:<base64 SHA-256>" under iRODS' default
  // scheme, hex MD5 under the MD5 one); the bytes stay on the server.
  absl::StatusOr<std::string> Checksum(std::string_view path);
  // Renames a data object or (is_collection) a collection.
  absl::Status Rename(std::string_view from, std::string_view to, bool is_collection);

  absl::Status AddMetadata(std::string_view path, bool is_collection, const IrodsAvu& avu);
  absl::Status RemoveMetadata(std::string_view path, bool is_collection, const IrodsAvu& avu);
  absl::StatusOr<std::vector<IrodsAvu>> ListMetadata(std::string_view path, bool is_collection);
  // Sets `user`'s access ("read", "write", "own", "null") on `path`.
  absl::Status SetAccess(std::string_view path, std::string_view user, std::string_view level,
                         bool recursive);
  // A user's type ("rodsadmin", "rodsuser", "groupadmin", "rodsgroup");
  // NotFound for an unknown user.
  absl::StatusOr<std::string> UserType(std::string_view user);
  // The logical path of the data object (or, is_collection, the
  // collection) whose catalog id is `id`: one GenQuery. NotFound when no
  // such object exists (removed), so a front end handing out ids as file
  // handles can tell a stale handle from another object.
  absl::StatusOr<std::string> PathOfId(int64_t id, bool is_collection);
  // (user, access name) pairs on a data object or collection.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetAccess(std::string_view path,
                                                                            bool is_collection);

  // Opens a data object (flags as POSIX: O_RDONLY, O_WRONLY|O_CREAT|O_TRUNC...).
  // A read-only open is retried as the options' timeouts.retry_window says.
  // A writer that knows the object's final size sends it as `data_size`
  // (DataObjInp's dataSize; -1: unknown), so the server can reserve it.
  absl::StatusOr<std::unique_ptr<IrodsStream>> Open(std::string_view path, int flags, int64_t data_size = -1);
  // Opens another descriptor of the replica a primary stream holds open
  // (its ReplicaToken) on another session, or ResourceExhausted if no
  // session is free right now (the caller then uses the streams it has:
  // waiting could deadlock files that each hold one).
  absl::StatusOr<std::unique_ptr<IrodsStream>> Join(std::string_view path, std::string_view replica_token,
                                                    int flags);

  const IrodsAccount& account() const { return account_; }
  const IrodsClientOptions& options() const { return options_; }
  // How idempotent calls are retried (IrodsClientOptions::timeouts.retry_window).
  RetryPolicy retry_policy() const;
  SessionPool& pool() { return *pool_; }

  // One request/reply on a leased session, answering interim
  // collection-stat replies. `context` names the call for messages.
  static absl::StatusOr<Reply> Call(Session& session, int api, std::string_view msg,
                                           std::string_view bs, std::string_view context);
  // A data call's reply: its status and how many payload bytes it put in
  // the caller's buffer.
  struct IntoReply {
    int64_t status = 0;
    size_t bs_size = 0;
  };
  // Call for a reply whose payload (a read's bytes) is received straight
  // into `out` (at most `out_size` bytes; more is DataLoss), uncopied.
  static absl::StatusOr<IntoReply> CallInto(Session& session, int api, std::string_view msg,
                                            std::string_view context, char* out, size_t out_size);
  // As CallInto, with the payload (at most `to.size` bytes) received into
  // the local file range `to` (Session::ReceiveRawIntoFile: spliced, never
  // through this process where the file and socket allow). A failed write
  // of the file is never Unavailable (the server is not at fault).
  static absl::StatusOr<IntoReply> CallIntoFile(Session& session, int api, std::string_view msg,
                                                std::string_view context, const FileRange& to);

 private:
  friend class IrodsStream;
  IrodsClient(IrodsAccount account, IrodsClientOptions options);
  // CallInto's and CallIntoFile's exchange: the payload of `bs` bytes (at
  // most out_size) is taken by `take(bs)` from the session, or by
  // `take_copy(bytes)` from a reply read whole.
  static absl::StatusOr<IntoReply> CallForPayload(
      Session& session, int api, std::string_view msg, std::string_view context, size_t out_size,
      absl::FunctionRef<absl::Status(size_t bs)> take,
      absl::FunctionRef<absl::Status(std::string_view bytes)> take_copy);
  // CallForPayload's reply, to a request already sent (a read sent ahead).
  static absl::StatusOr<IntoReply> ReceiveForPayload(
      Session& session, std::string_view context, size_t out_size,
      absl::FunctionRef<absl::Status(size_t bs)> take,
      absl::FunctionRef<absl::Status(std::string_view bytes)> take_copy);
  // Leases a session and calls; an idempotent call is retried on a fresh
  // session when its connection failed (retry_policy()).
  absl::StatusOr<Reply> CallPooled(int api, std::string_view msg, std::string_view context,
                                          bool idempotent);
  absl::Status Query(const std::vector<std::pair<int, int>>& select,
                     const std::vector<std::pair<int, std::string>>& conditions,
                     absl::FunctionRef<bool(const std::vector<std::vector<std::string>>&)> on_page,
                     std::string_view context);
  // One try of Query.
  absl::Status QueryOnce(const std::vector<std::pair<int, int>>& select,
                         const std::vector<std::pair<int, std::string>>& conditions,
                         absl::FunctionRef<bool(const std::vector<std::vector<std::string>>&)> on_page,
                         std::string_view context);
  // A session lease, retried while connects fail (retry_policy()).
  absl::StatusOr<SessionLease> AcquireWithRetry();
  absl::StatusOr<std::unique_ptr<IrodsStream>> OpenOn(SessionLease lease, std::string_view path,
                                                       int flags, std::string_view replica_token,
                                                       int64_t data_size = -1);

  const IrodsAccount account_;
  const IrodsClientOptions options_;
  std::unique_ptr<SessionPool> pool_;
  // Streams' read-ahead buffers, kept between opens (a reader of many
  // files touches the same pages): two windows idle at most.
  BufferPool read_ahead_buffers_;
  // The bound their bytes are under while a stream holds them: the
  // options' read_ahead_budget, or (given none) own_read_ahead_.
  MemoryBudget& read_ahead_budget();
  std::unique_ptr<MemoryBudget> own_read_ahead_;
};

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_CLIENT_H_
