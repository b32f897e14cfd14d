// S3ReadStream (see the header). Lock order: the HTTP client's lock, then
// State::mu (the sink runs under the former and takes the latter); Read
// never calls the store while holding State::mu.
#include "ferry/s3/s3_read_stream.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/s3/http_client.h"
#include "ferry/s3/s3_object_store.h"
#include "ferry/s3/s3_replies.h"

namespace ferry::s3 {
namespace {

// A stream that starts this close to the object's start (after a reader's
// first small read: a header, a magic number, read(1)) asks from byte 0
// and drops the bytes before its offset: a GET from the start is the
// server's fast path (versitygw serves one 1.7x faster than the same
// bytes from offset 1), and 64 KiB more costs nothing a stream notices.
constexpr int64_t kAskFromTheStartBelow = int64_t{64} << 10;

}  // namespace

struct S3ReadStream::State {
  State(std::string key, int64_t offset_in, int64_t size_in)
      : asked_from(offset_in >= 0 && offset_in < kAskFromTheStartBelow ? 0 : offset_in),
        skip(offset_in - asked_from),
        expected(size_in - offset_in),
        what(absl::StrCat("s3://", key, " from offset ", offset_in,
                          asked_from != offset_in ? " (asked from byte 0)" : "")) {}

  const int64_t asked_from;  // the GET's Range start
  const int64_t skip;        // body bytes before the reader's offset, dropped
  const int64_t expected;    // body bytes to come after them: the object's end
  const std::string what;    // "s3://bucket/key from offset N" for errors

  Mutex mu;
  CondVar changed;  // a Read's bytes came, or the transfer ended
  // The waiting Read's buffer, and how much of it is filled; null while no
  // Read waits.
  char* dst ABSL_GUARDED_BY(mu) = nullptr;
  size_t want ABSL_GUARDED_BY(mu) = 0;
  size_t filled ABSL_GUARDED_BY(mu) = 0;
  // The tail of a piece longer than its Read wanted, from spill_at on.
  // Empty whenever `dst` is set (Read takes it first).
  std::string spill ABSL_GUARDED_BY(mu);
  size_t spill_at ABSL_GUARDED_BY(mu) = 0;
  int64_t skipped ABSL_GUARDED_BY(mu) = 0;   // of `skip`
  int64_t received ABSL_GUARDED_BY(mu) = 0;  // body bytes taken after them
  bool paused ABSL_GUARDED_BY(mu) = false;   // the sink said kPause
  bool closed ABSL_GUARDED_BY(mu) = false;   // the owner is gone
  bool finished ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);   // the transfer's, once finished

  BodySinkAction Take(const HttpResponse& reply, std::string_view piece) {
    MutexLock l(&mu);
    if (closed) return BodySinkAction::kRefuse;
    // Every piece's reply is checked: a retry's reply is another one.
    if (reply.status != 206 && !(reply.status == 200 && asked_from == 0)) {
      // A server that ignored Range sends the object from byte 0.
      Fail(absl::UnimplementedError(
          absl::StrCat("S3 GetObject ", what, ": HTTP ", reply.status,
                       " to an open-ended Range (the server ignored it)")));
      return BodySinkAction::kRefuse;
    }
    if (reply.status == 206) {
      if (absl::Status s = CheckContentRangeStart(reply.Header("content-range"), asked_from);
          !s.ok()) {
        Fail(absl::DataLossError(absl::StrCat("S3 GetObject ", what, ": ", s.message())));
        return BodySinkAction::kRefuse;
      }
    }
    // Counted only when the piece is taken: a paused piece comes again.
    const size_t dropped = static_cast<size_t>(
        std::min<int64_t>(skip - skipped, static_cast<int64_t>(piece.size())));
    if (dropped == piece.size()) {
      skipped += static_cast<int64_t>(dropped);
      return BodySinkAction::kTaken;
    }
    piece.remove_prefix(dropped);
    if (received + static_cast<int64_t>(piece.size()) > expected) {
      Fail(absl::DataLossError(absl::StrCat("S3 GetObject ", what,
                                            ": the body runs past the object's end (byte ",
                                            asked_from + skip + expected, ")")));
      return BodySinkAction::kRefuse;
    }
    if (dst == nullptr || filled == want) {
      paused = true;
      return BodySinkAction::kPause;
    }
    skipped += static_cast<int64_t>(dropped);
    const size_t n = std::min(piece.size(), want - filled);
    std::memcpy(dst + filled, piece.data(), n);
    filled += n;
    if (n < piece.size()) {
      spill.assign(piece.data() + n, piece.size() - n);
      spill_at = 0;
    }
    received += static_cast<int64_t>(piece.size());
    if (filled == want) changed.SignalAll();
    return BodySinkAction::kTaken;
  }

  void Done(absl::StatusOr<HttpResponse> r) {
    MutexLock l(&mu);
    if (!r.ok()) {
      Fail(Annotate(r.status(), absl::StrCat("streamed read of ", what)));
    } else if (received != expected) {
      // Positions in the object, whichever byte the GET started at.
      Fail(absl::DataLossError(absl::StrCat("S3 GetObject ", what, ": the body ended at byte ",
                                            asked_from + skipped + received, " of the object's ",
                                            asked_from + skip + expected)));
    }
    finished = true;
    changed.SignalAll();
  }

  // Keeps the first error.
  void Fail(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (status.ok()) status = std::move(s);
  }
};

S3ReadStream::S3ReadStream(S3ObjectStore& store, std::string key, std::string etag,
                           int64_t offset, int64_t size)
    : store_(store),
      state_(std::make_shared<State>(key, offset, size)),
      position_(offset) {
  std::shared_ptr<State> sink_state = state_;
  std::shared_ptr<State> done_state = state_;
  id_ = store_.GetStream(
      key, state_->asked_from, etag,
      [sink_state](const HttpResponse& reply, std::string_view piece) {
        return sink_state->Take(reply, piece);
      },
      [done_state](absl::StatusOr<HttpResponse> r) { done_state->Done(std::move(r)); });
}

S3ReadStream::~S3ReadStream() {
  {
    MutexLock l(&state_->mu);
    state_->closed = true;  // a transfer not in flight yet refuses its first piece
  }
  store_.CancelStream(id_);
}

absl::StatusOr<size_t> S3ReadStream::Read(absl::Span<char> buf) {
  State& s = *state_;
  s.mu.Lock();
  size_t got = 0;
  if (s.spill_at < s.spill.size()) {
    got = std::min(buf.size(), s.spill.size() - s.spill_at);
    std::memcpy(buf.data(), s.spill.data() + s.spill_at, got);
    s.spill_at += got;
    if (s.spill_at == s.spill.size()) {
      s.spill.clear();
      s.spill_at = 0;
    }
  }
  if (got < buf.size() && !s.finished) {
    s.dst = buf.data();
    s.want = buf.size();
    s.filled = got;
    if (s.paused) {
      s.paused = false;
      s.mu.Unlock();
      store_.ResumeStream(id_);  // may run the sink, which takes s.mu
      s.mu.Lock();
    }
    while (s.filled < s.want && !s.finished) s.changed.Wait(&s.mu);
    got = s.filled;
    s.dst = nullptr;
    s.want = s.filled = 0;
  }
  // Bytes short of the buffer with an error are the error, never a short read.
  if (got < buf.size() && !s.status.ok()) {
    absl::Status error = s.status;
    s.mu.Unlock();
    return error;
  }
  s.mu.Unlock();
  position_ += static_cast<int64_t>(got);
  return got;
}

}  // namespace ferry::s3
