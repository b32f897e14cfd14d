// S3ObjectStore's transport against real servers:
// - HTTPS to a versitygw with a self-signed certificate (peer_versitygw_tls,
//   ./versitygw_tls), trusted through S3Config::ca_bundle_path, and refused
//   without it;
// - virtual-hosted-style buckets (bucket.s3.localhost) on that server: its
//   certificate names *.s3.localhost but not s3.localhost, so a request
//   only verifies if the bucket is in the host name;
// - an endpoint list whose first endpoint refuses connections;
// - a config found through AWS profile files, as the AWS CLI would.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_object_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/s3_peer.h"

namespace ferry::s3 {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

using peers::Wait;

// tests/peers/versitygw (plain HTTP) and ./versitygw_tls.
constexpr uint16_t kPlainPort = peers::kVersitygwPort;
constexpr uint16_t kTlsPort = 7443;
// Nothing listens on TCP port 1 (tcpmux) in the test's namespace: connects
// are refused at once.
constexpr char kDeadEndpoint[] = "127.0.0.1:1";

// The peers' keys and timeouts; each test sets the endpoints and scheme.
S3Config BaseConfig() {
  return peers::S3PeerConfig(kPlainPort, /*stall_timeout=*/absl::Seconds(10));
}

S3Config TlsConfig(std::string host, bool with_ca = true) {
  S3Config c = BaseConfig();
  c.endpoints = {absl::StrCat(host, ":", kTlsPort)};
  c.use_https = true;
  if (with_ca) c.ca_bundle_path = FERRY_VERSITYGW_TLS_CA;
  return c;
}

class S3TransportTest : public ::testing::Test {
 protected:
  std::unique_ptr<S3ObjectStore> Store(const S3Config& config) {
    auto s = S3ObjectStore::Create(rt_, config);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static absl::StatusOr<std::string> Put(S3ObjectStore& store, std::string_view key,
                                         const std::string& bytes) {
    return Wait<std::string>([&](Callback<std::string> cb) {
      store.Put(key, peers::AsSpan(bytes), {}, std::move(cb));
    });
  }
  static absl::StatusOr<std::string> Get(S3ObjectStore& store, std::string_view key, int64_t off,
                                         int64_t len) {
    return Wait<std::string>(
        [&](Callback<std::string> cb) { store.GetRange(key, off, len, "", std::move(cb)); });
  }
  static absl::StatusOr<ObjectInfo> Head(S3ObjectStore& store, std::string_view key) {
    return Wait<ObjectInfo>([&](Callback<ObjectInfo> cb) { store.Head(key, std::move(cb)); });
  }
  static absl::StatusOr<std::vector<std::string>> ListBuckets(S3ObjectStore& store) {
    return Wait<std::vector<std::string>>(
        [&](Callback<std::vector<std::string>> cb) { store.ListBuckets(std::move(cb)); });
  }

  Runtime rt_{RuntimeOptions{.io_threads = 2, .memory_budget_bytes = int64_t{64} << 20}};
};

TEST_F(S3TransportTest, HttpsWithTheCaBundleRoundTrips) {
  auto store = Store(TlsConfig("127.0.0.1"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "tls-path").ok());
  ASSERT_TRUE(Put(*store, "tls-path/dir/k", "over tls").ok());
  auto got = Get(*store, "tls-path/dir/k", 5, 3);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "tls");
}

TEST_F(S3TransportTest, HttpsWithoutTheCaBundleIsUnauthenticated) {
  auto store = Store(TlsConfig("127.0.0.1", /*with_ca=*/false));
  ASSERT_NE(store, nullptr);
  auto r = ListBuckets(*store);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("certificate"));
}

TEST_F(S3TransportTest, CertificateForAnotherNameIsRejected) {
  // The certificate names *.s3.localhost, not s3.localhost: path style to
  // s3.localhost must fail (the premise of the virtual-hosted test below).
  auto store = Store(TlsConfig("s3.localhost"));
  ASSERT_NE(store, nullptr);
  auto r = Head(*store, "tls-vhost/k");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
}

TEST_F(S3TransportTest, VirtualHostedStyleRoundTrips) {
  auto path_store = Store(TlsConfig("127.0.0.1"));
  ASSERT_NE(path_store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*path_store, "tls-vhost").ok());

  S3Config vhost = TlsConfig("s3.localhost");
  vhost.path_style = false;
  auto store = Store(vhost);
  ASSERT_NE(store, nullptr);
  const std::string data = "virtual hosted bytes";
  auto etag = Put(*store, "tls-vhost/a b/(c).txt", data);
  ASSERT_TRUE(etag.ok()) << etag.status();
  auto info = Head(*store, "tls-vhost/a b/(c).txt");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->etag, *etag);
  auto got = Get(*store, "tls-vhost/a b/(c).txt", 8, 6);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "hosted");
  auto page = Wait<ListObjectsPage>([&](Callback<ListObjectsPage> cb) {
    store->ListObjects("tls-vhost", {.prefix = "a b/"}, std::move(cb));
  });
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "a b/(c).txt");
  // The path-style client sees the same object.
  auto same = Get(*path_store, "tls-vhost/a b/(c).txt", 0, 100);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(*same, data);
}

TEST_F(S3TransportTest, DeadFirstEndpointIsSkippedAfterOneRefusal) {
  S3Config c = BaseConfig();
  c.use_https = false;
  c.endpoints = {kDeadEndpoint, absl::StrCat("127.0.0.1:", kPlainPort)};
  auto store = Store(c);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "failover").ok());
  ASSERT_TRUE(Put(*store, "failover/k", "alive").ok());
  for (int i = 0; i < 10; ++i) {
    auto info = Head(*store, "failover/k");
    ASSERT_TRUE(info.ok()) << info.status();
  }
  // The first request that chose the dead endpoint went on to the live one;
  // after that the dead one was skipped (for kEndpointDownTime).
  EXPECT_EQ(store->endpoint_failovers(), 1);
}

TEST_F(S3TransportTest, EveryEndpointDeadIsUnavailable) {
  S3Config c = BaseConfig();
  c.use_https = false;
  c.endpoints = {kDeadEndpoint, "127.0.0.1:2"};
  auto store = Store(c);
  ASSERT_NE(store, nullptr);
  auto r = Head(*store, "b/k");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST_F(S3TransportTest, ProfileFilesConfigureTheStore) {
  const std::string home = ::testing::TempDir() + "/s3_transport_home";
  ASSERT_EQ(system(absl::StrCat("mkdir -p '", home, "/.aws'").c_str()), 0);
  std::ofstream(home + "/.aws/config") << "[default]\nregion = eu-north-1\n\n"
                                       << "[profile local]\nregion = us-east-1\n"
                                       << "s3 =\n  endpoint_url = http://127.0.0.1:"
                                       << kPlainPort << "\n";
  std::ofstream(home + "/.aws/credentials") << "[local]\naws_access_key_id = AKIDLOCAL\n"
                                            << "aws_secret_access_key = SECRETLOCAL\n";
  auto config = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "local"}});
  ASSERT_TRUE(config.ok()) << config.status();
  auto store = Store(*config);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "from-profile").ok());
  auto names = ListBuckets(*store);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, Contains("from-profile"));
}

}  // namespace
}  // namespace ferry::s3
