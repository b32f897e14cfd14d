// ParseNfsUrl: libnfs-style nfs:// URLs, and InvalidArgument naming the URL
// for everything else.
#include "ferry/nfs/nfs_url.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry::nfs {
namespace {

using ::testing::HasSubstr;

TEST(NfsUrlTest, ParsesHostPathAndLibnfsOptions) {
  absl::StatusOr<NfsUrl> u =
      ParseNfsUrl("nfs://127.0.0.1/export/sub?nfsport=2049&mountport=20048&uid=1000&gid=50");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->path, "/export/sub");
  EXPECT_EQ(u->nfs_port, 2049);
  EXPECT_EQ(u->mount_port, 20048);
  EXPECT_EQ(u->uid, 1000u);
  EXPECT_EQ(u->gid, 50u);
  EXPECT_EQ(u->ToString(), "nfs://127.0.0.1/export/sub");
}

TEST(NfsUrlTest, PortsAndIdentityAreOptional) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://server.example/export");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_FALSE(u->nfs_port.has_value());
  EXPECT_FALSE(u->mount_port.has_value());
  EXPECT_FALSE(u->uid.has_value());
}

TEST(NfsUrlTest, HostPortIsTheNfsPort) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://host:3049/x");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->nfs_port, 3049);
}

TEST(NfsUrlTest, BracketedIpv6Host) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://[::1]:2049/export");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->ToString(), "nfs://[::1]/export");
}

TEST(NfsUrlTest, PathIsPercentDecodedAndNormalised) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://h//export/./with%20space//x/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->path, "/export/with space/x");
}

TEST(NfsUrlTest, NoPathIsTheRoot) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://h");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->path, "/");
}

TEST(NfsUrlTest, VersionThreeAndAutoTraverseAreAccepted) {
  EXPECT_TRUE(ParseNfsUrl("nfs://h/e?version=3&auto-traverse-mounts=0").ok());
}

void ExpectBad(const std::string& url, const std::string& why) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl(url);
  EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << url;
  EXPECT_THAT(u.status().message(), HasSubstr(url));
  EXPECT_THAT(u.status().message(), HasSubstr(why));
}

TEST(NfsUrlTest, WrongSchemeIsInvalidArgument) { ExpectBad("s3://bucket/key", "nfs://"); }
TEST(NfsUrlTest, MissingHostIsInvalidArgument) { ExpectBad("nfs:///export", "no host"); }
TEST(NfsUrlTest, BadPortIsInvalidArgument) { ExpectBad("nfs://h/e?nfsport=70000", "nfsport"); }
TEST(NfsUrlTest, NonNumericUidIsInvalidArgument) { ExpectBad("nfs://h/e?uid=bob", "uid"); }
TEST(NfsUrlTest, UnknownOptionIsInvalidArgument) { ExpectBad("nfs://h/e?nfsprot=1", "nfsprot"); }
TEST(NfsUrlTest, OtherVersionIsInvalidArgument) { ExpectBad("nfs://h/e?version=4", "version"); }
TEST(NfsUrlTest, DotDotIsInvalidArgument) { ExpectBad("nfs://h/e/../etc", ".."); }
TEST(NfsUrlTest, TruncatedEscapeIsInvalidArgument) { ExpectBad("nfs://h/e%2", "escape"); }
TEST(NfsUrlTest, OptionWithoutValueIsInvalidArgument) { ExpectBad("nfs://h/e?uid", "no value"); }

TEST(NfsUrlTest, JoinNfsPath) {
  EXPECT_EQ(JoinNfsPath("/", "a"), "/a");
  EXPECT_EQ(JoinNfsPath("/export", "a/b"), "/export/a/b");
  EXPECT_EQ(JoinNfsPath("/export", ""), "/export");
}

TEST(NfsUrlTest, SplitNfsPathSeparatesDirectoryAndLastName) {
  using Split = std::pair<std::string_view, std::string_view>;
  EXPECT_EQ(SplitNfsPath("a/b/c"), Split("a/b", "c"));
  EXPECT_EQ(SplitNfsPath("c"), Split("", "c"));
  EXPECT_EQ(SplitNfsPath("a/b/"), Split("a", "b"));
}

}  // namespace
}  // namespace ferry::nfs
