#include "ferry/irods/irods_client.h"

#include <fcntl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ferry/base/small_file.h"
#include "ferry/io/internal/positional_io.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/irods/irods_protocol.h"
#include "ferry/irods/irods_replies.h"
#include "ferry/irods/irods_xml.h"

namespace ferry::irods {
namespace {

using KeyVals = std::vector<std::pair<std::string, std::string>>;

// GenQuery column ids (irods/lib/core/include/irods/rodsGenQuery.h).
constexpr int kCollId = 500, kCollName = 501, kCollParentName = 502, kCollModifyTime = 509;
constexpr int kDataId = 401, kDataName = 403, kDataSize = 407, kDataModifyTime = 420;
constexpr int kMetaDataName = 600, kMetaDataValue = 601, kMetaDataUnits = 602;
constexpr int kMetaCollName = 610, kMetaCollValue = 611, kMetaCollUnits = 612;
constexpr int kUserName = 202, kUserType = 203, kDataAccessName = 701, kCollAccessName = 711;

std::string BinBytesBuf(std::string_view payload) {
  return XmlWriter()
      .Open("BinBytesBuf_PI")
      .Int("buflen", static_cast<int64_t>(payload.size()))
      .Str("buf", ToStd(absl::Base64Escape(ToAbsl(payload))))
      .Close("BinBytesBuf_PI")
      .Take();
}

std::string DataObjInp(std::string_view path, int flags, const KeyVals& kv, int opr_type = 0,
                       int64_t data_size = -1) {
  return XmlWriter()
      .Open("DataObjInp_PI")
      .Str("objPath", path)
      .Int("createMode", 0644)
      .Int("openFlags", flags)
      .Int("offset", 0)
      .Int("dataSize", data_size)
      .Int("numThreads", 0)
      .Int("oprType", opr_type)
      .KeyVals(kv)
      .Close("DataObjInp_PI")
      .Take();
}

std::string OpenedDataObjInp(int64_t fd, int64_t len, int64_t offset = 0, int whence = 0) {
  return XmlWriter()
      .Open("OpenedDataObjInp_PI")
      .Int("l1descInx", fd)
      .Int("len", len)
      .Int("whence", whence)
      .Int("oprType", 0)
      .Int("offset", offset)
      .Int("bytesWritten", 0)
      .KeyVals({})
      .Close("OpenedDataObjInp_PI")
      .Take();
}

std::string CollInp(std::string_view path, const KeyVals& kv) {
  return XmlWriter()
      .Open("CollInpNew_PI")
      .Str("collName", path)
      .Int("flags", 0)
      .Int("oprType", 0)
      .KeyVals(kv)
      .Close("CollInpNew_PI")
      .Take();
}

// A GenQuery condition literal: '...' with quotes doubled.
std::string Quote(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    out.push_back(c);
    if (c == '\'') out.push_back('\'');
  }
  out.push_back('\'');
  return out;
}

std::string_view ParentOf(std::string_view path) {
  size_t i = path.rfind('/');
  if (i == std::string_view::npos || i == 0) return "/";
  return path.substr(0, i);
}

std::string_view NameOf(std::string_view path) {
  size_t i = path.rfind('/');
  return i == std::string_view::npos ? path : path.substr(i + 1);
}

int64_t ToInt(std::string_view s) {
  int64_t v = 0;
  return absl::SimpleAtoi(ToAbsl(s), &v) ? v : 0;
}

// Failures of a connection that had been idle (the server may have closed
// it meanwhile): worth one free try on a fresh connection.
bool Retryable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDataLoss(s) || absl::IsDeadlineExceeded(s);
}

// What the time-bounded retries retry: a connection that failed or could
// not be made (reset, closed, refused while the server restarts). Not
// DeadlineExceeded: a server that stops answering keeps timeouts.call as its
// bound.
bool ConnectionFailed(const absl::Status& s) { return absl::IsUnavailable(s); }

// A refused login's status, saying what password was tried and where it
// came from (never the password): an unset one and a wrong one are
// different mistakes with different fixes.
absl::Status ExplainRefusedLogin(absl::Status s, const IrodsAccount& a) {
  if (!absl::IsUnauthenticated(s)) return s;
  std::string hint;
  if (a.password.empty()) {
    hint = "no password is set: ferry looked in $IRODS_PASSWORD and $IRODS_PASSWORD_FILE (both unset; "
           "iinit's obfuscated ~/.irods/.irodsA is not read); set one of them";
  } else if (!a.password_source.empty()) {
    hint = Cat("the password from ", a.password_source, " was refused for ", a.user, "#", a.zone,
               ": check it, and that the user exists in that zone");
  } else {
    hint = Cat("the password given for ", a.user, "#", a.zone, " was refused");
  }
  return absl::Status(s.code(), Cat(s.message(), " (", hint, ")"));
}

// Start-up and login on a new connection (Login: with a refusal explained).
absl::Status LoginOnce(Session& session, const IrodsAccount& a) {
  const std::string& client_user = a.client_user.empty() ? a.user : a.client_user;
  const std::string startup = XmlWriter()
                                  .Open("StartupPack_PI")
                                  .Int("irodsProt", 1)
                                  .Int("reconnFlag", 0)
                                  .Int("connectCnt", 0)
                                  .Str("proxyUser", a.user)
                                  .Str("proxyRcatZone", a.zone)
                                  .Str("clientUser", client_user)
                                  .Str("clientRcatZone", a.zone)
                                  .Str("relVersion", "rods4.3.2")
                                  .Str("apiVersion", "d")
                                  .Str("option", "ferry")
                                  .Close("StartupPack_PI")
                                  .Take();
  FERRY_ASSIGN_OR_RETURN(std::string frame, session.Exchange(EncodeMessage("RODS_CONNECT", 0, startup)));
  FERRY_ASSIGN_OR_RETURN(Message version, DecodeMessage(frame));
  if (version.int_info < 0) {
    return IrodsError(version.int_info, Cat("connecting to ", session.target()), "");
  }
  if (version.type != "RODS_VERSION") {
    return absl::DataLossError(Cat(session.target(), " answered the start-up with ", version.type));
  }
  FERRY_ASSIGN_OR_RETURN(auto v, ParseXml(version.msg));
  absl::string_view rel = absl::StripPrefix(ToAbsl(v->Text("relVersion")), "rods");
  std::vector<absl::string_view> parts = absl::StrSplit(rel, '.');
  int major = 0, minor = 0;
  if (parts.size() >= 2) {
    (void)absl::SimpleAtoi(parts[0], &major);
    (void)absl::SimpleAtoi(parts[1], &minor);
  }
  const std::string who = Cat("login of ", a.user, "#", a.zone, " at ", session.target());
  if (!a.force_legacy_auth && (major > 4 || (major == 4 && minor >= 3))) {
    // The 4.3 authentication framework, scheme native.
    nlohmann::json req = {{"scheme", "native"},
                          {"user_name", a.user},
                          {"zone_name", a.zone},
                          {"next_operation", "auth_agent_auth_request"}};
    FERRY_ASSIGN_OR_RETURN(Reply r, IrodsClient::Call(session, kAuthentication, BinBytesBuf(req.dump()),
                                                      {}, who));
    FERRY_ASSIGN_OR_RETURN(std::string response, NativeAuthResponse(r.msg, a.password, who));
    return IrodsClient::Call(session, kAuthentication, BinBytesBuf(response), {}, who).status();
  }
  // Legacy native (703/704), what Jargon and NFSRODS use.
  FERRY_ASSIGN_OR_RETURN(Reply r, IrodsClient::Call(session, kAuthRequest, {}, {}, who));
  FERRY_ASSIGN_OR_RETURN(auto out, ParseXml(r.msg));
  std::string challenge;
  if (!absl::Base64Unescape(ToAbsl(out->Text("challenge")), &challenge) || challenge.size() < 64) {
    return absl::DataLossError(Cat(who, ": malformed challenge"));
  }
  const std::string resp = XmlWriter()
                               .Open("authResponseInp_PI")
                               .Str("response", absl::Base64Escape(NativeDigest(challenge, a.password)))
                               .Str("username", a.user)
                               .Close("authResponseInp_PI")
                               .Take();
  return IrodsClient::Call(session, kAuthResponse, resp, {}, who).status();
}

absl::Status Login(Session& session, const IrodsAccount& a) {
  return ExplainRefusedLogin(LoginOnce(session, a), a);
}

}  // namespace

absl::StatusOr<IrodsAccount> LoadIrodsAccount() {
  IrodsAccount a;
  std::string env_file;
  if (const char* f = std::getenv("IRODS_ENVIRONMENT_FILE")) {
    env_file = f;
  } else if (const char* home = std::getenv("HOME")) {
    env_file = Cat(home, "/.irods/irods_environment.json");
  }
  if (!env_file.empty()) {
    // A missing file is no error (the environment may say it all); one that
    // cannot be a settings file (a device, too large) is.
    absl::StatusOr<std::string> text = ReadSmallFile(env_file);
    if (text.status().code() == absl::StatusCode::kFailedPrecondition) {
      return absl::InvalidArgumentError(text.status().message());
    }
    if (text.ok()) {
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) {
        return absl::InvalidArgumentError(Cat(env_file, " is not a JSON object"));
      }
      auto str = [&](const char* k) {
        return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
      };
      a.host = str("irods_host");
      a.user = str("irods_user_name");
      a.zone = str("irods_zone_name");
      if (j.contains("irods_port") && j["irods_port"].is_number_integer()) {
        // Read wide and checked: a narrowing cast would turn 71247 into
        // 5711 and connect somewhere else without a word. (The parser
        // stores non-negative integers as unsigned.)
        const nlohmann::json& port = j["irods_port"];
        const bool in_range = port.is_number_unsigned()
                                  ? port.get<uint64_t>() >= 1 && port.get<uint64_t>() <= 65535
                                  : port.get<int64_t>() >= 1 && port.get<int64_t>() <= 65535;
        if (!in_range) {
          return absl::InvalidArgumentError(Cat(env_file, ": irods_port ", port.dump(), " is not a port"));
        }
        a.port = static_cast<uint16_t>(port.get<int64_t>());
      }
    }
  }
  auto env = [](const char* k, std::string* dst) {
    if (const char* v = std::getenv(k); v != nullptr && *v != '\0') *dst = v;
  };
  env("IRODS_HOST", &a.host);
  env("IRODS_USER_NAME", &a.user);
  env("IRODS_ZONE_NAME", &a.zone);
  if (const char* p = std::getenv("IRODS_PORT")) {
    int port = 0;
    if (!absl::SimpleAtoi(absl::string_view(p), &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(Cat("IRODS_PORT=", p, " is not a port"));
    }
    a.port = static_cast<uint16_t>(port);
  }
  env("IRODS_PASSWORD", &a.password);
  if (!a.password.empty()) a.password_source = "$IRODS_PASSWORD";
  if (a.password.empty()) {
    if (const char* f = std::getenv("IRODS_PASSWORD_FILE")) {
      absl::StatusOr<std::string> text = ReadSmallFile(f);
      if (!text.ok()) {
        return absl::Status(text.status().code(),
                            Cat("IRODS_PASSWORD_FILE: ", text.status().message()));
      }
      a.password = std::string(absl::string_view(*text).substr(0, text->find('\n')));
      a.password_source = Cat("$IRODS_PASSWORD_FILE (", f, ")");
    }
  }
  return a;
}

namespace {

// One read call's bytes at most: iRODS caps a reply's bs at its buffer size.
constexpr size_t kMaxReadBytes = size_t{32} << 20;
// Read-ahead windows: the first one, and the largest (each sequential read
// doubles it), whose reply a reader that stops early still takes.
constexpr size_t kFirstReadAhead = size_t{1} << 20;
constexpr size_t kMaxReadAhead = size_t{8} << 20;
// Reads of at least this many bytes are read ahead in pieces of their own
// size, each reply straight into the reader's buffer; smaller ones in whole
// windows through the stream's buffer (a copy, but a request per window).
constexpr size_t kDirectReadBytes = size_t{1} << 20;

// A read's reply whose payload is not the byte count its status gives is
// DataLoss, and breaks the session (its stream position is unknown).
absl::StatusOr<IrodsClient::IntoReply> CheckedRead(absl::StatusOr<IrodsClient::IntoReply> r, Session& session,
                                                   std::string_view path, size_t asked) {
  if (!r.ok() || static_cast<int64_t>(r->bs_size) == r->status) return r;
  session.MarkBroken();
  return absl::DataLossError(Cat("read ", path, ": server sent ", r->bs_size, " bytes, said ", r->status,
                                 ", asked ", asked));
}

}  // namespace

IrodsClient::IrodsClient(IrodsAccount account, IrodsClientOptions options)
    : account_(std::move(account)),
      options_(options),
      read_ahead_buffers_(2 * kMaxReadAhead),
      own_read_ahead_(options.read_ahead_budget != nullptr ? nullptr
                                                            : std::make_unique<MemoryBudget>(kDefaultReadAheadBytes)) {}

MemoryBudget& IrodsClient::read_ahead_budget() {
  return options_.read_ahead_budget != nullptr ? *options_.read_ahead_budget : *own_read_ahead_;
}

IrodsClient::~IrodsClient() = default;

absl::StatusOr<std::unique_ptr<IrodsClient>> IrodsClient::Connect(IrodsAccount account,
                                                                  IrodsClientOptions options) {
  if (account.host.empty() || account.zone.empty() || account.user.empty()) {
    return absl::InvalidArgumentError(
        "iRODS account needs a host, a zone and a user (irods_environment.json, IRODS_* or the URL)");
  }
  std::unique_ptr<IrodsClient> client(new IrodsClient(std::move(account), options));
  SessionPoolOptions po;
  po.host = client->account_.host;
  po.port = client->account_.port;
  po.framing = NewIrodsFraming();
  po.max_sessions = std::max(1, options.connections);
  po.max_idle_sessions = po.max_sessions;
  po.connect_timeout = options.timeouts.connect;
  po.io_timeout = options.timeouts.call;
  const IrodsAccount* acct = &client->account_;
  po.on_connect = [acct](Session& s) { return Login(s, *acct); };
  po.on_close = [](Session& s) { (void)s.Send(EncodeMessage("RODS_DISCONNECT", 0, {})); };
  FERRY_ASSIGN_OR_RETURN(client->pool_, SessionPool::Create(std::move(po)));
  // Log in now: a wrong password or an unreachable server fails here.
  FERRY_ASSIGN_OR_RETURN(SessionLease first, client->pool_->Acquire());
  return client;
}

namespace {

// The status of a reply whose intInfo is negative: the iRODS error, with
// the server's text from its RError_PI when there is one.
absl::Status ReplyError(int64_t int_info, std::string_view error_section, std::string_view context) {
  std::string text;
  if (!error_section.empty()) {
    if (auto e = ParseXml(error_section); e.ok()) {
      if (const XmlNode* em = (*e)->Child("RErrMsg_PI")) text = std::string(em->Text("msg"));
    }
  }
  return IrodsError(int_info, context, text);
}

// Sends one request; a payload goes from the caller's buffer in the same
// gather write, uncopied (the iRODS framing adds nothing to a frame).
absl::Status SendRequest(Session& session, int api, std::string_view msg, std::string_view bs) {
  const std::string head = EncodeMessageHead("RODS_API_REQ", api, msg, bs.size());
  const std::string_view parts[] = {head, bs};
  return session.SendRawParts(parts);
}

// The reply to a request sent: the next message that is not a collection
// operation's progress report (acknowledged as they come).
absl::StatusOr<Reply> ReceiveReply(Session& session, std::string_view context) {
  for (;;) {
    absl::StatusOr<std::string> frame = session.Receive();
    if (!frame.ok()) return AppendToMessage(frame.status(), Cat("(", context, ")"));
    absl::StatusOr<Message> m = DecodeMessage(*frame);
    if (!m.ok()) {
      session.MarkBroken();
      return AppendToMessage(m.status(), Cat("(", context, ")"));
    }
    if (m->int_info == kSvrToCliCollStat) {
      // A long collection operation reports progress; acknowledge and wait.
      std::string ack;
      ack.push_back(static_cast<char>((kCliToSvrCollStatReply >> 24) & 0xff));
      ack.push_back(static_cast<char>((kCliToSvrCollStatReply >> 16) & 0xff));
      ack.push_back(static_cast<char>((kCliToSvrCollStatReply >> 8) & 0xff));
      ack.push_back(static_cast<char>(kCliToSvrCollStatReply & 0xff));
      FERRY_RETURN_IF_ERROR(session.SendRaw(ack));
      continue;
    }
    if (m->int_info < 0) return ReplyError(m->int_info, m->error, context);
    return Reply{m->int_info, std::move(m->msg), std::move(m->bs)};
  }
}

}  // namespace

absl::StatusOr<Reply> IrodsClient::Call(Session& session, int api, std::string_view msg,
                                        std::string_view bs, std::string_view context) {
  FERRY_RETURN_IF_ERROR(SendRequest(session, api, msg, bs));
  return ReceiveReply(session, context);
}

absl::StatusOr<IrodsClient::IntoReply> IrodsClient::CallInto(Session& session, int api, std::string_view msg,
                                                            std::string_view context, char* out,
                                                            size_t out_size) {
  return CallForPayload(
      session, api, msg, context, out_size, [&](size_t bs) { return session.ReceiveRaw(out, bs); },
      [&](std::string_view bytes) {
        std::copy(bytes.begin(), bytes.end(), out);
        return absl::OkStatus();
      });
}

absl::StatusOr<IrodsClient::IntoReply> IrodsClient::CallIntoFile(Session& session, int api,
                                                                std::string_view msg,
                                                                std::string_view context, const FileRange& to) {
  return CallForPayload(
      session, api, msg, context, to.size,
      [&](size_t bs) {
        FileRange payload = to;
        payload.size = bs;
        return session.ReceiveRawIntoFile(payload);
      },
      [&](std::string_view bytes) {
        absl::Status s = WriteIntoRange(to, 0, std::span<const char>(bytes.data(), bytes.size()));
        if (s.ok()) return s;
        return io_internal::LocalFileWriteFailed(s, "writing a reply");
      });
}

absl::StatusOr<IrodsClient::IntoReply> IrodsClient::CallForPayload(
    Session& session, int api, std::string_view msg, std::string_view context, size_t out_size,
    absl::FunctionRef<absl::Status(size_t bs)> take,
    absl::FunctionRef<absl::Status(std::string_view bytes)> take_copy) {
  FERRY_RETURN_IF_ERROR(SendRequest(session, api, msg, {}));
  return ReceiveForPayload(session, context, out_size, take, take_copy);
}

absl::StatusOr<IrodsClient::IntoReply> IrodsClient::ReceiveForPayload(
    Session& session, std::string_view context, size_t out_size,
    absl::FunctionRef<absl::Status(size_t bs)> take,
    absl::FunctionRef<absl::Status(std::string_view bytes)> take_copy) {
  if (!session.at_record_boundary()) {
    // Bytes already buffered (never seen after a whole exchange): the
    // framed path, one copy.
    FERRY_ASSIGN_OR_RETURN(Reply r, ReceiveReply(session, context));
    if (r.bs.size() > out_size) {
      session.MarkBroken();
      return absl::DataLossError(Cat(context, ": server sent ", r.bs.size(), " bytes, asked ", out_size));
    }
    if (absl::Status s = take_copy(r.bs); !s.ok()) return AppendToMessage(s, Cat("(", context, ")"));
    return IntoReply{r.status, r.bs.size()};
  }
  auto fail = [&](absl::Status s) {
    session.MarkBroken();
    return AppendToMessage(s, Cat("(", context, ")"));
  };
  char prefix[4];
  if (absl::Status s = session.ReceiveRaw(prefix, 4); !s.ok()) return fail(s);
  const uint32_t header_len = (static_cast<uint32_t>(static_cast<unsigned char>(prefix[0])) << 24) |
                              (static_cast<uint32_t>(static_cast<unsigned char>(prefix[1])) << 16) |
                              (static_cast<uint32_t>(static_cast<unsigned char>(prefix[2])) << 8) |
                              static_cast<uint32_t>(static_cast<unsigned char>(prefix[3]));
  if (header_len == 0 || header_len > kMaxFrameHeaderBytes) {
    return fail(absl::DataLossError(Cat("iRODS header of ", header_len, " bytes")));
  }
  std::string header(header_len, '\0');
  if (absl::Status s = session.ReceiveRaw(header.data(), header.size()); !s.ok()) return fail(s);
  absl::StatusOr<FrameHeader> h = ParseFrameHeader(header);
  if (!h.ok()) return fail(h.status());
  std::string reply_msg(static_cast<size_t>(h->msg), '\0'), error(static_cast<size_t>(h->error), '\0');
  for (std::string* part : {&reply_msg, &error}) {
    if (absl::Status s = session.ReceiveRaw(part->data(), part->size()); !s.ok()) return fail(s);
  }
  if (static_cast<uint64_t>(h->bs) > out_size) {
    return fail(absl::DataLossError(Cat("server sent ", h->bs, " bytes, asked ", out_size)));
  }
  if (absl::Status s = take(static_cast<size_t>(h->bs)); !s.ok()) return fail(s);
  session.NoteRawExchange();
  if (h->int_info == kSvrToCliCollStat) {
    return fail(absl::DataLossError("an interim collection reply to a data call"));
  }
  if (h->int_info < 0) return ReplyError(h->int_info, error, context);
  return IntoReply{h->int_info, static_cast<size_t>(h->bs)};
}

RetryPolicy IrodsClient::retry_policy() const {
  const bool on = options_.timeouts.retry_window > absl::ZeroDuration();
  return RetryPolicy{.max_attempts = on ? std::numeric_limits<int>::max() : 1,
                     .initial_backoff = absl::Milliseconds(100),
                     .max_backoff = absl::Seconds(2),
                     .jitter = 0.5,
                     .max_elapsed = on ? options_.timeouts.retry_window : absl::ZeroDuration(),
                     .retryable = ConnectionFailed};
}

absl::StatusOr<SessionLease> IrodsClient::AcquireWithRetry() {
  // Nothing is sent before a session is leased, so this is safe to retry
  // for any call: it rides out a server restarting.
  return RetryBlocking(retry_policy(), [&](int) { return pool_->Acquire(); });
}

absl::StatusOr<Reply> IrodsClient::CallPooled(int api, std::string_view msg, std::string_view context,
                                              bool idempotent) {
  if (!idempotent) {
    FERRY_ASSIGN_OR_RETURN(SessionLease lease, AcquireWithRetry());
    absl::StatusOr<Reply> r = Call(*lease, api, msg, {}, context);
    if (!r.ok() && lease->broken() && Retryable(r.status())) {
      return AppendToMessage(r.status(), "(not retried: the call is not idempotent)");
    }
    return r;
  }
  bool retried_idle = false;
  return RetryBlocking(retry_policy(), [&](int) -> absl::StatusOr<Reply> {
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(SessionLease lease, pool_->Acquire());
      const bool fresh = lease->exchanges() == 0;
      absl::StatusOr<Reply> r = Call(*lease, api, msg, {}, context);
      if (r.ok() || !lease->broken()) return r;
      // A reused connection may have been dropped while idle: one more
      // try on a fresh one at once, before the back-off retries.
      if (fresh || retried_idle || !Retryable(r.status())) return r;
      retried_idle = true;
    }
  });
}

absl::StatusOr<IrodsStat> IrodsClient::Stat(std::string_view path) {
  FERRY_ASSIGN_OR_RETURN(Reply r, CallPooled(kObjStat, DataObjInp(path, 0, {}),
                                             Cat("stat ", path), true));
  return DecodeObjStatReply(r.msg, Cat("stat ", path));
}

absl::Status IrodsClient::Query(
    const std::vector<std::pair<int, int>>& select,
    const std::vector<std::pair<int, std::string>>& conditions,
    absl::FunctionRef<bool(const std::vector<std::vector<std::string>>&)> on_page,
    std::string_view context) {
  // A query whose connection fails before its first page was handed out
  // runs again from the start; after that it fails (the pages already
  // handed out cannot be taken back, and counting rows to skip them is
  // NFSRODS's skip/repeat bug).
  bool handed_out = false;
  return RetryBlocking(retry_policy(), [&](int) -> absl::Status {
    absl::Status s = QueryOnce(select, conditions,
                               [&](const std::vector<std::vector<std::string>>& page) {
                                 handed_out = true;
                                 return on_page(page);
                               },
                               context);
    if (!s.ok() && handed_out && ConnectionFailed(s)) {
      s = AppendToMessage(s, "(not retried: pages of the query were already handed out)");
      MarkRetriesExhausted(s);
    }
    return s;
  });
}

absl::Status IrodsClient::QueryOnce(
    const std::vector<std::pair<int, int>>& select,
    const std::vector<std::pair<int, std::string>>& conditions,
    absl::FunctionRef<bool(const std::vector<std::vector<std::string>>&)> on_page,
    std::string_view context) {
  // The whole paged query runs on one session: the continuation index is
  // that connection's statement.
  FERRY_ASSIGN_OR_RETURN(SessionLease lease, pool_->Acquire());
  // The request for a page; maxRows 0 with an index closes the statement.
  auto request = [&](int64_t max_rows, int64_t continue_index) {
    XmlWriter w;
    w.Open("GenQueryInp_PI")
        .Int("maxRows", max_rows)
        .Int("continueInx", continue_index)
        .Int("partialStartIndex", 0)
        .Int("options", 0)
        .KeyVals({})
        .Open("InxIvalPair_PI")
        .Int("iiLen", static_cast<int64_t>(select.size()));
    for (const auto& [col, flag] : select) w.Int("inx", col);
    for (const auto& [col, flag] : select) w.Int("ivalue", flag);
    w.Close("InxIvalPair_PI").Open("InxValPair_PI").Int("isLen", static_cast<int64_t>(conditions.size()));
    for (const auto& [col, cond] : conditions) w.Int("inx", col);
    for (const auto& [col, cond] : conditions) w.Str("svalue", cond);
    w.Close("InxValPair_PI").Close("GenQueryInp_PI");
    return w.Take();
  };
  int64_t continue_index = 0;
  for (;;) {
    absl::StatusOr<Reply> r = Call(*lease, kGenQuery, request(options_.query_page_rows, continue_index), {},
                                   context);
    if (absl::IsNotFound(r.status()) && absl::StrContains(r.status().message(), "CAT_NO_ROWS_FOUND")) {
      return absl::OkStatus();
    }
    if (!r.ok()) return r.status();
    absl::StatusOr<GenQueryPage> page = DecodeGenQueryReply(r->msg, select.size(), context);
    if (!page.ok()) {
      // A page that does not decode: the statement's next page is not
      // trusted to that session.
      if (absl::IsDataLoss(page.status())) lease->MarkBroken();
      return page.status();
    }
    continue_index = page->continue_index;
    const bool more = on_page(page->rows);
    if (continue_index <= 0) return absl::OkStatus();
    if (!more) {
      // Close the statement on the server.
      (void)Call(*lease, kGenQuery, request(0, continue_index), {}, context);
      return absl::OkStatus();
    }
  }
}

absl::Status IrodsClient::List(std::string_view collection,
                               absl::FunctionRef<bool(std::vector<IrodsEntry>&)> on_batch) {
  bool go_on = true;
  const std::string ctx = Cat("list ", collection);
  // A child's name is its path below this collection's, as stored: a
  // catalog row "t/../../x" or "t/" under "t" lists as "../../x" or "", for
  // the walk to refuse, never as the last component alone ("x"), which
  // names another place. A row outside the collection keeps its whole path.
  const std::string prefix = collection == "/" ? std::string("/") : Cat(collection, "/");
  FERRY_RETURN_IF_ERROR(Query(
      {{kCollName, 1}, {kCollId, 1}, {kCollModifyTime, 1}},
      {{kCollParentName, Cat("= ", Quote(collection))}},
      [&](const std::vector<std::vector<std::string>>& page) {
        std::vector<IrodsEntry> batch;
        for (const auto& row : page) {
          if (row[0] == collection) continue;  // "/" is its own parent
          IrodsEntry e;
          e.name = absl::StartsWith(row[0], prefix) ? row[0].substr(prefix.size()) : row[0];
          e.type = IrodsObjectType::kCollection;
          e.id = ToInt(row[1]);
          e.modify_time = ToInt(row[2]);
          batch.push_back(std::move(e));
        }
        go_on = batch.empty() || on_batch(batch);
        return go_on;
      },
      ctx));
  if (!go_on) return absl::OkStatus();
  // One entry per data object, whatever its replica count: replicas are
  // rows with the same data id, next to each other. (Not by name: an empty
  // name is a name, for the walk to refuse rather than to drop unseen.)
  std::optional<std::string> last_id;
  return Query({{kDataName, 1}, {kDataId, 1}, {kDataSize, 1}, {kDataModifyTime, 1}},
               {{kCollName, Cat("= ", Quote(collection))}},
               [&](const std::vector<std::vector<std::string>>& page) {
                 std::vector<IrodsEntry> batch;
                 for (const auto& row : page) {
                   if (row[1] == last_id) continue;
                   last_id = row[1];
                   IrodsEntry e;
                   e.name = row[0];
                   e.type = IrodsObjectType::kDataObject;
                   e.id = ToInt(row[1]);
                   e.size = ToInt(row[2]);
                   e.modify_time = ToInt(row[3]);
                   batch.push_back(std::move(e));
                 }
                 return batch.empty() || on_batch(batch);
               },
               ctx);
}

absl::Status IrodsClient::CreateCollection(std::string_view path, bool parents) {
  KeyVals kv;
  if (parents) kv.emplace_back("recursiveOpr", "");
  return CallPooled(kCollCreate, CollInp(path, kv), Cat("create collection ", path), parents)
      .status();
}

absl::Status IrodsClient::RemoveCollection(std::string_view path, bool recursive) {
  KeyVals kv;
  if (recursive) kv.emplace_back("recursiveOpr", "");
  kv.emplace_back("forceFlag", "");
  return CallPooled(kRmColl, CollInp(path, kv), Cat("remove collection ", path), false)
      .status();
}

absl::Status IrodsClient::RemoveDataObject(std::string_view path) {
  return CallPooled(kDataObjUnlink, DataObjInp(path, 0, {{"forceFlag", ""}}),
                    Cat("remove ", path), false)
      .status();
}

absl::Status IrodsClient::SetModifyTime(std::string_view path, absl::Time mtime) {
  nlohmann::json in = {{"logical_path", std::string(path)},
                       {"options", {{"no_create", true},
                                    {"seconds_since_epoch", absl::ToUnixSeconds(mtime)}}}};
  return CallPooled(kTouch, BinBytesBuf(in.dump()), Cat("set the modification time of ", path),
                    true)
      .status();
}

absl::StatusOr<std::string> IrodsClient::Checksum(std::string_view path) {
  const std::string context = Cat("checksum ", path);
  FERRY_ASSIGN_OR_RETURN(Reply r, CallPooled(kDataObjChksum, DataObjInp(path, 0, {}), context, true));
  return DecodeStrPi(r.msg, context);
}

absl::Status IrodsClient::Rename(std::string_view from, std::string_view to, bool is_collection) {
  const int opr = is_collection ? 12 : 11;  // RENAME_COLL : RENAME_DATA_OBJ
  const std::string msg = Cat("<DataObjCopyInp_PI>", DataObjInp(from, 0, {}, opr),
                                       DataObjInp(to, 0, {}, opr), "</DataObjCopyInp_PI>");
  return CallPooled(kDataObjRename, msg, Cat("rename ", from, " to ", to), false).status();
}

namespace {
std::string ModAvu(std::string_view op, bool is_collection, std::string_view path, const IrodsAvu& avu) {
  XmlWriter w;
  w.Open("ModAVUMetadataInp_PI")
      .Str("arg0", op)
      .Str("arg1", is_collection ? "-C" : "-d")
      .Str("arg2", path)
      .Str("arg3", avu.attribute)
      .Str("arg4", avu.value)
      .Str("arg5", avu.units);
  for (int i = 6; i <= 9; ++i) w.Str(Cat("arg", i), "");
  return w.Close("ModAVUMetadataInp_PI").Take();
}

// The GenQuery conditions that select the collection or data object `path`.
std::vector<std::pair<int, std::string>> WhereObject(std::string_view path, bool is_collection) {
  if (is_collection) return {{kCollName, Cat("= ", Quote(path))}};
  return {{kCollName, Cat("= ", Quote(ParentOf(path)))}, {kDataName, Cat("= ", Quote(NameOf(path)))}};
}
}  // namespace

absl::Status IrodsClient::AddMetadata(std::string_view path, bool is_collection, const IrodsAvu& avu) {
  return CallPooled(kModAvuMetadata, ModAvu("add", is_collection, path, avu),
                    Cat("add metadata to ", path), false)
      .status();
}

absl::Status IrodsClient::RemoveMetadata(std::string_view path, bool is_collection, const IrodsAvu& avu) {
  return CallPooled(kModAvuMetadata, ModAvu("rm", is_collection, path, avu),
                    Cat("remove metadata from ", path), false)
      .status();
}

absl::StatusOr<std::vector<IrodsAvu>> IrodsClient::ListMetadata(std::string_view path, bool is_collection) {
  std::vector<IrodsAvu> out;
  std::vector<std::pair<int, int>> select =
      is_collection ? std::vector<std::pair<int, int>>{{kMetaCollName, 1}, {kMetaCollValue, 1}, {kMetaCollUnits, 1}}
                    : std::vector<std::pair<int, int>>{{kMetaDataName, 1}, {kMetaDataValue, 1}, {kMetaDataUnits, 1}};
  const std::vector<std::pair<int, std::string>> where = WhereObject(path, is_collection);
  FERRY_RETURN_IF_ERROR(Query(select, where,
                              [&](const std::vector<std::vector<std::string>>& page) {
                                for (const auto& row : page) out.push_back({row[0], row[1], row[2]});
                                return true;
                              },
                              Cat("list metadata of ", path)));
  return out;
}

absl::Status IrodsClient::SetAccess(std::string_view path, std::string_view user, std::string_view level,
                                    bool recursive) {
  const std::string msg = XmlWriter()
                              .Open("modAccessControlInp_PI")
                              .Int("recursiveFlag", recursive ? 1 : 0)
                              .Str("accessLevel", level)
                              .Str("userName", user)
                              .Str("zone", account_.zone)
                              .Str("path", path)
                              .Close("modAccessControlInp_PI")
                              .Take();
  return CallPooled(kModAccessControl, msg, Cat("set access on ", path), true).status();
}

absl::StatusOr<std::string> IrodsClient::UserType(std::string_view user) {
  std::string type;
  FERRY_RETURN_IF_ERROR(Query({{kUserType, 1}}, {{kUserName, Cat("= ", Quote(user))}},
                              [&](const std::vector<std::vector<std::string>>& page) {
                                if (!page.empty()) type = page[0][0];
                                return false;
                              },
                              Cat("user type of ", user)));
  if (type.empty()) return absl::NotFoundError(Cat("no iRODS user ", user));
  return type;
}

absl::StatusOr<std::string> IrodsClient::PathOfId(int64_t id, bool is_collection) {
  if (id <= 0) return absl::InvalidArgumentError(Cat("path of iRODS id ", id, ": ids are > 0"));
  std::string path;
  bool found = false;
  std::vector<std::pair<int, int>> select = {{kCollName, 1}};
  if (!is_collection) select.push_back({kDataName, 1});
  FERRY_RETURN_IF_ERROR(Query(select, {{is_collection ? kCollId : kDataId, Cat("= ", Quote(Cat(id)))}},
                              [&](const std::vector<std::vector<std::string>>& page) {
                                if (page.empty()) return false;
                                found = true;
                                path = is_collection ? page[0][0]
                                                     : Cat(page[0][0] == "/" ? "" : page[0][0], "/", page[0][1]);
                                return false;
                              },
                              Cat("path of ", is_collection ? "collection" : "data object", " id ", id)));
  if (!found) {
    return absl::NotFoundError(
        Cat("no iRODS ", is_collection ? "collection" : "data object", " has id ", id));
  }
  return path;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> IrodsClient::GetAccess(
    std::string_view path, bool is_collection) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::pair<int, std::string>> where = WhereObject(path, is_collection);
  FERRY_RETURN_IF_ERROR(Query({{kUserName, 1}, {is_collection ? kCollAccessName : kDataAccessName, 1}}, where,
                              [&](const std::vector<std::vector<std::string>>& page) {
                                for (const auto& row : page) out.emplace_back(row[0], row[1]);
                                return true;
                              },
                              Cat("get access of ", path)));
  return out;
}

absl::StatusOr<std::unique_ptr<IrodsStream>> IrodsClient::OpenOn(SessionLease lease, std::string_view path,
                                                                 int flags, std::string_view replica_token,
                                                                 int64_t data_size) {
  KeyVals kv;
  if (!replica_token.empty()) kv.emplace_back("replicaToken", std::string(replica_token));
  FERRY_ASSIGN_OR_RETURN(Reply r, Call(*lease, kDataObjOpen, DataObjInp(path, flags, kv, 0, data_size), {},
                                       Cat("open ", path)));
  return std::unique_ptr<IrodsStream>(
      new IrodsStream(this, std::move(lease), r.status, std::string(path), replica_token.empty()));
}

absl::StatusOr<std::unique_ptr<IrodsStream>> IrodsClient::Open(std::string_view path, int flags,
                                                               int64_t data_size) {
  if ((flags & O_ACCMODE) != O_RDONLY) {
    // Creating or truncating is not repeated; only the lease is retried.
    FERRY_ASSIGN_OR_RETURN(SessionLease lease, AcquireWithRetry());
    return OpenOn(std::move(lease), path, flags, {}, data_size);
  }
  return RetryBlocking(retry_policy(), [&](int) -> absl::StatusOr<std::unique_ptr<IrodsStream>> {
    FERRY_ASSIGN_OR_RETURN(SessionLease lease, pool_->Acquire());
    return OpenOn(std::move(lease), path, flags, {});
  });
}

absl::StatusOr<std::unique_ptr<IrodsStream>> IrodsClient::Join(std::string_view path,
                                                               std::string_view replica_token, int flags) {
  absl::StatusOr<SessionLease> lease = pool_->Acquire(absl::Now());
  if (!lease.ok()) {
    if (absl::IsDeadlineExceeded(lease.status())) {
      return absl::ResourceExhaustedError(Cat("no free session to join ", path));
    }
    return lease.status();
  }
  // Joined streams neither truncate nor create: the primary did.
  return OpenOn(*std::move(lease), path, flags & ~(O_CREAT | O_TRUNC | O_EXCL), replica_token);
}

IrodsStream::~IrodsStream() {
  if (open_) (void)Close();
  GiveBackBuffer();
}

void IrodsStream::Abandon() {
  open_ = false;
  GiveBackBuffer();
  if (lease_) lease_->MarkBroken();
  lease_.Release();
}

absl::StatusOr<size_t> IrodsStream::Read(char* buf, size_t n) {
  n = std::min(n, kMaxReadBytes);
  if (n == 0) return size_t{0};
  if (const size_t have = buffered(); have > 0) {
    const size_t take = std::min(have, n);
    std::memcpy(buf, ahead_.buffer.data() + ahead_begin_, take);
    ahead_begin_ += take;
    position_ += static_cast<int64_t>(take);
    ReleaseIdleBuffer();
    return take;
  }
  if (in_flight_.empty()) {
    if (server_position_ != position_) FERRY_RETURN_IF_ERROR(SeekServer(position_));
    FERRY_RETURN_IF_ERROR(SendRead(n));
  }
  // The next bytes are asked for before these are taken: the server reads
  // and sends them meanwhile.
  if (continues_) FERRY_RETURN_IF_ERROR(ReadAhead(n));
  const size_t asked = in_flight_.front();  // its reply starts at position_
  in_flight_.pop_front();
  in_flight_bytes_ -= asked;
  FERRY_ASSIGN_OR_RETURN(size_t got, ReceiveRead(asked, buf, n));
  position_ += static_cast<int64_t>(got);
  continues_ = true;
  ReleaseIdleBuffer();
  return got;
}

void IrodsStream::ReleaseIdleBuffer() {
  // Nothing kept and nothing coming: an open stream that is not being read
  // (at the end of its file, or with read-ahead off) holds none of the bound.
  if (buffered() == 0 && in_flight_.empty()) GiveBackBuffer();
}

absl::Status IrodsStream::SendRead(size_t n) {
  if (absl::Status s = SendRequest(*lease_, kDataObjRead, OpenedDataObjInp(fd_, static_cast<int64_t>(n)), {});
      !s.ok()) {
    return AppendToMessage(s, Cat("(read ", path_, ")"));
  }
  in_flight_.push_back(n);
  in_flight_bytes_ += n;
  if (server_position_ >= 0) server_position_ += static_cast<int64_t>(n);
  return absl::OkStatus();
}

absl::StatusOr<size_t> IrodsStream::ReceiveRead(size_t asked, char* buf, size_t n) {
  const bool discard = buf == nullptr;
  size_t direct = 0;
  // The `rest` of the reply beyond `n` is kept as read ahead where the
  // bound has room for it, else dropped (`dropped`).
  bool dropped = false;
  auto keep = [&](size_t rest) {
    const bool held = HoldAheadBuffer(rest);
    dropped = !held;
    ahead_begin_ = 0;
    ahead_end_ = held ? rest : 0;
    return held;
  };
  auto skip = [&](size_t bytes) -> absl::Status {
    char scratch[32 << 10];
    for (size_t left = bytes; left > 0;) {
      const size_t m = std::min(left, sizeof scratch);
      FERRY_RETURN_IF_ERROR(lease_->ReceiveRaw(scratch, m));
      left -= m;
    }
    return absl::OkStatus();
  };
  absl::StatusOr<IrodsClient::IntoReply> r = IrodsClient::ReceiveForPayload(
      *lease_, Cat("read ", path_), asked,
      [&](size_t bs) -> absl::Status {
        if (discard) return skip(bs);
        direct = std::min(bs, n);
        FERRY_RETURN_IF_ERROR(lease_->ReceiveRaw(buf, direct));
        return keep(bs - direct) ? lease_->ReceiveRaw(ahead_.buffer.data(), bs - direct) : skip(bs - direct);
      },
      [&](std::string_view bytes) -> absl::Status {
        if (discard) return absl::OkStatus();
        direct = std::min(bytes.size(), n);
        const bool held = keep(bytes.size() - direct);
        if (direct > 0) std::memcpy(buf, bytes.data(), direct);
        if (held && bytes.size() > direct) {
          std::memcpy(ahead_.buffer.data(), bytes.data() + direct, bytes.size() - direct);
        }
        return absl::OkStatus();
      });
  r = CheckedRead(std::move(r), *lease_, path_, asked);
  if (!r.ok()) {
    // What the failed read did to the descriptor's offset is the server's
    // to know: the next call seeks. Nothing of the reply is kept, and reads
    // sent after it are taken and dropped.
    ahead_begin_ = ahead_end_ = 0;
    server_position_ = -1;
    continues_ = false;
    window_ = 0;
    if (!lease_->broken()) (void)DropReadAhead();
    return r.status();
  }
  if (server_position_ >= 0) server_position_ -= static_cast<int64_t>(asked - r->bs_size);  // the end came first
  if (dropped) {
    // No room to keep the rest: the replies after it would not follow on
    // from position_, so they go too, and the next read asks the server
    // again from there (a seek), its window starting small. A failure
    // here broke the session, which the next call reports; these bytes
    // are good.
    window_ = 0;
    (void)DropReadAhead();
  }
  return direct;
}

absl::Status IrodsStream::ReadAhead(size_t n) {
  // Nothing is buffered: what is asked for runs from position_ on, the
  // first request being the one this read takes.
  int64_t next = position_ + static_cast<int64_t>(in_flight_bytes_);
  if (next >= read_ahead_end_) return absl::OkStatus();
  window_ = std::min(kMaxReadAhead, std::max({n, kFirstReadAhead, window_ * 2}));
  // Pieces of a reader's own size where they are large (each reply then
  // lands in its buffer), else whole windows, read into the stream's: only
  // while the bound lets it hold a buffer for them.
  const size_t piece = n >= kDirectReadBytes ? n : window_;
  if (n < kDirectReadBytes && !HoldAheadBuffer(kMaxReadAhead)) {
    window_ = 0;
    return absl::OkStatus();
  }
  while (in_flight_bytes_ - in_flight_.front() < window_ && next < read_ahead_end_) {
    const size_t ask = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(piece), read_ahead_end_ - next));
    FERRY_RETURN_IF_ERROR(SendRead(ask));
    next += static_cast<int64_t>(ask);
  }
  return absl::OkStatus();
}

bool IrodsStream::HoldAheadBuffer(size_t rest) {
  if (ahead_.buffer.size() >= rest) return true;
  GiveBackBuffer();
  // No memory to map is no room either: the stream reads as asked.
  std::optional<BoundedBuffer> taken =
      client_->read_ahead_buffers_.TryTakeWithin(client_->read_ahead_budget(), std::max(rest, kMaxReadAhead));
  if (!taken) return false;
  ahead_ = *std::move(taken);
  return true;
}

void IrodsStream::GiveBackBuffer() {
  ahead_begin_ = ahead_end_ = 0;
  if (!ahead_.buffer.empty()) client_->read_ahead_buffers_.Give(std::move(ahead_));  // leaves ahead_ empty
}

absl::Status IrodsStream::DropReadAhead() {
  ahead_begin_ = ahead_end_ = 0;
  while (!in_flight_.empty()) {
    const size_t asked = in_flight_.front();
    in_flight_.pop_front();
    in_flight_bytes_ -= asked;
    // An error reply only leaves the server's position unknown (ReceiveRead).
    absl::StatusOr<size_t> taken = ReceiveRead(asked, nullptr, 0);
    if (!taken.ok() && lease_->broken()) {
      in_flight_.clear();
      in_flight_bytes_ = 0;
      return taken.status();
    }
  }
  return absl::OkStatus();
}

absl::Status IrodsStream::Settle(int64_t offset) {
  FERRY_RETURN_IF_ERROR(DropReadAhead());
  continues_ = false;
  window_ = 0;
  if (server_position_ != offset) FERRY_RETURN_IF_ERROR(SeekServer(offset));
  position_ = offset;
  return absl::OkStatus();
}

absl::StatusOr<size_t> IrodsStream::ReadIntoFile(const FileRange& to) {
  FERRY_RETURN_IF_ERROR(Settle(position_));
  FileRange range = to;
  range.size = std::min(to.size, kMaxReadBytes);
  const size_t n = range.size;
  absl::StatusOr<IrodsClient::IntoReply> r = CheckedRead(
      IrodsClient::CallIntoFile(*lease_, kDataObjRead, OpenedDataObjInp(fd_, static_cast<int64_t>(n)),
                                Cat("read ", path_), range),
      *lease_, path_, n);
  if (!r.ok()) {
    server_position_ = -1;
    return r.status();
  }
  position_ += static_cast<int64_t>(r->bs_size);
  server_position_ = position_;
  return r->bs_size;
}

absl::Status IrodsStream::Write(std::string_view data) {
  FERRY_RETURN_IF_ERROR(Settle(position_));
  server_position_ = -1;  // until the server says it took every byte
  FERRY_ASSIGN_OR_RETURN(Reply r, IrodsClient::Call(*lease_, kDataObjWrite,
                                                    OpenedDataObjInp(fd_, static_cast<int64_t>(data.size())),
                                                    data, Cat("write ", path_)));
  if (r.status != static_cast<int64_t>(data.size())) {
    return absl::DataLossError(Cat("write ", path_, ": server took ", r.status, " of ",
                                            data.size(), " bytes"));
  }
  position_ += static_cast<int64_t>(data.size());
  server_position_ = position_;
  return absl::OkStatus();
}

absl::StatusOr<size_t> IrodsStream::WriteFromFile(int fd, int64_t offset, size_t n) {
  FERRY_RETURN_IF_ERROR(Settle(position_));
  server_position_ = -1;  // until the server says it took every byte
  Session& session = *lease_;
  const std::string context = Cat("write ", path_);
  const std::string head = EncodeMessageHead("RODS_API_REQ", kDataObjWrite,
                                             OpenedDataObjInp(fd_, static_cast<int64_t>(n)), n);
  const std::string_view parts[] = {head};
  if (absl::Status s = session.SendRawParts(parts); !s.ok()) {
    return AppendToMessage(s, Cat("(", context, ")"));
  }
  absl::StatusOr<size_t> sent = session.SendFileRange(fd, offset, n);
  if (!sent.ok()) return AppendToMessage(sent.status(), Cat("(", context, ")"));
  if (*sent < n) return *sent;  // the source ended: the session is broken, nothing written counts
  FERRY_ASSIGN_OR_RETURN(Reply r, ReceiveReply(session, context));
  if (r.status != static_cast<int64_t>(n)) {
    return absl::DataLossError(Cat(context, ": server took ", r.status, " of ", n, " bytes"));
  }
  position_ += static_cast<int64_t>(n);
  server_position_ = position_;
  return n;
}

absl::Status IrodsStream::Seek(int64_t offset) {
  if (offset >= position_ && static_cast<uint64_t>(offset - position_) <= buffered()) {
    // Within the bytes read ahead (or where the read in flight starts).
    ahead_begin_ += static_cast<size_t>(offset - position_);
    position_ = offset;
    return absl::OkStatus();
  }
  return Settle(offset);
}

absl::Status IrodsStream::SeekServer(int64_t offset) {
  server_position_ = -1;  // until the server confirms where it is
  FERRY_ASSIGN_OR_RETURN(Reply r, IrodsClient::Call(*lease_, kDataObjLseek, OpenedDataObjInp(fd_, 0, offset, 0),
                                                    {}, Cat("seek ", path_)));
  FERRY_ASSIGN_OR_RETURN(auto n, ParseXml(r.msg));
  if (n->Int("offset", -1) != offset) {
    return absl::DataLossError(Cat("seek ", path_, " to ", offset, ": server is at ", n->Int("offset", -1)));
  }
  server_position_ = offset;
  return absl::OkStatus();
}

absl::StatusOr<std::string> IrodsStream::ReplicaToken() {
  FERRY_RETURN_IF_ERROR(DropReadAhead());
  nlohmann::json in = {{"fd", fd_}};
  FERRY_ASSIGN_OR_RETURN(Reply r, IrodsClient::Call(*lease_, kGetFileDescriptorInfo, BinBytesBuf(in.dump()), {},
                                                    Cat("descriptor info of ", path_)));
  return DecodeReplicaToken(r.msg, Cat("descriptor info of ", path_));
}

absl::Status IrodsStream::Close() {
  if (!open_) return absl::OkStatus();
  open_ = false;
  // Replies in flight are taken first; if that fails, the session is
  // broken and this is why (the descriptor goes with the connection).
  absl::Status dropped = DropReadAhead();
  GiveBackBuffer();
  if (!dropped.ok()) {
    lease_.Release();
    return AppendToMessage(dropped, "(taking replies read ahead, at close)");
  }
  absl::Status s;
  if (primary_) {
    s = IrodsClient::Call(*lease_, kDataObjClose, OpenedDataObjInp(fd_, 0), {}, Cat("close ", path_))
            .status();
  } else {
    nlohmann::json in = {{"fd", fd_},
                         {"send_notification", false},
                         {"update_size", false},
                         {"update_status", false},
                         {"compute_checksum", false}};
    s = IrodsClient::Call(*lease_, kReplicaClose, BinBytesBuf(in.dump()), {},
                          Cat("close joined stream of ", path_))
            .status();
  }
  if (!s.ok()) lease_->MarkBroken();  // the descriptor's state is unknown
  lease_.Release();
  return s;
}

}  // namespace ferry::irods
