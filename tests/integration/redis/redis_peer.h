// The redis peer the fixture peer_redis started: its port, and a way to
// kill and restart it mid-test (tests/peers/redis, same state dir).
#ifndef FERRY_TESTS_INTEGRATION_REDIS_REDIS_PEER_H_
#define FERRY_TESTS_INTEGRATION_REDIS_REDIS_PEER_H_

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_format.h"
#include "ferry/base/random.h"

namespace ferry::testing {

inline int RedisPeerPort() {
  std::ifstream f(std::string(FERRY_REDIS_STATE_DIR) + "/port");
  int port = 0;
  f >> port;
  return port;
}

// "kill" (SIGKILL) or "start".
inline bool RedisPeer(const std::string& what) {
  const std::string cmd =
      std::string(FERRY_REDIS_SCRIPT) + " " + what + " " + FERRY_REDIS_STATE_DIR + " >&2";
  return std::system(cmd.c_str()) == 0;
}

// A namespace of its own per test: tests never see each other's keys.
inline std::string FreshNamespace() { return absl::StrFormat("t%016x", RandomUint64()); }

}  // namespace ferry::testing

#endif  // FERRY_TESTS_INTEGRATION_REDIS_REDIS_PEER_H_
