#include "ferry/rpc/xdr.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

// Builds a byte string from a list of byte values.
std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

void WriteU32(XdrEncoder& e, uint32_t v) { e.WriteUint32(v); }

absl::Status ReadU32Into(XdrDecoder& d, uint32_t* v) {
  FERRY_ASSIGN_OR_RETURN(*v, d.ReadUint32("item"));
  return absl::OkStatus();
}

// Decodes a list of uint32s that should fill all of `buf` with `read` (one
// of the decoder's list readers); returns what it read.
std::vector<uint32_t> ReadWholeList(
    std::string_view buf,
    absl::FunctionRef<absl::Status(XdrDecoder&, std::vector<uint32_t>*)> read) {
  XdrDecoder d(buf);
  std::vector<uint32_t> out;
  EXPECT_TRUE(read(d, &out).ok());
  EXPECT_TRUE(d.done()) << d.rest().size() << " bytes left";
  return out;
}

absl::Status StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// Matches a Status, or a StatusOr's status, that is DataLoss with `text` in
// its message: how every decode failure is reported.
MATCHER_P(IsDataLossWith, text, absl::StrCat("is DataLoss with \"", text, "\"")) {
  const absl::Status s = StatusOf(arg);
  *result_listener << "which is " << s;
  return s.code() == absl::StatusCode::kDataLoss && absl::StrContains(s.message(), text);
}

TEST(XdrTest, IntegersAreBigEndian) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteUint32(0x01020304);
  e.WriteInt32(-2);
  e.WriteUint64(0x0102030405060708ull);
  e.WriteInt64(-3);
  EXPECT_EQ(buf, Bytes({1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff, 0xff,
                        0xff, 0xff, 0xff, 0xff, 0xfd}));
}

TEST(XdrTest, IntegersRoundTripAtTheirLimits) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteInt32(std::numeric_limits<int32_t>::min());
  e.WriteInt32(std::numeric_limits<int32_t>::max());
  e.WriteUint32(std::numeric_limits<uint32_t>::max());
  e.WriteInt64(std::numeric_limits<int64_t>::min());
  e.WriteInt64(std::numeric_limits<int64_t>::max());
  e.WriteUint64(std::numeric_limits<uint64_t>::max());
  XdrDecoder d(buf);
  EXPECT_EQ(*d.ReadInt32("a"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(*d.ReadInt32("b"), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(*d.ReadUint32("c"), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(*d.ReadInt64("d"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*d.ReadInt64("e"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*d.ReadUint64("f"), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(d.done());
  EXPECT_TRUE(d.ExpectEnd().ok());
}

TEST(XdrTest, BoolRoundTripsAsZeroAndOne) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteBool(true);
  e.WriteBool(false);
  EXPECT_EQ(buf, Bytes({0, 0, 0, 1, 0, 0, 0, 0}));
  XdrDecoder d(buf);
  EXPECT_EQ(*d.ReadBool("t"), true);
  EXPECT_EQ(*d.ReadBool("f"), false);
}

TEST(XdrTest, BoolOtherThanZeroOrOneIsDataLossAndNotConsumed) {
  const std::string buf = Bytes({0, 0, 0, 0, 0, 0, 0, 2});
  XdrDecoder d(buf, "test message");
  ASSERT_TRUE(d.ReadBool("first").ok());
  absl::StatusOr<bool> b = d.ReadBool("flag");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(b.status().message(), HasSubstr("test message"));
  EXPECT_THAT(b.status().message(), HasSubstr("flag is not a bool: 2"));
  EXPECT_THAT(b.status().message(), HasSubstr("offset 4"));
  EXPECT_EQ(d.offset(), 4u);
}

enum class Color : int32_t { kRed = 0, kGreen = 1, kNegative = -5 };

TEST(XdrTest, EnumsRoundTripIncludingNegativeValues) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteEnum(Color::kGreen);
  e.WriteEnum(Color::kNegative);
  e.WriteDiscriminant(7u);
  XdrDecoder d(buf);
  EXPECT_EQ(*d.ReadEnum<Color>("c1"), Color::kGreen);
  EXPECT_EQ(*d.ReadEnum<Color>("c2"), Color::kNegative);
  EXPECT_EQ(*d.ReadDiscriminant("arm"), 7);
}

TEST(XdrTest, FixedOpaqueIsPaddedWithZeros) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteFixedOpaque("abcde");
  EXPECT_EQ(buf, std::string("abcde\0\0\0", 8));
  XdrDecoder d(buf);
  EXPECT_EQ(*d.ReadFixedOpaque(5, "fixed"), "abcde");
  EXPECT_TRUE(d.done());
}

TEST(XdrTest, VariableOpaqueHasLengthAndPaddingForEverySizeModFour) {
  for (size_t n = 0; n <= 8; ++n) {
    const std::string data(n, 'x');
    std::string buf;
    XdrEncoder e(&buf);
    e.WriteOpaque(data);
    EXPECT_EQ(buf.size(), 4 + (n + 3) / 4 * 4) << n;
    EXPECT_EQ(buf.substr(0, 4), Bytes({0, 0, 0, static_cast<int>(n)}));
    EXPECT_EQ(buf.substr(4 + n), std::string(buf.size() - 4 - n, '\0'));
    XdrDecoder d(buf);
    EXPECT_EQ(*d.ReadOpaque("data"), data);
    EXPECT_TRUE(d.done());
  }
}

TEST(XdrTest, ReadOpaqueIsAViewIntoTheInput) {
  std::string buf;
  XdrEncoder(&buf).WriteOpaque("payload");
  XdrDecoder d(buf);
  std::string_view v = *d.ReadOpaque("data");
  EXPECT_EQ(v.data(), buf.data() + 4);
}

TEST(XdrTest, ReadOpaqueCanCopy) {
  std::string buf;
  XdrEncoder(&buf).WriteString("hello");
  XdrDecoder d(buf);
  std::string out = "old contents";
  ASSERT_TRUE(d.ReadString("name", 255, &out).ok());
  EXPECT_EQ(out, "hello");
  EXPECT_TRUE(d.done());
}

TEST(XdrTest, NonZeroPaddingIsAccepted) {
  const std::string buf = Bytes({0, 0, 0, 1, 'a', 9, 9, 9});
  XdrDecoder d(buf);
  EXPECT_EQ(*d.ReadOpaque("data"), "a");
  EXPECT_TRUE(d.done());
}

TEST(XdrTest, MissingPaddingIsTruncation) {
  const std::string buf = Bytes({0, 0, 0, 1, 'a'});
  XdrDecoder d(buf, "msg");
  EXPECT_THAT(d.ReadOpaque("data"), IsDataLossWith("truncated reading data"));
  EXPECT_EQ(d.offset(), 0u);
}

TEST(XdrTest, OpaqueOverItsMaximumIsDataLoss) {
  std::string buf;
  XdrEncoder(&buf).WriteString("toolong");
  XdrDecoder d(buf, "msg");
  EXPECT_THAT(d.ReadString("name", 6), IsDataLossWith("name length 7 exceeds its maximum of 6"));
  EXPECT_EQ(*d.ReadString("name", 7), "toolong");
}

TEST(XdrTest, OpaqueLengthBeyondTheBufferIsDataLoss) {
  const std::string buf = Bytes({0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 'd'});
  XdrDecoder d(buf, "msg");
  EXPECT_THAT(d.ReadOpaque("blob"), IsDataLossWith("need 4294967296 bytes, 4 left"));
}

TEST(XdrTest, TruncatedIntegerNamesFieldContextAndOffset) {
  const std::string buf = Bytes({0, 0, 0, 1, 0, 0});
  XdrDecoder d(buf, "FOO3res");
  ASSERT_TRUE(d.ReadUint32("status").ok());
  absl::StatusOr<uint64_t> v = d.ReadUint64("fileid");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(v.status().message(),
            "XDR decode of FOO3res: truncated reading fileid at offset 4 (need 8 bytes, 2 left)");
}

TEST(XdrTest, VariableArrayRoundTrips) {
  const std::vector<uint32_t> in = {1, 2, 3, 0xffffffff};
  std::string buf;
  XdrEncoder(&buf).WriteArray(in, WriteU32);
  EXPECT_EQ(buf.size(), 4u + 4 * in.size());
  EXPECT_EQ(ReadWholeList(buf,
                          [](XdrDecoder& d, std::vector<uint32_t>* out) {
                            return d.ReadArray("list", 4, out, ReadU32Into);
                          }),
            in);
}

TEST(XdrTest, FixedArrayRoundTripsWithoutCount) {
  const std::vector<uint32_t> in = {7, 8, 9};
  std::string buf;
  XdrEncoder(&buf).WriteFixedArray(in, WriteU32);
  EXPECT_EQ(buf.size(), 12u);
  EXPECT_EQ(ReadWholeList(buf,
                          [](XdrDecoder& d, std::vector<uint32_t>* out) {
                            return d.ReadFixedArray(3, out, ReadU32Into);
                          }),
            in);
}

TEST(XdrTest, ListsLongerThanTheirMaximumAreDataLoss) {
  const std::vector<uint32_t> three = {1, 2, 3};
  std::string array, optional_list;
  XdrEncoder(&array).WriteArray(three, WriteU32);
  XdrEncoder(&optional_list).WriteOptionalList(three, WriteU32);
  std::vector<uint32_t> out;
  EXPECT_THAT(XdrDecoder(array, "msg").ReadArray("gids", 2, &out, ReadU32Into),
              IsDataLossWith("gids count 3 exceeds its maximum of 2"));
  EXPECT_TRUE(out.empty());
  EXPECT_THAT(XdrDecoder(optional_list, "msg").ReadOptionalList("entries", 2, &out, ReadU32Into),
              IsDataLossWith("entries has more than its maximum of 2 items"));
}

TEST(XdrTest, ArrayCountThatCannotFitTheBufferIsRejectedBeforeReading) {
  const std::string buf = Bytes({0x10, 0, 0, 0, 0, 0, 0, 1});
  XdrDecoder d(buf, "msg");
  std::vector<uint32_t> out;
  EXPECT_THAT(d.ReadArray("items", kXdrNoLimit, &out, ReadU32Into),
              IsDataLossWith("count 268435456 needs at least"));
  EXPECT_TRUE(out.empty());
}

TEST(XdrTest, OptionalRoundTripsPresentAndAbsent) {
  std::string buf;
  XdrEncoder e(&buf);
  const uint32_t value = 42;
  e.WriteOptional(&value, WriteU32);
  e.WriteOptional(static_cast<const uint32_t*>(nullptr), WriteU32);
  EXPECT_EQ(buf, Bytes({0, 0, 0, 1, 0, 0, 0, 42, 0, 0, 0, 0}));
  XdrDecoder d(buf);
  std::optional<uint32_t> a, b = 5;
  ASSERT_TRUE(d.ReadOptional("a", &a, ReadU32Into).ok());
  ASSERT_TRUE(d.ReadOptional("b", &b, ReadU32Into).ok());
  EXPECT_EQ(a, 42u);
  EXPECT_EQ(b, std::nullopt);
}

TEST(XdrTest, OptionalListRoundTrips) {
  const std::vector<uint32_t> in = {10, 20, 30};
  std::string buf;
  XdrEncoder(&buf).WriteOptionalList(in, WriteU32);
  EXPECT_EQ(buf, Bytes({0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 30,
                        0, 0, 0, 0}));
  EXPECT_EQ(ReadWholeList(buf,
                          [](XdrDecoder& d, std::vector<uint32_t>* out) {
                            return d.ReadOptionalList("entries", 3, out, ReadU32Into);
                          }),
            in);
}

TEST(XdrTest, UnionDiscriminantDrivesTheArm) {
  // union switch (int kind) { case 1: unsigned hyper size; case 2: string name<>; };
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteDiscriminant(2);
  e.WriteString("file");
  e.WriteDiscriminant(9);
  XdrDecoder d(buf, "u");
  ASSERT_EQ(*d.ReadDiscriminant("kind"), 2);
  EXPECT_EQ(*d.ReadString("name"), "file");
  const int32_t kind = *d.ReadDiscriminant("kind");
  EXPECT_THAT(d.BadDiscriminant("kind", kind),
              IsDataLossWith("kind has unknown discriminant 9 at offset 12"));
}

TEST(XdrTest, SkipPassesOverPaddedBytes) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteFixedOpaque("abc");
  e.WriteUint32(5);
  XdrDecoder d(buf);
  ASSERT_TRUE(d.Skip(3, "verifier").ok());
  EXPECT_EQ(*d.ReadUint32("n"), 5u);
  XdrDecoder short_input(buf.substr(0, 3));
  EXPECT_EQ(short_input.Skip(3, "verifier").code(), absl::StatusCode::kDataLoss);
}

TEST(XdrTest, TrailingBytesFailExpectEnd) {
  const std::string buf = Bytes({0, 0, 0, 1, 0, 0, 0, 2});
  XdrDecoder d(buf, "msg");
  ASSERT_TRUE(d.ReadUint32("a").ok());
  EXPECT_THAT(d.ExpectEnd(), IsDataLossWith("4 unexpected trailing bytes at offset 4"));
  EXPECT_EQ(d.rest(), Bytes({0, 0, 0, 2}));
}

TEST(XdrTest, EncoderAppendsToExistingContentsAndPatchesReservedWords) {
  std::string buf = "HEAD";
  XdrEncoder e(&buf);
  const size_t pos = e.ReserveUint32();
  e.WriteUint32(1);
  e.PatchUint32(pos, 0xa1b2c3d4);
  EXPECT_EQ(buf, std::string("HEAD") + Bytes({0xa1, 0xb2, 0xc3, 0xd4, 0, 0, 0, 1}));
  EXPECT_EQ(e.size(), 12u);
}

TEST(XdrTest, EveryTruncationOfAStructIsDataLoss) {
  std::string buf;
  XdrEncoder e(&buf);
  e.WriteUint64(99);
  e.WriteString("name");
  e.WriteArray(std::vector<uint32_t>{1, 2}, WriteU32);
  e.WriteBool(true);
  auto decode = [](std::string_view in) -> absl::Status {
    XdrDecoder d(in, "struct");
    FERRY_RETURN_IF_ERROR(d.ReadUint64("id").status());
    FERRY_RETURN_IF_ERROR(d.ReadString("name", 16).status());
    std::vector<uint32_t> list;
    FERRY_RETURN_IF_ERROR(d.ReadArray("list", 8, &list, ReadU32Into));
    FERRY_RETURN_IF_ERROR(d.ReadBool("flag").status());
    return d.ExpectEnd();
  };
  ASSERT_TRUE(decode(buf).ok());
  for (size_t n = 0; n < buf.size(); ++n) {
    EXPECT_EQ(decode(std::string_view(buf).substr(0, n)).code(), absl::StatusCode::kDataLoss) << n;
  }
}

}  // namespace
}  // namespace ferry
