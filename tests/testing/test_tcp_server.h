// TestTcpServer: an in-process TCP server for tests of RpcPool and its users.
//
// It listens on 127.0.0.1 (an ephemeral port by default), splits each
// connection's byte stream into records with a ferry::Framing, and hands
// every record to a handler on its own thread (tests may own threads; the
// library may not). The handler answers through the connection handle, now
// or later, from any thread, in any order:
//
//   ferry::testing::TestTcpServer server(
//       ferry::NewLengthPrefixFraming(),
//       [](const ferry::testing::TestTcpServer::ConnPtr& conn, std::string record) {
//         conn->Send(std::move(record));  // echo
//       });
//   options.port = server.port();
//
// Stop() closes the listener and every connection; Start() listens again on
// the same port (a "server restart"); StopListening() refuses new connects
// only. RecordLog collects requests for tests that answer them later.
// Header-only so any test target can use it.
#ifndef FERRY_TESTING_TEST_TCP_SERVER_H_
#define FERRY_TESTING_TEST_TCP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "asio/executor_work_guard.hpp"
#include "asio/io_context.hpp"
#include "asio/ip/tcp.hpp"
#include "asio/post.hpp"
#include "asio/write.hpp"
#include "ferry/base/mutex.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/runtime.h"
#include "gtest/gtest.h"

namespace ferry::testing {

// Thread-safe. Runs one thread of its own.
class TestTcpServer {
 public:
  class Conn;
  using ConnPtr = std::shared_ptr<Conn>;
  // Called on the server's thread for every record received.
  using Handler = std::function<void(const ConnPtr& conn, std::string record)>;

  // One accepted connection. Thread-safe handle; its work runs on the
  // server's thread.
  class Conn : public std::enable_shared_from_this<Conn> {
   public:
    Conn(TestTcpServer* server, asio::ip::tcp::socket socket, int index)
        : io_(server->io_), framing_(server->framing_), handler_(&server->handler_),
          socket_(std::move(socket)), index_(index), reader_(framing_->NewReader()) {}

    // 0-based, in order of acceptance over the server's lifetime.
    int index() const { return index_; }
    // Sends `record`, framed.
    void Send(std::string record) {
      std::string framed;
      framing_->Append(record, &framed);
      SendRaw(std::move(framed));
    }
    // Sends bytes as they are (malformed frames, partial records).
    void SendRaw(std::string bytes) {
      asio::post(*io_, [self = shared_from_this(), bytes = std::move(bytes)]() mutable {
        self->out_ += bytes;
        self->Flush();
      });
    }
    // Closes the connection once everything sent so far is written.
    void Close() {
      asio::post(*io_, [self = shared_from_this()] {
        self->close_after_flush_ = true;
        self->Flush();
      });
    }

   private:
    friend class TestTcpServer;
    void Start() { Read(); }
    void Read() {
      socket_.async_read_some(asio::buffer(buf_, sizeof(buf_)),
                              [self = shared_from_this()](const std::error_code& ec, size_t n) {
                                if (ec) {
                                  self->CloseNow();
                                  return;
                                }
                                std::vector<std::string> records;
                                const bool ok = self->reader_->Consume(std::string_view(self->buf_, n), &records).ok();
                                for (std::string& r : records) (*self->handler_)(self, std::move(r));
                                if (!ok) {
                                  self->CloseNow();
                                  return;
                                }
                                self->Read();
                              });
    }
    void Flush() {
      if (writing_ || closed_) return;
      if (out_.empty()) {
        if (close_after_flush_) CloseNow();
        return;
      }
      writing_ = true;
      wire_.swap(out_);
      out_.clear();
      asio::async_write(socket_, asio::buffer(wire_), [self = shared_from_this()](const std::error_code& ec, size_t) {
        self->writing_ = false;
        self->wire_.clear();
        if (ec) {
          self->CloseNow();
          return;
        }
        self->Flush();
      });
    }
    void CloseNow() {
      if (closed_) return;
      closed_ = true;
      std::error_code ignored;
      socket_.close(ignored);
    }

    // The io_context outlives every Conn (a test may hold one past the
    // server); the handler is only called while the server runs.
    const std::shared_ptr<asio::io_context> io_;
    const std::shared_ptr<const Framing> framing_;
    const Handler* const handler_;
    asio::ip::tcp::socket socket_;
    const int index_;
    std::unique_ptr<RecordReader> reader_;
    char buf_[64 << 10];
    std::string out_;
    std::string wire_;
    bool writing_ = false;
    bool close_after_flush_ = false;
    bool closed_ = false;
  };

  // Starts listening at once (port 0: an ephemeral port).
  TestTcpServer(std::shared_ptr<const Framing> framing, Handler handler, uint16_t port = 0)
      : framing_(std::move(framing)), handler_(std::move(handler)),
        io_(std::make_shared<asio::io_context>()), guard_(asio::make_work_guard(*io_)), port_(port) {
    thread_ = std::thread([this] { io_->run(); });
    Start();
  }
  // Stops, then lets the aborted handlers finish before joining.
  ~TestTcpServer() {
    Stop();
    guard_.reset();
    thread_.join();
  }
  TestTcpServer(const TestTcpServer&) = delete;
  TestTcpServer& operator=(const TestTcpServer&) = delete;

  uint16_t port() const { return port_; }

  // Listens (again) on port(). Blocks until listening.
  void Start() {
    RunOnServer([this] {
      acceptor_.emplace(*io_);
      const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port_);
      acceptor_->open(ep.protocol());
      acceptor_->set_option(asio::ip::tcp::acceptor::reuse_address(true));
      acceptor_->bind(ep);
      acceptor_->listen();
      port_ = acceptor_->local_endpoint().port();
      Accept();
    });
  }

  // Closes the listener and every connection. Blocks until done.
  void Stop() {
    RunOnServer([this] {
      CloseAcceptor();
      for (auto& w : conns_) {
        if (ConnPtr c = w.lock()) c->CloseNow();
      }
      conns_.clear();
    });
  }

  // Closes the listener only: new connects are refused while the accepted
  // connections carry on (one a client has opened but the server not yet
  // accepted is dropped with the listener). Start listens again. Blocks
  // until done.
  void StopListening() {
    RunOnServer([this] { CloseAcceptor(); });
  }

  // Connections accepted so far.
  int accepted() const { return accepted_.load(); }

 private:
  void CloseAcceptor() {
    if (!acceptor_) return;
    std::error_code ignored;
    acceptor_->close(ignored);
    acceptor_.reset();
  }
  void Accept() {
    acceptor_->async_accept([this](const std::error_code& ec, asio::ip::tcp::socket socket) {
      if (ec) return;  // closed by Stop or StopListening
      auto c = std::make_shared<Conn>(this, std::move(socket), accepted_.fetch_add(1));
      conns_.push_back(c);
      c->Start();
      if (acceptor_) Accept();
    });
  }
  // Runs `fn` on the server's thread and waits for it.
  void RunOnServer(std::function<void()> fn) {
    Mutex mu;
    CondVar cv;
    bool done = false;
    asio::post(*io_, [&] {
      fn();
      MutexLock l(&mu);
      done = true;
      cv.SignalAll();
    });
    MutexLock l(&mu);
    while (!done) cv.Wait(&mu);
  }

  const std::shared_ptr<const Framing> framing_;
  const Handler handler_;
  const std::shared_ptr<asio::io_context> io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
  std::atomic<uint16_t> port_;
  std::atomic<int> accepted_{0};
  // Server thread only.
  std::optional<asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::weak_ptr<Conn>> conns_;
};

// Requests held for a test to answer later, in any order. Thread-safe.
class RecordLog {
 public:
  struct Entry {
    TestTcpServer::ConnPtr conn;
    std::string record;
  };

  // A TestTcpServer handler that logs every record.
  TestTcpServer::Handler Handler() {
    return [this](const TestTcpServer::ConnPtr& conn, std::string record) { Add(conn, std::move(record)); };
  }
  void Add(const TestTcpServer::ConnPtr& conn, std::string record) {
    MutexLock l(&mu_);
    entries_.push_back({conn, std::move(record)});
    ++total_;
    cv_.SignalAll();
  }
  // Waits until `n` records have been logged in all (false after `timeout`).
  bool WaitForTotal(size_t n, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock l(&mu_);
    while (total_ < n) {
      if (!cv_.WaitWithDeadline(&mu_, deadline) && absl::Now() >= deadline) return total_ >= n;
    }
    return true;
  }
  // Takes every record logged and not yet taken.
  std::vector<Entry> Take() {
    MutexLock l(&mu_);
    std::vector<Entry> out;
    out.swap(entries_);
    return out;
  }
  size_t total() const {
    MutexLock l(&mu_);
    return total_;
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

// Polls `predicate` until it holds or `timeout` passes. For waiting on state
// a test cannot be told about (e.g. the pool noticing a lost connection);
// never for asserting timing.
inline bool WaitUntil(const std::function<bool()>& predicate, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!predicate()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// Options for an RpcPool to a server on 127.0.0.1:`port` that speaks
// `framing`. Calls get 20 s: room for a loaded machine, yet a hung test
// still fails. Tests set the connections and calls in flight they need.
inline RpcPoolOptions LoopbackPoolOptions(uint16_t port, std::shared_ptr<const Framing> framing) {
  RpcPoolOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.framing = std::move(framing);
  o.default_timeout = absl::Seconds(20);
  return o;
}

// LoopbackPoolOptions for one connection that comes back at once when
// lost (2-20 ms back-off) and never stops trying.
inline RpcPoolOptions OneConnectionPoolOptions(uint16_t port, std::shared_ptr<const Framing> framing) {
  RpcPoolOptions o = LoopbackPoolOptions(port, std::move(framing));
  o.connections = 1;
  o.initial_backoff = absl::Milliseconds(2);
  o.max_backoff = absl::Milliseconds(20);
  o.max_connect_attempts = 1000;
  return o;
}

// A handler that sends every record back as it came.
inline TestTcpServer::Handler Echo() {
  return [](const TestTcpServer::ConnPtr& conn, std::string record) { conn->Send(std::move(record)); };
}

// A handler that closes the connection on the first record it gets (that
// call is lost with its connection) and echoes every later one.
inline TestTcpServer::Handler LoseTheFirstThenEcho() {
  auto seen = std::make_shared<std::atomic<int>>(0);
  return [seen](const TestTcpServer::ConnPtr& conn, std::string record) {
    if (seen->fetch_add(1) == 0) {
      conn->Close();
      return;
    }
    conn->Send(std::move(record));
  };
}

// A pool made from `o`, once all its connections are ready (a test fails
// if they are not within 10 s).
inline std::unique_ptr<RpcPool> ReadyPool(Runtime& runtime, RpcPoolOptions o) {
  const int n = o.connections;
  absl::StatusOr<std::unique_ptr<RpcPool>> pool = RpcPool::Create(runtime, std::move(o));
  EXPECT_TRUE(pool.ok()) << pool.status();
  if (!pool.ok()) return nullptr;
  EXPECT_TRUE((*pool)->WaitUntilReady(n, absl::Now() + absl::Seconds(10)).ok());
  return *std::move(pool);
}

// `n` bytes that differ from offset to offset, so a misplaced piece shows.
inline std::string Patterned(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 131 + (i >> 12));
  return s;
}

}  // namespace ferry::testing

#endif  // FERRY_TESTING_TEST_TCP_SERVER_H_
