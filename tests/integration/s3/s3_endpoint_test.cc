// ResolveS3Target: the host and path of a request, as botocore resolves
// them (the cases were read off botocore 1.44's answers for the same
// inputs; s3_botocore_test.py checks the signed requests against it).
#include "ferry/s3/s3_endpoint.h"

#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

S3Config Aws(std::string region) {
  S3Config c;
  c.region = std::move(region);
  return c;
}

TEST(AwsS3HostTest, UsEast1IsTheGlobalEndpointByDefault) {
  EXPECT_EQ(AwsS3Host("us-east-1", false, false, false), "s3.amazonaws.com");
}

TEST(AwsS3HostTest, UsEast1RegionalWhenAskedFor) {
  EXPECT_EQ(AwsS3Host("us-east-1", false, false, true), "s3.us-east-1.amazonaws.com");
}

TEST(AwsS3HostTest, OtherRegionsAreRegional) {
  EXPECT_EQ(AwsS3Host("eu-west-1", false, false, false), "s3.eu-west-1.amazonaws.com");
}

TEST(AwsS3HostTest, AwsGlobalIsUsEast1Global) {
  EXPECT_EQ(AwsS3Host("aws-global", false, false, false), "s3.amazonaws.com");
}

TEST(AwsS3HostTest, FipsAndDualstackVariantsAreRegionalEvenInUsEast1) {
  EXPECT_EQ(AwsS3Host("us-east-1", true, false, false), "s3-fips.us-east-1.amazonaws.com");
  EXPECT_EQ(AwsS3Host("us-east-1", false, true, false), "s3.dualstack.us-east-1.amazonaws.com");
  EXPECT_EQ(AwsS3Host("us-east-1", true, true, false),
            "s3-fips.dualstack.us-east-1.amazonaws.com");
}

TEST(AwsS3HostTest, ChinaRegionsAreUnderAmazonawsComCn) {
  EXPECT_EQ(AwsS3Host("cn-north-1", false, false, false), "s3.cn-north-1.amazonaws.com.cn");
}

TEST(ResolveS3TargetTest, AwsDnsBucketIsVirtualHosted) {
  const S3Target t = ResolveS3Target(Aws("eu-west-1"), "", "eu-west-1", "bkt", "a b/c");
  EXPECT_EQ(t.host, "bkt.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(t.url_prefix, "https://bkt.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(t.path, "/a%20b/c");
}

TEST(ResolveS3TargetTest, AwsBucketWithDotsIsPathStyle) {
  const S3Target t = ResolveS3Target(Aws("eu-west-1"), "", "eu-west-1", "my.bkt", "k");
  EXPECT_EQ(t.host, "s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(t.path, "/my.bkt/k");
}

TEST(ResolveS3TargetTest, AwsBucketWithCapitalsIsPathStyle) {
  const S3Target t = ResolveS3Target(Aws("eu-west-1"), "", "eu-west-1", "Bkt", "k");
  EXPECT_EQ(t.path, "/Bkt/k");
}

TEST(ResolveS3TargetTest, BucketLevelCallOnAwsHasTheRootPath) {
  const S3Target t = ResolveS3Target(Aws("us-east-1"), "", "us-east-1", "bkt", "");
  EXPECT_EQ(t.host, "bkt.s3.amazonaws.com");
  EXPECT_EQ(t.path, "/");
}

TEST(ResolveS3TargetTest, ListBucketsGoesToTheRegionHost) {
  const S3Target t = ResolveS3Target(Aws("eu-west-1"), "", "eu-west-1", "", "");
  EXPECT_EQ(t.host, "s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(t.path, "/");
}

TEST(ResolveS3TargetTest, TheRegionArgumentPicksTheHost) {
  // A bucket redirected to another region is sent to that region's host.
  const S3Target t = ResolveS3Target(Aws("us-east-1"), "", "ap-south-1", "bkt", "k");
  EXPECT_EQ(t.host, "bkt.s3.ap-south-1.amazonaws.com");
}

TEST(ResolveS3TargetTest, PathStyleOnAwsWhenConfigured) {
  S3Config c = Aws("eu-west-1");
  c.addressing_style = AddressingStyle::kPath;
  const S3Target t = ResolveS3Target(c, "", "eu-west-1", "bkt", "k");
  EXPECT_EQ(t.host, "s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(t.path, "/bkt/k");
}

TEST(ResolveS3TargetTest, CustomEndpointIsPathStyleByDefault) {
  S3Config c = Aws("eu-west-1");
  c.use_https = false;
  const S3Target t = ResolveS3Target(c, "127.0.0.1:7070", "eu-west-1", "bkt", "a/b");
  EXPECT_EQ(t.url_prefix, "http://127.0.0.1:7070");
  EXPECT_EQ(t.path, "/bkt/a/b");
}

TEST(ResolveS3TargetTest, CustomEndpointIsVirtualHostedWhenConfigured) {
  S3Config c = Aws("eu-west-1");
  c.addressing_style = AddressingStyle::kVirtual;
  const S3Target t = ResolveS3Target(c, "s3.localhost:7443", "eu-west-1", "bkt", "k");
  EXPECT_EQ(t.host, "bkt.s3.localhost:7443");
  EXPECT_EQ(t.path, "/k");
}

TEST(ResolveS3TargetTest, VirtualHostedFallsBackToPathForANonDnsBucket) {
  S3Config c = Aws("eu-west-1");
  c.addressing_style = AddressingStyle::kVirtual;
  const S3Target t = ResolveS3Target(c, "s3.localhost:7443", "eu-west-1", "a_b", "k");
  EXPECT_EQ(t.host, "s3.localhost:7443");
  EXPECT_EQ(t.path, "/a_b/k");
}

TEST(ResolveS3TargetTest, FipsConfigShapesTheAwsHost) {
  S3Config c = Aws("eu-west-1");
  c.use_fips_endpoint = true;
  EXPECT_EQ(ResolveS3Target(c, "", "eu-west-1", "bkt", "k").host,
            "bkt.s3-fips.eu-west-1.amazonaws.com");
}

TEST(DnsCompatibleBucketTest, FollowsTheHostLabelRules) {
  EXPECT_TRUE(DnsCompatibleBucket("abc"));
  EXPECT_TRUE(DnsCompatibleBucket("a-1-b"));
  EXPECT_FALSE(DnsCompatibleBucket("ab"));
  EXPECT_FALSE(DnsCompatibleBucket("-ab"));
  EXPECT_FALSE(DnsCompatibleBucket("ab-"));
  EXPECT_FALSE(DnsCompatibleBucket("a.b.c"));
  EXPECT_FALSE(DnsCompatibleBucket(std::string(64, 'a')));
}

}  // namespace
}  // namespace ferry::s3
