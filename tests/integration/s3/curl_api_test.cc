// The libcurl loader (curl_api.h): libcurl is found on the first S3 use,
// and a library that cannot be loaded is an error naming it, not a crash.
#include "ferry/s3/curl_api.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CurlApiTest, MissingLibraryIsAnErrorNamingIt) {
  absl::StatusOr<CurlApi> api = LoadCurlApi("libferry-no-such-curl.so.4");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(api.status().message()),
              StartsWith("s3: cannot load libferry-no-such-curl.so.4: "));
}

TEST(CurlApiTest, LibraryWithoutCurlsFunctionsIsAnErrorNamingTheSymbol) {
  absl::StatusOr<CurlApi> api = LoadCurlApi("libc.so.6");
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(std::string(api.status().message()), HasSubstr("libc.so.6 lacks curl_global_init"));
}

TEST(CurlApiTest, ProcessLibcurlLoadsOnceAndWorks) {
  absl::StatusOr<const CurlApi*> first = Curl();
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<const CurlApi*> second = Curl();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  CURL* easy = (*first)->easy_init();
  ASSERT_NE(easy, nullptr);
  (*first)->easy_cleanup(easy);
  EXPECT_STREQ((*first)->easy_strerror(CURLE_OK), "No error");
}

}  // namespace
}  // namespace ferry::s3
