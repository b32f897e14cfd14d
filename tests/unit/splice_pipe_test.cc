// SplicePipe: bytes ready on a loopback TCP socket move into a file at the
// offset asked, through a pipe; the socket's states (nothing yet, closed)
// and the file's failures come back as the outcome says.
#include "rpc/splice_pipe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::internal {
namespace {

using ::testing::HasSubstr;

// A connected loopback TCP pair: `sender` writes, `receiver` (non-blocking)
// is what SplicePipe reads.
class SocketPair {
 public:
  SocketPair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener, 1), 0);
    EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    sender = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(sender, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    receiver = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    EXPECT_GE(receiver, 0);
    ::close(listener);
  }
  ~SocketPair() {
    if (sender >= 0) ::close(sender);
    ::close(receiver);
  }
  void Send(const std::string& bytes) const {
    ASSERT_EQ(::send(sender, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }
  void CloseSender() {
    ::close(sender);
    sender = -1;
  }
  int sender = -1;
  int receiver = -1;
};

std::string Pattern(size_t n, char first) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(first + i % 23);
  return s;
}

std::string ReadBack(int fd, int64_t offset, size_t n) {
  std::string out(n, '\0');
  const ssize_t got = ::pread(fd, out.data(), n, offset);
  out.resize(got < 0 ? 0 : static_cast<size_t>(got));
  return out;
}

// Moves `n` bytes (in as many Moves as it takes) into `to` from offset on.
size_t MoveAll(SplicePipe& pipe, const SocketPair& sockets, FileRange to, std::vector<char>& scratch,
               bool* refused = nullptr) {
  size_t moved = 0;
  for (int tries = 0; moved < to.size && tries < 10'000; ++tries) {
    const SplicePipe::Outcome o = pipe.Move(
        sockets.receiver, {.fd = to.fd, .offset = to.offset + static_cast<int64_t>(moved), .size = to.size - moved},
        absl::MakeSpan(scratch));
    EXPECT_TRUE(o.file_status.ok()) << o.file_status;
    if (refused != nullptr && o.file_refused_splice) *refused = true;
    if (o.moved == 0 && o.socket_error != EAGAIN) break;
    moved += o.moved;
  }
  return moved;
}

class SplicePipeTest : public ::testing::Test {
 protected:
  SplicePipeTest() : file_(::memfd_create("spliced", MFD_CLOEXEC)), scratch_(4096) {}
  ~SplicePipeTest() override { ::close(file_); }
  SocketPair sockets_;
  SplicePipe pipe_;
  const int file_;
  std::vector<char> scratch_;
};

TEST_F(SplicePipeTest, BytesOnTheSocketLandInTheFileAtTheOffsetAsked) {
  const std::string bytes = Pattern(3 << 20, 'a');
  std::thread sender([&] { sockets_.Send(bytes); });
  const size_t moved = MoveAll(pipe_, sockets_, {.fd = file_, .offset = 5, .size = bytes.size()}, scratch_);
  sender.join();
  EXPECT_EQ(moved, bytes.size());
  EXPECT_TRUE(ReadBack(file_, 5, bytes.size()) == bytes);
}

TEST_F(SplicePipeTest, NeverTakesMoreThanTheRangeAsked) {
  sockets_.Send("0123456789");
  const size_t moved = MoveAll(pipe_, sockets_, {.fd = file_, .offset = 0, .size = 4}, scratch_);
  EXPECT_EQ(moved, 4u);
  char rest[16];
  EXPECT_EQ(::recv(sockets_.receiver, rest, sizeof rest, 0), 6);
  EXPECT_EQ(std::string(rest, 6), "456789");
}

TEST_F(SplicePipeTest, NothingToReadYetIsEagain) {
  const SplicePipe::Outcome o = pipe_.Move(sockets_.receiver, {.fd = file_, .size = 10}, absl::MakeSpan(scratch_));
  EXPECT_EQ(o.moved, 0u);
  EXPECT_EQ(o.socket_error, EAGAIN);
}

TEST_F(SplicePipeTest, PeerThatClosedIsTheEndOfTheStream) {
  sockets_.CloseSender();
  SplicePipe::Outcome o;
  for (int i = 0; i < 1000; ++i) {
    o = pipe_.Move(sockets_.receiver, {.fd = file_, .size = 10}, absl::MakeSpan(scratch_));
    if (o.socket_error != EAGAIN) break;
  }
  EXPECT_EQ(o.moved, 0u);
  EXPECT_EQ(o.socket_error, 0);
  EXPECT_TRUE(o.file_status.ok());
}

TEST_F(SplicePipeTest, FileThatRefusesWritesDropsTheBytesTakenAndTheNextMoveWorks) {
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  sockets_.Send("lost");
  SplicePipe::Outcome o;
  for (int i = 0; i < 1000 && o.moved == 0; ++i) {
    o = pipe_.Move(sockets_.receiver, {.fd = read_only, .offset = 3, .size = 4}, absl::MakeSpan(scratch_));
  }
  ::close(read_only);
  EXPECT_EQ(o.moved, 4u);
  EXPECT_FALSE(o.file_status.ok());
  EXPECT_THAT(o.file_status.message(), HasSubstr("write at 3 of descriptor"));
  sockets_.Send("kept");
  EXPECT_EQ(MoveAll(pipe_, sockets_, {.fd = file_, .offset = 0, .size = 4}, scratch_), 4u);
  EXPECT_EQ(ReadBack(file_, 0, 16), "kept") << "nothing of the dropped bytes is left in the pipe";
}

TEST_F(SplicePipeTest, FileInAppendModeIsWrittenFromMemoryAndSaysItRefusedSplice) {
  char path[] = "/tmp/splice_pipe_test.XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  ASSERT_EQ(::fcntl(fd, F_SETFL, O_APPEND), 0);  // splice refuses such a file (EINVAL)
  const std::string bytes = Pattern(100'000, 'k');
  std::thread sender([&] { sockets_.Send(bytes); });
  bool refused = false;
  const size_t moved = MoveAll(pipe_, sockets_, {.fd = fd, .offset = 0, .size = bytes.size()}, scratch_,
                               &refused);
  sender.join();
  EXPECT_EQ(moved, bytes.size());
  EXPECT_TRUE(ReadBack(fd, 0, bytes.size()) == bytes);
  EXPECT_TRUE(refused);
  ::close(fd);
}

}  // namespace
}  // namespace ferry::internal
