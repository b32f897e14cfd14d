// SplicePipe: moves bytes from a socket into a local file through a pipe
// (splice), so they never pass through this process's memory: the RpcPool
// uses it for a reply's bulk bytes placed in a file (RpcPlacement::file).
// On TCP the socket's pages are referenced by the pipe, not copied; the
// file's page cache takes the one copy.
//
// Thread-safety: not thread-safe; one per connection, used by its strand.
#ifndef FERRY_SRC_RPC_SPLICE_PIPE_H_
#define FERRY_SRC_RPC_SPLICE_PIPE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ferry/rpc/framing.h"

namespace ferry::internal {

class SplicePipe {
 public:
  SplicePipe() = default;
  SplicePipe(const SplicePipe&) = delete;
  SplicePipe& operator=(const SplicePipe&) = delete;
  ~SplicePipe() { Close(); }

  struct Outcome {
    // Bytes taken from the socket, all of them out of the pipe again
    // (written to the file, or dropped if its write failed).
    size_t moved = 0;
    // With moved 0: the socket's errno (EAGAIN: nothing to read yet), or 0
    // for the end of the stream. EINVAL or ENOSYS: this socket cannot be
    // spliced (read it instead). The pipe's own failures (none could be
    // made) are reported as the socket's errno too.
    int socket_error = 0;
    // The file's write failed: the status says where and why, and the
    // bytes taken were dropped.
    absl::Status file_status;
    // The file takes no spliced bytes (EINVAL: its filesystem, or append
    // mode): they were written from memory; its next ones are best read.
    bool file_refused_splice = false;

    // What a Move that took nothing (moved 0) says of the socket.
    enum class Socket {
      kEnded,         // the peer closed the stream
      kNotReady,      // nothing to read yet (EAGAIN, EINTR): wait and move again
      kRefusesSplice, // this socket cannot be spliced (EINVAL, ENOSYS): read it instead
      kNoPipe,        // no pipe could be made now (EMFILE, ENFILE, ENOMEM): read this time
      kFailed,        // socket_error is the connection's failure
    };
    Socket socket() const;
  };

  // Moves up to `to.size` bytes that are ready on `socket_fd` (which must
  // be non-blocking) into `to.fd` at `to.offset` (under to.write_lock). Where the file cannot
  // take spliced bytes (a filesystem without splice), they are read out
  // of the pipe into `scratch` and written from there
  // (Outcome::file_refused_splice).
  Outcome Move(int socket_fd, const FileRange& to, absl::Span<char> scratch);

 private:
  // Makes the pipe, as large as the system lets a user make one (1 MiB by
  // default: a 1 MiB NFS READ in one splice). errno on failure.
  int Open();
  void Close();
  // Writes the `left` bytes in the pipe to `fd` at `offset` through
  // `scratch`. Closes the pipe (dropping them) if that fails.
  absl::Status WriteOut(int fd, int64_t offset, size_t left, absl::Span<char> scratch);

  int read_end_ = -1;
  int write_end_ = -1;
  size_t capacity_ = 0;
};

}  // namespace ferry::internal

#endif  // FERRY_SRC_RPC_SPLICE_PIPE_H_
