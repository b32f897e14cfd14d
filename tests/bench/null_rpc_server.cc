// ferry_null_rpc_server: the smallest ONC RPC server over TCP, for
// `scripts/bench rpc`. Every call (any program, version, procedure) gets
// an accepted, successful, empty reply carrying its xid, built from a
// fixed template, so the server costs well under 2 us of CPU per call and
// what the bench measures is the client's pipelining, not nfs-ganesha's
// ~30 us per call on the same two cores.
//
// A thread per connection reads whatever has arrived (up to 256 KiB),
// answers every complete record in it with one write, and keeps a partial
// record for the next read. Records may span several fragments (RFC 5531
// record marking); the reply goes when the last one is in.
//
//   ferry_null_rpc_server PORT_FILE   listens on an ephemeral 127.0.0.1
//                                     port and writes its number to PORT_FILE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void Put32(char* at, uint32_t v) {
  const uint32_t be = htonl(v);
  std::memcpy(at, &be, 4);
}
uint32_t Get32(const char* at) {
  uint32_t be;
  std::memcpy(&be, at, 4);
  return ntohl(be);
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Answers calls on `fd` until the peer closes it.
void Serve(int fd) {
  // Record mark (last fragment, 24 bytes), xid, REPLY, MSG_ACCEPTED,
  // AUTH_NONE verifier (flavor, length), SUCCESS.
  constexpr size_t kReply = 28;
  char reply[kReply];
  Put32(reply, 0x80000000u | 24);
  Put32(reply + 8, 1);
  for (size_t at = 12; at < kReply; at += 4) Put32(reply + at, 0);
  std::vector<char> in(256 << 10);
  std::string out;
  size_t have = 0;      // bytes in `in`
  uint32_t xid = 0;
  bool have_xid = false;
  for (;;) {
    const ssize_t r = ::read(fd, in.data() + have, in.size() - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += static_cast<size_t>(r);
    size_t at = 0;
    out.clear();
    // Each fragment: a 4-byte mark, then its bytes (whole, else wait).
    while (have - at >= 4) {
      const uint32_t mark = Get32(in.data() + at);
      const size_t len = mark & 0x7fffffffu;
      if (len > in.size() - 4) {  // larger than the buffer: not a NULL call
        ::close(fd);
        return;
      }
      if (have - at - 4 < len) break;
      if (!have_xid && len >= 4) {
        xid = Get32(in.data() + at + 4);
        have_xid = true;
      }
      at += 4 + len;
      if (mark & 0x80000000u) {
        Put32(reply + 4, xid);
        out.append(reply, kReply);
        have_xid = false;
      }
    }
    if (!out.empty() && !WriteAll(fd, out.data(), out.size())) break;
    std::memmove(in.data(), in.data() + at, have - at);
    have -= at;
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ferry_null_rpc_server PORT_FILE\n");
    return 2;
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t addr_len = sizeof(addr);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 64) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) {
    std::perror("ferry_null_rpc_server: listen on 127.0.0.1");
    return 1;
  }
  const std::string port_file = argv[1];
  const std::string tmp = port_file + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%d\n", ntohs(addr.sin_port));
    std::fclose(f);
    std::rename(tmp.c_str(), port_file.c_str());  // readers see the whole number
  }
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::perror("ferry_null_rpc_server: accept");
      return 1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::thread(Serve, fd).detach();
  }
}
