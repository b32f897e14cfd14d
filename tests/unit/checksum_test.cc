#include "ferry/transfer/checksum.h"

#include <random>
#include <string>

#include "ferry/transfer/internal/crc32c.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::span<const char> Span(const std::string& s) { return std::span<const char>(s.data(), s.size()); }

TEST(ChecksumTest, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32c(Span("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(Span("")), 0u);
}

TEST(ChecksumTest, Crc32cMatchesRfc3720Vectors) {
  EXPECT_EQ(Crc32c(Span(std::string(32, '\0'))), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(Span(std::string(32, '\xff'))), 0x62A8AB43u);
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(Crc32c(Span(inc)), 0x46DD794Eu);
}

TEST(ChecksumTest, Crc32cContinuesAcrossCalls) {
  const std::string s = "The quick brown fox jumps over the lazy dog, twice over";
  const uint32_t whole = Crc32c(Span(s));
  for (size_t cut = 0; cut <= s.size(); cut += 5) {
    EXPECT_EQ(Crc32c(Span(s.substr(cut)), Crc32c(Span(s.substr(0, cut)))), whole) << cut;
  }
}

TEST(ChecksumTest, HardwareAndPortableCrc32cAgreeOnRandomInputs) {
  if (!crc32c_internal::HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(20240611);  // fixed seed: the same inputs every run
  std::string buf(70000, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  // Lengths around the 8-byte step and starts off the 8-byte alignment
  // exercise the head, wide and tail loops; random seeds the continuation.
  for (int i = 0; i < 300; ++i) {
    const size_t start = rng() % 64;
    const size_t len = i < 40 ? static_cast<size_t>(i) : rng() % (buf.size() - start);
    const uint32_t seed = i % 2 == 0 ? 0 : static_cast<uint32_t>(rng());
    const std::span<const char> bytes(buf.data() + start, len);
    ASSERT_EQ(crc32c_internal::Hardware(bytes, seed), crc32c_internal::Portable(bytes, seed))
        << "start " << start << " len " << len << " seed " << seed;
  }
}

TEST(ChecksumTest, Md5MatchesRfc1321Vectors) {
  EXPECT_EQ(Hex(Md5(Span(""))), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Hex(Md5(Span("abc"))), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hex(Md5(Span("12345678901234567890123456789012345678901234567890123456789012345678901234567890"))),
            "57edf4a22be3c955ac49da2e2107b67a");
  EXPECT_EQ(Hex(Md5(Span(std::string(1000000, 'a')))), "7707d6ae4e027c70eea2a935c2296f21");
}

TEST(ChecksumTest, Md5HasherFedInUnevenPiecesMatchesOneShotMd5) {
  std::mt19937 rng(7);
  std::string bytes(100003, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  Md5Hasher h;
  size_t at = 0;
  for (size_t piece : {1u, 63u, 64u, 65u, 4096u, 13u}) {
    h.Update(Span(bytes.substr(at, piece)));
    at += piece;
  }
  h.Update(Span(bytes.substr(at)));
  EXPECT_EQ(Hex(h.Finish()), Hex(Md5(Span(bytes))));
  EXPECT_EQ(Hex(h.Finish()), "d41d8cd98f00b204e9800998ecf8427e");  // starts over
}

TEST(ChecksumTest, Sha256ContentHasherMatchesFips180Vectors) {
  absl::StatusOr<ContentHasher> created = ContentHasher::Create(HashKind::kSha256);
  ASSERT_TRUE(created.ok()) << created.status();
  ContentHasher& h = *created;
  EXPECT_EQ(Hex(h.Finish()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  h.Update(Span("a"));
  h.Update(Span("bc"));
  EXPECT_EQ(Hex(h.Finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ChecksumTest, Md5ContentHasherIsMd5) {
  absl::StatusOr<ContentHasher> created = ContentHasher::Create(HashKind::kMd5);
  ASSERT_TRUE(created.ok()) << created.status();
  ContentHasher& h = *created;
  h.Update(Span("abc"));
  EXPECT_EQ(Hex(h.Finish()), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(ChecksumTest, ComputeChecksumEncodesCrc32cBigEndian) {
  const Checksum c = ComputeChecksum(ChecksumAlgorithm::kCrc32c, Span("123456789"));
  EXPECT_EQ(Hex(c.value), "e3069283");
  EXPECT_TRUE(ComputeChecksum(ChecksumAlgorithm::kNone, Span("x")).value.empty());
  EXPECT_EQ(ComputeChecksum(ChecksumAlgorithm::kMd5, Span("abc")).value.size(), 16u);
}

TEST(ChecksumTest, Md5OfEtagReadsASinglePartEtagQuotedOrNot) {
  EXPECT_EQ(Hex(Md5OfEtag("\"900150983cd24fb0d6963f7d28e17f72\"")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hex(Md5OfEtag("900150983CD24FB0D6963F7D28E17F72")), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(ChecksumTest, Md5OfEtagOfAMultipartObjectOrAnythingElseIsEmpty) {
  EXPECT_EQ(Md5OfEtag("\"900150983cd24fb0d6963f7d28e17f72-3\""), "");
  EXPECT_EQ(Md5OfEtag("\"zz0150983cd24fb0d6963f7d28e17f72\""), "");
  EXPECT_EQ(Md5OfEtag(""), "");
}

}  // namespace
}  // namespace ferry
