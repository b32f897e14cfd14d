#include "ferry/redis/redis_tier.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "ferry/base/random.h"
#include "ferry/base/strings.h"

namespace ferry::redis {

// The replies ferry needs, copied out of hiredis's (freed at once).
class RedisTier::Reply {
 public:
  explicit Reply(const redisReply* r) : type_(r->type), integer_(r->integer) {
    if (r->str != nullptr) str_.assign(r->str, r->len);
    for (size_t i = 0; i < r->elements; ++i) elements_.emplace_back(r->element[i]);
  }
  bool nil() const { return type_ == REDIS_REPLY_NIL; }
  bool error() const { return type_ == REDIS_REPLY_ERROR; }
  long long integer() const { return integer_; }
  const std::string& str() const { return str_; }
  const std::vector<Reply>& elements() const { return elements_; }

 private:
  int type_;
  long long integer_;
  std::string str_;
  std::vector<Reply> elements_;
};

namespace {

// Stores only if no invalidation bumped the epoch since the loader read it.
constexpr char kPutIfEpoch[] =
    "local e = redis.call('GET', KEYS[2]) or '0' "
    "if e == ARGV[3] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
    "return 0";
// Gives a lease back only to the token that holds it.
constexpr char kUnlock[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";

// The status a broken context stands for. A read or write timeout shows as
// an I/O error with EAGAIN.
absl::Status ContextError(const redisContext* c, std::string_view what) {
  if (c == nullptr) return absl::UnavailableError(Cat(what, ": out of memory"));
  const std::string msg = Cat(what, ": ", c->errstr);
  if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS)) {
    return absl::DeadlineExceededError(msg);
  }
  if (c->err == REDIS_ERR_IO && std::strstr(c->errstr, "timed out") != nullptr) {
    return absl::DeadlineExceededError(msg);
  }
  return absl::UnavailableError(msg);
}

// SCAN's MATCH is a glob: escape the prefix's glob characters.
std::string GlobEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

int64_t Millis(absl::Duration d) { return std::max<int64_t>(1, absl::ToInt64Milliseconds(d)); }

std::string NewId() { return absl::StrFormat("%016x", RandomUint64()); }

}  // namespace

RedisTier::RedisTier(RedisTierOptions options) : options_(std::move(options)), id_(NewId()) {}

RedisTier::~RedisTier() {
  MutexLock l(&mu_);
  if (ctx_ != nullptr) redisFree(ctx_);
}

bool RedisTier::connected() const {
  MutexLock l(&mu_);
  return connected_;
}

void RedisTier::Warn(const absl::Status& s) const {
  if (options_.on_warning != nullptr) {
    options_.on_warning(s);
    return;
  }
  if (s.ok()) {
    std::fprintf(stderr, "ferry: shared cache tier redis %s:%d (%s) is back\n", options_.host.c_str(),
                 options_.port, options_.name_space.c_str());
  } else {
    std::fprintf(stderr,
                 "ferry: WARNING: shared cache tier redis %s:%d (%s) unavailable (%s); serving from "
                 "the local cache and the origin until it is back\n",
                 options_.host.c_str(), options_.port, options_.name_space.c_str(),
                 std::string(s.message()).c_str());
  }
}

absl::Status RedisTier::Connect() {
  redisContext* c = redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                            absl::ToTimeval(options_.connect_timeout));
  if (c == nullptr || c->err != 0) {
    absl::Status s = ContextError(c, Cat("redis connect ", options_.host, ":", options_.port));
    if (c != nullptr) redisFree(c);
    return s;
  }
  redisSetTimeout(c, absl::ToTimeval(options_.command_timeout));
  ctx_ = c;
  return absl::OkStatus();
}

absl::Status RedisTier::Send(const std::vector<std::vector<std::string>>& commands,
                             std::vector<Reply>* replies) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& cmd : commands) {
    argv.clear();
    lens.clear();
    for (const auto& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
      return ContextError(ctx_, Cat("redis ", commands[i][0]));
    }
    replies->emplace_back(static_cast<redisReply*>(raw));
    freeReplyObject(raw);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RedisTier::Reply>> RedisTier::Run(
    const std::vector<std::vector<std::string>>& commands) {
  absl::Status failure;
  bool report = false, recovered = false;
  std::vector<Reply> replies;
  {
    MutexLock l(&mu_);
    if (ctx_ == nullptr && absl::Now() < retry_at_) {
      return absl::UnavailableError("redis tier: waiting to reconnect after a failure");
    }
    // A connection that sat idle may have died with a server that has
    // since come back (a restart): its first use then fails at once. Try
    // once more on a fresh connection before calling it an outage, or a
    // front end's first invalidation after a restart would be lost. Not
    // after a timeout: a slow server must not cost twice the timeout.
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = ctx_ != nullptr;
      failure = absl::OkStatus();
      replies.clear();
      if (!reused) failure = Connect();
      if (failure.ok()) failure = Send(commands, &replies);
      if (failure.ok() || !reused || absl::IsDeadlineExceeded(failure)) break;
      redisFree(ctx_);
      ctx_ = nullptr;
    }
    if (!failure.ok()) {
      // A context that failed mid-reply is out of step: start afresh later.
      if (ctx_ != nullptr) redisFree(ctx_);
      ctx_ = nullptr;
      retry_at_ = absl::Now() + options_.retry_after;
      connected_ = false;
      report = !down_;
      down_ = true;
    } else {
      connected_ = true;
      recovered = down_;
      down_ = false;
    }
  }
  if (report) Warn(failure);
  if (recovered) Warn(absl::OkStatus());
  if (!failure.ok()) return failure;
  for (size_t i = 0; i < replies.size(); ++i) {
    if (replies[i].error()) {
      return absl::InternalError(Cat("redis ", commands[i][0], ": ", replies[i].str()));
    }
  }
  return replies;
}

absl::StatusOr<SharedTierLookup> RedisTier::Lookup(std::string_view key) {
  const std::string vkey = Cat(options_.name_space, ":v:", key);
  auto r = Run({{"GET", vkey}, {"PTTL", vkey}, {"GET", Cat(options_.name_space, ":epoch")}});
  if (!r.ok()) return r.status();
  SharedTierLookup out;
  const std::vector<Reply>& rs = *r;
  // PTTL is -2 when the key expired between the two commands.
  if (!rs[0].nil() && rs[1].integer() > 0) {
    out.value = rs[0].str();
    out.ttl_left = absl::Milliseconds(rs[1].integer());
  }
  if (!rs[2].nil() && !absl::SimpleAtoi(rs[2].str(), &out.epoch)) {
    return absl::DataLossError(Cat("redis tier: epoch is not a number: ", rs[2].str()));
  }
  return out;
}

absl::StatusOr<bool> RedisTier::PutIfEpoch(std::string_view key, std::string_view value,
                                           absl::Duration ttl, uint64_t epoch) {
  auto r = Run({{"EVAL", kPutIfEpoch, "2", Cat(options_.name_space, ":v:", key),
                 Cat(options_.name_space, ":epoch"), std::string(value),
                 Cat(Millis(ttl)), Cat(epoch)}});
  if (!r.ok()) return r.status();
  return (*r)[0].integer() == 1;
}

absl::StatusOr<bool> RedisTier::TryLock(std::string_view key, std::string_view token,
                                        absl::Duration lease) {
  auto r = Run({{"SET", Cat(options_.name_space, ":l:", key), std::string(token), "NX", "PX",
                 Cat(Millis(lease))}});
  if (!r.ok()) return r.status();
  return !(*r)[0].nil();
}

absl::Status RedisTier::Unlock(std::string_view key, std::string_view token) {
  return Run({{"EVAL", kUnlock, "1", Cat(options_.name_space, ":l:", key), std::string(token)}})
      .status();
}

absl::Status RedisTier::Invalidate(absl::Span<const std::string> keys,
                                   absl::Span<const std::string> prefixes, std::string_view message) {
  // The epoch first: a load that read the old epoch can no longer store,
  // whatever it loaded before the change.
  std::vector<std::vector<std::string>> first = {{"INCR", Cat(options_.name_space, ":epoch")}};
  if (!keys.empty()) {
    std::vector<std::string> del = {"DEL"};
    for (const auto& k : keys) del.push_back(Cat(options_.name_space, ":v:", k));
    first.push_back(std::move(del));
  }
  if (auto r = Run(first); !r.ok()) return r.status();
  for (const auto& p : prefixes) {
    const std::string match = Cat(GlobEscape(Cat(options_.name_space, ":v:", p)), "*");
    std::string cursor = "0";
    do {
      auto r = Run({{"SCAN", cursor, "MATCH", match, "COUNT", "1000"}});
      if (!r.ok()) return r.status();
      const Reply& scan = (*r)[0];
      if (scan.elements().size() != 2) return absl::DataLossError("redis SCAN: malformed reply");
      cursor = scan.elements()[0].str();
      std::vector<std::string> del = {"UNLINK"};
      for (const auto& k : scan.elements()[1].elements()) del.push_back(k.str());
      if (del.size() > 1) {
        if (auto d = Run({del}); !d.ok()) return d.status();
      }
    } while (cursor != "0");
  }
  return Run({{"PUBLISH", Cat(options_.name_space, ":inv"), Cat(id_, message)}})
      .status();
}

// The subscriber: its own connection, read on its own thread; woken for
// shutdown through an eventfd polled beside the socket.
class RedisTier::Subscription final : public SharedTierSubscription {
 public:
  Subscription(const RedisTier& tier, absl::AnyInvocable<void(const SharedTierEvent&)> on_event)
      : tier_(tier), on_event_(std::move(on_event)), wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Subscription() override {
    stop_.store(true);
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
    thread_.join();
    if (wake_ >= 0) close(wake_);
  }

 private:
  // Waits up to `d` for the socket `fd` (or just the wake-up when fd < 0).
  // Returns false when it is time to stop.
  bool Wait(int fd, absl::Duration d, bool* readable) {
    pollfd fds[2] = {{wake_, POLLIN, 0}, {fd, POLLIN, 0}};
    const int n = poll(fds, fd >= 0 ? 2 : 1,
                       d == absl::InfiniteDuration() ? -1 : static_cast<int>(Millis(d)));
    if (stop_.load()) return false;
    *readable = n > 0 && fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    return true;
  }

  void Loop() {
    const RedisTierOptions& o = tier_.options_;
    const std::string channel = Cat(o.name_space, ":inv");
    bool first = true;
    bool readable = false;
    while (!stop_.load()) {
      redisContext* c = redisConnectWithTimeout(o.host.c_str(), o.port, absl::ToTimeval(o.connect_timeout));
      bool subscribed = false;
      if (c != nullptr && c->err == 0) {
        redisSetTimeout(c, absl::ToTimeval(o.command_timeout));
        void* raw = redisCommand(c, "SUBSCRIBE %b", channel.data(), channel.size());
        subscribed = raw != nullptr;
        if (raw != nullptr) freeReplyObject(raw);
      }
      if (subscribed) {
        // Whatever was published while we were away is lost: the receiver
        // drops what it cached. (Not when the very first attempt succeeds:
        // nothing could have been missed before it.)
        if (!first) on_event_(SharedTierEvent{SharedTierEvent::Kind::kResync, {}});
        // Messages come as they come: no read timeout from here on (the
        // poll below waits; redisBufferRead only reads what is there).
        redisSetTimeout(c, timeval{0, 0});
        while (Wait(c->fd, absl::InfiniteDuration(), &readable)) {
          if (!readable) continue;
          if (redisBufferRead(c) != REDIS_OK) break;  // server gone
          void* raw = nullptr;
          bool broken = false;
          while (true) {
            if (redisGetReplyFromReader(c, &raw) != REDIS_OK) {
              broken = true;
              break;
            }
            if (raw == nullptr) break;
            Deliver(static_cast<redisReply*>(raw));
            freeReplyObject(raw);
          }
          if (broken) break;
        }
      }
      // Any attempt after this one follows a gap.
      first = false;
      if (c != nullptr) redisFree(c);
      if (stop_.load()) break;
      Wait(-1, o.retry_after, &readable);
    }
  }

  void Deliver(const redisReply* r) {
    // ["message", channel, "<sender id><message>"]
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) return;
    if (std::string_view(r->element[0]->str, r->element[0]->len) != "message") return;
    std::string_view payload(r->element[2]->str, r->element[2]->len);
    if (payload.size() < tier_.id_.size()) return;
    if (payload.substr(0, tier_.id_.size()) == tier_.id_) return;  // our own
    on_event_(SharedTierEvent{SharedTierEvent::Kind::kMessage, payload.substr(tier_.id_.size())});
  }

  const RedisTier& tier_;
  absl::AnyInvocable<void(const SharedTierEvent&)> on_event_;
  const int wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: started once the rest is ready
};

std::unique_ptr<SharedTierSubscription> RedisTier::Subscribe(
    absl::AnyInvocable<void(const SharedTierEvent&)> on_event) {
  return std::make_unique<Subscription>(*this, std::move(on_event));
}

}  // namespace ferry::redis
