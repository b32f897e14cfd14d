#include "ferry/s3/s3_error.h"

#include "ferry/s3/s3_xml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kNoSuchKey[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
    "<Message>The resource you requested does not exist</Message>"
    "<Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>";

TEST(S3ErrorTest, NoSuchKeyBecomesNotFoundNamingCodeMessageAndRequestId) {
  absl::Status s = S3ErrorStatus("GetObject", "mybucket/myfoto.jpg", 404, kNoSuchKey, "");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("GetObject mybucket/myfoto.jpg"));
  EXPECT_THAT(s.message(), HasSubstr("NoSuchKey"));
  EXPECT_THAT(s.message(), HasSubstr("does not exist"));
  EXPECT_THAT(s.message(), HasSubstr("4442587FB7D0A2F9"));
  EXPECT_EQ(S3ErrorCode(s), "NoSuchKey");
}

TEST(S3ErrorTest, TableFollowsFerrysCodes) {
  using C = absl::StatusCode;
  EXPECT_EQ(S3ErrorCodeToStatusCode("NoSuchBucket", 404), C::kNotFound);
  EXPECT_EQ(S3ErrorCodeToStatusCode("AccessDenied", 403), C::kPermissionDenied);
  EXPECT_EQ(S3ErrorCodeToStatusCode("SignatureDoesNotMatch", 403), C::kUnauthenticated);
  EXPECT_EQ(S3ErrorCodeToStatusCode("InvalidAccessKeyId", 403), C::kUnauthenticated);
  EXPECT_EQ(S3ErrorCodeToStatusCode("XAdminUserNotFound", 404), C::kUnauthenticated);
  EXPECT_EQ(S3ErrorCodeToStatusCode("PreconditionFailed", 412), C::kFailedPrecondition);
  EXPECT_EQ(S3ErrorCodeToStatusCode("SlowDown", 503), C::kUnavailable);
  EXPECT_EQ(S3ErrorCodeToStatusCode("InternalError", 500), C::kUnavailable);
  EXPECT_EQ(S3ErrorCodeToStatusCode("", 502), C::kUnavailable);
  EXPECT_EQ(S3ErrorCodeToStatusCode("", 404), C::kNotFound);  // HEAD: no body
  EXPECT_EQ(S3ErrorCodeToStatusCode("", 412), C::kFailedPrecondition);
}

TEST(S3ErrorTest, RequestIdHeaderIsUsedWhenTheBodyHasNone) {
  absl::Status s = S3ErrorStatus("HeadObject", "b/k", 404, "", "REQ123");
  EXPECT_THAT(s.message(), HasSubstr("REQ123"));
  EXPECT_THAT(s.message(), HasSubstr("HTTP 404"));
  EXPECT_EQ(S3ErrorCode(s), "");
}

TEST(S3XmlTest, CreateBucketNamesEveryRegionButUsEast1) {
  EXPECT_EQ(CreateBucketBody("us-east-1"), "");
  EXPECT_EQ(CreateBucketBody(""), "");
  EXPECT_EQ(CreateBucketBody("eu-west-1"),
            "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            "<LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>");
}

TEST(S3XmlTest, ElementsFindsEachBlockInOrder) {
  constexpr char kXml[] =
      "<R><Contents><Key>a</Key></Contents><Contents><Key>b&amp;c</Key></Contents>"
      "<ContentsX>no</ContentsX></R>";
  std::vector<std::string_view> blocks = XmlElements(kXml, "Contents");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(XmlText(blocks[0], "Key"), "a");
  EXPECT_EQ(XmlText(blocks[1], "Key"), "b&c");
}

TEST(S3XmlTest, UnescapeHandlesNamedAndNumericEntities) {
  EXPECT_EQ(XmlUnescape("&lt;&gt;&quot;&apos;&#65;&#x42;&#xe9;"), "<>\"'AB\xc3\xa9");
}

TEST(S3XmlTest, UnescapeKeepsUnknownEntitiesAndStrayAmpersands) {
  EXPECT_EQ(XmlUnescape("&nbsp;x&amp;"), "&nbsp;x&");
  EXPECT_EQ(XmlUnescape("a & b; c"), "a & b; c");
  EXPECT_EQ(XmlUnescape("tail &amp"), "tail &amp");
}

TEST(S3XmlTest, EscapeRoundTrips) {
  EXPECT_EQ(XmlUnescape(XmlEscape("\"etag\" & <x>")), "\"etag\" & <x>");
}

TEST(S3XmlTest, SelfClosingElementIsEmpty) {
  EXPECT_THAT(XmlElements("<a><Prefix/></a>", "Prefix"), ElementsAre(""));
}

}  // namespace
}  // namespace ferry::s3
