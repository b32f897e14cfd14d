#include "ferry/base/large_buffer.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "ferry/base/sanitizers.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

TEST(LargeBufferTest, ZeroBytesIsAnEmptyBuffer) {
  absl::StatusOr<LargeBuffer> b = LargeBuffer::Allocate(0);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->empty());
  EXPECT_EQ(b->span().size(), 0u);
}

TEST(LargeBufferTest, SmallBufferHoldsWhatIsWritten) {
  absl::StatusOr<LargeBuffer> b = LargeBuffer::Allocate(1000);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->size(), 1000u);
  std::memset(b->data(), 'x', b->size());
  EXPECT_EQ(b->data()[999], 'x');
}

TEST(LargeBufferTest, LargeBufferStartsOnAHugePageBoundaryAndIsWritableToItsEnd) {
  const size_t size = (size_t{12} << 20) + 123;  // not a multiple of a page
  absl::StatusOr<LargeBuffer> b = LargeBuffer::Allocate(size);
  ASSERT_TRUE(b.ok()) << b.status();
  if (!kAddressSanitizer) {  // under ASan buffers come from the heap (large_buffer.cc)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % LargeBuffer::kHugePageBytes, 0u);
  }
  std::memset(b->data(), 'y', b->size());
  EXPECT_EQ(b->data()[size - 1], 'y');
}

TEST(LargeBufferTest, MovingKeepsTheMemoryWhereItIs) {
  absl::StatusOr<LargeBuffer> a = LargeBuffer::Allocate(LargeBuffer::kHugePageBytes);
  ASSERT_TRUE(a.ok()) << a.status();
  char* const before = a->data();
  LargeBuffer b = *std::move(a);
  EXPECT_EQ(b.data(), before);
  LargeBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), before);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
}

}  // namespace
}  // namespace ferry
