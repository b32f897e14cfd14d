// The iRODS reply readers (irods_replies.h) and the environment file, as
// the specification of what a server's or user's bytes may do.
#include "ferry/irods/irods_replies.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::irods {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kTwoRows[] =
    "<GenQueryOut_PI><rowCnt>2</rowCnt><attriCnt>2</attriCnt><continueInx>7</continueInx>"
    "<totalRowCount>0</totalRowCount>"
    "<SqlResult_PI><attriInx>403</attriInx><reslen>32</reslen><value>a</value><value>b</value></SqlResult_PI>"
    "<SqlResult_PI><attriInx>401</attriInx><reslen>32</reslen><value>1</value><value>2</value></SqlResult_PI>"
    "</GenQueryOut_PI>";

TEST(IrodsGenQueryReply, ReadsRowsOfColumnsAndTheContinuation) {
  absl::StatusOr<GenQueryPage> page = DecodeGenQueryReply(kTwoRows, 2, "list /z");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(page->rows, ElementsAre(ElementsAre("a", "1"), ElementsAre("b", "2")));
  EXPECT_EQ(page->continue_index, 7);
}

// The page used to be sized by rowCnt before any column was checked, so
// a reply claiming 10^12 rows (or -1, cast to size_t) made the client
// allocate without bound and abort (std::bad_alloc through the core).
TEST(IrodsGenQueryReply, RejectsARowCountTheValuesDoNotBackBeforeAllocating) {
  const std::string huge =
      "<GenQueryOut_PI><rowCnt>1000000000000</rowCnt><continueInx>0</continueInx>"
      "<SqlResult_PI><value>a</value></SqlResult_PI></GenQueryOut_PI>";
  absl::StatusOr<GenQueryPage> page = DecodeGenQueryReply(huge, 1, "list /z");
  EXPECT_EQ(page.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(page.status().message(), HasSubstr("list /z"));

  const std::string negative =
      "<GenQueryOut_PI><rowCnt>-1</rowCnt><SqlResult_PI></SqlResult_PI></GenQueryOut_PI>";
  EXPECT_EQ(DecodeGenQueryReply(negative, 1, "list /z").status().code(), absl::StatusCode::kDataLoss);
}

TEST(IrodsGenQueryReply, RejectsAColumnCountOtherThanAsked) {
  EXPECT_EQ(DecodeGenQueryReply(kTwoRows, 3, "q").status().code(), absl::StatusCode::kDataLoss);
}

TEST(IrodsObjStatReply, ReadsADataObjectAndRefusesANegativeSize) {
  absl::StatusOr<IrodsStat> st = DecodeObjStatReply(
      "<RodsObjStat_PI><objSize>12</objSize><objType>1</objType><dataId>5</dataId>"
      "<ownerName>rods</ownerName></RodsObjStat_PI>",
      "stat /z/f");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->size, 12);
  EXPECT_EQ(st->type, IrodsObjectType::kDataObject);
  EXPECT_EQ(st->owner, "rods");
  EXPECT_EQ(DecodeObjStatReply("<RodsObjStat_PI><objSize>-3</objSize><objType>1</objType>"
                               "</RodsObjStat_PI>",
                               "stat /z/f")
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeObjStatReply("<RodsObjStat_PI><objType>0</objType></RodsObjStat_PI>", "s")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

// A BinBytesBuf_PI holding `json`, NUL-padded as iRODS sends it.
std::string BinBytesBuf(const std::string& json) {
  std::string b64;
  absl::Base64Escape(json + std::string(3, '\0'), &b64);
  return "<BinBytesBuf_PI><buflen>" + std::to_string(json.size() + 3) + "</buflen><buf>" + b64 +
         "</buf></BinBytesBuf_PI>";
}

TEST(NativeAuthResponseTest, AnswersTheChallengeWithItsDigestAndAsksForTheNextStep) {
  const std::string challenge(64, 'c');
  absl::StatusOr<std::string> answer = NativeAuthResponse(
      BinBytesBuf(R"({"request_result": ")" + challenge + R"(", "user_name": "rods"})"), "pw",
      "login");
  ASSERT_TRUE(answer.ok()) << answer.status();
  std::string digest;
  absl::Base64Escape(NativeDigest(challenge, "pw"), &digest);
  EXPECT_THAT(*answer, HasSubstr(R"("digest":")" + digest + R"(")"));
  EXPECT_THAT(*answer, HasSubstr(R"("next_operation":"auth_agent_auth_response")"));
  EXPECT_THAT(*answer, HasSubstr(R"("user_name":"rods")"));
  EXPECT_THAT(*answer, Not(HasSubstr("request_result")));
}

TEST(NativeAuthResponseTest, AReplyWithoutAChallengeIsDataLossNamingIt) {
  absl::StatusOr<std::string> answer = NativeAuthResponse(BinBytesBuf(R"({"a": 1})"), "pw", "login");
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(answer.status().message(), HasSubstr("request_result"));
}

TEST(NativeAuthResponseTest, JsonThatIsNotAnObjectIsDataLoss) {
  EXPECT_EQ(NativeAuthResponse(BinBytesBuf("[1, 2]"), "pw", "login").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(DecodeStrPiTest, ReadsTheStringOfAChecksumReply) {
  auto sum = DecodeStrPi("<STR_PI><myStr>sha2:AAAA</myStr></STR_PI>", "checksum /z/a");
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(*sum, "sha2:AAAA");
}

TEST(DecodeStrPiTest, AnotherReplyIsDataLossNamingTheCall) {
  for (const char* msg : {"", "<STR_PI></STR_PI>", "<Other><myStr>x</myStr></Other>", "<STR_PI>"}) {
    auto sum = DecodeStrPi(msg, "checksum /z/a");
    EXPECT_TRUE(absl::IsDataLoss(sum.status())) << msg;
    EXPECT_NE(sum.status().message().find("checksum /z/a"), absl::string_view::npos);
  }
}

TEST(DecodeReplicaTokenTest, ReadsTheTokenOfADescriptorInfoReply) {
  absl::StatusOr<std::string> token =
      DecodeReplicaToken(BinBytesBuf(R"({"replica_token": "t-1", "fd": 3})"), "info");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "t-1");
}

class IrodsEnvironmentFile : public ::testing::Test {
 protected:
  void SetUp() override {
    // One file per test process: ctest runs these tests at once.
    path_ = absl::StrCat(::testing::TempDir(), "/irods_environment-", ::getpid(), ".json");
    setenv("IRODS_ENVIRONMENT_FILE", path_.c_str(), 1);
    for (const char* v : {"IRODS_HOST", "IRODS_PORT", "IRODS_USER_NAME", "IRODS_ZONE_NAME"}) unsetenv(v);
  }
  void TearDown() override {
    unsetenv("IRODS_ENVIRONMENT_FILE");
    std::remove(path_.c_str());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string path_;
};

TEST_F(IrodsEnvironmentFile, ReadsHostPortUserAndZone) {
  Write(R"({"irods_host": "h", "irods_port": 1247, "irods_user_name": "u", "irods_zone_name": "z"})");
  absl::StatusOr<IrodsAccount> a = LoadIrodsAccount();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "h");
  EXPECT_EQ(a->port, 1247);
  EXPECT_EQ(a->user, "u");
  EXPECT_EQ(a->zone, "z");
}

// A port outside 1..65535 used to be cast to 16 bits: 71247 became 5711
// and the client connected elsewhere without a word.
TEST_F(IrodsEnvironmentFile, RefusesAPortOutsideTheRangeInsteadOfWrappingIt) {
  for (const char* port : {"71247", "0", "-1", "18446744073709551615"}) {
    Write(std::string(R"({"irods_host": "h", "irods_port": )") + port + "}");
    absl::StatusOr<IrodsAccount> a = LoadIrodsAccount();
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << port;
    EXPECT_THAT(a.status().message(), HasSubstr("irods_port")) << port;
  }
}

TEST_F(IrodsEnvironmentFile, PasswordFileThatIsADeviceIsRefusedAtOnce) {
  Write(R"({"irods_host": "h"})");
  unsetenv("IRODS_PASSWORD");
  setenv("IRODS_PASSWORD_FILE", "/dev/zero", 1);
  absl::StatusOr<IrodsAccount> a = LoadIrodsAccount();
  unsetenv("IRODS_PASSWORD_FILE");
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(a.status().message(), HasSubstr("IRODS_PASSWORD_FILE"));
}

TEST_F(IrodsEnvironmentFile, PasswordIsTheFirstLineOfThePasswordFile) {
  Write(R"({"irods_host": "h"})");
  const std::string password_file = absl::StrCat(::testing::TempDir(), "/irods_password-", ::getpid());
  std::ofstream(password_file) << "s3cret\nsecond line\n";
  unsetenv("IRODS_PASSWORD");
  setenv("IRODS_PASSWORD_FILE", password_file.c_str(), 1);
  absl::StatusOr<IrodsAccount> a = LoadIrodsAccount();
  unsetenv("IRODS_PASSWORD_FILE");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->password, "s3cret");
}

}  // namespace
}  // namespace ferry::irods
