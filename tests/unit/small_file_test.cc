// ReadSmallFile: settings and secrets files read whole, with a bound, so a
// path that names a device, a FIFO or a huge file fails at once.
#include "ferry/base/small_file.h"

#include <sys/stat.h>

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/scratch_dir.h"

namespace ferry {
namespace {

using ::ferry::testing::ScratchDir;
using ::ferry::testing::WriteFile;
using ::testing::HasSubstr;

class ReadSmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  ScratchDir dir_{"ferry_small_file_"};
};

TEST_F(ReadSmallFileTest, ReadsTheWholeFile) {
  WriteFile(dir_.Path("env.json"), "{\"irods_host\": \"h\"}\n");
  absl::StatusOr<std::string> bytes = ReadSmallFile(dir_.Path("env.json"));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "{\"irods_host\": \"h\"}\n");
}

TEST_F(ReadSmallFileTest, AFileOfExactlyTheBoundIsRead) {
  WriteFile(dir_.Path("f"), std::string(100, 'x'));
  absl::StatusOr<std::string> bytes = ReadSmallFile(dir_.Path("f"), 100);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->size(), 100u);
}

TEST_F(ReadSmallFileTest, AFileOverTheBoundIsFailedPreconditionNamingIt) {
  WriteFile(dir_.Path("big"), std::string(101, 'x'));
  absl::StatusOr<std::string> bytes = ReadSmallFile(dir_.Path("big"), 100);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bytes.status().message(), HasSubstr(dir_.Path("big")));
  EXPECT_THAT(bytes.status().message(), HasSubstr("larger than 100 bytes"));
}

TEST_F(ReadSmallFileTest, AMissingFileIsNotFound) {
  EXPECT_EQ(ReadSmallFile(dir_.Path("absent")).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ReadSmallFileTest, DevZeroStopsAtTheBoundInsteadOfBeingReadForever) {
  absl::StatusOr<std::string> bytes = ReadSmallFile("/dev/zero");
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bytes.status().message(), HasSubstr("larger than"));
}

// "No such file" the way the AWS CLI's users spell it.
TEST_F(ReadSmallFileTest, DevNullReadsAsEmpty) {
  absl::StatusOr<std::string> bytes = ReadSmallFile("/dev/null");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "");
}

TEST_F(ReadSmallFileTest, AFifoWithNoWriterIsRefusedWithoutWaiting) {
  const std::string fifo = dir_.Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadSmallFile(fifo).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ferry
