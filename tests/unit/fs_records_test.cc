// fs entries and transfer stats as records.proto bytes: what Python and
// Java decode.
#include "ferry/records/cache_records.h"
#include "ferry/records/fs_records.h"

#include "absl/time/time.h"
#include "ferry/records.pb.h"
#include "gtest/gtest.h"

namespace ferry::records {
namespace {

TEST(FsRecordsTest, WalkBatchCarriesEveryEntryFieldAndError) {
  fs::WalkBatch batch;
  fs::Entry e;
  e.path = std::string("d/n\xff", 4);  // names are bytes, not always UTF-8
  e.kind = fs::EntryKind::kFile;
  e.size = 42;
  e.mode = 0640;
  e.uid = 7;
  e.gid = 8;
  e.mtime = absl::FromUnixNanos(1'700'000'000'123'456'789);
  e.id = 99;
  batch.entries.push_back(e);
  fs::Entry dir;
  dir.path = "d";
  dir.kind = fs::EntryKind::kDirectory;
  batch.entries.push_back(dir);
  batch.errors.push_back({"locked", absl::PermissionDeniedError("no")});
  WalkBatch r;
  ASSERT_TRUE(r.ParseFromString(SerializeWalkBatch(batch, {.walk_id = 5, .sequence = 2, .last = true})));
  ASSERT_EQ(r.entries_size(), 2);
  EXPECT_EQ(r.entries(0).path(), std::string("d/n\xff", 4));
  EXPECT_EQ(r.entries(0).type(), FILE_TYPE_REGULAR);
  EXPECT_EQ(r.entries(0).size(), 42u);
  EXPECT_EQ(r.entries(0).mode(), 0640u);
  EXPECT_EQ(r.entries(0).uid(), 7u);
  EXPECT_EQ(r.entries(0).mtime_ns(), 1'700'000'000'123'456'789);
  EXPECT_EQ(r.entries(0).fileid(), 99u);
  EXPECT_EQ(r.entries(1).type(), FILE_TYPE_DIRECTORY);
  EXPECT_EQ(r.entries(1).mtime_ns(), 0);  // unknown
  ASSERT_EQ(r.errors_size(), 1);
  EXPECT_EQ(r.errors(0).code(), static_cast<int>(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(r.walk_id(), 5u);
  EXPECT_EQ(r.sequence(), 2u);
  EXPECT_TRUE(r.last());
}

TEST(FsRecordsTest, ARefusedEntryCarriesItsRawNameAndParent) {
  fs::WalkBatch batch;
  fs::WalkError refused;
  refused.path = "t2";
  refused.name = std::string("a\0/b", 4);
  refused.refused = true;
  refused.status = absl::InvalidArgumentError("a name with '/' in it");
  batch.errors.push_back(refused);
  WalkBatch r;
  ASSERT_TRUE(r.ParseFromString(SerializeWalkBatch(batch, {})));
  ASSERT_EQ(r.errors_size(), 1);
  EXPECT_TRUE(r.errors(0).refused());
  EXPECT_EQ(r.errors(0).name(), std::string("a\0/b", 4));
  EXPECT_EQ(r.errors(0).path(), "t2");
}

TEST(FsRecordsTest, TransferStatsCarryATreesRefusedAndSkippedEntries) {
  TransferStats r;
  ASSERT_TRUE(r.ParseFromString(SerializeTransferStats(
      {.operation = TransferOperation::kCopy,
       .entries_refused = 2,
       .files_skipped = 1,
       .warnings = {"refused one", "refused two", "skipped a symlink"}},
      {})));
  EXPECT_EQ(r.entries_refused(), 2u);
  EXPECT_EQ(r.files_skipped(), 1u);
  ASSERT_EQ(r.warnings_size(), 3);
  EXPECT_EQ(r.warnings(2), "skipped a symlink");
}

TEST(FsRecordsTest, TransferStatsCarryCountersAndAFailedStatus) {
  const ferry::TransferStats s{
      .bytes = 1000, .requests = 3, .retries = 1, .files = 2, .elapsed = absl::Milliseconds(5)};
  TransferStats r;
  ASSERT_TRUE(r.ParseFromString(SerializeTransferStats(
      {TransferOperation::kCopy, "s3://b/k", "/tmp/k", absl::UnavailableError("gone")}, s)));
  EXPECT_EQ(r.operation(), TransferStats::OPERATION_COPY);
  EXPECT_EQ(r.source(), "s3://b/k");
  EXPECT_EQ(r.bytes(), 1000u);
  EXPECT_EQ(r.files(), 2u);
  EXPECT_EQ(r.requests(), 3u);
  EXPECT_EQ(r.elapsed_ns(), 5'000'000);
  EXPECT_EQ(r.code(), static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_EQ(r.message(), "gone");
}

TEST(CacheRecordsTest, CacheStatsCarryEveryCounterAndTheSize) {
  const ferry::TtlCacheStats s{.hits = 7, .negative_hits = 1, .misses = 2, .loads = 3, .invalidations = 4};
  CacheStats r;
  ASSERT_TRUE(r.ParseFromString(SerializeCacheStats(s, 5, 9)));
  EXPECT_EQ(r.hits(), 7);
  EXPECT_EQ(r.negative_hits(), 1);
  EXPECT_EQ(r.misses(), 2);
  EXPECT_EQ(r.loads(), 3);
  EXPECT_EQ(r.invalidations(), 4);
  EXPECT_EQ(r.entries(), 5);
  EXPECT_EQ(r.weight(), 9);
}

}  // namespace
}  // namespace ferry::records
