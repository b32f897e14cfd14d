// SerializeWalkBatch: the bytes parse back as records.proto's WalkBatch
// with every field of every entry and error, as Python and Java read them.
#include "ferry/nfs/walk_records.h"

#include <string>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "ferry/records.pb.h"

namespace ferry::nfs {
namespace {

WalkBatch SampleBatch() {
  WalkBatch batch;
  batch.entries.push_back(WalkEntry{.path = "dir",
                                    .type = FileType::kDirectory,
                                    .size = 4096,
                                    .mode = 0755,
                                    .uid = 1000,
                                    .gid = 100,
                                    .mtime = NfsTime{.seconds = 1700000000, .nseconds = 123456789},
                                    .fileid = 42});
  // Not UTF-8: names are bytes.
  batch.entries.push_back(WalkEntry{.path = std::string("dir/caf\xe9", 8),
                                    .type = FileType::kRegular,
                                    .size = 5,
                                    .mode = 0644,
                                    .fileid = 43});
  batch.entries.push_back(WalkEntry{.path = "dir/link", .type = FileType::kSymlink});
  batch.errors.push_back(WalkError{
      .path = "locked",
      .status = absl::PermissionDeniedError("NFS3 READDIRPLUS nfs://h/export/locked: NFS3ERR_ACCES")});
  return batch;
}

records::WalkBatch Parse(const std::string& bytes) {
  records::WalkBatch parsed;
  EXPECT_TRUE(parsed.ParseFromString(bytes));
  return parsed;
}

TEST(WalkRecordsTest, EntriesParseBackWithEveryField) {
  const records::WalkBatch parsed = Parse(SerializeWalkBatch(SampleBatch(), {}));
  ASSERT_EQ(parsed.entries_size(), 3);
  const records::WalkEntry& dir = parsed.entries(0);
  EXPECT_EQ(dir.path(), "dir");
  EXPECT_EQ(dir.type(), records::FILE_TYPE_DIRECTORY);
  EXPECT_EQ(dir.size(), 4096u);
  EXPECT_EQ(dir.mode(), 0755u);
  EXPECT_EQ(dir.uid(), 1000u);
  EXPECT_EQ(dir.gid(), 100u);
  EXPECT_EQ(dir.mtime_ns(), 1700000000123456789);
  EXPECT_EQ(dir.fileid(), 42u);
  EXPECT_EQ(parsed.entries(1).path(), std::string("dir/caf\xe9", 8));
  EXPECT_EQ(parsed.entries(1).type(), records::FILE_TYPE_REGULAR);
  EXPECT_EQ(parsed.entries(1).size(), 5u);
  EXPECT_EQ(parsed.entries(2).type(), records::FILE_TYPE_SYMLINK);
}

TEST(WalkRecordsTest, ErrorsCarryTheStatusCodeNumberAndMessage) {
  const records::WalkBatch parsed = Parse(SerializeWalkBatch(SampleBatch(), {}));
  ASSERT_EQ(parsed.errors_size(), 1);
  EXPECT_EQ(parsed.errors(0).path(), "locked");
  EXPECT_EQ(parsed.errors(0).code(), static_cast<int>(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(parsed.errors(0).message(), "NFS3 READDIRPLUS nfs://h/export/locked: NFS3ERR_ACCES");
}

TEST(WalkRecordsTest, ContextFieldsAreCopied) {
  const records::WalkBatch parsed =
      Parse(SerializeWalkBatch(WalkBatch{}, {.walk_id = 7, .sequence = 3, .last = true}));
  EXPECT_EQ(parsed.walk_id(), 7u);
  EXPECT_EQ(parsed.sequence(), 3u);
  EXPECT_TRUE(parsed.last());
  EXPECT_EQ(parsed.entries_size(), 0);
}

TEST(WalkRecordsTest, UnknownFileTypeBecomesUnspecified) {
  WalkBatch batch;
  batch.entries.push_back(WalkEntry{.path = "odd", .type = static_cast<FileType>(99)});
  const records::WalkBatch parsed = Parse(SerializeWalkBatch(batch, {}));
  ASSERT_EQ(parsed.entries_size(), 1);
  EXPECT_EQ(parsed.entries(0).type(), records::FILE_TYPE_UNSPECIFIED);
}

TEST(WalkRecordsTest, ToWalkBatchProtoReplacesEarlierContents) {
  records::WalkBatch proto;
  ToWalkBatchProto(SampleBatch(), {.walk_id = 1}, &proto);
  ToWalkBatchProto(WalkBatch{}, {.walk_id = 2}, &proto);
  EXPECT_EQ(proto.entries_size(), 0);
  EXPECT_EQ(proto.errors_size(), 0);
  EXPECT_EQ(proto.walk_id(), 2u);
}

}  // namespace
}  // namespace ferry::nfs
