// CallTimeouts: how long a protocol client's connects and calls may take,
// and how long an idempotent call that lost its connection keeps being
// retried. One struct for every adapter's client options, so `--timeout`
// and the retry window mean the same thing over NFS and iRODS.
#ifndef FERRY_RPC_CALL_TIMEOUTS_H_
#define FERRY_RPC_CALL_TIMEOUTS_H_

#include "absl/time/time.h"

namespace ferry {

struct CallTimeouts {
  // Per connect attempt (and login, where the protocol has one).
  absl::Duration connect = absl::Seconds(10);
  // Per call, from sending to the reply; a stalled server fails here.
  absl::Duration call = absl::Seconds(60);
  // Idempotent calls that fail Unavailable (their connection was lost: a
  // reset blip, a server restarting) are sent again on a new connection,
  // waiting 100 ms doubling to 2 s (jittered, RetryPolicy) between tries,
  // until this long after the first try; then the last error, saying how
  // many tries and how long. Zero: no such retries. A server never reached
  // (a wrong port) fails at once, and a call past `call` is not retried.
  // Which calls are idempotent is the client's to say.
  absl::Duration retry_window = absl::Seconds(20);
};

}  // namespace ferry

#endif  // FERRY_RPC_CALL_TIMEOUTS_H_
