// The type-independent half of FdTable<Handle>.
//
// Lookups go through 16 shard locks held only long enough to copy a
// shared_ptr, so the descriptor lives on after Close unpublishes it for as
// long as a call still holds it: no use-after-free. Each descriptor counts
// its calls in flight under its own small lock; Close first removes the fd
// from its shard (new lookups fail), then marks the descriptor closed (calls
// that looked it up but have not begun fail too) and waits for the count to
// drop to zero. Only then does it uncount the open against the object, so
// "last close" is reported after every call on every descriptor of that
// object has finished: the uploader may complete the object safely.
// Per-object counts live under one more lock touched only by Open and Close,
// never by I/O. The shard locks and objects_mu_ are never held together.
#include "ferry/io/internal/fd_table_core.h"

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"

namespace ferry {
namespace fd_table_internal {

absl::Status NotOpenError(std::string_view op, int fd) {
  return absl::InvalidArgumentError(absl::StrCat(ToAbsl(op), ": fd ", fd, " is not open"));
}

absl::Status WrongModeError(std::string_view op, const DescriptorBase& d) {
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(op), ": fd ", d.fd(), " ('", d.object_key(), "') is open ",
      d.readable() ? "read-only" : "write-only", ", not for ",
      d.readable() ? "writing" : "reading"));
}

absl::Status DescriptorBase::BeginCall(std::string_view op) {
  MutexLock lock(&calls_mu_);
  if (closed_) return NotOpenError(op, fd_);
  ++calls_in_flight_;
  return absl::OkStatus();
}

void DescriptorBase::EndCall() {
  MutexLock lock(&calls_mu_);
  if (--calls_in_flight_ == 0 && closed_) calls_drained_.SignalAll();
}

void DescriptorBase::CloseAndDrain() {
  MutexLock lock(&calls_mu_);
  closed_ = true;
  while (calls_in_flight_ > 0) calls_drained_.Wait(&calls_mu_);
}

// At least descriptor 3, so the table can hold one open.
FdTableCore::FdTableCore(int max_descriptor)
    : max_descriptor_(max_descriptor < 3 ? 3 : max_descriptor) {}

int FdTableCore::NextCandidate() {
  // Descriptors 3..max_descriptor_: that is max_descriptor_ - 2 numbers.
  const uint64_t range = static_cast<uint64_t>(max_descriptor_) - 2;
  return 3 + static_cast<int>(next_ticket_.fetch_add(1, std::memory_order_relaxed) % range);
}

std::optional<ObjectCounts> FdTableCore::Reserve(std::string_view object_key, bool readable,
                                                 bool writable) {
  const int capacity = max_descriptor_ - 2;
  if (open_descriptors_.fetch_add(1, std::memory_order_acq_rel) >= capacity) {
    open_descriptors_.fetch_sub(1, std::memory_order_acq_rel);
    return std::nullopt;
  }
  MutexLock lock(&objects_mu_);
  ObjectCounts& c = objects_[std::string(object_key)];
  ++c.opens;
  if (readable) ++c.readers;
  if (writable) ++c.writers;
  return c;
}

ObjectCounts FdTableCore::Release(std::string_view object_key, bool readable, bool writable) {
  ObjectCounts after;
  {
    MutexLock lock(&objects_mu_);
    auto it = objects_.find(ToAbsl(object_key));
    if (it != objects_.end()) {  // always found: Reserve counted this open
      ObjectCounts& c = it->second;
      --c.opens;
      if (readable) --c.readers;
      if (writable) --c.writers;
      after = c;
      if (c.opens == 0) objects_.erase(it);
    }
  }
  return after;
}

absl::StatusOr<std::shared_ptr<DescriptorBase>> FdTableCore::Find(int fd,
                                                                  std::string_view op) const {
  const Shard& shard = ShardFor(fd);
  MutexLock lock(&shard.mu);
  auto it = shard.fds.find(fd);
  if (it == shard.fds.end()) return NotOpenError(op, fd);
  return it->second;
}

absl::StatusOr<std::pair<std::shared_ptr<DescriptorBase>, ObjectCounts>> FdTableCore::Remove(
    int fd) {
  std::shared_ptr<DescriptorBase> d;
  {
    Shard& shard = ShardFor(fd);
    MutexLock lock(&shard.mu);
    auto it = shard.fds.find(fd);
    if (it == shard.fds.end()) return NotOpenError("Close", fd);
    d = std::move(it->second);
    shard.fds.erase(it);
  }
  // The number is free for reuse from here on: no lookup can reach d.
  open_descriptors_.fetch_sub(1, std::memory_order_acq_rel);
  d->CloseAndDrain();
  const ObjectCounts after = Release(d->object_key(), d->readable(), d->writable());
  return std::make_pair(std::move(d), after);
}

ObjectCounts FdTableCore::CountsFor(std::string_view object_key) const {
  MutexLock lock(&objects_mu_);
  auto it = objects_.find(ToAbsl(object_key));
  return it == objects_.end() ? ObjectCounts{} : it->second;
}

}  // namespace fd_table_internal
}  // namespace ferry
