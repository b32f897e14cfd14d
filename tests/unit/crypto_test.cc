// ferry::Crypto: libcrypto loaded on first use, checked against the
// standards' vectors (FIPS 180-2, RFC 4231).
#include "ferry/base/crypto.h"

#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

std::span<const char> Span(std::string_view s) { return std::span<const char>(s.data(), s.size()); }

std::string Hex(const std::string& digest) { return absl::BytesToHexString(digest); }

const Crypto& Loaded() {
  absl::StatusOr<const Crypto*> crypto = Crypto::Get();
  EXPECT_TRUE(crypto.ok()) << crypto.status();
  return **crypto;
}

TEST(CryptoTest, GetLoadsOnceAndReturnsTheSameInstance) {
  absl::StatusOr<const Crypto*> a = Crypto::Get();
  absl::StatusOr<const Crypto*> b = Crypto::Get();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
}

TEST(CryptoTest, Sha256MatchesFips180) {
  EXPECT_EQ(Hex(Loaded().Sha256(Span("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Loaded().Sha256(Span(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CryptoTest, Sha1MatchesFips180) {
  EXPECT_EQ(Hex(Loaded().Sha1(Span("abc"))), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(CryptoTest, HmacSha256MatchesRfc4231) {
  EXPECT_EQ(Hex(Loaded().HmacSha256(Span("Jefe"), Span("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(CryptoTest, Sha256StreamOfPiecesIsTheDigestOfTheWholeAndStartsOverAfterFinish) {
  Crypto::Sha256Stream stream(Loaded());
  stream.Update(Span("a"));
  stream.Update(Span("bc"));
  EXPECT_EQ(Hex(stream.Finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(stream.Finish()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace ferry
