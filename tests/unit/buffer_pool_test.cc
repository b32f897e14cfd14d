#include "ferry/runtime/buffer_pool.h"

#include <cstring>
#include <optional>
#include <utility>

#include "gtest/gtest.h"

namespace ferry {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(BufferPoolTest, GivenBufferServesTheNextTakeOfItsSize) {
  BufferPool pool(64 * kMiB);
  absl::StatusOr<LargeBuffer> a = pool.Take(12 * kMiB);
  ASSERT_TRUE(a.ok()) << a.status();
  char* const memory = a->data();
  pool.Give(*std::move(a));
  absl::StatusOr<LargeBuffer> b = pool.Take(12 * kMiB);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->data(), memory);
  EXPECT_EQ(pool.stats().allocations, 1);
  EXPECT_EQ(pool.stats().reuses, 1);
}

TEST(BufferPoolTest, SizesRoundUpToTwoMiBClassesThatShareBuffers) {
  BufferPool pool(64 * kMiB);
  absl::StatusOr<LargeBuffer> a = pool.Take(5 * kMiB + 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size(), 6 * kMiB);
  pool.Give(*std::move(a));
  absl::StatusOr<LargeBuffer> b = pool.Take(6 * kMiB);  // same class
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(pool.stats().reuses, 1);
  absl::StatusOr<LargeBuffer> c = pool.Take(4 * kMiB);  // another class: new
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(pool.stats().allocations, 2);
}

TEST(BufferPoolTest, TakenBytesAreTheSizeOfTheBufferATakeGives) {
  BufferPool pool(64 * kMiB);
  for (size_t size : {size_t{1000}, 2 * kMiB, 5 * kMiB + 1, 6 * kMiB}) {
    absl::StatusOr<LargeBuffer> b = pool.Take(size);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(BufferPool::TakenBytes(size), b->size()) << size;
  }
}

TEST(BufferPoolTest, ABufferTakenWithinABoundHoldsItsWholeSizeClassUntilGivenBack) {
  BufferPool pool(64 * kMiB);
  MemoryBudget bound(16 * kMiB);
  std::optional<BoundedBuffer> b = pool.TryTakeWithin(bound, 5 * kMiB + 1);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->buffer.size(), 6 * kMiB);
  EXPECT_EQ(bound.in_use(), static_cast<int64_t>(6 * kMiB));
  pool.Give(*std::move(b));
  EXPECT_EQ(bound.in_use(), 0);
  EXPECT_EQ(pool.stats().idle_bytes, static_cast<int64_t>(6 * kMiB));
}

TEST(BufferPoolTest, ABoundWithoutRoomGivesNoBufferAndTakesNothing) {
  BufferPool pool(64 * kMiB);
  MemoryBudget bound(4 * kMiB);
  EXPECT_FALSE(pool.TryTakeWithin(bound, 6 * kMiB).has_value());
  EXPECT_EQ(bound.in_use(), 0);
  EXPECT_EQ(pool.stats().allocations, 0);
}

TEST(BufferPoolTest, IdleBuffersStayWithinTheCap) {
  BufferPool pool(20 * kMiB);
  absl::StatusOr<LargeBuffer> a = pool.Take(12 * kMiB);
  absl::StatusOr<LargeBuffer> b = pool.Take(12 * kMiB);
  ASSERT_TRUE(a.ok() && b.ok());
  pool.Give(*std::move(a));
  pool.Give(*std::move(b));  // 24 MiB would exceed 20: freed
  EXPECT_EQ(pool.stats().idle_bytes, static_cast<int64_t>(12 * kMiB));
}

TEST(BufferPoolTest, ZeroCapKeepsNothing) {
  BufferPool pool(0);
  absl::StatusOr<LargeBuffer> a = pool.Take(4 * kMiB);
  ASSERT_TRUE(a.ok());
  pool.Give(*std::move(a));
  EXPECT_EQ(pool.stats().idle_bytes, 0);
}

TEST(BufferPoolTest, SmallBuffersComeFromTheHeapExactAndAreNotKept) {
  BufferPool pool(64 * kMiB);
  absl::StatusOr<LargeBuffer> a = pool.Take(1000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size(), 1000u);
  pool.Give(*std::move(a));
  EXPECT_EQ(pool.stats().idle_bytes, 0);
}

TEST(BufferPoolTest, ReusedBufferIsWritableToItsEnd) {
  BufferPool pool(64 * kMiB);
  absl::StatusOr<LargeBuffer> a = pool.Take(4 * kMiB);
  ASSERT_TRUE(a.ok());
  std::memset(a->data(), 'a', a->size());
  pool.Give(*std::move(a));  // its pages are now lazily freeable
  absl::StatusOr<LargeBuffer> b = pool.Take(4 * kMiB);
  ASSERT_TRUE(b.ok());
  std::memset(b->data(), 'b', b->size());
  EXPECT_EQ(b->data()[b->size() - 1], 'b');
}

}  // namespace
}  // namespace ferry
