// SigpipeHeld: SIGPIPE held for the calling thread around a write that
// cannot say MSG_NOSIGNAL (sendfile), by Session::SendFileRange and the
// RpcPool's file payloads. Per thread: no process-wide signal disposition
// is touched.
#ifndef FERRY_SRC_RPC_SIGPIPE_HELD_H_
#define FERRY_SRC_RPC_SIGPIPE_HELD_H_

#include <pthread.h>

#include <csignal>
#include <ctime>

namespace ferry {

// Holds SIGPIPE for the calling thread while it lives, and takes back one
// raised meanwhile, so a write without MSG_NOSIGNAL (sendfile) to a reset
// connection fails with EPIPE instead of signalling the program. A SIGPIPE
// already pending before is left for the program.
class SigpipeHeld {
 public:
  SigpipeHeld() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeHeld() {
    sigset_t pending;
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{};
      sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeHeld(const SigpipeHeld&) = delete;
  SigpipeHeld& operator=(const SigpipeHeld&) = delete;

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool was_pending_ = false;
};

}  // namespace ferry

#endif  // FERRY_SRC_RPC_SIGPIPE_HELD_H_
