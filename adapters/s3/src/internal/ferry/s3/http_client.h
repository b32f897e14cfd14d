// HttpClient: many HTTP/1.1 transfers in flight over libcurl's multi
// interface, driven by the Runtime's io_context (curl's socket and timer
// callbacks become asio waits), with no thread of its own.
//
//   ferry::s3::HttpClient http(runtime, {});
//   ferry::s3::HttpRequest req{.method = "GET", .url = "http://127.0.0.1:7070/b/k",
//                              .headers = {{"Range", "bytes=0-9"}}};
//   http.Send(std::move(req), [](absl::StatusOr<ferry::s3::HttpResponse> r) {
//     if (r.ok()) Use(r->status, r->body);
//   });
//
// A reply with any HTTP status is a response; only transport failures are
// errors: Unavailable (refused, reset, nothing received), DeadlineExceeded
// (connect timeout, a stalled transfer), DataLoss (a body shorter than its
// Content-Length, or one without a Content-Length longer than the
// request's response_buffer), Cancelled (the client was destroyed first).
// A 2xx body can land in the caller's memory (HttpRequest::response_buffer)
// instead of a string allocated per request. Transport
// failures and HTTP 429/500/502/503/504 are retried (same request, same
// headers) up to `retry_count` times, waiting retry_wait, 2*retry_wait...
// Connections are kept alive and reused across requests (one CURLM per
// client, easy handles pooled). HTTPS verifies the server's certificate and
// name always (against the system's CA store, or `ca_bundle_path`); a
// verification failure is Unauthenticated and is not retried.
#ifndef FERRY_S3_HTTP_CLIENT_H_
#define FERRY_S3_HTTP_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ferry/runtime/future.h"

namespace ferry {
class Runtime;
}  // namespace ferry

namespace ferry::s3 {

// What a body sink (HttpRequest::body_sink) does with a piece of the body.
enum class BodySinkAction : int {
  kTaken,   // consumed, every byte of it
  kPause,   // none consumed: curl keeps the piece and pauses the transfer;
            // HttpClient::Resume hands it over again
  kRefuse,  // none consumed: the transfer ends, Cancelled
};

struct HttpResponse;

// Called with the reply so far (its status and headers; the body empty)
// and the next piece of its 2xx body.
using BodySink = std::function<BodySinkAction(const HttpResponse& reply, std::string_view piece)>;

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  // Sent as given (curl adds none of its own but Accept; Expect is off).
  std::vector<std::pair<std::string, std::string>> headers;
  // Body of a PUT or POST, streamed from the caller's memory; Content-Length
  // is always sent. REQUIRES: stays valid until the callback runs.
  std::span<const char> body;
  // Expected response body size: HttpResponse::body reserves a body's
  // Content-Length at most this large at once (-1: unknown, no cap).
  int64_t expected_body_bytes = -1;
  // Where a 2xx response body lands instead of HttpResponse::body, when it
  // fits: its Content-Length is at most response_buffer.size(), or it has
  // none (then a longer body fails with DataLoss, not retried).
  // HttpResponse::body stays empty and body_bytes counts what landed; a
  // retry writes from the start again. Error replies, and 2xx bodies
  // announced longer than the buffer, go to HttpResponse::body as without
  // it. Empty: no buffer. On failure the buffer holds unspecified bytes.
  // REQUIRES: stays valid, untouched by the caller, until the callback runs.
  std::span<char> response_buffer;
  // A connection that could not be made (refused, name not resolved,
  // connect timed out) fails at once with no retry, so that the caller
  // can try another endpoint (see IsConnectFailure).
  bool fail_fast_on_connect = false;
  // This request may move no byte for this long before it is a stall, when
  // that is longer than the client's stall_timeout: for a server that
  // legitimately thinks before its first byte (CompleteMultipartUpload).
  absl::Duration min_stall_timeout = absl::ZeroDuration();
  // When set, a 2xx body goes to this sink piece by piece (neither to
  // HttpResponse::body nor to response_buffer), so a reader can take a
  // long body as it comes and pause it while it is busy. Called on an I/O
  // thread, or inside Resume, with the client's lock held: it must not
  // call the client. A transfer whose sink took a byte is never retried
  // (the sink would see the body twice); error bodies go to
  // HttpResponse::body as without it.
  BodySink body_sink;
  // Non-zero (from HttpClient::NewStreamId): the id Resume and Cancel
  // name this request by.
  uint64_t stream_id = 0;
};

struct HttpResponse {
  long status = 0;
  // Header names lower-cased; values trimmed.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Bytes written to HttpRequest::response_buffer (0 when the body went
  // to `body` instead).
  size_t body_bytes = 0;
  // True if the body went to HttpRequest::response_buffer (an empty 2xx
  // body that would have fitted counts as in the buffer).
  bool body_in_buffer = false;

  // The first header named `name` (lower-case), or null.
  const std::string* Header(std::string_view name) const;
};

struct HttpClientOptions {
  absl::Duration connect_timeout = absl::Seconds(10);
  // A transfer that moves no byte for this long fails (DeadlineExceeded).
  // curl judges it by its speed averaged over about 5 s, so one that stops
  // after moving bytes fails up to 5 s later; one paused by its body sink
  // is not judged at all.
  absl::Duration stall_timeout = absl::Seconds(60);
  int retry_count = 0;
  absl::Duration retry_wait = absl::Seconds(1);
  // PEM file of the CAs to trust for HTTPS instead of the system's store
  // (a private CA, a self-signed test server). Empty: the system's store.
  std::string ca_bundle_path;
};

// True if `status` (from HttpClient) says no connection could be made to
// the server (refused, its name did not resolve, or the connect timed
// out). The request was
// not sent, so sending it elsewhere is always safe.
bool IsConnectFailure(const absl::Status& status);

// Thread-safe. REQUIRES: destroyed before the Runtime. Destruction fails
// every transfer still in flight with Cancelled (their callbacks run in
// the destructor) and closes the connections.
class HttpClient {
 public:
  HttpClient(Runtime& runtime, const HttpClientOptions& options);
  // Shutdown().
  ~HttpClient();

  // Cancels every request in flight (their callbacks get Cancelled) and,
  // unless called on an I/O thread, waits until every callback already
  // running or queued has returned. Later Sends complete with Cancelled.
  // Idempotent. An owner whose callbacks use it calls this first in its
  // destructor, while it is still whole.
  void Shutdown();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts `request`; `done` runs on an I/O thread (never inline).
  void Send(HttpRequest request, Callback<HttpResponse> done);

  // An id for HttpRequest::stream_id, unique in this client.
  uint64_t NewStreamId();
  // Resumes the request `stream_id` if its body sink paused it (the sink
  // may run inside this call). No-op if it is not in flight.
  void Resume(uint64_t stream_id);
  // Ends the request `stream_id` at once (its connection is closed); its
  // callback gets Cancelled, on an I/O thread. No-op if it is not in
  // flight (not sent yet, or already done).
  void Cancel(uint64_t stream_id);

  // Response body bytes received so far, over every transfer (retries and
  // error bodies included): lets tests check what moved.
  int64_t body_bytes_received() const;

  struct Engine;

 private:
  std::shared_ptr<Engine> engine_;
};

}  // namespace ferry::s3

#endif  // FERRY_S3_HTTP_CLIENT_H_
