// The shared cache tier's iRODS listing bytes are records.proto's
// IrodsListing: ferry_irods's hand-written codec against protobuf's own.
#include "irods_listing_codec.h"

#include <string>
#include <vector>

#include "ferry/records.pb.h"
#include "gtest/gtest.h"

namespace ferry::irods {
namespace {

std::vector<IrodsEntry> Sample() {
  return {
      {"data.bin", IrodsObjectType::kDataObject, 1 << 30, 10042, 1764000000},
      {"sub", IrodsObjectType::kCollection, 0, 10043, 1764000001},
      {"", IrodsObjectType::kNone, -1, 0, 0},  // defaults and a negative
      {std::string("odd\0name\xff", 9), IrodsObjectType::kDataObject, 1, 1, 1},
  };
}

void ExpectSame(const std::vector<IrodsEntry>& a, const std::vector<IrodsEntry>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name) << i;
    EXPECT_EQ(a[i].type, b[i].type) << i;
    EXPECT_EQ(a[i].size, b[i].size) << i;
    EXPECT_EQ(a[i].id, b[i].id) << i;
    EXPECT_EQ(a[i].modify_time, b[i].modify_time) << i;
  }
}

TEST(IrodsListingCodecTest, AListingSurvivesTheRoundTrip) {
  auto back = DecodeIrodsListing(EncodeIrodsListing(Sample()));
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(*back, Sample());
}

TEST(IrodsListingCodecTest, AnEmptyListingIsNoBytes) {
  EXPECT_EQ(EncodeIrodsListing({}), "");
  EXPECT_TRUE(DecodeIrodsListing("")->empty());
}

TEST(IrodsListingCodecTest, ProtobufReadsTheBytesAsRecordsIrodsListing) {
  records::IrodsListing parsed;
  ASSERT_TRUE(parsed.ParseFromString(EncodeIrodsListing(Sample())));
  ASSERT_EQ(parsed.entries_size(), 4);
  EXPECT_EQ(parsed.entries(0).name(), "data.bin");
  EXPECT_EQ(parsed.entries(0).type(), records::FILE_TYPE_REGULAR);
  EXPECT_EQ(parsed.entries(0).size(), int64_t{1} << 30);
  EXPECT_EQ(parsed.entries(1).type(), records::FILE_TYPE_DIRECTORY);
  EXPECT_EQ(parsed.entries(2).size(), -1);
  EXPECT_EQ(parsed.entries(3).name(), std::string("odd\0name\xff", 9));
}

TEST(IrodsListingCodecTest, TheCodecReadsProtobufsBytesAndSkipsFieldsItDoesNotKnow) {
  records::IrodsListing msg;
  auto* e = msg.add_entries();
  e->set_name("x");
  e->set_type(records::FILE_TYPE_DIRECTORY);
  e->set_size(7);
  e->set_id(8);
  e->set_modify_time(9);
  std::string bytes = msg.SerializeAsString();
  // A newer writer's field 15 (fixed64) on the listing: skipped.
  bytes += std::string("\x79", 1) + std::string(8, '\x01');
  auto got = DecodeIrodsListing(bytes);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSame(*got, {{"x", IrodsObjectType::kCollection, 7, 8, 9}});
}

TEST(IrodsListingCodecTest, TruncatedBytesAreDataLoss) {
  const std::string bytes = EncodeIrodsListing(Sample());
  for (size_t cut : {size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_EQ(DecodeIrodsListing(bytes.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss)
        << cut;
  }
}

}  // namespace
}  // namespace ferry::irods
