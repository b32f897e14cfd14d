#include "ferry/rpc/session_pool.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/positional_io.h"
#include "rpc/sigpipe_held.h"
#include "rpc/splice_pipe.h"

namespace ferry {
namespace {

// Waits until `fd` is ready for `events` or `deadline` passes.
absl::Status WaitFor(int fd, short events, absl::Time deadline, std::string_view what,
                     const std::string& target) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(Cat(what, " ", target, ": timed out"));
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(Cat(what, " ", target, ": ", std::strerror(errno)));
    }
  }
}

// A non-blocking TCP connection to host:port, or why not.
absl::StatusOr<int> ConnectTcp(const std::string& host, uint16_t port, absl::Time deadline,
                               const std::string& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port_text = Cat(port);
  if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(Cat("resolving ", target, ": ", ::gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError(Cat("connecting to ", target, ": no address"));
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
      absl::Status s = WaitFor(fd, POLLOUT, deadline, "connecting to", target);
      int err = 0;
      socklen_t len = sizeof(err);
      if (s.ok()) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (s.ok() && err != 0) {
        s = absl::UnavailableError(Cat("connecting to ", target, ": ", std::strerror(err)));
      }
      if (!s.ok()) {
        ::close(fd);
        last = s;
        continue;
      }
    } else if (rc < 0) {
      last = absl::UnavailableError(Cat("connecting to ", target, ": ", std::strerror(errno)));
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::freeaddrinfo(found);
    return fd;
  }
  ::freeaddrinfo(found);
  return last;
}

}  // namespace

Session::Session(int fd, std::string target, std::shared_ptr<const Framing> framing,
                 absl::Duration io_timeout)
    : fd_(fd),
      target_(std::move(target)),
      framing_(std::move(framing)),
      reader_(framing_->NewReader()),
      io_timeout_(io_timeout) {}

Session::~Session() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status Session::Send(std::string_view record) {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  out_.clear();
  framing_->Append(record, &out_);
  const std::string_view parts[] = {out_};
  return WriteAll(parts);
}

absl::Status Session::SendRaw(std::string_view bytes) {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  const std::string_view parts[] = {bytes};
  return WriteAll(parts);
}

absl::Status Session::WriteAll(absl::Span<const std::string_view> parts) {
  return WriteAllBy(parts, absl::Now() + io_timeout_);
}

absl::Status Session::WriteAllBy(absl::Span<const std::string_view> parts, absl::Time deadline) {
  constexpr size_t kMaxIov = 16;
  size_t first = 0, skip = 0;  // the first part not fully sent, and its bytes sent
  while (first < parts.size()) {
    iovec iov[kMaxIov];
    size_t count = 0;
    for (size_t i = first; i < parts.size() && count < kMaxIov; ++i) {
      const size_t off = i == first ? skip : 0;
      if (parts[i].size() == off) continue;
      iov[count].iov_base = const_cast<char*>(parts[i].data() + off);
      iov[count].iov_len = parts[i].size() - off;
      ++count;
    }
    if (count == 0) break;
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = count;
    ssize_t n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL);
    if (n > 0) {
      size_t left = static_cast<size_t>(n);
      while (first < parts.size() && left >= parts[first].size() - skip) {
        left -= parts[first].size() - skip;
        ++first;
        skip = 0;
      }
      skip += left;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = WaitFor(fd_, POLLOUT, deadline, "sending to", target_); !s.ok()) {
        broken_ = true;
        return s;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    broken_ = true;
    return absl::UnavailableError(
        Cat("sending to ", target_, ": ", n < 0 ? std::strerror(errno) : "closed"));
  }
  return absl::OkStatus();
}

absl::Status Session::SendRawParts(absl::Span<const std::string_view> parts) {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  return WriteAll(parts);
}

absl::StatusOr<size_t> Session::SendFileRange(int in_fd, int64_t offset, size_t n) {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  SigpipeHeld held;
  const absl::Time deadline = absl::Now() + io_timeout_;
  off_t at = static_cast<off_t>(offset);
  size_t done = 0;
  while (done < n) {
    const ssize_t sent = ::sendfile(fd_, in_fd, &at, n - done);
    if (sent > 0) {
      done += static_cast<size_t>(sent);
      continue;
    }
    if (sent == 0) {  // the file ended: the record begun cannot be finished
      broken_ = true;
      return done;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (absl::Status s = WaitFor(fd_, POLLOUT, deadline, "sending to", target_); !s.ok()) {
        broken_ = true;
        return s;
      }
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
      // The file's filesystem cannot feed sendfile (some FUSE ones): the
      // rest through this process's memory, as any write.
      FERRY_ASSIGN_OR_RETURN(size_t rest, SendFileRangeByCopy(in_fd, at, n - done, deadline));
      return done + rest;
    }
    broken_ = true;
    if (errno == EIO) {
      return absl::DataLossError(Cat("reading the file sent to ", target_, ": ", std::strerror(errno)));
    }
    return absl::UnavailableError(Cat("sending a file's bytes to ", target_, ": ", std::strerror(errno)));
  }
  return done;
}

absl::StatusOr<size_t> Session::SendFileRangeByCopy(int in_fd, int64_t offset, size_t n,
                                                    absl::Time deadline) {
  std::string buf(std::min<size_t>(n, size_t{256} << 10), '\0');
  size_t done = 0;
  while (done < n) {
    const size_t want = std::min(buf.size(), n - done);
    absl::StatusOr<size_t> got = io_internal::PreadAll(in_fd, std::span<char>(buf.data(), want),
                                                       offset + static_cast<int64_t>(done), "the file sent");
    if (!got.ok()) {
      broken_ = true;
      return absl::DataLossError(Cat("reading the file sent to ", target_, ": ", got.status().message()));
    }
    const std::string_view part(buf.data(), *got);
    FERRY_RETURN_IF_ERROR(WriteAllBy(absl::MakeConstSpan(&part, 1), deadline));
    done += *got;
    if (*got < want) {  // the file ended, as above
      broken_ = true;
      return done;
    }
  }
  return done;
}

bool Session::at_record_boundary() const {
  return next_ready_ >= ready_.size() && reader_->buffered_bytes() == 0;
}

absl::StatusOr<size_t> Session::RecvSome(char* dst, size_t n, absl::Time deadline, bool mid_record) {
  for (;;) {
    const ssize_t got = ::recv(fd_, dst, n, 0);
    if (got > 0) return static_cast<size_t>(got);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = WaitFor(fd_, POLLIN, deadline, "waiting for a reply from", target_);
          !s.ok()) {
        broken_ = true;
        return s;
      }
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    broken_ = true;
    if (got == 0) {
      return absl::UnavailableError(
          Cat(target_, " closed the connection", mid_record ? " mid-reply (truncated)" : ""));
    }
    return absl::UnavailableError(Cat("reading from ", target_, ": ", std::strerror(errno)));
  }
}

absl::Status Session::ReceiveRaw(char* dst, size_t n) {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  const absl::Time deadline = absl::Now() + io_timeout_;
  for (size_t done = 0; done < n;) {
    FERRY_ASSIGN_OR_RETURN(size_t got, RecvSome(dst + done, n - done, deadline, done > 0));
    done += got;
  }
  return absl::OkStatus();
}

absl::Status Session::ReceiveRawIntoFile(const FileRange& to) {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  const absl::Time deadline = absl::Now() + io_timeout_;
  if (splice_ == nullptr) splice_ = std::make_unique<internal::SplicePipe>();
  char scratch[64 << 10];
  size_t done = 0;
  // What is left of `to` after `done` bytes.
  auto rest = [&] {
    FileRange r = to;
    r.offset += static_cast<int64_t>(done);
    r.size -= done;
    return r;
  };
  while (done < to.size) {
    const internal::SplicePipe::Outcome o = splice_->Move(fd_, rest(), absl::MakeSpan(scratch));
    done += o.moved;
    if (!o.file_status.ok()) {
      broken_ = true;  // the rest of the reply stays unread
      return io_internal::LocalFileWriteFailed(o.file_status, Cat("writing a reply from ", target_));
    }
    if (o.file_refused_splice) return ReceiveRawIntoFileByCopy(rest(), deadline);
    if (o.moved > 0) continue;
    using Socket = internal::SplicePipe::Outcome::Socket;
    switch (o.socket()) {
      case Socket::kEnded:
        broken_ = true;
        return absl::UnavailableError(
            Cat(target_, " closed the connection", done > 0 ? " mid-reply (truncated)" : ""));
      case Socket::kNotReady:
        if (o.socket_error == EINTR) continue;
        if (absl::Status s = WaitFor(fd_, POLLIN, deadline, "waiting for a reply from", target_); !s.ok()) {
          broken_ = true;
          return s;
        }
        continue;
      case Socket::kRefusesSplice:
      case Socket::kNoPipe:
        // No splice from this socket, or no pipe for it: through memory.
        return ReceiveRawIntoFileByCopy(rest(), deadline);
      case Socket::kFailed:
        broken_ = true;
        return absl::UnavailableError(Cat("reading from ", target_, ": ", std::strerror(o.socket_error)));
    }
  }
  return absl::OkStatus();
}

absl::Status Session::ReceiveRawIntoFileByCopy(const FileRange& to, absl::Time deadline) {
  char buf[64 << 10];
  for (size_t done = 0; done < to.size;) {
    FERRY_ASSIGN_OR_RETURN(size_t got, RecvSome(buf, std::min(sizeof buf, to.size - done), deadline, true));
    absl::Status s = WriteIntoRange(to, done, std::span<const char>(buf, got));
    if (!s.ok()) {
      broken_ = true;
      return io_internal::LocalFileWriteFailed(s, Cat("writing a reply from ", target_));
    }
    done += got;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Session::Receive() {
  if (broken_) {
    return absl::FailedPreconditionError(Cat("session to ", target_, " is broken"));
  }
  const absl::Time deadline = absl::Now() + io_timeout_;
  char buf[64 << 10];
  while (next_ready_ >= ready_.size()) {
    ready_.clear();
    next_ready_ = 0;
    FERRY_ASSIGN_OR_RETURN(size_t n, RecvSome(buf, sizeof(buf), deadline, reader_->buffered_bytes() > 0));
    if (absl::Status s = reader_->Consume(std::string_view(buf, n), &ready_); !s.ok()) {
      broken_ = true;
      return absl::DataLossError(Cat("from ", target_, ": ", s.message()));
    }
  }
  ++exchanges_;
  return std::move(ready_[next_ready_++]);
}

absl::StatusOr<std::string> Session::Exchange(std::string_view record) {
  FERRY_RETURN_IF_ERROR(Send(record));
  return Receive();
}

SessionLease::SessionLease(SessionLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), session_(std::move(other.session_)) {}

SessionLease& SessionLease::operator=(SessionLease&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    session_ = std::move(other.session_);
  }
  return *this;
}

SessionLease::~SessionLease() { Release(); }

void SessionLease::Release() {
  if (pool_ != nullptr && session_ != nullptr) pool_->Return(std::move(session_));
  pool_ = nullptr;
  session_.reset();
}

absl::StatusOr<std::unique_ptr<SessionPool>> SessionPool::Create(SessionPoolOptions options) {
  if (options.framing == nullptr) return absl::InvalidArgumentError("SessionPool: no framing");
  if (options.host.empty()) return absl::InvalidArgumentError("SessionPool: empty host");
  if (options.port == 0) return absl::InvalidArgumentError("SessionPool: port 0");
  if (options.max_sessions < 1) {
    return absl::InvalidArgumentError("SessionPool: max_sessions must be at least 1");
  }
  return std::unique_ptr<SessionPool>(new SessionPool(std::move(options)));
}

SessionPool::SessionPool(SessionPoolOptions options)
    : options_(std::move(options)), target_(Cat(options_.host, ":", options_.port)) {}

SessionPool::~SessionPool() {
  std::vector<std::unique_ptr<Session>> idle;
  {
    MutexLock lock(&mu_);
    idle.swap(idle_);
  }
  for (auto& s : idle) Close(std::move(s));
}

absl::StatusOr<std::unique_ptr<Session>> SessionPool::Connect() {
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  FERRY_ASSIGN_OR_RETURN(int fd, ConnectTcp(options_.host, options_.port, deadline, target_));
  std::unique_ptr<Session> session(new Session(fd, target_, options_.framing, options_.io_timeout));
  if (options_.on_connect) {
    if (absl::Status s = options_.on_connect(*session); !s.ok()) return s;
  }
  session->exchanges_ = 0;
  return session;
}

absl::StatusOr<SessionLease> SessionPool::Acquire() {
  return AcquireUntil(absl::Now() + options_.io_timeout, /*extend_on_return=*/true);
}

absl::StatusOr<SessionLease> SessionPool::Acquire(absl::Time deadline) {
  return AcquireUntil(deadline, /*extend_on_return=*/false);
}

absl::StatusOr<SessionLease> SessionPool::AcquireUntil(absl::Time deadline, bool extend_on_return) {
  {
    MutexLock lock(&mu_);
    for (;;) {
      if (!idle_.empty()) {
        std::unique_ptr<Session> s = std::move(idle_.back());
        idle_.pop_back();
        return SessionLease(this, std::move(s));
      }
      if (open_ < options_.max_sessions) {
        ++open_;  // reserved while connecting, outside the lock
        break;
      }
      if (returned_.WaitWithDeadline(&mu_, deadline)) {
        if (extend_on_return) deadline = absl::Now() + options_.io_timeout;
      } else if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            extend_on_return
                ? Cat("no session to ", target_, " was returned in ", absl::FormatDuration(options_.io_timeout),
                      " (all ", options_.max_sessions, " leased: open files and listings hold theirs)")
                : Cat("no session to ", target_, " free before the deadline"));
      }
    }
  }
  absl::StatusOr<std::unique_ptr<Session>> s = Connect();
  if (!s.ok()) {
    MutexLock lock(&mu_);
    --open_;
    returned_.Signal();
    return s.status();
  }
  return SessionLease(this, *std::move(s));
}

void SessionPool::Return(std::unique_ptr<Session> session) {
  {
    MutexLock lock(&mu_);
    if (!session->broken() && static_cast<int>(idle_.size()) < options_.max_idle_sessions) {
      idle_.push_back(std::move(session));
      returned_.Signal();
      return;
    }
    --open_;
    returned_.Signal();
  }
  Close(std::move(session));
}

void SessionPool::Close(std::unique_ptr<Session> session) {
  if (!session->broken() && options_.on_close) options_.on_close(*session);
}

int SessionPool::open_sessions() const {
  MutexLock lock(&mu_);
  return open_;
}

int SessionPool::idle_sessions() const {
  MutexLock lock(&mu_);
  return static_cast<int>(idle_.size());
}

}  // namespace ferry
