// Framing: how request/response records are delimited on a TCP stream.
//
// RpcPool is protocol-neutral: it writes framed records and reads records
// back through a Framing. Three are provided:
//   - ONC RPC record marking (RFC 5531 section 11): each record is one or
//     more fragments, each behind a 4-byte header whose top bit marks the
//     last fragment and whose low 31 bits give the fragment length;
//   - a 4-byte big-endian length prefix (used with protobuf messages);
//   - a header-described frame (a length-prefixed header that gives the
//     body's length: iRODS).
//
//   std::unique_ptr<ferry::Framing> f = ferry::NewRecordMarkingFraming({});
//   std::string wire;
//   f->Append(call_bytes, &wire);                 // header + call
//   auto reader = f->NewReader();
//   std::vector<std::string> records;
//   FERRY_RETURN_IF_ERROR(reader->Consume(received, &records));
#ifndef FERRY_RPC_FRAMING_H_
#define FERRY_RPC_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"

namespace ferry {

// A stretch of a local file: `size` bytes of descriptor `fd` from `offset`.
// `write_lock`, where given, is held across each write into it: the file's
// owner serializes its writers (concurrent writers of one file spin on its
// inode lock in the kernel; a waiter on this one sleeps).
struct FileRange {
  int fd = -1;
  int64_t offset = 0;
  size_t size = 0;
  Mutex* write_lock = nullptr;
};

// Writes `data` at `at` bytes into `to` (to.offset + at), under
// to.write_lock where given: received bytes put in a local file when they
// are not spliced. An error is PwriteAll's, naming the descriptor.
absl::Status WriteIntoRange(const FileRange& to, size_t at, std::span<const char> data);

// Turns one connection's byte stream into whole records. One per connection;
// not thread-safe.
class RecordReader {
 public:
  virtual ~RecordReader() = default;
  // Consumes `data` (any split of the stream: a byte at a time or many
  // records at once) and appends every record it completes to `records`.
  // The cost is linear in the bytes consumed however the stream is split.
  // A malformed stream (a record or fragment over the maximum size, a
  // zero-length record where none is allowed) is DataLoss naming the
  // offending size; the connection must then be dropped. Records completed
  // before the error are still appended. Errors are sticky: every later
  // call returns the same error.
  virtual absl::Status Consume(std::string_view data, std::vector<std::string>* records) = 0;
  // Stream bytes consumed since the last complete record (framing headers
  // included), i.e. the bytes of an incomplete record. Non-zero when the
  // peer closes means the stream was truncated mid-record.
  virtual size_t buffered_bytes() const = 0;

  // Placing a record's bulk bytes where they belong, so a large reply (an
  // NFS READ's data) goes from the socket straight into the caller's
  // buffer instead of being copied through the record. Optional: the
  // defaults place nothing.
  //
  // The bytes of the incomplete record received so far (empty between
  // records), less any already placed.
  virtual std::string_view partial_record() const { return {}; }
  // Sends bytes [offset, offset + dest.size()) of the incomplete record to
  // `dest` instead of the record: those already received are moved there
  // now, the rest go there as they arrive. The completed record then lacks
  // them (its bytes after the range follow its bytes before it). A record
  // that ends before the range is filled is DataLoss. One range per record;
  // false (nothing changes) if the reader cannot place, one is already
  // set, or there is no incomplete record.
  virtual bool Place(size_t /*offset*/, absl::Span<char> /*dest*/) { return false; }
  // Where the next bytes of the stream may be read directly: the part of
  // the placed range the current chunk still owes (never framing bytes).
  // Empty when the next bytes are not placed ones.
  virtual absl::Span<char> DirectTarget() { return {}; }
  // `n` bytes were read into the start of DirectTarget(): consumes them as
  // Consume would (completing records into `records`).
  virtual absl::Status CommitDirect(size_t /*n*/, std::vector<std::string>* /*records*/) {
    return absl::InternalError("this record reader places no bytes");
  }

  // As Place, into a file: bytes [offset, offset + file.size) of the
  // incomplete record go to `file` (pwrite for those that came through
  // Consume; the caller moves the rest there itself, DirectFile). A write
  // that fails does not stop the stream: the range's later bytes are
  // dropped, and placement_status() says why, until the next placement.
  virtual bool PlaceInFile(size_t /*offset*/, FileRange /*file*/) { return false; }
  // Where the next bytes of the stream may be moved directly into the
  // placed file (splice): as DirectTarget, for a range placed in a file
  // whose writes have not failed. fd -1 when not.
  virtual FileRange DirectFile() { return {}; }
  // The caller's write into DirectFile() failed (its bytes are still taken
  // by CommitDirect): placement_status() becomes `error`, and the range's
  // later bytes are dropped.
  virtual void FailPlacement(absl::Status /*error*/) {}
  // How the writes of the latest file placement went (that of the record
  // in progress or, once it completed, of that record). OK if none failed.
  virtual absl::Status placement_status() const { return absl::OkStatus(); }
};

// One run of a framed record on the wire, for a gather write: the framing's
// own bytes `framing_bytes[offset, offset + size)` (the caller's buffer, see
// Framing::AppendPieces), then `body`, a stretch of the record itself.
// Either part may be empty.
struct WirePiece {
  size_t offset = 0;
  size_t size = 0;
  std::string_view body;
};

// A way of delimiting records. Immutable after construction; thread-safe.
class Framing {
 public:
  virtual ~Framing() = default;
  // Appends `record`, framed, to `out` (existing contents are kept, so many
  // records can be batched into one write). REQUIRES: record.size() < 2^32.
  virtual void Append(std::string_view record, std::string* out) const = 0;
  // The same framing without copying the record, given as the
  // concatenation of `parts` (its bytes may lie in several places: an NFS
  // WRITE's header, its caller's data, the data's padding): appends the
  // framing's own bytes to `*framing_bytes` and, in wire order, the pieces
  // that make the framed record to `*pieces`; their bodies point into the
  // parts, which must outlive the write. Sending every piece's framing
  // bytes then its body sends what Append would have appended. The default
  // copies the record into `*framing_bytes` (one piece, no body).
  virtual void AppendPieces(absl::Span<const std::string_view> parts, std::string* framing_bytes,
                            std::vector<WirePiece>* pieces) const;
  // A record in one part.
  void AppendPieces(std::string_view record, std::string* framing_bytes,
                    std::vector<WirePiece>* pieces) const {
    AppendPieces(absl::MakeConstSpan(&record, 1), framing_bytes, pieces);
  }
  // The framing bytes of a record of `record_size` bytes when they all come
  // before it (a length prefix; record marking within one fragment), for a
  // record whose bytes the framing does not see (a payload sent from a
  // file, RpcCallOptions::payload_file): appended to `*prefix`. False,
  // and nothing appended, when this framing cannot frame it so (the
  // default; record marking over several fragments).
  virtual bool PrefixFor(size_t record_size, std::string* prefix) const;
  // A reader for one connection's stream. It does not refer to this Framing
  // and may outlive it.
  virtual std::unique_ptr<RecordReader> NewReader() const = 0;
  // "record-marking" or "length-prefix", for messages and metrics.
  virtual std::string_view name() const = 0;
};

struct RecordMarkingOptions {
  // Largest record accepted from the peer. NFS READ replies carry up to
  // rtmax (1 MiB on ganesha) plus headers; 64 MiB leaves ample room while
  // bounding what a hostile peer can make us buffer.
  size_t max_record_size = size_t{64} << 20;
  // Largest fragment written. RFC 5531 allows 2^31-1; many servers read
  // whole fragments, so we keep them well under their buffers. Values
  // outside [1, 2^31-1] are clamped into it.
  size_t max_fragment_size = size_t{1} << 20;
};

// ONC RPC record marking. The writer splits a record into fragments of at
// most max_fragment_size bytes (an empty record becomes one empty last
// fragment). The reader reassembles multi-fragment records, accepts
// zero-length fragments (including an empty last fragment that ends a
// record), and rejects as DataLoss a record over max_record_size (checked
// as each fragment header arrives, before its bytes are buffered) and an
// empty record (ONC RPC has none: every message starts with an xid).
std::unique_ptr<Framing> NewRecordMarkingFraming(const RecordMarkingOptions& options);

// A 4-byte big-endian length, then the record. Records longer than
// `max_record_size` are rejected by the reader as DataLoss (checked on the
// prefix, before the body is buffered). Empty records are valid.
std::unique_ptr<Framing> NewLengthPrefixFraming(size_t max_record_size = size_t{64} << 20);

// Reads a frame's header and returns how many body bytes follow it; an
// error if the header is malformed. Must be thread-safe and hold no state:
// every connection's reader calls it.
using HeaderBodyLength = std::function<absl::StatusOr<size_t>(std::string_view header)>;

struct HeaderDescribedOptions {
  // Largest header accepted (an iRODS MsgHeader_PI is ~200 bytes).
  size_t max_header_size = size_t{64} << 10;
  // Largest body accepted (iRODS sends up to 32 MiB of data inline, plus
  // its structures).
  size_t max_body_size = size_t{64} << 20;
};

// Frames whose length the peer announces inside a header of their own: a
// 4-byte big-endian header length, the header, then as many body bytes as
// `body_length` reads from the header. iRODS frames this way (an XML
// MsgHeader_PI whose msgLen + errorLen + bsLen give the body). The reader
// hands out whole frames (prefix, header and body) for the protocol to
// parse; Append writes a record as given, since the protocol builds the
// whole frame (header included). A header or body over its maximum, an
// empty header, or a body_length error is DataLoss, sticky like the
// other readers'. Use with RpcPool's ordered mode (replies carry no id).
std::unique_ptr<Framing> NewHeaderDescribedFraming(HeaderBodyLength body_length,
                                                   const HeaderDescribedOptions& options = {});

}  // namespace ferry

#endif  // FERRY_RPC_FRAMING_H_
