// Test helpers for the real peers started by the ctest fixtures of
// tests/peers/FerryPeers.cmake: their fixed addresses, their PIDs, and a
// small client for toxiproxy's HTTP API to put latency and faults between a
// client and a peer.
//
//   ferry::peers::ToxiproxyClient toxiproxy;
//   ferry::peers::ScopedProxy proxy(toxiproxy, "nfs_latency",
//                                   ferry::peers::kNfsPort);
//   ASSERT_TRUE(proxy.status().ok()) << proxy.status();
//   ASSERT_TRUE(proxy.AddToxic({.name = "lat", .type = "latency",
//                               .attributes = {{"latency", 20}}}).ok());
//   // connect to 127.0.0.1:proxy.port(): replies now come 20 ms later.
//   // ~ScopedProxy deletes the proxy (and its toxics).
#ifndef FERRY_TESTING_PEERS_H_
#define FERRY_TESTING_PEERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ferry::peers {

// Where the fixture peers listen (fixed in tests/peers/ganesha.conf.in and
// tests/peers/toxiproxy).
inline constexpr char kPeerHost[] = "127.0.0.1";
inline constexpr uint16_t kNfsPort = 2049;
inline constexpr uint16_t kMountPort = 20048;
inline constexpr uint16_t kToxiproxyApiPort = 18474;

// The ONC RPC programs ganesha serves (the portmapper's own program and
// port are ferry::kPortmapProgram / kPortmapPort, ferry/rpc/portmapper.h).
inline constexpr uint32_t kNfsProgram = 100003;
inline constexpr uint32_t kMountProgram = 100005;

// The PID a fixture's peer script recorded: `peer` is the fixture's state
// folder ("ganesha", "toxiproxy"), `process` its PID file's stem ("ganesha",
// "rpcbind", "toxiproxy"). NotFound if the file is missing (the peer was
// not started by this build tree's fixture, e.g. rpcbind already running).
absl::StatusOr<int> ReadPeerPid(std::string_view peer, std::string_view process);

// One toxic (https://github.com/Shopify/toxiproxy#toxics): `type` is one of
// latency, bandwidth, slow_close, timeout, reset_peer, slicer, limit_data;
// `stream` "downstream" (server to client) or "upstream"; integer attributes
// as the toxic defines them (e.g. latency: {"latency", ms}).
struct Toxic {
  std::string name;
  std::string type;
  std::string stream = "downstream";
  double toxicity = 1.0;
  std::map<std::string, int64_t> attributes;
};

// A client for toxiproxy's HTTP API. Each call is one blocking HTTP request
// with a short timeout. Thread-compatible (one per thread).
class ToxiproxyClient {
 public:
  explicit ToxiproxyClient(std::string host = kPeerHost, uint16_t port = kToxiproxyApiPort);

  // Creates proxy `name` forwarding a fresh port on 127.0.0.1 to `upstream`
  // ("host:port") and returns the port it listens on. AlreadyExists if a
  // proxy of that name exists.
  absl::StatusOr<uint16_t> CreateProxy(std::string_view name, std::string_view upstream);
  // Deletes proxy `name`, closing its connections. NotFound if absent.
  absl::Status DeleteProxy(std::string_view name);
  // Enables or disables proxy `name`; disabling closes every connection and
  // refuses new ones.
  absl::Status SetProxyEnabled(std::string_view name, bool enabled);
  absl::Status AddToxic(std::string_view proxy, const Toxic& toxic);
  absl::Status RemoveToxic(std::string_view proxy, std::string_view toxic);

 private:
  // Sends one request; returns the body of a 2xx reply, or an error naming
  // the method, path, HTTP status and toxiproxy's message.
  absl::StatusOr<std::string> Request(std::string_view method, std::string_view path,
                                      std::string_view body);

  std::string base_url_;
};

// A toxiproxy proxy that lives as long as this object: created in the
// constructor (check status()), deleted in the destructor. Not thread-safe.
class ScopedProxy {
 public:
  // Proxies a fresh port on 127.0.0.1 to 127.0.0.1:`upstream_port`.
  ScopedProxy(ToxiproxyClient& client, std::string name, uint16_t upstream_port);
  ~ScopedProxy();
  ScopedProxy(const ScopedProxy&) = delete;
  ScopedProxy& operator=(const ScopedProxy&) = delete;

  // OK if the proxy was created.
  const absl::Status& status() const { return status_; }
  // The port the proxy listens on. REQUIRES: status().ok().
  uint16_t port() const { return port_; }
  const std::string& name() const { return name_; }

  absl::Status AddToxic(const Toxic& toxic) { return client_.AddToxic(name_, toxic); }
  absl::Status RemoveToxic(std::string_view toxic) { return client_.RemoveToxic(name_, toxic); }
  absl::Status SetEnabled(bool enabled) { return client_.SetProxyEnabled(name_, enabled); }

 private:
  ToxiproxyClient& client_;
  std::string name_;
  absl::Status status_;
  uint16_t port_ = 0;
};

}  // namespace ferry::peers

#endif  // FERRY_TESTING_PEERS_H_
