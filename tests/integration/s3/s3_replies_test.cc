// The S3 reply readers (s3_replies.h), as the specification of what a
// server's bytes may do.
#include "ferry/s3/s3_replies.h"

#include "ferry/s3/s3_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(S3ListObjectsV2Reply, ReadsObjectsPrefixesAndTheContinuation) {
  absl::StatusOr<ListObjectsPage> page = ParseListObjectsV2Reply(
      "<ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a&amp;b</Key><Size>3</Size><ETag>&quot;e&quot;</ETag>"
      "<LastModified>2024-01-02T03:04:05.000Z</LastModified></Contents>"
      "<CommonPrefixes><Prefix>d/</Prefix></CommonPrefixes>"
      "<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "a&b");
  EXPECT_EQ(page->objects[0].size, 3);
  EXPECT_EQ(page->objects[0].etag, "\"e\"");
  EXPECT_NE(page->objects[0].last_modified, absl::InfinitePast());
  EXPECT_THAT(page->common_prefixes, ElementsAre("d/"));
  EXPECT_EQ(page->next_continuation_token, "tok");
}

TEST(S3ListObjectsV2Reply, RejectsTruncatedPageWithoutAToken) {
  EXPECT_EQ(ParseListObjectsV2Reply("<ListBucketResult><IsTruncated>true</IsTruncated>"
                                    "</ListBucketResult>")
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
}

// A negative size used to be taken as is: a listing entry of size -1 read
// as "unknown" downstream, or wrapped as an offset.
TEST(S3ListObjectsV2Reply, RejectsANegativeOrMissingSize) {
  for (const char* size : {"<Size>-1</Size>", "<Size>x</Size>", ""}) {
    const std::string body =
        std::string("<ListBucketResult><Contents><Key>k</Key>") + size + "</Contents></ListBucketResult>";
    absl::StatusOr<ListObjectsPage> page = ParseListObjectsV2Reply(body);
    EXPECT_EQ(page.status().code(), absl::StatusCode::kDataLoss) << size;
    EXPECT_THAT(page.status().message(), HasSubstr("ListObjectsV2")) << size;
  }
}

TEST(S3HeadObjectReply, ReadsSizeEtagAndDateAndRejectsANegativeLength) {
  absl::StatusOr<ObjectInfo> info = ParseHeadObjectReply(
      {{"content-length", "10"}, {"etag", "\"x\""}, {"last-modified", "Sun, 06 Nov 1994 08:49:37 GMT"}});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, 10);
  EXPECT_EQ(info->etag, "\"x\"");
  EXPECT_EQ(info->last_modified, absl::FromUnixSeconds(784111777));
  EXPECT_EQ(ParseHeadObjectReply({{"content-length", "-10"}}).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseHeadObjectReply({}).status().code(), absl::StatusCode::kDataLoss);
}

// The status of CheckContentRangeStart(value, offset).
absl::StatusCode RangeCheck(const std::string& value, int64_t offset) {
  return CheckContentRangeStart(&value, offset).code();
}

TEST(S3ContentRange, ARangeFromTheAskedOffsetIsAccepted) {
  EXPECT_EQ(RangeCheck("bytes 3-9/10", 3), absl::StatusCode::kOk);
  EXPECT_EQ(RangeCheck("bytes 0-0/*", 0), absl::StatusCode::kOk);
  EXPECT_EQ(RangeCheck("Bytes 5-5/6", 5), absl::StatusCode::kOk);
}

TEST(S3ContentRange, NoContentRangeIsAccepted) {
  EXPECT_TRUE(CheckContentRangeStart(nullptr, 3).ok());
}

TEST(S3ContentRange, ARangeStartingElsewhereIsDataLossNamingBoth) {
  const std::string range = "bytes 0-6/10";
  const absl::Status s = CheckContentRangeStart(&range, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("starts at 0, not at the offset 3"));
}

TEST(S3ContentRange, AnUnreadableRangeIsDataLoss) {
  for (const char* bad : {"", "bytes", "bytes */10", "bytes 3-/10", "bytes -9/10", "bytes 9-3/10",
                          "bytes 3-9/9", "bytes 3-9", "items 3-9/10", "bytes -3-9/10",
                          "bytes 3-99999999999999999999/*"}) {
    EXPECT_EQ(RangeCheck(bad, 3), absl::StatusCode::kDataLoss) << bad;
  }
}

TEST(S3ListPartsReply, ReadsPartsAndRejectsANegativeSizeOrAMissingMarker) {
  absl::StatusOr<ListPartsPage> page = ParseListPartsReply(
      "b/k", "<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>1"
             "</NextPartNumberMarker><Part><PartNumber>1</PartNumber><Size>5</Size>"
             "<ETag>e</ETag></Part></ListPartsResult>");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->parts.size(), 1u);
  EXPECT_EQ(page->parts[0].size, 5);
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_marker, 1);
  EXPECT_EQ(ParseListPartsReply("b/k", "<Part><PartNumber>1</PartNumber><Size>-5</Size></Part>")
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseListPartsReply("b/k", "<IsTruncated>true</IsTruncated>").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(S3MultipartReplies, AnErrorInA200BodyIsThatError) {
  const char kError[] = "<Error><Code>InternalError</Code><Message>m</Message></Error>";
  absl::StatusOr<std::string> done = ParseCompleteMultipartReply(kError);
  EXPECT_EQ(done.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(S3ErrorCode(done.status()), "InternalError");
  EXPECT_EQ(ParseCopyReply("UploadPartCopy", "b/k", kError).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ParseCopyReply("UploadPartCopy", "b/k", "<CopyPartResult/>").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(*ParseCopyReply("CopyObject", "b/k", "<CopyObjectResult><ETag>e</ETag></CopyObjectResult>"),
            "e");
  EXPECT_EQ(ParseInitiateMultipartReply("<InitiateMultipartUploadResult/>").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(*ParseInitiateMultipartReply("<UploadId>u1</UploadId>"), "u1");
}

TEST(S3ListReplies, ReadBucketsAndUploads) {
  EXPECT_THAT(ParseListBucketsReply("<Buckets><Bucket><Name>a</Name></Bucket><Bucket><Name>b</Name>"
                                    "</Bucket></Buckets>"),
              ElementsAre("a", "b"));
  ListUploadsPage page = ParseListMultipartUploadsReply(
      "<IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker>"
      "<NextUploadIdMarker>u</NextUploadIdMarker><Upload><Key>k</Key><UploadId>u</UploadId>"
      "<Initiated>2026-11-28T02:03:04.000Z</Initiated></Upload>");
  ASSERT_EQ(page.uploads.size(), 1u);
  EXPECT_EQ(page.uploads[0].key, "k");
  EXPECT_EQ(page.uploads[0].upload_id, "u");
  EXPECT_EQ(page.uploads[0].initiated, absl::FromCivil(absl::CivilSecond(2026, 11, 28, 2, 3, 4),
                                                       absl::UTCTimeZone()));
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_key_marker, "k");
  EXPECT_EQ(page.next_upload_id_marker, "u");
}

}  // namespace
}  // namespace ferry::s3
