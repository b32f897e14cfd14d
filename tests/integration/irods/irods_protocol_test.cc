// The iRODS XML dialect and frames, without a server.
#include <string>

#include "ferry/irods/irods_protocol.h"
#include "ferry/irods/irods_xml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::irods {
namespace {

// Matches a Message with these sections and no error.
::testing::Matcher<Message> MessageIs(std::string type, int64_t int_info, std::string msg,
                                      std::string bs = "") {
  return ::testing::FieldsAre(type, int_info, msg, /*error=*/"", bs);
}

TEST(IrodsXml, ReadsRepeatedFieldsInOrder) {
  auto n = ParseXml(
      "<KeyValPair_PI><ssLen>2</ssLen><keyWord>a</keyWord><keyWord>b</keyWord>"
      "<svalue>1</svalue><svalue>2</svalue></KeyValPair_PI>");
  ASSERT_TRUE(n.ok()) << n.status();
  auto keys = (*n)->All("keyWord");
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[1]->text, "b");
  EXPECT_EQ((*n)->Int("ssLen"), 2);
}

TEST(IrodsXml, DecodesEntitiesAndCharacterReferences) {
  auto n = ParseXml("<a><b>&lt;x&gt; &amp; &quot;&apos; &#65;&#x42;</b></a>");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ((*n)->Text("b"), "<x> & \"' AB");
}

TEST(IrodsXml, EscapesOnlyMarkupLikeTheServer) {
  EXPECT_EQ(EscapeXml("a<b>&'\"`"), "a&lt;b&gt;&amp;'\"`");
}

TEST(IrodsXml, WriterRoundTripsThroughTheReader) {
  std::string xml = XmlWriter()
                        .Open("DataObjInp_PI")
                        .Str("objPath", "/z/a&b<c>")
                        .KeyVals({{"forceFlag", ""}, {"k", "v"}})
                        .Close("DataObjInp_PI")
                        .Take();
  auto n = ParseXml(xml);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ((*n)->Text("objPath"), "/z/a&b<c>");
  EXPECT_EQ((*n)->Child("KeyValPair_PI")->All("svalue")[1]->text, "v");
}

TEST(IrodsXml, RejectsMalformedInputWithDataLoss) {
  for (const char* bad : {"", "<a>", "<a></b>", "<a>&bogus;</a>", "<a x=\"1\"></a>", "<a></a><b></b>",
                          "<a>&#xFFFFFFF;</a>"}) {
    auto n = ParseXml(bad);
    EXPECT_TRUE(absl::IsDataLoss(n.status())) << bad << ": " << n.status();
  }
}

TEST(IrodsXml, RejectsDeepNesting) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  EXPECT_FALSE(ParseXml(deep).ok());
}

TEST(IrodsFrame, EncodeThenDecodeKeepsEverySection) {
  absl::StatusOr<Message> m =
      DecodeMessage(EncodeMessage("RODS_API_REQ", 676, "<x></x>", "payload"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(*m, MessageIs("RODS_API_REQ", 676, "<x></x>", "payload"));
}

// irods_message_fuzz's round trip fails without it: a type read back
// from "A&amp;B" was written raw as "A&B", which no reader accepts.
TEST(IrodsFrame, EncodeEscapesTheTypeSoAnyDecodedMessageEncodesBack) {
  absl::StatusOr<Message> m = DecodeMessage(EncodeMessage("A&B<C>", 3, "m"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(*m, MessageIs("A&B<C>", 3, "m"));
}

TEST(IrodsFrame, RejectsSectionsThatDoNotAddUp) {
  std::string frame = EncodeMessage("RODS_API_REPLY", 0, "abc");
  frame.pop_back();
  EXPECT_TRUE(absl::IsDataLoss(DecodeMessage(frame).status()));
}

TEST(IrodsFrame, FramingReadsWholeFramesFromAnySplit) {
  auto framing = NewIrodsFraming();
  std::string wire = EncodeMessage("A", 1, "m1") + EncodeMessage("B", 2, "", "bs");
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  for (char c : wire) ASSERT_TRUE(reader->Consume(std::string_view(&c, 1), &records).ok());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(DecodeMessage(records[1])->bs, "bs");
}

TEST(IrodsError, MapsCodesToStatusCodesAndNamesThem) {
  absl::Status s = IrodsError(-818000, "open /z/x", "no access");
  EXPECT_TRUE(absl::IsPermissionDenied(s));
  EXPECT_NE(s.message().find("CAT_NO_ACCESS_PERMISSION"), absl::string_view::npos);
  EXPECT_NE(s.message().find("open /z/x"), absl::string_view::npos);
  EXPECT_TRUE(absl::IsNotFound(IrodsError(-310000, "stat", "")));
  EXPECT_TRUE(absl::IsUnauthenticated(IrodsError(-826000, "login", "")));
  EXPECT_TRUE(absl::IsAlreadyExists(IrodsError(-809000, "mkdir", "")));
  EXPECT_TRUE(absl::IsUnknown(IrodsError(-999000, "x", "")));
}

}  // namespace
}  // namespace ferry::irods

#include "ferry/irods/irods_cache.h"

namespace ferry::irods {
namespace {

TEST(IrodsCacheOptions, DefaultsAreNfsrods) {
  IrodsCacheOptions o;
  EXPECT_EQ(o.object_type, absl::Seconds(300));
  EXPECT_EQ(o.user_permissions, absl::Seconds(300));
  EXPECT_EQ(o.user_type, absl::Seconds(300));
  EXPECT_EQ(o.list_operation, absl::Seconds(30));
}

TEST(IrodsCacheOptions, ReadsNfsrodsKeysAtAnyDepth) {
  auto o = IrodsCacheOptions::FromNfsrodsJson(
      R"({"irods_client": {"list_operation_query_results_refresh_time_in_milliseconds": 5000,
                           "user_type_refresh_time_in_milliseconds": 0}})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->list_operation, absl::Seconds(5));
  EXPECT_EQ(o->user_type, absl::ZeroDuration());
  EXPECT_EQ(o->object_type, absl::Seconds(300));
}

TEST(IrodsCacheOptions, RejectsANegativeTimeAndBadJson) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      IrodsCacheOptions::FromNfsrodsJson(R"({"object_type_refresh_time_in_milliseconds": -1})").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(IrodsCacheOptions::FromNfsrodsJson("{").status()));
}

}  // namespace
}  // namespace ferry::irods
