#include "ferry/rpc/portmapper.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

constexpr PortMapping kMount3Tcp{100005, 3, kIpProtoTcp, 0};

TEST(PortmapperTest, ProcedureDescriptorsNameTheProcedure) {
  const RpcProcedure p = PortmapProcedure(PortmapProc::kGetPort);
  EXPECT_EQ(p.prog, 100000u);
  EXPECT_EQ(p.vers, 2u);
  EXPECT_EQ(p.proc, 3u);
  EXPECT_EQ(DescribeProcedure(p), "program 100000 (portmapper) v2 proc 3 (GETPORT)");
  EXPECT_EQ(PortmapProcedure(PortmapProc::kDump).procedure_name, "DUMP");
  EXPECT_EQ(PortmapProcedure(PortmapProc::kNull).proc, 0u);
}

TEST(PortmapperTest, GetPortArgsAreTheMappingWithPortZero) {
  std::string out;
  EncodeGetPortArgs({100005, 3, kIpProtoTcp, 999}, &out);
  EXPECT_EQ(out, Bytes({0, 1, 0x86, 0xa5, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0, 0}));
  absl::StatusOr<PortMapping> m = DecodePortMappingArgs(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, kMount3Tcp);
}

TEST(PortmapperTest, GetPortCallIsAValidOncRpcCall) {
  std::string call;
  EncodeCallHeader(77, PortmapProcedure(PortmapProc::kGetPort), AuthNone(), AuthNone(), &call);
  EncodeGetPortArgs(kMount3Tcp, &call);
  absl::StatusOr<RpcCall> decoded = DecodeCall(call);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->prog, kPortmapProgram);
  EXPECT_EQ(decoded->vers, kPortmapVersion);
  EXPECT_EQ(decoded->proc, 3u);
  EXPECT_EQ(*DecodePortMappingArgs(decoded->args), kMount3Tcp);
}

TEST(PortmapperTest, GetPortResultIsThePort) {
  absl::StatusOr<uint16_t> port = DecodeGetPortResult(Bytes({0, 0, 0x4e, 0x50}), kMount3Tcp);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(*port, 20048);
}

TEST(PortmapperTest, GetPortResultZeroIsNotFound) {
  absl::StatusOr<uint16_t> port = DecodeGetPortResult(Bytes({0, 0, 0, 0}), kMount3Tcp);
  EXPECT_EQ(port.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(port.status().message(), "portmapper: program 100005 v3 over tcp is not registered");
}

TEST(PortmapperTest, GetPortResultOver65535IsDataLoss) {
  absl::StatusOr<uint16_t> port = DecodeGetPortResult(Bytes({0, 1, 0, 0}), kMount3Tcp);
  EXPECT_EQ(port.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(port.status().message(), HasSubstr("65536 is not a TCP/UDP port"));
}

TEST(PortmapperTest, MalformedGetPortResultIsDataLoss) {
  EXPECT_EQ(DecodeGetPortResult(Bytes({0, 0, 8}), kMount3Tcp).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeGetPortResult(Bytes({0, 0, 0, 8, 0, 0, 0, 0}), kMount3Tcp).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(PortmapperTest, SetResultIsABool) {
  EXPECT_EQ(*DecodeSetResult(Bytes({0, 0, 0, 1})), true);
  EXPECT_EQ(*DecodeSetResult(Bytes({0, 0, 0, 0})), false);
  EXPECT_EQ(DecodeSetResult(Bytes({0, 0, 0, 3})).status().code(), absl::StatusCode::kDataLoss);
}

// A DUMP reply body as rpcbind sends it, built by hand: value-follows TRUE,
// mapping, ..., value-follows FALSE.
TEST(PortmapperTest, DumpResultDecodesAHandBuiltList) {
  const std::string body = Bytes({
      0, 0, 0, 1,                                                  // value follows
      0, 1, 0x86, 0xa0, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 111,      // portmapper v4 tcp 111
      0, 0, 0, 1,                                                  // value follows
      0, 1, 0x86, 0xa3, 0, 0, 0, 3, 0, 0, 0, 17, 0, 0, 0x08, 0x01,  // nfs v3 udp 2049
      0, 0, 0, 1,                                                  // value follows
      0, 1, 0x86, 0xa5, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0x4e, 0x50,  // mount v3 tcp 20048
      0, 0, 0, 0,                                                  // end of list
  });
  absl::StatusOr<std::vector<PortMapping>> list = DecodeDumpResult(body);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(*list, ElementsAre(PortMapping{100000, 4, kIpProtoTcp, 111},
                                 PortMapping{100003, 3, kIpProtoUdp, 2049},
                                 PortMapping{100005, 3, kIpProtoTcp, 20048}));
}

TEST(PortmapperTest, EmptyDumpResultIsAnEmptyList) {
  absl::StatusOr<std::vector<PortMapping>> list = DecodeDumpResult(Bytes({0, 0, 0, 0}));
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

TEST(PortmapperTest, DumpResultRoundTripsAndEveryTruncationIsDataLoss) {
  const std::vector<PortMapping> in = {{100000, 2, kIpProtoTcp, 111}, {100005, 1, kIpProtoUdp, 635}};
  std::string body;
  EncodeDumpResult(in, &body);
  EXPECT_EQ(*DecodeDumpResult(body), in);
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_EQ(DecodeDumpResult(body.substr(0, n)).status().code(), absl::StatusCode::kDataLoss) << n;
  }
}

TEST(PortmapperTest, DumpResultLongerThanTheMaximumIsDataLoss) {
  std::string body;
  EncodeDumpResult(std::vector<PortMapping>(3), &body);
  absl::StatusOr<std::vector<PortMapping>> list = DecodeDumpResult(body, 2);
  EXPECT_EQ(list.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(list.status().message(), HasSubstr("more than its maximum of 2"));
}

TEST(PortmapperTest, DescribeMappingNamesTheProtocol) {
  EXPECT_EQ(DescribeMapping({100005, 3, kIpProtoTcp, 20048}), "program 100005 v3 tcp port 20048");
  EXPECT_EQ(DescribeMapping({1, 1, 99, 0}), "program 1 v1 protocol 99 port 0");
}

}  // namespace
}  // namespace ferry
