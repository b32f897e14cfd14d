// Internals of ferry::FdTable<Handle>. Users must not touch anything here.
//
// The part of the descriptor table that does not depend on the Handle type
// (descriptor numbering, the sharded fd map, per-object open counts, and the
// close-waits-for-I/O protocol of each descriptor) lives in the non-template
// FdTableCore and DescriptorBase, implemented in core/src/io/fd_table_core.cc.
// FdTable<Handle> (ferry/io/fd_table.h) only adds the typed handle and the
// calls into it.
#ifndef FERRY_IO_INTERNAL_FD_TABLE_CORE_H_
#define FERRY_IO_INTERNAL_FD_TABLE_CORE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/base/mutex.h"

namespace ferry {
namespace fd_table_internal {

// Opens of one object after an Open or Close.
struct ObjectCounts {
  int opens = 0;    // descriptors open on the object
  int readers = 0;  // of which opened kRead or kReadWrite
  int writers = 0;  // of which opened kWrite or kReadWrite
};

// One open descriptor: its object, access mode and offset, plus the count of
// calls in flight so that Close can wait for them. Thread-safe.
class DescriptorBase {
 public:
  DescriptorBase(int fd, std::string object_key, bool readable, bool writable)
      : fd_(fd), object_key_(std::move(object_key)), readable_(readable), writable_(writable) {}
  virtual ~DescriptorBase() = default;
  DescriptorBase(const DescriptorBase&) = delete;
  DescriptorBase& operator=(const DescriptorBase&) = delete;

  int fd() const { return fd_; }
  const std::string& object_key() const { return object_key_; }
  bool readable() const { return readable_; }
  bool writable() const { return writable_; }

  // Registers one call in flight. Fails with the table's EBADF-like error
  // (InvalidArgument, "`op`: fd N is not open") once Close has begun.
  absl::Status BeginCall(std::string_view op);
  // Ends a call registered by a successful BeginCall.
  void EndCall();
  // Refuses new calls, then blocks until every call in flight has ended.
  // REQUIRES: called once, by the Close that removed this descriptor.
  void CloseAndDrain();

  // The f_pos lock: held for the whole of Read, Write and Lseek so that
  // concurrent calls on one descriptor see (and move) a consistent offset.
  Mutex& position_mutex() ABSL_LOCK_RETURNED(position_mu_) { return position_mu_; }
  int64_t& offset() ABSL_EXCLUSIVE_LOCKS_REQUIRED(position_mu_) { return offset_; }

 private:
  const int fd_;
  const std::string object_key_;
  const bool readable_;
  const bool writable_;

  Mutex position_mu_;
  int64_t offset_ ABSL_GUARDED_BY(position_mu_) = 0;

  Mutex calls_mu_;
  CondVar calls_drained_;
  bool closed_ ABSL_GUARDED_BY(calls_mu_) = false;
  int calls_in_flight_ ABSL_GUARDED_BY(calls_mu_) = 0;
};

// Ends a call begun with DescriptorBase::BeginCall when it goes out of scope.
class CallScope {
 public:
  explicit CallScope(DescriptorBase* d) : d_(d) {}
  ~CallScope() { d_->EndCall(); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  DescriptorBase* const d_;
};

// The EBADF-like error of every FdTable call: InvalidArgument naming the
// call and the descriptor ("Read: fd 7 is not open").
absl::Status NotOpenError(std::string_view op, int fd);
// InvalidArgument: `op` needs an access the descriptor was not opened with.
absl::Status WrongModeError(std::string_view op, const DescriptorBase& d);

// The descriptor map and per-object open counts. Thread-safe: the map is
// split into shards with a lock each, so calls on different descriptors
// contend only when they hash to the same shard, and only for a lookup.
class FdTableCore {
 public:
  // Descriptors are numbered 3..max_descriptor (0-2 stay stdin/out/err, as
  // in the iRODS S3 plugin's fake fds), then wrap to 3, skipping open ones.
  explicit FdTableCore(int max_descriptor);
  FdTableCore(const FdTableCore&) = delete;
  FdTableCore& operator=(const FdTableCore&) = delete;

  // Creates a descriptor with `make(fd)` for a free fd, counts it against
  // its object and publishes it. ResourceExhausted when every fd is in use.
  template <typename MakeDescriptor>
  absl::StatusOr<std::pair<int, ObjectCounts>> Insert(std::string_view object_key, bool readable,
                                                      bool writable, MakeDescriptor make);

  // The open descriptor `fd`, or NotOpenError(op, fd).
  absl::StatusOr<std::shared_ptr<DescriptorBase>> Find(int fd, std::string_view op) const;

  // Unpublishes `fd`, waits for its calls in flight, then uncounts it.
  // Returns the descriptor and its object's counts after the close, or
  // NotOpenError("Close", fd).
  absl::StatusOr<std::pair<std::shared_ptr<DescriptorBase>, ObjectCounts>> Remove(int fd);

  ObjectCounts CountsFor(std::string_view object_key) const;
  // Descriptors reachable by Find (a closing one no longer is).
  int open_descriptors() const { return open_descriptors_.load(std::memory_order_acquire); }

 private:
  // 16 shards: a few times the core counts ferry targets, so two threads
  // rarely meet on one shard lock; sequential fds land on different shards.
  static constexpr int kShards = 16;
  struct Shard {
    mutable Mutex mu;
    absl::flat_hash_map<int, std::shared_ptr<DescriptorBase>> fds ABSL_GUARDED_BY(mu);
  };

  Shard& ShardFor(int fd) { return shards_[static_cast<unsigned>(fd) % kShards]; }
  const Shard& ShardFor(int fd) const { return shards_[static_cast<unsigned>(fd) % kShards]; }
  // Reserves a descriptor slot and counts the open against its object;
  // returns the object's counts including it, or nullopt if every fd is in use.
  std::optional<ObjectCounts> Reserve(std::string_view object_key, bool readable, bool writable);
  // Counts a close against the object; returns its counts after.
  ObjectCounts Release(std::string_view object_key, bool readable, bool writable);
  int NextCandidate();

  const int max_descriptor_;
  std::atomic<uint64_t> next_ticket_{0};
  std::atomic<int> open_descriptors_{0};
  std::array<Shard, kShards> shards_;

  mutable Mutex objects_mu_;
  absl::flat_hash_map<std::string, ObjectCounts> objects_ ABSL_GUARDED_BY(objects_mu_);
};

template <typename MakeDescriptor>
absl::StatusOr<std::pair<int, ObjectCounts>> FdTableCore::Insert(std::string_view object_key,
                                                                bool readable, bool writable,
                                                                MakeDescriptor make) {
  const std::optional<ObjectCounts> counts = Reserve(object_key, readable, writable);
  if (!counts.has_value()) {
    return absl::ResourceExhaustedError(
        "Open: every descriptor is in use (the table holds at most max_descriptor - 2)");
  }
  // A free fd exists because Reserve counted this open within capacity; the
  // loop only skips fds still open after a wrap-around.
  for (;;) {
    const int fd = NextCandidate();
    Shard& shard = ShardFor(fd);
    MutexLock lock(&shard.mu);
    if (shard.fds.contains(fd)) continue;
    shard.fds.emplace(fd, make(fd));
    return std::make_pair(fd, *counts);
  }
}

}  // namespace fd_table_internal
}  // namespace ferry

#endif  // FERRY_IO_INTERNAL_FD_TABLE_CORE_H_
