// S3ObjectStore against a real versitygw (peer_versitygw fixture: strict
// SigV4, payload-hash checks, Content-Length required). Every test works
// in a bucket of its own, created fresh.
#include "ferry/s3/s3_object_store.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_error.h"
#include "ferry/transfer/multipart_downloader.h"
#include "ferry/transfer/multipart_uploader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/peers.h"
#include "testing/s3_peer.h"

namespace ferry::s3 {
namespace {

using ::testing::HasSubstr;

using peers::AsSpan;
using peers::kVersitygwPort;
using peers::RandomBytes;
using peers::Wait;
using peers::WaitStatus;

// A config for versitygw on `port` (or a proxy in front of it).
S3Config LocalConfig(uint16_t port = kVersitygwPort) {
  return peers::S3PeerConfig(port, /*stall_timeout=*/absl::Seconds(5));
}

class S3ObjectStoreTest : public peers::S3BucketTest<> {
 protected:
  void SetUp() override { OpenBucket(LocalConfig(), "ferry-"); }

  absl::StatusOr<std::string> PutObject(std::string_view key, const std::string& bytes,
                                        Checksum checksum = {}) {
    return Wait<std::string>([&](Callback<std::string> cb) {
      store_->Put(key, AsSpan(bytes), checksum, std::move(cb));
    });
  }
  absl::StatusOr<std::string> Get(std::string_view key, int64_t off, int64_t len,
                                  std::string_view if_match = "") {
    return Wait<std::string>(
        [&](Callback<std::string> cb) { store_->GetRange(key, off, len, if_match, std::move(cb)); });
  }
  // GetRangeInto `buffer`; the number of bytes written.
  absl::StatusOr<size_t> GetInto(std::string_view key, int64_t off, std::span<char> buffer) {
    return Wait<size_t>(
        [&](Callback<size_t> cb) { store_->GetRangeInto(key, off, buffer, "", std::move(cb)); });
  }
  absl::StatusOr<ObjectInfo> HeadObject(std::string_view key) {
    return Wait<ObjectInfo>([&](Callback<ObjectInfo> cb) { store_->Head(key, std::move(cb)); });
  }
};

TEST_F(S3ObjectStoreTest, PutThenHeadThenGetRoundTrips) {
  const std::string data = RandomBytes(100000, 1);
  auto etag = PutObject(Key("dir/a b(1).bin"), data);
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_FALSE(etag->empty());
  auto info = HeadObject(Key("dir/a b(1).bin"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, 100000);
  EXPECT_EQ(info->etag, *etag);
  EXPECT_GT(info->last_modified, absl::UnixEpoch());
  auto got = Get(Key("dir/a b(1).bin"), 0, 100000);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == data);
}

TEST_F(S3ObjectStoreTest, PutWithChecksumsIsAccepted) {
  const std::string data = RandomBytes(5000, 2);
  std::span<const char> bytes = AsSpan(data);
  auto md5 = PutObject(Key("md5"), data, ComputeChecksum(ChecksumAlgorithm::kMd5, bytes));
  EXPECT_TRUE(md5.ok()) << md5.status();
  auto crc = PutObject(Key("crc"), data, ComputeChecksum(ChecksumAlgorithm::kCrc32c, bytes));
  EXPECT_TRUE(crc.ok()) << crc.status();
}

TEST_F(S3ObjectStoreTest, WrongMd5IsRejected) {
  const std::string data = RandomBytes(5000, 3);
  const std::string other = RandomBytes(5000, 4);
  auto r = PutObject(Key("bad"), data, ComputeChecksum(ChecksumAlgorithm::kMd5, AsSpan(other)));
  EXPECT_FALSE(r.ok());
}

TEST_F(S3ObjectStoreTest, EmptyObjectRoundTrips) {
  ASSERT_TRUE(PutObject(Key("empty"), "").ok());
  auto info = HeadObject(Key("empty"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, 0);
}

TEST_F(S3ObjectStoreTest, RangedGetMovesOnlyTheRequestedBytes) {
  const std::string data = RandomBytes(4 << 20, 5);
  ASSERT_TRUE(PutObject(Key("big"), data).ok());
  const int64_t before = store_->body_bytes_received();
  auto got = Get(Key("big"), 1000000, 1000);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(store_->body_bytes_received() - before, 1000);
  EXPECT_TRUE(*got == data.substr(1000000, 1000));
}

TEST_F(S3ObjectStoreTest, GetRangeIntoMovesOnlyTheRequestedBytes) {
  const std::string data = RandomBytes(4 << 20, 14);
  ASSERT_TRUE(PutObject(Key("big"), data).ok());
  std::string buffer(1000, '\0');
  const int64_t before = store_->body_bytes_received();
  auto n = GetInto(Key("big"), 1000000, std::span<char>(buffer.data(), buffer.size()));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1000u);
  EXPECT_EQ(store_->body_bytes_received() - before, 1000);
  EXPECT_TRUE(buffer == data.substr(1000000, 1000));
}

TEST_F(S3ObjectStoreTest, GetRangeIntoAnEmptyBufferReturnsZeroWithoutARequest) {
  const int64_t before = store_->body_bytes_received();
  // The key does not exist: a request would fail NotFound.
  auto n = GetInto(Key("never-written"), 0, {});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(store_->body_bytes_received(), before);
}

TEST_F(S3ObjectStoreTest, GetRangeIntoWithKeyWithoutBucketIsInvalidArgument) {
  char buffer[10];
  auto n = GetInto("justakey", 0, buffer);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument) << n.status();
}

TEST_F(S3ObjectStoreTest, GetRangeIntoAtNegativeOffsetIsInvalidArgument) {
  char buffer[10];
  auto n = GetInto(Key("k"), -1, buffer);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument) << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("offset -1"));
}

TEST_F(S3ObjectStoreTest, RangePastTheEndIsShort) {
  ASSERT_TRUE(PutObject(Key("small"), "0123456789").ok());
  auto tail = Get(Key("small"), 8, 100);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*tail, "89");
  auto past = Get(Key("small"), 20, 5);
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_EQ(*past, "");
}

TEST_F(S3ObjectStoreTest, IfMatchWithStaleEtagIsFailedPrecondition) {
  auto old_etag = PutObject(Key("changing"), "version one");
  ASSERT_TRUE(old_etag.ok());
  ASSERT_TRUE(PutObject(Key("changing"), "version two!").ok());
  auto got = Get(Key("changing"), 0, 5, *old_etag);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
  auto info = HeadObject(Key("changing"));
  ASSERT_TRUE(info.ok());
  auto fresh = Get(Key("changing"), 0, 7, info->etag);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(*fresh, "version");
}

TEST_F(S3ObjectStoreTest, WrongSecretIsUnauthenticatedWithTheS3Code) {
  S3Config bad = LocalConfig();
  bad.secret_access_key = "WRONGSECRET";
  auto store = S3ObjectStore::Create(rt_, bad);
  ASSERT_TRUE(store.ok());
  auto got = Wait<std::string>([&](Callback<std::string> cb) {
    (*store)->GetRange(Key("x"), 0, 1, "", std::move(cb));
  });
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("SignatureDoesNotMatch"));
}

TEST_F(S3ObjectStoreTest, MissingKeyIsNotFound) {
  auto got = Get(Key("nope"), 0, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("NoSuchKey"));
  auto head = HeadObject(Key("nope"));
  EXPECT_EQ(head.status().code(), absl::StatusCode::kNotFound) << head.status();
}

TEST_F(S3ObjectStoreTest, MissingBucketIsNotFound) {
  auto got = Get("ferry-no-such-bucket/key", 0, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("NoSuchBucket"));
}

TEST_F(S3ObjectStoreTest, KeyWithoutBucketIsInvalidArgument) {
  auto got = Get("justakey", 0, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(S3ObjectStoreTest, MultipartCallsRoundTrip) {
  const std::string part1 = RandomBytes(5 << 20, 6);
  const std::string part2 = RandomBytes(1000, 7);
  auto id = Wait<std::string>([&](Callback<std::string> cb) { store_->CreateMultipart(Key("mpu"), std::move(cb)); });
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<CompletedPart> parts;
  int n = 1;
  for (const std::string* p : {&part1, &part2}) {
    Checksum sum = ComputeChecksum(ChecksumAlgorithm::kCrc32c, AsSpan(*p));
    auto etag = Wait<std::string>([&](Callback<std::string> cb) {
      store_->UploadPart(Key("mpu"), *id, n, AsSpan(*p), sum, std::move(cb));
    });
    ASSERT_TRUE(etag.ok()) << etag.status();
    parts.push_back({n, *etag});
    ++n;
  }
  auto etag = Wait<std::string>([&](Callback<std::string> cb) {
    store_->CompleteMultipart(Key("mpu"), *id, parts, std::move(cb));
  });
  ASSERT_TRUE(etag.ok()) << etag.status();
  auto got = Get(Key("mpu"), 0, 6 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == part1 + part2);
}

TEST_F(S3ObjectStoreTest, AbortLeavesNoUpload) {
  auto id = Wait<std::string>([&](Callback<std::string> cb) { store_->CreateMultipart(Key("aborted"), std::move(cb)); });
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string part = RandomBytes(1000, 8);
  ASSERT_TRUE(Wait<std::string>([&](Callback<std::string> cb) {
                store_->UploadPart(Key("aborted"), *id, 1, AsSpan(part), {}, std::move(cb));
              }).ok());
  auto listed = Wait<std::vector<MultipartUploadInfo>>([&](auto cb) {
    store_->ListMultipartUploads(bucket_, "", std::move(cb));
  });
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, "aborted");
  EXPECT_EQ((*listed)[0].upload_id, *id);
  ASSERT_TRUE(WaitStatus([&](StatusCallback cb) { store_->AbortMultipart(Key("aborted"), *id, std::move(cb)); }).ok());
  listed = Wait<std::vector<MultipartUploadInfo>>([&](auto cb) {
    store_->ListMultipartUploads(bucket_, "", std::move(cb));
  });
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->empty());
}

TEST_F(S3ObjectStoreTest, ListObjectsPaginatesAndDeleteRemoves) {
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(PutObject(Key(absl::StrCat("list/k", i)), "x").ok());
  ASSERT_TRUE(PutObject(Key("other"), "y").ok());
  // Three pages of at most three keys.
  std::vector<std::string> keys;
  ListObjectsOptions options{.prefix = "list/", .max_keys = 3};
  int pages = 0;
  while (true) {
    auto page = Wait<ListObjectsPage>([&](auto cb) { store_->ListObjects(bucket_, options, std::move(cb)); });
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    for (const ListedObject& o : page->objects) {
      keys.push_back(o.key);
      EXPECT_EQ(o.size, 1);
    }
    if (page->next_continuation_token.empty()) break;
    options.continuation_token = page->next_continuation_token;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(keys.size(), 7u);
  auto all = store_->ListAllObjects(bucket_, "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 8u);
  ASSERT_TRUE(WaitStatus([&](StatusCallback cb) { store_->DeleteObject(Key("other"), std::move(cb)); }).ok());
  EXPECT_EQ(HeadObject(Key("other")).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(S3ObjectStoreTest, ListWithDelimiterGivesCommonPrefixes) {
  ASSERT_TRUE(PutObject(Key("d1/a"), "1").ok());
  ASSERT_TRUE(PutObject(Key("d2/b"), "2").ok());
  ASSERT_TRUE(PutObject(Key("top"), "3").ok());
  auto page = Wait<ListObjectsPage>([&](auto cb) {
    store_->ListObjects(bucket_, {.delimiter = "/"}, std::move(cb));
  });
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(page->common_prefixes, ::testing::UnorderedElementsAre("d1/", "d2/"));
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "top");
}

TEST_F(S3ObjectStoreTest, ManyRequestsInFlightAtOnce) {
  const std::string data = RandomBytes(1 << 20, 9);
  ASSERT_TRUE(PutObject(Key("shared"), data).ok());
  constexpr int kRequests = 64;
  std::vector<Future<std::string>> futures;
  for (int i = 0; i < kRequests; ++i) {
    Promise<std::string> p;
    futures.push_back(p.GetFuture());
    store_->GetRange(Key("shared"), i * 16384, 16384, "",
                     std::move(p).AsCallback());
  }
  for (int i = 0; i < kRequests; ++i) {
    auto r = std::move(futures[i]).Get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(*r == data.substr(i * 16384, 16384)) << i;
  }
}

TEST_F(S3ObjectStoreTest, MultipartDownloaderWithEightReadersReadsEqualBytes) {
  const std::string data = RandomBytes(24 << 20, 10);
  ASSERT_TRUE(PutObject(Key("download"), data).ok());
  MultipartDownloadManager downloads(*store_, rt_, {.chunk_bytes = 1 << 20, .concurrency = 8});
  auto object = downloads.Open(Key("download"));
  ASSERT_TRUE(object.ok()) << object.status();
  (*object)->OnReaderCountChanged(8);
  const int64_t stripe = static_cast<int64_t>(data.size()) / 8;
  std::vector<std::string> got(8);
  std::vector<absl::Status> errors(8);
  std::vector<std::thread> readers;
  for (int r = 0; r < 8; ++r) {
    readers.emplace_back([&, r] {
      got[r].resize(stripe);
      for (int64_t off = 0; off < stripe;) {
        const int64_t n = std::min<int64_t>(300000, stripe - off);  // odd-sized reads
        auto read = (*object)->Read(r * stripe + off, std::span<char>(got[r].data() + off, n));
        if (!read.ok()) {
          errors[r] = read.status();
          return;
        }
        off += static_cast<int64_t>(*read);
      }
    });
  }
  for (auto& t : readers) t.join();
  for (int r = 0; r < 8; ++r) {
    ASSERT_TRUE(errors[r].ok()) << errors[r];
    EXPECT_TRUE(got[r] == data.substr(r * stripe, stripe)) << "stripe " << r;
  }
  object->reset();
}

TEST_F(S3ObjectStoreTest, MultipartUploaderStreams40MiBReadBackEqual) {
  constexpr int64_t kSize = int64_t{40} << 20;
  const std::string data = RandomBytes(kSize, 11);
  auto up = MultipartUploader::Create(*store_, rt_, Key("upload"),
                                      {.total_bytes = kSize, .part_bytes = 8 << 20, .concurrency = 4,
                                       .checksum = ChecksumAlgorithm::kCrc32c});
  ASSERT_TRUE(up.ok()) << up.status();
  constexpr int64_t kWrite = 1 << 20;  // the writer streams 1 MiB at a time
  for (int64_t off = 0; off < kSize; off += kWrite) {
    ASSERT_TRUE((*up)->Write(off, std::span<const char>(data.data() + off, kWrite)).ok());
  }
  auto etag = (*up)->Finish();
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_EQ((*up)->stats().parts_uploaded, 5);
  auto info = HeadObject(Key("upload"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, kSize);
  auto got = Get(Key("upload"), 0, kSize);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == data);
}

TEST_F(S3ObjectStoreTest, ConnectionRefusedIsUnavailable) {
  auto store = S3ObjectStore::Create(rt_, LocalConfig(/*port=*/1));  // nothing listens on port 1
  ASSERT_TRUE(store.ok());
  auto got = Wait<ObjectInfo>([&](Callback<ObjectInfo> cb) { (*store)->Head(Key("x"), std::move(cb)); });
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable) << got.status();
}

TEST_F(S3ObjectStoreTest, DestroyingTheStoreCancelsCallsInFlight) {
  const std::string data = RandomBytes(8 << 20, 12);
  ASSERT_TRUE(PutObject(Key("cancel"), data).ok());
  std::vector<Future<std::string>> futures;
  {
    auto store = S3ObjectStore::Create(rt_, LocalConfig());
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 8; ++i) {
      Promise<std::string> p;
      futures.push_back(p.GetFuture());
      (*store)->GetRange(Key("cancel"), 0, 8 << 20, "",
                         std::move(p).AsCallback());
    }
  }
  // Every call completed (finished or Cancelled): none hangs.
  for (auto& f : futures) {
    auto r = std::move(f).Get();
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    }
  }
}

TEST_F(S3ObjectStoreTest, ResetMidDownloadFailsClearlyWithoutHanging) {
  const std::string data = RandomBytes(16 << 20, 13);
  ASSERT_TRUE(PutObject(Key("reset"), data).ok());
  peers::ToxiproxyClient toxiproxy;
  peers::ScopedProxy proxy(toxiproxy, "s3_reset", kVersitygwPort);
  ASSERT_TRUE(proxy.status().ok()) << proxy.status();
  // The connection is reset after 1 MiB of the reply.
  ASSERT_TRUE(proxy.AddToxic({.name = "cut", .type = "limit_data", .attributes = {{"bytes", 1 << 20}}}).ok());
  auto store = S3ObjectStore::Create(rt_, LocalConfig(proxy.port()));
  ASSERT_TRUE(store.ok());
  auto got = Wait<std::string>([&](Callback<std::string> cb) {
    (*store)->GetRange(Key("reset"), 0, 16 << 20, "", std::move(cb));
  });
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.status().code() == absl::StatusCode::kDataLoss ||
              got.status().code() == absl::StatusCode::kUnavailable)
      << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("GetObject"));
}

}  // namespace
}  // namespace ferry::s3
