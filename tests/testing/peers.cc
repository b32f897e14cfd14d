// Test helpers for the fixture peers. The toxiproxy client is plain libcurl
// "easy" requests: tests make a handful of API calls each, so a blocking
// request per call (a fresh handle, a 5 s timeout so a wedged proxy fails
// the test instead of hanging it) is simplest. toxiproxy's replies are small
// JSON objects; the one field we read back (a new proxy's "listen" address)
// is picked out by hand rather than pulling in a JSON library.
#include "testing/peers.h"

#include <curl/curl.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry::peers {
namespace {

// A toxiproxy API call takes milliseconds; 5 s means the proxy is wedged.
constexpr long kRequestTimeoutMs = 5000;

size_t AppendToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Maps an HTTP error status from toxiproxy to a canonical code.
absl::Status HttpError(long http_status, std::string message) {
  switch (http_status) {
    case 404:
      return absl::NotFoundError(message);
    case 409:
      return absl::AlreadyExistsError(message);
    case 400:
      return absl::InvalidArgumentError(message);
    default:
      return absl::UnavailableError(message);
  }
}

// JSON string literal for `s` (names and types are plain ASCII; quote the
// two characters that would break the literal anyway).
std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

absl::StatusOr<int> ReadPeerPid(std::string_view peer, std::string_view process) {
  const std::string path =
      absl::StrCat(FERRY_PEERS_STATE_DIR, "/", ToAbsl(peer), "/", ToAbsl(process), ".pid");
  std::ifstream in(path);
  int pid = 0;
  if (!(in >> pid) || pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no PID in ", path));
  }
  return pid;
}

ToxiproxyClient::ToxiproxyClient(std::string host, uint16_t port)
    : base_url_(absl::StrCat("http://", host, ":", port)) {}

absl::StatusOr<std::string> ToxiproxyClient::Request(std::string_view method,
                                                     std::string_view path,
                                                     std::string_view body) {
  const std::string url = absl::StrCat(base_url_, ToAbsl(path));
  const std::string what = absl::StrCat("toxiproxy ", ToAbsl(method), " ", url);
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError(absl::StrCat(what, ": curl_easy_init failed"));
  std::string reply;
  const std::string method_str(method);
  const std::string body_str(body);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendToString);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body_str.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body_str.size()));
  }
  const CURLcode rc = curl_easy_perform(curl);
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(what, ": ", curl_easy_strerror(rc),
                                               " (is the peer_toxiproxy fixture running?)"));
  }
  if (http_status / 100 != 2) {
    return HttpError(http_status, absl::StrCat(what, ": HTTP ", http_status, ": ", reply));
  }
  return reply;
}

absl::StatusOr<uint16_t> ToxiproxyClient::CreateProxy(std::string_view name,
                                                      std::string_view upstream) {
  // Port 0: toxiproxy picks a free port and reports it back in "listen".
  const std::string body =
      absl::StrCat("{\"name\":", JsonString(name), ",\"listen\":\"127.0.0.1:0\",\"upstream\":",
                   JsonString(upstream), ",\"enabled\":true}");
  std::string reply;
  FERRY_ASSIGN_OR_RETURN(reply, Request("POST", "/proxies", body));
  constexpr std::string_view kListen = "\"listen\":\"";
  const size_t at = reply.find(kListen);
  const size_t end = at == std::string::npos ? at : reply.find('"', at + kListen.size());
  const size_t colon = end == std::string::npos ? end : reply.rfind(':', end);
  uint32_t port = 0;
  if (colon == std::string::npos || colon < at ||
      !absl::SimpleAtoi(absl::string_view(reply).substr(colon + 1, end - colon - 1), &port) ||
      port == 0 || port > 65535) {
    return absl::DataLossError(
        absl::StrCat("toxiproxy: no listen port in the reply to creating proxy ", ToAbsl(name),
                     ": ", reply));
  }
  return static_cast<uint16_t>(port);
}

absl::Status ToxiproxyClient::DeleteProxy(std::string_view name) {
  return Request("DELETE", absl::StrCat("/proxies/", ToAbsl(name)), "").status();
}

absl::Status ToxiproxyClient::SetProxyEnabled(std::string_view name, bool enabled) {
  return Request("POST", absl::StrCat("/proxies/", ToAbsl(name)),
                 absl::StrCat("{\"enabled\":", enabled ? "true" : "false", "}"))
      .status();
}

absl::Status ToxiproxyClient::AddToxic(std::string_view proxy, const Toxic& toxic) {
  std::vector<std::string> attributes;
  for (const auto& [key, value] : toxic.attributes) {
    attributes.push_back(absl::StrCat(JsonString(key), ":", value));
  }
  const std::string body = absl::StrCat(
      "{\"name\":", JsonString(toxic.name), ",\"type\":", JsonString(toxic.type),
      ",\"stream\":", JsonString(toxic.stream), ",\"toxicity\":", toxic.toxicity,
      ",\"attributes\":{", absl::StrJoin(attributes, ","), "}}");
  return Request("POST", absl::StrCat("/proxies/", ToAbsl(proxy), "/toxics"), body).status();
}

absl::Status ToxiproxyClient::RemoveToxic(std::string_view proxy, std::string_view toxic) {
  return Request("DELETE", absl::StrCat("/proxies/", ToAbsl(proxy), "/toxics/", ToAbsl(toxic)),
                 "")
      .status();
}

ScopedProxy::ScopedProxy(ToxiproxyClient& client, std::string name, uint16_t upstream_port)
    : client_(client), name_(std::move(name)) {
  // A proxy left over from an interrupted run would make creation fail.
  (void)client_.DeleteProxy(name_);
  absl::StatusOr<uint16_t> port =
      client_.CreateProxy(name_, absl::StrCat(kPeerHost, ":", upstream_port));
  if (port.ok()) {
    port_ = *port;
  } else {
    status_ = port.status();
  }
}

ScopedProxy::~ScopedProxy() {
  if (status_.ok()) (void)client_.DeleteProxy(name_);
}

}  // namespace ferry::peers
