#include "ferry/base/directory_errors.h"

#include <cerrno>
#include <vector>

#include "ferry/base/status_macros.h"
#include "ferry/fs/local_file_system.h"
#include "gtest/gtest.h"
#include "testing/scratch_dir.h"

namespace ferry {
namespace {

TEST(DirectoryErrorsTest, ErrnoStatusMarksIsADirectoryAndNotADirectory) {
  const absl::Status is_dir = ErrnoStatus(EISDIR, "open", "/d");
  EXPECT_EQ(is_dir.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DirectoryErrorOf(is_dir), DirectoryError::kIsADirectory);
  EXPECT_EQ(DirectoryErrorOf(ErrnoStatus(ENOTDIR, "list", "/f")), DirectoryError::kNotADirectory);
}

TEST(DirectoryErrorsTest, OtherStatusesAreNotMarked) {
  EXPECT_EQ(DirectoryErrorOf(ErrnoStatus(ENOTEMPTY, "rmdir", "/d")), DirectoryError::kNone);
  EXPECT_EQ(DirectoryErrorOf(absl::FailedPreconditionError("x")), DirectoryError::kNone);
  EXPECT_EQ(DirectoryErrorOf(absl::OkStatus()), DirectoryError::kNone);
}

TEST(DirectoryErrorsTest, TheMarkSurvivesAnnotation) {
  const absl::Status s = Annotate(IsADirectoryStatus("open /d: it is a directory"), "copy");
  EXPECT_EQ(DirectoryErrorOf(s), DirectoryError::kIsADirectory);
}

TEST(DirectoryErrorsTest, LocalListOfAFileAndWriteOfADirectoryAreMarked) {
  testing::ScratchDir dir{"ferry_directory_errors_"};
  ASSERT_TRUE(dir.ok());
  testing::WriteFile(dir.Path("f"), "1");
  fs::LocalFileSystem local;
  const absl::Status list = local.List(fs::LocalPathToFsPath(dir.Path("f")),
                                       [](std::vector<fs::Entry>&) { return true; });
  EXPECT_EQ(DirectoryErrorOf(list), DirectoryError::kNotADirectory) << list;
  const absl::Status write = local.OpenWrite(fs::LocalPathToFsPath(dir.Path("")), {}).status();
  EXPECT_EQ(DirectoryErrorOf(write), DirectoryError::kIsADirectory) << write;
}

}  // namespace
}  // namespace ferry
