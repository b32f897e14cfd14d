// The HTTP engine: libcurl's multi_socket interface on asio.
//
// curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when
// to call it back (CURLMOPT_TIMERFUNCTION); we turn those into
// posix::stream_descriptor::async_wait and a steady_timer on the Runtime's
// io_context, and feed readiness back with curl_multi_socket_action. A CURLM
// is not thread-safe and the io_context has several threads, so every curl
// call happens under `mu_`; curl's callbacks (socket, timer, close, body
// reads and writes) therefore run with `mu_` held. User callbacks run after
// it is released.
//
// asio's epoll reactor is edge-triggered: a readiness edge that arrives
// while no wait is queued is lost. So a socket's wait is re-armed BEFORE
// the socket_action that consumes its data: an edge during the action
// completes the new wait (at worst one spurious action) instead of
// vanishing. We own socket opening and closing (CURLOPT_OPENSOCKETFUNCTION,
// CURLOPT_CLOSESOCKETFUNCTION) so a descriptor is always released from asio
// before its fd is closed and can be reused by someone else's socket.
//
// A request with a response_buffer has its 2xx body written straight
// into it (no string, no allocation per request: a downloader recycles
// its chunk buffers). Where a body goes is chosen once the final reply's
// headers have ended, from its status and Content-Length; a body with no
// Content-Length that outgrows the buffer is refused in the write
// callback and the transfer fails DataLoss, not retried. A request with a
// body sink (a streamed read) hands its 2xx body over piece by piece; the
// sink may pause the transfer (CURL_WRITEFUNC_PAUSE: curl keeps the piece)
// until Resume, which calls curl_easy_pause under `mu` like every other
// curl call; Cancel takes it out of the multi handle mid-body.
//
// Asio handlers hold a shared_ptr to the Engine: the HttpClient's
// destructor shuts the engine down (cancelling everything) and handlers
// still queued find it shut down and return.
#include "ferry/s3/http_client.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/mutex.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/curl_api.h"
#include "ferry/s3/http_header_lines.h"
#include "ferry/runtime/retry_policy.h"

namespace ferry::s3 {

const std::string* HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

namespace {

// curl's receive buffer per transfer: large enough that a 1 GiB GET is not
// thousands of tiny reads (curl's default is 16 KiB).
constexpr long kReceiveBufferBytes = 512 << 10;
// Send buffer for uploads (curl's maximum is 2 MiB).
constexpr long kUploadBufferBytes = 1 << 20;
// Idle easy handles kept for reuse; more are freed.
constexpr size_t kMaxIdleHandles = 64;
// Connections the multi handle keeps open for reuse.
constexpr long kMaxCachedConnections = 64;

bool RetryableHttpStatus(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// Status payload marking a failure to connect (IsConnectFailure).
constexpr char kConnectFailurePayload[] = "ferry.s3/connect-failure";

// No connection was made, so the request was not sent: refused, a name
// that did not resolve, or a connect that timed out (`never_connected`:
// curl's timeout hit before a connection, or the request, got out).
bool ConnectFailure(CURLcode code, bool never_connected) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
         (code == CURLE_OPERATION_TIMEDOUT && never_connected);
}

// True when `easy` neither connected nor reached sending its request.
bool NeverConnected(const CurlApi* curl, CURL* easy) {
  curl_off_t connect_us = 0, pretransfer_us = 0;
  curl->easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_us);
  curl->easy_getinfo(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
  return connect_us == 0 && pretransfer_us == 0;
}

// TLS failures that a retry cannot fix: the server's certificate or the
// configured CA bundle is wrong.
bool TlsConfigFailure(CURLcode code) {
  return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
         code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_ISSUER_ERROR;
}

absl::Status CurlStatus(const CurlApi* curl, const std::string& method, const std::string& url,
                        CURLcode code, const char* errbuf, bool never_connected) {
  std::string text = absl::StrCat("HTTP ", method, " ", url, ": ",
                                  errbuf[0] != '\0' ? errbuf : curl->easy_strerror(code),
                                  " (curl error ", static_cast<int>(code), ")");
  if (ConnectFailure(code, never_connected)) {
    absl::Status s = absl::UnavailableError(
        code == CURLE_OPERATION_TIMEDOUT ? absl::StrCat(text, ": no connection was made") : text);
    s.SetPayload(kConnectFailurePayload, absl::Cord("1"));
    return s;
  }
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ISSUER_ERROR:
      return absl::UnauthenticatedError(
          absl::StrCat(text, ": the server's TLS certificate is not trusted (set the CA bundle)"));
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return absl::InvalidArgumentError(text);
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(text);
    case CURLE_PARTIAL_FILE:
      return absl::DataLossError(text);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return absl::UnavailableError(text);
    case CURLE_ABORTED_BY_CALLBACK:
      return absl::CancelledError(text);
    default:
      return absl::InternalError(text);
  }
}

}  // namespace

bool IsConnectFailure(const absl::Status& status) {
  return status.GetPayload(kConnectFailurePayload).has_value();
}

// What one attempt has learned of its reply so far. Reset for every
// attempt, and the first three for every status line (a 100 Continue
// precedes the final reply).
struct ReplyState {
  long status = 0;              // from the status line; 0 if unreadable
  int64_t content_length = -1;  // -1: none announced
  // Where the body goes (HttpResponse::body_in_buffer) is chosen once the
  // final reply's headers have ended, before its first body byte.
  bool body_sink_chosen = false;
  // The body outgrew HttpRequest::response_buffer: the write callback
  // refused it, and curl's CURLE_WRITE_ERROR means DataLoss.
  bool buffer_overflowed = false;
  // The body goes to HttpRequest::body_sink (a 2xx reply).
  bool to_sink = false;
  // The body sink refused a piece: CURLE_WRITE_ERROR means Cancelled.
  bool sink_refused = false;
};

// One request from Send to its callback, retries included.
struct Transfer {
  HttpRequest request;
  Callback<HttpResponse> done;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  size_t sent = 0;
  HttpResponse response;
  ReplyState reply;
  int attempts = 0;
  // Attempts that stalled past stall_timeout after connecting: a request
  // is sent again once after one (curl closed that connection, so on a
  // fresh one), not retry_count times, so a server that stops answering
  // fails in about two stall timeouts.
  int stalls = 0;
  // The body sink took bytes: the transfer is not retried (see HttpRequest).
  bool sank = false;
  char errbuf[CURL_ERROR_SIZE] = {};
  std::atomic<int64_t>* bytes_received = nullptr;
};

// One socket curl asked us to watch.
struct SocketWatch {
  explicit SocketWatch(asio::io_context& io) : descriptor(io) {}
  asio::posix::stream_descriptor descriptor;
  int want = 0;  // CURL_POLL_IN / OUT / INOUT
  bool read_armed = false;
  bool write_armed = false;
  bool closed = false;  // released from asio; ignore late handlers
};

struct HttpClient::Engine : std::enable_shared_from_this<HttpClient::Engine> {
  Engine(Runtime& runtime, const HttpClientOptions& opts, absl::StatusOr<const CurlApi*> api)
      : io(runtime.io_context()),
        options(opts),
        curl(api.ok() ? *api : nullptr),
        curl_error(api.status()),
        timer(io) {}

  asio::io_context& io;
  const HttpClientOptions options;
  // libcurl, loaded by the first client (curl_api.h); null if it could not
  // be, and then `curl_error` says why, every Send fails with it and the
  // engine starts shut down. Both fixed at construction.
  const CurlApi* const curl;
  const absl::Status curl_error;
  std::atomic<int64_t> bytes_received{0};

  Mutex mu;
  CURLM* multi ABSL_GUARDED_BY(mu) = nullptr;
  asio::steady_timer timer ABSL_GUARDED_BY(mu);
  bool timer_armed ABSL_GUARDED_BY(mu) = false;  // a wait on `timer` is pending
  absl::flat_hash_map<curl_socket_t, std::shared_ptr<SocketWatch>> sockets ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<CURL*, std::unique_ptr<Transfer>> active ABSL_GUARDED_BY(mu);
  // Transfers waiting to be retried, by id, with their timers.
  absl::flat_hash_map<uint64_t, std::pair<std::unique_ptr<asio::steady_timer>,
                                          std::unique_ptr<Transfer>>>
      retrying ABSL_GUARDED_BY(mu);
  uint64_t next_retry_id ABSL_GUARDED_BY(mu) = 0;
  std::vector<CURL*> idle ABSL_GUARDED_BY(mu);
  // Active transfers with a stream id (HttpRequest::stream_id).
  absl::flat_hash_map<uint64_t, CURL*> streams ABSL_GUARDED_BY(mu);
  std::atomic<uint64_t> next_stream_id{1};
  bool shut_down ABSL_GUARDED_BY(mu) = false;
  // Batches of callbacks taken out under `mu` and not yet finished running
  // (on an I/O thread, or posted to one). Shutdown waits for none: a
  // callback may use its caller (S3ObjectStore's failover reads the store),
  // which is being destroyed right after.
  int completing ABSL_GUARDED_BY(mu) = 0;
  CondVar completions_done;

  using Finished = std::vector<std::pair<std::unique_ptr<Transfer>, absl::StatusOr<HttpResponse>>>;

  // ---- curl callbacks (called by curl under `mu`) ----

  static int OnSocket(CURL*, curl_socket_t s, int what, void* userp, void*) {
    auto* e = static_cast<Engine*>(userp);
    e->mu.AssertHeld();
    e->WatchSocket(s, what);
    return 0;
  }

  // curl moves its one timer at nearly every step of every transfer (about
  // 1.6 times per small GET). Re-arming is a timerfd write, a VM exit on
  // this kind of machine (~5 % of a 1,000-file download's samples), so the
  // timer is only moved earlier: one that fires early makes curl check its
  // timeouts and ask again, which is its contract. "Now" is a post, no
  // timer at all.
  static int OnTimer(CURLM*, long timeout_ms, void* userp) {
    auto* e = static_cast<Engine*>(userp);
    e->mu.AssertHeld();
    if (timeout_ms < 0) {
      if (e->timer_armed) e->timer.cancel();
      e->timer_armed = false;
      return 0;
    }
    if (timeout_ms == 0) {
      asio::post(e->io, [self = e->shared_from_this()] { self->Act(CURL_SOCKET_TIMEOUT, 0, nullptr); });
      return 0;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    if (e->timer_armed && e->timer.expiry() <= deadline) return 0;
    e->timer.expires_at(deadline);
    e->timer_armed = true;
    e->timer.async_wait([self = e->shared_from_this()](const std::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      self->Act(CURL_SOCKET_TIMEOUT, 0, nullptr, /*timer_fired=*/true);
    });
    return 0;
  }

  // curl closes some descriptors without our close callback (the threaded
  // resolver's socketpair) and may then get the same number from socket():
  // a watch left for that number is stale (epoll dropped it at close), so
  // it is forgotten before the new socket is watched.
  static curl_socket_t OnOpenSocket(void* userp, curlsocktype, curl_sockaddr* address) {
    auto* e = static_cast<Engine*>(userp);
    e->mu.AssertHeld();
    const curl_socket_t s = ::socket(address->family, address->socktype, address->protocol);
    if (s != CURL_SOCKET_BAD) e->Unwatch(s);
    return s;
  }

  static int OnCloseSocket(void* userp, curl_socket_t s) {
    auto* e = static_cast<Engine*>(userp);
    e->mu.AssertHeld();
    e->Unwatch(s);
    return ::close(s);
  }

  static size_t OnWrite(char* data, size_t size, size_t n, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    const size_t bytes = size * n;
    if (t->reply.to_sink) {
      switch (t->request.body_sink(t->response, std::string_view(data, bytes))) {
        case BodySinkAction::kTaken:
          t->sank = true;
          t->bytes_received->fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
          return bytes;
        case BodySinkAction::kPause:
          return CURL_WRITEFUNC_PAUSE;  // handed over again after Resume
        case BodySinkAction::kRefuse:
          t->reply.sink_refused = true;
          return 0;  // CURLE_WRITE_ERROR
      }
    }
    t->bytes_received->fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    HttpResponse& response = t->response;
    if (!response.body_in_buffer) {
      response.body.append(data, bytes);
      return bytes;
    }
    const std::span<char> buffer = t->request.response_buffer;
    if (bytes > buffer.size() - response.body_bytes) {
      t->reply.buffer_overflowed = true;
      return 0;  // anything but `bytes` makes curl fail with CURLE_WRITE_ERROR
    }
    std::memcpy(buffer.data() + response.body_bytes, data, bytes);
    response.body_bytes += bytes;
    return bytes;
  }

  static size_t OnHeader(char* data, size_t size, size_t n, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    const size_t bytes = size * n;
    // The lines are read by ReadHeaderLine (http_header_lines.h); the
    // headers live in the response, the rest in the attempt's state.
    ReplyHead head{t->reply.status, t->reply.content_length, std::move(t->response.headers)};
    const HeaderLine kind =
        ReadHeaderLine(std::string_view(data, bytes), t->request.method == "HEAD", &head);
    t->reply.status = head.status;
    t->reply.content_length = head.content_length;
    t->response.headers = std::move(head.headers);
    if (kind == HeaderLine::kStatus) {  // a new reply (after 100 Continue too)
      t->reply.body_sink_chosen = false;
    } else if (kind == HeaderLine::kEnd) {
      ChooseBodySink(*t);
    }
    return bytes;
  }

  // Once the final reply's headers have ended: a 2xx body that fits goes
  // to the caller's response_buffer (see HttpRequest); any other is kept in
  // HttpResponse::body, whose memory is reserved once from Content-Length,
  // capped so a lying header cannot make us allocate more than the caller
  // expected.
  static void ChooseBodySink(Transfer& t) {
    ReplyState& reply = t.reply;
    // An interim 1xx reply: the final reply's headers follow. Trailers
    // after a chunked body end with a blank line too: the choice stands.
    if (reply.body_sink_chosen || reply.status < 200) return;
    reply.body_sink_chosen = true;
    const HttpRequest& r = t.request;
    const bool success = reply.status <= 299;
    if (success && r.body_sink) {
      reply.to_sink = true;
      t.response.status = reply.status;  // the sink sees it with the headers
      return;
    }
    if (success && !r.response_buffer.empty() &&
        (reply.content_length < 0 ||
         static_cast<uint64_t>(reply.content_length) <= r.response_buffer.size())) {
      t.response.body_in_buffer = true;
      return;
    }
    if (reply.content_length >= 0 &&
        (r.expected_body_bytes < 0 || reply.content_length <= r.expected_body_bytes)) {
      t.response.body.reserve(static_cast<size_t>(reply.content_length));
    }
  }

  static size_t OnRead(char* buffer, size_t size, size_t n, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    const size_t left = t->request.body.size() - t->sent;
    const size_t bytes = std::min(left, size * n);
    std::memcpy(buffer, t->request.body.data() + t->sent, bytes);
    t->sent += bytes;
    return bytes;
  }

  static int OnSeek(void* userp, curl_off_t offset, int origin) {
    auto* t = static_cast<Transfer*>(userp);
    if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > t->request.body.size()) {
      return CURL_SEEKFUNC_CANTSEEK;
    }
    t->sent = static_cast<size_t>(offset);
    return CURL_SEEKFUNC_OK;
  }

  // ---- socket watching (under `mu`) ----

  void WatchSocket(curl_socket_t s, int what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (what == CURL_POLL_REMOVE) {
      Unwatch(s);
      return;
    }
    std::shared_ptr<SocketWatch>& w = sockets[s];
    if (w == nullptr) {
      w = std::make_shared<SocketWatch>(io);
      std::error_code ec;
      w->descriptor.assign(s, ec);
      if (ec) {
        sockets.erase(s);
        return;  // curl's own timeouts fail the transfer
      }
    }
    w->want = what;
    Arm(w);
  }

  void Unwatch(curl_socket_t s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = sockets.find(s);
    if (it == sockets.end()) return;
    it->second->closed = true;
    // release() deregisters from the reactor and cancels pending waits
    // without closing: curl closes the fd itself.
    it->second->descriptor.release();
    sockets.erase(it);
  }

  void Arm(const std::shared_ptr<SocketWatch>& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if ((w->want & CURL_POLL_IN) && !w->read_armed) {
      w->read_armed = true;
      w->descriptor.async_wait(asio::posix::stream_descriptor::wait_read,
                               [self = shared_from_this(), w](const std::error_code& ec) {
                                 self->OnReady(w, CURL_CSELECT_IN, ec);
                               });
    }
    if ((w->want & CURL_POLL_OUT) && !w->write_armed) {
      w->write_armed = true;
      w->descriptor.async_wait(asio::posix::stream_descriptor::wait_write,
                               [self = shared_from_this(), w](const std::error_code& ec) {
                                 self->OnReady(w, CURL_CSELECT_OUT, ec);
                               });
    }
  }

  void OnReady(const std::shared_ptr<SocketWatch>& w, int flag, const std::error_code& ec) {
    Finished finished;
    {
      MutexLock l(&mu);
      (flag == CURL_CSELECT_IN ? w->read_armed : w->write_armed) = false;
      if (shut_down || w->closed || ec == asio::error::operation_aborted) return;
      const int poll_flag = flag == CURL_CSELECT_IN ? CURL_POLL_IN : CURL_POLL_OUT;
      if ((w->want & poll_flag) == 0) return;  // curl no longer waits for this
      int mask = flag;
      if (ec) {
        mask |= CURL_CSELECT_ERR;  // curl fails the transfer; no re-arm, no spin
      } else {
        Arm(w);  // before the action: see the file comment
      }
      RunAction(w->descriptor.native_handle(), mask, finished);
      ++completing;
    }
    Complete(std::move(finished));
  }

  // socket_action from a timer or readiness handler, then completions.
  // `timer_fired`: called by the timer's own wait, which is no longer pending.
  void Act(curl_socket_t s, int mask, Finished* out, bool timer_fired = false) {
    Finished finished;
    {
      MutexLock l(&mu);
      if (timer_fired) timer_armed = false;
      if (shut_down) return;
      RunAction(s, mask, out != nullptr ? *out : finished);
      ++completing;
    }
    Complete(std::move(finished));
  }

  void RunAction(curl_socket_t s, int mask, Finished& finished) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    int running = 0;
    curl->multi_socket_action(multi, s, mask, &running);
    Collect(finished);
  }

  // Takes finished transfers out of the multi handle; retries those that
  // failed retryably and have attempts left.
  void Collect(Finished& finished) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    int left = 0;
    while (CURLMsg* msg = curl->multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const CURLcode code = msg->data.result;
      curl->multi_remove_handle(multi, easy);
      auto it = active.find(easy);
      if (it == active.end()) continue;
      std::unique_ptr<Transfer> t = std::move(it->second);
      active.erase(it);
      if (t->request.stream_id != 0) streams.erase(t->request.stream_id);
      curl->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &t->response.status);
      const bool never_connected = code != CURLE_OK && NeverConnected(curl, easy);
      Release(easy, *t);
      // A body longer than the caller's buffer comes out the same way again.
      const bool overflowed = code == CURLE_WRITE_ERROR && t->reply.buffer_overflowed;
      const bool refused = code == CURLE_WRITE_ERROR && t->reply.sink_refused;
      if (code == CURLE_OPERATION_TIMEDOUT && !never_connected) ++t->stalls;
      const bool retryable =
          code != CURLE_OK
              ? code != CURLE_ABORTED_BY_CALLBACK && !TlsConfigFailure(code) && !overflowed &&
                    !refused && !t->sank &&
                    !(t->request.fail_fast_on_connect && ConnectFailure(code, never_connected)) &&
                    t->stalls <= 1
              : RetryableHttpStatus(t->response.status);
      if (retryable && t->attempts <= options.retry_count) {
        ScheduleRetry(std::move(t));
        continue;
      }
      if (code != CURLE_OK) {
        absl::Status s =
            refused ? absl::CancelledError(absl::StrCat("HTTP ", t->request.method, " ",
                                                        t->request.url,
                                                        ": the body's reader stopped it"))
            : overflowed
                ? absl::DataLossError(absl::StrCat(
                      "HTTP ", t->request.method, " ", t->request.url, ": HTTP ",
                      t->response.status, " reply without Content-Length has a body longer than "
                      "the ", t->request.response_buffer.size(), "-byte response buffer"))
                : CurlStatus(curl, t->request.method, t->request.url, code, t->errbuf,
                             never_connected);
        if (t->attempts > 1) {
          // Say how hard we tried, and keep the transfer layer from
          // repeating the whole series.
          s = absl::Status(s.code(), absl::StrCat(s.message(), " (after ", t->attempts,
                                                  " attempts)"));
          MarkRetriesExhausted(s);
        }
        finished.emplace_back(std::move(t), std::move(s));
      } else {
        HttpResponse r = std::move(t->response);
        finished.emplace_back(std::move(t), std::move(r));
      }
    }
  }

  // Frees `t`'s header list and keeps `easy`, out of the multi handle, for
  // reuse (or frees it when enough are kept).
  void Release(CURL* easy, Transfer& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    curl->slist_free_all(t.headers);
    t.headers = nullptr;
    t.easy = nullptr;
    if (idle.size() < kMaxIdleHandles) {
      idle.push_back(easy);
    } else {
      curl->easy_cleanup(easy);
    }
  }

  void ScheduleRetry(std::unique_ptr<Transfer> t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    // retry_wait, then doubling: 1x, 2x, 4x...
    const absl::Duration wait = options.retry_wait * (int64_t{1} << std::min(t->attempts - 1, 10));
    auto timer = std::make_unique<asio::steady_timer>(io);
    timer->expires_after(absl::ToChronoNanoseconds(wait));
    const uint64_t id = next_retry_id++;
    timer->async_wait([self = shared_from_this(), id](const std::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      Finished finished;
      {
        MutexLock l(&self->mu);
        auto it = self->retrying.find(id);
        if (it == self->retrying.end()) return;
        std::unique_ptr<Transfer> retry = std::move(it->second.second);
        self->retrying.erase(it);
        self->Start(std::move(retry), finished);
        ++self->completing;
      }
      self->Complete(std::move(finished));
    });
    retrying.emplace(id, std::make_pair(std::move(timer), std::move(t)));
  }

  // Configures an easy handle for `t` and adds it to the multi handle (a
  // retry: on the I/O thread, under `mu`; Send configures outside it).
  void Start(std::unique_ptr<Transfer> t, Finished& finished) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    CURL* easy = Configure(TakeIdleHandle(), *t);
    Add(easy, std::move(t), finished);
  }

  // A handle left by an earlier transfer, or null.
  CURL* TakeIdleHandle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (idle.empty()) return nullptr;
    CURL* easy = idle.back();
    idle.pop_back();
    return easy;
  }

  // Sets `easy` (reset; a new handle if null) up for `t`; returns it, or
  // null if no handle could be made. Touches nothing but the handle and
  // `t`, so a sender does it without `mu` (it was half of the time the
  // lock was held per request, which the I/O thread then waited for).
  CURL* Configure(CURL* easy, Transfer& transfer) {
    if (curl == nullptr) return nullptr;
    if (easy != nullptr) {
      curl->easy_reset(easy);
    } else {
      easy = curl->easy_init();
    }
    if (easy == nullptr) return nullptr;
    Transfer* const t = &transfer;
    ++t->attempts;
    t->easy = easy;
    t->sent = 0;
    t->response = HttpResponse();  // a retry writes its body from the start
    t->reply = ReplyState();
    t->errbuf[0] = '\0';
    const HttpRequest& r = t->request;
    for (const auto& [name, value] : r.headers) {
      t->headers = curl->slist_append(t->headers, absl::StrCat(name, ": ", value).c_str());
    }
    // No "Expect: 100-continue": a round trip per upload for nothing.
    t->headers = curl->slist_append(t->headers, "Expect:");
    curl->easy_setopt(easy, CURLOPT_URL, r.url.c_str());
    curl->easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
    curl->easy_setopt(easy, CURLOPT_PRIVATE, t);
    curl->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl->easy_setopt(easy, CURLOPT_ERRORBUFFER, t->errbuf);
    curl->easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Engine::OnWrite);
    curl->easy_setopt(easy, CURLOPT_WRITEDATA, t);
    curl->easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Engine::OnHeader);
    curl->easy_setopt(easy, CURLOPT_HEADERDATA, t);
    curl->easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, &Engine::OnOpenSocket);
    curl->easy_setopt(easy, CURLOPT_OPENSOCKETDATA, this);
    curl->easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, &Engine::OnCloseSocket);
    curl->easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, this);
    curl->easy_setopt(easy, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
    curl->easy_setopt(easy, CURLOPT_UPLOAD_BUFFERSIZE, kUploadBufferBytes);
    curl->easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(options.connect_timeout)));
    // A transfer below 1 byte/s for stall_timeout fails: a stall, not a
    // slow link, whatever the object size.
    curl->easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl->easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(absl::ToInt64Seconds(
                                      std::max(options.stall_timeout, r.min_stall_timeout)))));
    curl->easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    // Verification is curl's default; said here so no reset can lose it.
    curl->easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl->easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!options.ca_bundle_path.empty()) {
      curl->easy_setopt(easy, CURLOPT_CAINFO, options.ca_bundle_path.c_str());
    }
    // A PUT's or POST's body is read from the transfer, which rewinds it
    // for a resend.
    const auto send_body_from_transfer = [&] {
      curl->easy_setopt(easy, CURLOPT_READFUNCTION, &Engine::OnRead);
      curl->easy_setopt(easy, CURLOPT_READDATA, t);
      curl->easy_setopt(easy, CURLOPT_SEEKFUNCTION, &Engine::OnSeek);
      curl->easy_setopt(easy, CURLOPT_SEEKDATA, t);
    };
    if (r.method == "HEAD") {
      curl->easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (r.method == "PUT") {
      curl->easy_setopt(easy, CURLOPT_UPLOAD, 1L);
      curl->easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      send_body_from_transfer();
    } else if (r.method == "POST") {
      curl->easy_setopt(easy, CURLOPT_POST, 1L);
      curl->easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      send_body_from_transfer();
    } else if (r.method != "GET") {
      curl->easy_setopt(easy, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    t->bytes_received = &bytes_received;
    return easy;
  }

  // Adds `t`, configured on `easy` by Configure, to the multi handle; a
  // null `easy` (Configure could make none) fails `t` into `finished`.
  void Add(CURL* easy, std::unique_ptr<Transfer> t, Finished& finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (easy == nullptr) {
      absl::Status status = absl::ResourceExhaustedError(
          absl::StrCat("HTTP ", t->request.method, " ", t->request.url, ": curl_easy_init failed"));
      finished.emplace_back(std::move(t), std::move(status));
      return;
    }
    Transfer* raw = t.get();
    active.emplace(easy, std::move(t));
    if (raw->request.stream_id != 0) streams[raw->request.stream_id] = easy;
    const CURLMcode mc = curl->multi_add_handle(multi, easy);
    if (mc != CURLM_OK) {
      if (raw->request.stream_id != 0) streams.erase(raw->request.stream_id);
      auto node = active.extract(easy);
      curl->slist_free_all(raw->headers);
      raw->headers = nullptr;
      curl->easy_cleanup(easy);
      finished.emplace_back(std::move(node.mapped()),
                            absl::InternalError(absl::StrCat("HTTP ", raw->request.method, " ",
                                                             raw->request.url,
                                                             ": curl_multi_add_handle: ",
                                                             curl->multi_strerror(mc))));
    }
  }

  // Runs the callbacks of finished transfers. REQUIRES: `mu` not held.
  // Runs the callbacks of `finished`, then gives back the `completing`
  // count its caller took under `mu`.
  void Complete(Finished finished) {
    for (auto& [t, result] : finished) {
      Callback<HttpResponse> done = std::move(t->done);
      t.reset();
      done(std::move(result));
    }
    MutexLock l(&mu);
    if (--completing == 0) completions_done.SignalAll();
  }

  void Resume(uint64_t stream_id) {
    MutexLock l(&mu);
    if (shut_down) return;
    auto it = streams.find(stream_id);
    if (it == streams.end()) return;
    // May hand the kept piece to the sink now; then curl asks for a run
    // at once (OnTimer(0)), which reads on.
    curl->easy_pause(it->second, CURLPAUSE_CONT);
  }

  void Cancel(uint64_t stream_id) {
    Finished cancelled;
    {
      MutexLock l(&mu);
      if (shut_down) return;
      std::unique_ptr<Transfer> t;
      if (auto it = streams.find(stream_id); it != streams.end()) {
        CURL* easy = it->second;
        streams.erase(it);
        // Mid-body, curl closes the connection (OnCloseSocket, under mu).
        curl->multi_remove_handle(multi, easy);
        auto node = active.extract(easy);
        if (node.empty()) return;
        t = std::move(node.mapped());
        Release(easy, *t);
      } else {
        for (auto r = retrying.begin(); r != retrying.end(); ++r) {
          if (r->second.second->request.stream_id != stream_id) continue;
          r->second.first->cancel();
          t = std::move(r->second.second);
          retrying.erase(r);
          break;
        }
      }
      if (t == nullptr) return;
      absl::Status status = absl::CancelledError(absl::StrCat(
          "HTTP ", t->request.method, " ", t->request.url, ": cancelled by its reader"));
      cancelled.emplace_back(std::move(t), std::move(status));
      ++completing;
    }
    // Never complete inline on the caller's thread.
    auto shared = std::make_shared<Finished>(std::move(cancelled));
    asio::post(io, [self = shared_from_this(), shared]() mutable {
      self->Complete(std::move(*shared));
    });
  }

  void Shutdown() {
    Finished cancelled;
    {
      MutexLock l(&mu);
      if (shut_down) return;
      shut_down = true;
      ++completing;
      for (auto& [easy, t] : active) {
        curl->multi_remove_handle(multi, easy);
        curl->slist_free_all(t->headers);
        t->headers = nullptr;
        idle.push_back(easy);
        absl::Status status = absl::CancelledError(absl::StrCat(
            "HTTP ", t->request.method, " ", t->request.url, ": the HTTP client was destroyed"));
        cancelled.emplace_back(std::move(t), std::move(status));
      }
      active.clear();
      streams.clear();
      for (auto& [id, entry] : retrying) {
        entry.first->cancel();
        absl::Status status = absl::CancelledError(
            absl::StrCat("HTTP ", entry.second->request.method, " ", entry.second->request.url,
                         ": the HTTP client was destroyed before a retry"));
        cancelled.emplace_back(std::move(entry.second), std::move(status));
      }
      retrying.clear();
      timer.cancel();
      curl->multi_cleanup(multi);  // closes cached connections (OnCloseSocket)
      multi = nullptr;
      for (CURL* easy : idle) curl->easy_cleanup(easy);
      idle.clear();
      for (auto& [s, w] : sockets) {
        w->closed = true;
        w->descriptor.release();
      }
      sockets.clear();
    }
    Complete(std::move(cancelled));
    // Callbacks running on an I/O thread now, or posted there, finish
    // before the owner goes away. On an I/O thread itself, waiting could
    // wait for this very thread: there the owner must not be destroyed
    // while its callbacks may run (S3ObjectStore is not).
    if (io.get_executor().running_in_this_thread()) return;
    MutexLock l(&mu);
    while (completing > 0) completions_done.Wait(&mu);
  }
};

HttpClient::HttpClient(Runtime& runtime, const HttpClientOptions& options)
    : engine_(std::make_shared<Engine>(runtime, options, Curl())) {
  Engine* e = engine_.get();
  const CurlApi* curl = e->curl;
  MutexLock l(&e->mu);
  if (curl == nullptr) {
    e->shut_down = true;  // nothing to cancel; Send reports curl_error
    return;
  }
  e->multi = curl->multi_init();
  curl->multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, &Engine::OnSocket);
  curl->multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
  curl->multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, &Engine::OnTimer);
  curl->multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
  curl->multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, kMaxCachedConnections);
}

HttpClient::~HttpClient() { Shutdown(); }

void HttpClient::Shutdown() { engine_->Shutdown(); }

void HttpClient::Send(HttpRequest request, Callback<HttpResponse> done) {
  auto t = std::make_unique<Transfer>();
  t->request = std::move(request);
  t->done = std::move(done);
  Engine::Finished failed;
  CURL* idle = nullptr;
  {
    MutexLock l(&engine_->mu);
    if (!engine_->shut_down) idle = engine_->TakeIdleHandle();
  }
  CURL* easy = engine_->Configure(idle, *t);  // outside the lock: see Configure
  {
    MutexLock l(&engine_->mu);
    if (engine_->shut_down) {
      if (easy != nullptr) engine_->curl->easy_cleanup(easy);
      failed.emplace_back(std::move(t), engine_->curl_error.ok()
                                            ? absl::CancelledError("HTTP client destroyed")
                                            : engine_->curl_error);
    } else {
      engine_->Add(easy, std::move(t), failed);
    }
    // Counted until the posted completion has run (see `completing`).
    if (!failed.empty()) ++engine_->completing;
  }
  if (!failed.empty()) {
    // Never complete inline on the caller's thread.
    auto shared = std::make_shared<Engine::Finished>(std::move(failed));
    asio::post(engine_->io, [engine = engine_, shared]() mutable {
      engine->Complete(std::move(*shared));
    });
  }
}

uint64_t HttpClient::NewStreamId() {
  return engine_->next_stream_id.fetch_add(1, std::memory_order_relaxed);
}

void HttpClient::Resume(uint64_t stream_id) { engine_->Resume(stream_id); }

void HttpClient::Cancel(uint64_t stream_id) { engine_->Cancel(stream_id); }

int64_t HttpClient::body_bytes_received() const {
  return engine_->bytes_received.load(std::memory_order_relaxed);
}

}  // namespace ferry::s3
