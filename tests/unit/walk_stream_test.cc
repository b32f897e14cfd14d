// bindings::WalkStream: a walk pulled as records.proto batches.
#include "ferry/bindings/walk_stream.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "ferry/bindings/error_kind.h"
#include "ferry/records.pb.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/mem_file_system.h"

namespace ferry::bindings {
namespace {

class WalkStreamTest : public ::testing::Test {
 protected:
  Runtime runtime_{{.blocking_threads = 2}};
  std::shared_ptr<testing::MemFileSystem> mem_ = std::make_shared<testing::MemFileSystem>();
};

TEST_F(WalkStreamTest, DeliversEveryEntryOnceAndMarksTheLastBatch) {
  for (int i = 0; i < 250; ++i) mem_->PutFile(absl::StrCat("t/d", i % 7, "/f", i), "x");
  WalkStream::Options o;
  o.walk.batch_entries = 16;
  o.walk_id = 9;
  std::unique_ptr<WalkStream> s = WalkStream::Start(runtime_, mem_, "t", o);
  std::set<std::string> paths;
  bool last = false;
  uint64_t sequence = 0;
  for (;;) {
    absl::StatusOr<std::optional<std::string>> bytes = s->Next();
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes->has_value()) break;
    records::WalkBatch b;
    ASSERT_TRUE(b.ParseFromString(**bytes));
    EXPECT_FALSE(last) << "a batch after the last one";
    EXPECT_EQ(b.walk_id(), 9u);
    EXPECT_EQ(b.sequence(), sequence++);
    last = b.last();
    for (const auto& e : b.entries()) EXPECT_TRUE(paths.insert(e.path()).second) << e.path();
  }
  EXPECT_TRUE(last);
  EXPECT_EQ(paths.size(), 257u);  // 250 files + 7 directories
  ASSERT_TRUE(s->stats().has_value());
  EXPECT_EQ(s->stats()->entries, 257u);
}

TEST_F(WalkStreamTest, MissingRootIsReportedByNext) {
  std::unique_ptr<WalkStream> s = WalkStream::Start(runtime_, mem_, "nope", {});
  absl::StatusOr<std::optional<std::string>> bytes = s->Next();
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(s->Next().ok());  // reported once, then the end
}

TEST_F(WalkStreamTest, CloseStopsAWalkTheConsumerAbandoned) {
  for (int i = 0; i < 2000; ++i) mem_->PutFile(absl::StrCat("t/f", i), "x");
  WalkStream::Options o;
  o.walk.batch_entries = 8;
  std::unique_ptr<WalkStream> s = WalkStream::Start(runtime_, mem_, "t", o);
  ASSERT_TRUE(s->Next().ok());
  s->Close();  // returns once the task is done: the producer was blocked
  s->Close();
}

TEST_F(WalkStreamTest, HoldsNoReferenceToTheFileSystemOnceTheEndIsSeen) {
  // A consumer that has seen the end may drop the filesystem and then the
  // Runtime: the last reference must not be the walk task's on a pool
  // thread (an NFS client's destructor there waits for stopped I/O threads).
  mem_->PutFile("t/a", "x");
  std::unique_ptr<WalkStream> s = WalkStream::Start(runtime_, mem_, "t", {});
  for (;;) {
    absl::StatusOr<std::optional<std::string>> bytes = s->Next();
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes->has_value()) break;
  }
  EXPECT_EQ(mem_.use_count(), 1);
}

TEST(ErrorKindTest, MapsTheErrorTableAndNamesCodes) {
  EXPECT_EQ(ErrorKindFor(absl::StatusCode::kNotFound), ErrorKind::kNotFound);
  EXPECT_EQ(ErrorKindFor(absl::StatusCode::kDataLoss), ErrorKind::kProtocol);
  EXPECT_EQ(ErrorKindFor(absl::StatusCode::kDeadlineExceeded), ErrorKind::kTimeout);
  EXPECT_EQ(ErrorKindFor(absl::StatusCode::kInternal), ErrorKind::kOther);
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kUnavailable), "Unavailable");
  EXPECT_EQ(StatusCodeFromName("DataLoss"), absl::StatusCode::kDataLoss);
  EXPECT_EQ(StatusCodeFromName("nope"), std::nullopt);
}

}  // namespace
}  // namespace ferry::bindings
