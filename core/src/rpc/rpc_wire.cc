// RpcPool on the wire: a write takes every call pending on its connection,
// stamps xids and frames them into one buffer; a read splits its bytes into
// records and matches each to its call (by xid, or in order).
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "asio/bind_executor.hpp"
#include "asio/post.hpp"
#include "asio/write.hpp"
#include "ferry/base/strings.h"
#include "ferry/io/internal/positional_io.h"
#include "rpc/rpc_pool_core.h"
#include "rpc/sigpipe_held.h"

namespace ferry::rpc_pool_internal {
namespace {

// Write buffers above this are released after their write, so one burst of
// large requests does not pin its memory for the connection's lifetime.
constexpr size_t kMaxRetainedWriteBuffer = size_t{4} << 20;
// Requests from this size on are sent from where they are (a gather write)
// instead of being copied into the write buffer, and one that must be kept
// for a resend is shared with the write instead of copied: an NFS WRITE of
// 1 MiB then costs no copy in the pool. Smaller ones are copied, so a burst
// of small calls still goes out as one contiguous buffer.
constexpr size_t kSendInPlaceFrom = size_t{64} << 10;
// The read at a record boundary after a placed reply: an NFS READ reply's
// headers (~130 bytes) and little else.
constexpr size_t kPlacedHeaderRead = 512;
// Placed bytes for a file are spliced only while at least this many are
// left (in the record's current fragment): a splice takes two system
// calls and, on a connection's first use, five more for its pipe, while
// reading fewer bytes costs one copy of a few microseconds. A small
// file's whole reply then comes in one read, and a large reply's tail in
// the read that takes the next header.
constexpr size_t kSpliceFrom = size_t{64} << 10;
// A placer still asking for more after this much of the record has
// arrived is answered for it: the record is read whole.
constexpr size_t kMaxPlacementPrefix = size_t{64} << 10;
// The largest request a caller writes itself (SendByCallerLocked): one
// that an idle socket's buffer takes whole, written in one system call
// under the pool's lock.
constexpr size_t kSendByCallerMax = size_t{16} << 10;

void WriteBigEndian32(uint32_t v, char* p) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

uint32_t ReadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

}  // namespace

// ---------------------------------------------------------------------------
// Writing.

uint32_t PoolCore::NextXidLocked(const ConnShared& sh) {
  uint32_t x = next_xid_++;
  // After 2^32 calls an id may come round while its first user is still in
  // flight (or tombstoned) on this connection: skip it.
  while (sh.by_xid.contains(x)) x = next_xid_++;
  return x;
}

void PoolCore::MarkSentLocked(ConnShared& sh, Call* call, absl::Time now, SteadyTime steady_now) {
  call->state = CallState::kInFlight;
  call->sent_at = now;
  call->sent_steady = steady_now;
  // The deadline runs from now: a call that waited behind a busy
  // connection still gets its whole timeout from the server. Never
  // earlier than before, so the armed timer at worst fires early and
  // re-arms.
  if (call->heap_index >= 0) {
    const SteadyTime from_send = DeadlineAfter(steady_now, call->timeout);
    if (from_send > call->deadline) {
      call->deadline = from_send;
      deadlines_.Postponed(call);
    }
  }
  if (++call->attempts == 1) m_.queue_time.Record(now - call->accepted_at);
  if (by_id_) {
    // A retry keeps its xid (a server's duplicate request cache knows it)
    // unless this connection already uses it.
    if (!call->has_xid || sh.by_xid.contains(call->xid)) {
      call->xid = NextXidLocked(sh);
      call->has_xid = true;
      if (call->shared_request != nullptr) {
        // An earlier write may still be sending these bytes: stamp a copy.
        call->shared_request = std::make_shared<std::string>(*call->shared_request);
      }
      WriteBigEndian32(call->xid, call->shared_request != nullptr
                                      ? call->shared_request->data()
                                      : call->request.data());
    }
    sh.by_xid.emplace(call->xid, call);
  } else {
    sh.in_order.PushBack(call);
  }
  ++sh.metrics.calls_sent;
}

bool PoolCore::SendByCallerLocked(int conn, Call* call, Kicks* kicks) {
  ConnShared& sh = shared(conn);
  // Only on an idle connection (nothing assigned, in flight or being
  // written: a burst's later calls still go out in one write of the
  // strand's), only small records without a payload (pinned memory stays
  // the strand's business).
  if (sh.sender == nullptr || sh.state != ConnState::kReady || sh.load != 0 || sh.write_kicked ||
      !call->payload.empty() || call->payload_file.fd >= 0 || call->request.size() > kSendByCallerMax) {
    return false;
  }
  call->conn = conn;
  ++sh.load;
  MarkSentLocked(sh, call, NowFrom(options_.clock), SteadyClock::now());
  const OutRecord record = TakeRequest(*call);
  // Framed in the buffer that keeps what the socket does not take: empty
  // on an idle connection, and its capacity stays for the next call.
  std::string& framed = sh.sent_by_caller_rest;
  options_.framing->Append(record.bytes(), &framed);
  // Under the lock: the strand closes the socket only after clearing
  // sh.sender under it, so the descriptor is this session's and open.
  const ssize_t n = ::send(sh.sender->socket.native_handle(), framed.data(), framed.size(),
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  const size_t sent = n > 0 ? static_cast<size_t>(n) : 0;
  sh.metrics.bytes_sent += sent;
  m_.bytes_sent += sent;
  ++m_.sent_by_caller;
  if (sent == framed.size()) {
    framed.clear();
    return true;
  }
  // A full socket buffer (or an error, which the strand's write meets and
  // handles as a lost connection): the strand sends the rest.
  framed.erase(0, sent);
  sh.write_kicked = true;
  kicks->push_back(conn);
  return true;
}

void PoolCore::DoWrite(Connection* c, size_t bytes_written) {
  const std::shared_ptr<Session>& s = c->session;
  if (s == nullptr || s->dead || !s->ready || s->writing) return;
  {
    MutexLock l(&mu_);
    ConnShared& sh = shared(c->index);
    if (bytes_written > 0) {
      sh.metrics.bytes_sent += bytes_written;
      m_.bytes_sent += bytes_written;
    }
    // Not kReady: the connection is being recycled; Lost re-queues these.
    if (sh.session_gen != s->gen || sh.state != ConnState::kReady) {
      sh.sent_by_caller_rest.clear();
      sh.write_kicked = false;
      return;
    }
    if (sh.pending.empty() && sh.sent_by_caller_rest.empty()) {
      sh.write_kicked = false;
      return;
    }
    // What a caller's own write left goes first: it is a record begun.
    if (!sh.sent_by_caller_rest.empty()) {
      s->write_buf.assign(sh.sent_by_caller_rest);
      sh.sent_by_caller_rest.clear();
    }
    const absl::Time now = NowFrom(options_.clock);
    const SteadyTime steady_now = SteadyClock::now();
    while (Call* call = sh.pending.PopFront()) {
      if (call->payload_file.fd >= 0) {
        // Alone on the wire: what came before it goes first.
        if (!s->write_scratch.empty() || !s->write_buf.empty()) {
          sh.pending.PushFront(call);
          break;
        }
        MarkSentLocked(sh, call, now, steady_now);
        s->write_scratch.push_back(TakeRequest(*call));
        call->writing = true;
        s->writing_calls.push_back(call);
        s->file_write = FileWrite{.call = call,
                                  .fd = call->payload_file.fd,
                                  .offset = static_cast<off_t>(call->payload_file.offset),
                                  .left = call->payload_file.size,
                                  .size = call->payload_file.size};
        break;
      }
      MarkSentLocked(sh, call, now, steady_now);
      s->write_scratch.push_back(TakeRequest(*call));
      if (!call->payload.empty()) {
        call->writing = true;
        s->writing_calls.push_back(call);
      }
    }
  }
  if (s->file_write.call != nullptr) {
    StartFileWrite(s);
    return;
  }
  FrameWrite(*s);  // outside the lock: it copies the small records
  s->writing = true;
  asio::async_write(s->socket, s->write_iov,
                    asio::bind_executor(c->strand, [this, s](const std::error_code& ec, size_t n) {
                      OnWritten(s, ec, n);
                    }));
}

OutRecord PoolCore::TakeRequest(Call& call) {
  // Only a call that may be sent again keeps its bytes: after a lost
  // connection (attempts left) or once after its deadline.
  const bool keep = call.idempotent && (call.attempts < call.max_attempts || !call.resent_after_timeout);
  if (call.shared_request == nullptr && keep && call.request.size() >= kSendInPlaceFrom) {
    call.shared_request = std::make_shared<std::string>(std::move(call.request));
    call.request = std::string();
  }
  if (call.shared_request != nullptr) {
    return OutRecord{.shared = keep ? call.shared_request : std::move(call.shared_request),
                     .payload = call.payload,
                     .payload_at = call.payload_at,
                     .payload_file = call.payload_file};
  }
  return OutRecord{.owned = keep ? call.request : std::move(call.request),
                   .payload = call.payload,
                   .payload_at = call.payload_at,
                   .payload_file = call.payload_file};
}

void PoolCore::StartFileWrite(const std::shared_ptr<Session>& s) {
  const OutRecord& r = s->write_scratch.front();
  const std::string_view bytes = r.bytes();
  // Submit checked that the framing can frame the record so.
  options_.framing->PrefixFor(bytes.size() + r.payload_file.size, &s->write_buf);
  s->write_buf.append(bytes.substr(0, r.payload_at));
  s->writing = true;
  asio::async_write(s->socket, asio::buffer(s->write_buf),
                    asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec, size_t n) {
                      s->file_write.sent += n;
                      if (ec) return EndFileWrite(s, ec);
                      SendFileSome(s);
                    }));
}

namespace {

// Errors of the connection, as opposed to the file sendfile reads.
bool IsSocketError(int e) {
  return e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ETIMEDOUT || e == ECONNABORTED ||
         e == EHOSTUNREACH || e == ENETUNREACH || e == ENETDOWN || e == ENOBUFS || e == ENOMEM;
}

// Zeros that complete a record whose file could not give its bytes.
constexpr size_t kZeroFill = 64 << 10;
constexpr char kZeros[kZeroFill] = {};

}  // namespace

void PoolCore::SendFileSome(const std::shared_ptr<Session>& s) {
  FileWrite& w = s->file_write;
  if (s->dead) return EndFileWrite(s, asio::error::operation_aborted);  // Lost has ended the calls
  const int sock = s->socket.native_handle();
  std::error_code failed;
  int file_errno = 0;
  {
    // sendfile has no MSG_NOSIGNAL: SIGPIPE is held for this thread while
    // it runs, and one it raised taken back.
    SigpipeHeld held;
    if (!s->socket.native_non_blocking()) s->socket.native_non_blocking(true, failed);
    while (!failed && w.left > 0) {
      const ssize_t n = ::sendfile(sock, w.fd, &w.offset, w.left);
      if (n > 0) {
        w.left -= static_cast<size_t>(n);
        w.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        s->socket.async_wait(asio::socket_base::wait_write,
                             asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec) {
                               if (ec) return EndFileWrite(s, ec);
                               SendFileSome(s);
                             }));
        return;
      }
      if (n == 0) break;  // the file ended
      if (IsSocketError(errno)) {
        failed = std::error_code(errno, std::system_category());
      } else {
        file_errno = errno;  // the file's fault: an I/O error, a file sendfile cannot read
        break;
      }
    }
  }
  if (failed) return EndFileWrite(s, failed);
  if (w.left > 0) {
    // The file ended before its range, or could not be read. The record's
    // length is on the wire: zeros complete it (they only reach the
    // server's temporary, which the caller discards), so the connection
    // and its other calls go on, and the call fails, not sent again (its
    // reply finds a tombstone).
    const size_t got = w.size - w.left;
    absl::Status why;
    if (file_errno == 0) {
      why = absl::FailedPreconditionError(absl::StrCat(
          "rpc to ", target_, ": the file sent as the payload ended after ", got, " of ", w.size, " bytes"));
    } else if (got == 0 && (file_errno == EINVAL || file_errno == ENOSYS || file_errno == EOPNOTSUPP ||
                              file_errno == ESPIPE)) {
      // Its filesystem cannot feed sendfile: the caller sends bytes instead.
      why = absl::UnimplementedError(absl::StrCat("rpc to ", target_,
                                                  ": sendfile cannot read the payload's file: ",
                                                  std::strerror(file_errno)));
    } else {
      why = absl::DataLossError(absl::StrCat("rpc to ", target_, ": reading the file sent as the payload: ",
                                             std::strerror(file_errno)));
    }
    {
      MutexLock l(&mu_);
      if (w.call->abandoned.ok()) {
        ++m_.calls_failed;
        w.call->abandoned = std::move(why);
      }
    }
    SendFileZeros(s);
    return;
  }
  SendFileTail(s);
}

void PoolCore::SendFileZeros(const std::shared_ptr<Session>& s) {
  const size_t n = std::min(s->file_write.left, kZeroFill);
  asio::async_write(s->socket, asio::buffer(kZeros, n),
                    asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec, size_t k) {
                      if (ec) return EndFileWrite(s, ec);
                      s->file_write.left -= k;
                      s->file_write.sent += k;
                      if (s->file_write.left > 0) {
                        SendFileZeros(s);
                      } else {
                        SendFileTail(s);
                      }
                    }));
}

void PoolCore::SendFileTail(const std::shared_ptr<Session>& s) {
  const OutRecord& r = s->write_scratch.front();
  const std::string_view tail = r.bytes().substr(r.payload_at);
  asio::async_write(s->socket, asio::buffer(tail.data(), tail.size()),
                    asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec, size_t n) {
                      s->file_write.sent += n;
                      EndFileWrite(s, ec);
                    }));
}

void PoolCore::EndFileWrite(const std::shared_ptr<Session>& s, const std::error_code& ec) {
  const size_t sent = ec ? 0 : s->file_write.sent;
  s->file_write = FileWrite{};
  OnWritten(s, ec, sent);
}

void PoolCore::FrameWrite(Session& s) const {
  s.write_pieces.clear();
  // Bytes already in write_buf (the rest of a caller's own write) go first.
  if (!s.write_buf.empty()) s.write_pieces.push_back(WirePiece{.offset = 0, .size = s.write_buf.size()});
  for (const OutRecord& r : s.write_scratch) {
    const std::string_view bytes = r.bytes();
    if (!r.payload.empty()) {
      const std::string_view parts[] = {bytes.substr(0, r.payload_at), r.payload, bytes.substr(r.payload_at)};
      options_.framing->AppendPieces(parts, &s.write_buf, &s.write_pieces);
    } else if (bytes.size() >= kSendInPlaceFrom) {
      options_.framing->AppendPieces(bytes, &s.write_buf, &s.write_pieces);
    } else {
      const size_t offset = s.write_buf.size();
      options_.framing->Append(bytes, &s.write_buf);
      s.write_pieces.push_back(WirePiece{.offset = offset, .size = s.write_buf.size() - offset});
    }
  }
  // The gather list, once write_buf has stopped growing; framing bytes
  // that follow each other in write_buf go out as one buffer.
  s.write_iov.clear();
  size_t run_offset = 0;
  size_t run_size = 0;
  auto flush_run = [&] {
    if (run_size > 0) s.write_iov.emplace_back(s.write_buf.data() + run_offset, run_size);
    run_size = 0;
  };
  for (const WirePiece& p : s.write_pieces) {
    if (p.size > 0) {
      if (run_size > 0 && run_offset + run_size == p.offset) {
        run_size += p.size;
      } else {
        flush_run();
        run_offset = p.offset;
        run_size = p.size;
      }
    }
    if (!p.body.empty()) {
      flush_run();
      s.write_iov.emplace_back(p.body.data(), p.body.size());
    }
  }
  flush_run();
}

void PoolCore::OnWritten(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n) {
  s->writing = false;
  s->write_scratch.clear();  // the records' bytes are sent (or the write failed)
  if (s->write_buf.capacity() > kMaxRetainedWriteBuffer) {
    std::string().swap(s->write_buf);
  } else {
    s->write_buf.clear();
  }
  if (s->dead) return;
  if (ec) {
    Lost(s, absl::StatusCode::kUnavailable, absl::StrCat("write failed: ", ec.message()));
    return;
  }
  if (!s->writing_calls.empty()) {
    // Their payloads are sent: the caller's memory is theirs again.
    {
      MutexLock l(&mu_);
      UnpinWritesLocked(*s, &s->completions);
    }
    RunCompletions(&s->completions);
  }
  DoWrite(s->conn, n);
}

// ---------------------------------------------------------------------------
// Reading.

void PoolCore::StartRead(const std::shared_ptr<Session>& s) {
  const FileRange file = s->reader->DirectFile();
  const bool may_splice = !s->splice_off && !s->placement_splice_off && file.fd >= 0;
  if (may_splice && file.size >= kSpliceFrom) {
    // Placed bytes for a file: spliced from the socket once it has some.
    s->socket.async_wait(asio::socket_base::wait_read,
                         asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec) {
                           OnSpliceReady(s, ec);
                         }));
    return;
  }
  const absl::Span<char> direct = s->reader->DirectTarget();
  if (!direct.empty()) {
    // Placed bytes: from the socket straight into the caller's memory.
    s->socket.async_read_some(
        asio::buffer(direct.data(), direct.size()),
        asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec, size_t n) {
          OnRead(s, ec, n, /*direct=*/true);
        }));
    return;
  }
  size_t want = options_.read_buffer_bytes;
  if (s->expect_placed && s->reader->buffered_bytes() == 0) {
    // After a placed reply the next is likely placed too: a short read at a
    // record boundary takes its header without buffering its bulk first.
    want = kPlacedHeaderRead;
  } else if (may_splice) {
    // The tail of a placement that splices: read with no more than the
    // next reply's header, whose bulk may then be spliced in turn.
    want = file.size + kPlacedHeaderRead;
  }
  want = std::min(want, options_.read_buffer_bytes);
  s->socket.async_read_some(
      asio::buffer(s->read_buf.get(), want),
      asio::bind_executor(s->conn->strand,
                          [this, s](const std::error_code& ec, size_t n) { OnRead(s, ec, n, false); }));
}

void PoolCore::MaybePlace(const std::shared_ptr<Session>& s) {
  if (!by_id_ || s->placing_call != nullptr || s->placement_decided) return;
  const std::string_view prefix = s->reader->partial_record();
  if (prefix.size() < 4) return;
  MutexLock l(&mu_);
  ConnShared& sh = shared(s->conn->index);
  if (shutting_down_ || sh.session_gen != s->gen) return;
  auto it = sh.by_xid.find(ReadBigEndian32(prefix.data()));
  Call* call = it == sh.by_xid.end() ? nullptr : it->second;
  if (call == nullptr || !call->placer || !call->abandoned.ok()) {
    s->placement_decided = true;  // the record's end says what it is
    return;
  }
  const RpcPlacement p = call->placer(prefix);
  if (p.decision == RpcPlacement::Decision::kAskAgain && prefix.size() < kMaxPlacementPrefix) return;
  s->placement_decided = true;
  if (p.decision != RpcPlacement::Decision::kPlace) return;
  // Never the id: ProcessReplies reads it from the record.
  const bool in_file = p.dest.empty();
  if (p.offset < 4 ||
      !(in_file ? s->reader->PlaceInFile(p.offset, p.file) : s->reader->Place(p.offset, p.dest))) {
    call->placer(std::string_view());  // void: the record is read whole
    return;
  }
  call->placing = true;
  s->placing_call = call;
  s->placement_splice_off = false;
  ++m_.replies_placed;
  m_.bytes_placed += in_file ? p.file.size : p.dest.size();
}

void PoolCore::OnSpliceReady(const std::shared_ptr<Session>& s, const std::error_code& ec) {
  if (s->dead) return;
  if (ec) {
    OnRead(s, ec, 0, false);
    return;
  }
  const FileRange to = s->reader->DirectFile();
  if (to.fd < 0) {
    StartRead(s);
    return;
  }
  if (!s->socket.native_non_blocking()) {  // asio's reads made it so already
    std::error_code ignored;
    s->socket.native_non_blocking(true, ignored);
  }
  const internal::SplicePipe::Outcome o =
      s->splice.Move(s->socket.native_handle(), to,
                     absl::Span<char>(s->read_buf.get(), options_.read_buffer_bytes));
  if (o.file_refused_splice) s->placement_splice_off = true;
  if (o.moved == 0) {
    using Socket = internal::SplicePipe::Outcome::Socket;
    switch (o.socket()) {
      case Socket::kEnded:
        OnRead(s, asio::error::eof, 0, false);
        return;
      case Socket::kNotReady:
        StartRead(s);
        return;
      case Socket::kRefusesSplice:
        // This socket cannot be spliced: its placed bytes are read and
        // written by the reader from now on.
        s->splice_off = true;
        StartRead(s);
        return;
      case Socket::kNoPipe:
        // No pipe for now: this placement is read and written instead.
        s->placement_splice_off = true;
        StartRead(s);
        return;
      case Socket::kFailed:
        OnRead(s, std::error_code(o.socket_error, std::system_category()), 0, false);
        return;
    }
  }
  if (!o.file_status.ok()) s->reader->FailPlacement(o.file_status);
  s->spliced_unreported += o.moved;
  s->records.clear();
  AfterRead(s, s->reader->CommitDirect(o.moved, &s->records), o.moved);
}

void PoolCore::OnRead(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n, bool direct) {
  if (s->dead) return;
  if (ec) {
    const size_t partial = s->reader->buffered_bytes();
    std::string reason = ec == asio::error::eof ? std::string("server closed the connection")
                                                : absl::StrCat("read failed: ", ec.message());
    if (partial > 0) {
      absl::StrAppend(&reason, " mid-record (truncated: ", partial,
                      " bytes of an incomplete record were pending)");
    } else {
      absl::StrAppend(&reason, " (no partial record was pending)");
    }
    if (!s->ready) {
      FailAttempt(s, Unavailable(target_, absl::StrCat("during the handshake: ", reason)));
    } else {
      Lost(s, absl::StatusCode::kUnavailable, std::move(reason));
    }
    return;
  }
  s->records.clear();
  AfterRead(s,
            direct ? s->reader->CommitDirect(n, &s->records)
                   : s->reader->Consume(std::string_view(s->read_buf.get(), n), &s->records),
            n);
}

void PoolCore::AfterRead(const std::shared_ptr<Session>& s, absl::Status framing_status, size_t n) {
  if (!s->records.empty()) s->placement_decided = false;  // a new record is under way
  absl::Status bad;
  if (!s->ready) {
    // The handshake: each record answers the pending Exchange.
    for (std::string& rec : s->records) {
      if (!s->exchange_done) {
        bad = absl::DataLossError(absl::StrCat("unexpected record of ", rec.size(),
                                               " bytes during the handshake (no Exchange pending)"));
        break;
      }
      auto done = std::move(s->exchange_done);
      s->exchange_done = nullptr;
      done(std::move(rec));
      if (s->dead) return;  // the hook's callback may have failed it
    }
    s->records.clear();
    if (bad.ok() && !framing_status.ok()) bad = framing_status;
    if (!bad.ok()) {
      FailAttempt(s, absl::DataLossError(absl::StrCat("rpc to ", target_, ": handshake: ", bad.message())));
      return;
    }
    StartRead(s);
    return;
  }
  bad = ProcessReplies(s, n);
  if (bad.ok() && !framing_status.ok()) bad = framing_status;
  if (!bad.ok()) {
    Lost(s, absl::StatusCode::kDataLoss, absl::StrCat("malformed data from the server: ", bad.message()));
    return;
  }
  if (s->dead) return;
  MaybePlace(s);
  StartRead(s);
}

absl::Status PoolCore::ProcessReplies(const std::shared_ptr<Session>& s, size_t nbytes) {
  Connection* c = s->conn;
  absl::Status bad;
  s->kicks.clear();
  {
    MutexLock l(&mu_);
    ConnShared& sh = shared(c->index);
    sh.metrics.bytes_received += nbytes;
    m_.bytes_received += nbytes;
    m_.bytes_spliced += std::exchange(s->spliced_unreported, 0);
    if (sh.session_gen != s->gen) return absl::OkStatus();  // shutting down
    if (nbytes > 0) sh.last_heard = SteadyClock::now();
    const absl::Time now = s->records.empty() ? absl::Time() : NowFrom(options_.clock);
    for (std::string& rec : s->records) {
      Call* call;
      if (by_id_) {
        if (rec.size() < 4) {
          bad = absl::DataLossError(absl::StrCat("a reply record of ", rec.size(),
                                                 " bytes is too short to hold the 4-byte call id"));
          break;
        }
        const uint32_t xid = ReadBigEndian32(rec.data());
        auto it = sh.by_xid.find(xid);
        if (it == sh.by_xid.end()) {
          bad = absl::DataLossError(absl::StrFormat(
              "a reply carries id 0x%08x, which matches no call in flight on this connection", xid));
          break;
        }
        call = it->second;
        sh.by_xid.erase(it);
        if (call == nullptr) {  // the call was abandoned; its late reply is dropped
          --sh.abandoned;
          s->expect_placed = false;
          continue;
        }
        s->expect_placed = call->placing;
        if (call->placing) {
          call->placing = false;
          s->placing_call = nullptr;
          // Its bytes placed in a file could not all be written there:
          // the call ends with why (a record of one read has at most one
          // placed reply, the latest placement).
          if (absl::Status placed = s->reader->placement_status(); !placed.ok() && call->abandoned.ok()) {
            call->abandoned = io_internal::LocalFileWriteFailed(
                placed, absl::StrCat("rpc to ", target_, ": writing the reply's data"));
            ++m_.calls_failed;
          }
        }
      } else {
        call = sh.in_order.PopFront();
        if (call == nullptr) {
          bad = absl::DataLossError(
              absl::StrCat("an unsolicited record of ", rec.size(), " bytes arrived with no call in flight"));
          break;
        }
      }
      --sh.load;
      if (call->abandoned.ok()) {  // else cancelled or timed out while pinned (counted then)
        const absl::Duration rtt = now - call->sent_at;
        sh.metrics.round_trip.Record(rtt);
        m_.round_trip.Record(rtt);
        ++sh.metrics.replies;
        sh.consecutive_failures = 0;
        ++m_.calls_succeeded;
        retry_tokens_ = std::min(options_.retry_budget_tokens,
                                 retry_tokens_ + options_.retry_budget_refill_per_success);
      }
      if (call->writing) {
        // Answered before its write was done (the server need not read a
        // request to its end first): it ends when the write does, or at
        // its deadline if the write stalls (OnDeadlines).
        call->state = CallState::kHeld;
        call->held_reply = std::move(rec);
        continue;
      }
      FinishPinnedLocked(call, std::move(rec), &s->completions);
    }
    if (bad.ok()) DispatchLocked(&s->kicks);
  }
  s->records.clear();
  RunCompletions(&s->completions);
  if (bad.ok()) RunKicks(s->kicks, c);
  return bad;
}

void PoolCore::FinishPinnedLocked(Call* call, std::string reply, std::vector<Completion>* completions) {
  if (!call->abandoned.ok()) {
    FinishLocked(call, std::move(call->abandoned), completions);
  } else {
    FinishLocked(call, std::move(reply), completions);
  }
}

void PoolCore::UnpinWritesLocked(Session& s, std::vector<Completion>* completions) {
  for (Call* call : s.writing_calls) {
    call->writing = false;
    if (call->state == CallState::kHeld) {
      FinishPinnedLocked(call, std::move(call->held_reply), completions);
    } else if (!call->abandoned.ok() && !call->placing) {
      // Cancelled or timed out during the write: it ends now. Its reply,
      // if one comes, finds a tombstone (its abandonment already had the
      // connection recycled where that was needed); at shutdown its
      // connection's bookkeeping is already gone.
      if (!shutting_down_) DetachInFlightLocked(call, nullptr);
      FinishLocked(call, std::move(call->abandoned), completions);
    }
  }
  s.writing_calls.clear();
}

void PoolCore::FinishLocked(Call* call, absl::StatusOr<std::string> result, std::vector<Completion>* completions) {
  deadlines_.Remove(call);
  completions->push_back(Completion{std::move(call->done), std::move(result)});
  slab_.Free(call);
}

}  // namespace ferry::rpc_pool_internal
