// NFSv3 / MOUNT v3 codecs and the nfsstat3 table: argument layouts as RFC
// 1813 gives them, result decoding of both arms, and DataLoss for replies
// that disagree with the spec.
#include "ferry/nfs/nfs3_xdr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/nfs/nfs_error.h"
#include "ferry/rpc/xdr.h"

namespace ferry::nfs {
namespace {

using ::testing::HasSubstr;

Fattr3 SampleAttrs() {
  Fattr3 a;
  a.type = FileType::kRegular;
  a.mode = 0644;
  a.nlink = 1;
  a.uid = 1000;
  a.gid = 100;
  a.size = 123456789012;
  a.used = 4096;
  a.fsid = 7;
  a.fileid = 42;
  a.mtime = {1700000000, 5};
  return a;
}

TEST(Nfs3XdrTest, ProceduresCarryTheirNames) {
  RpcProcedure p = Nfs3Procedure(Nfs3Proc::kReaddirplus);
  EXPECT_EQ(p.prog, 100003u);
  EXPECT_EQ(p.vers, 3u);
  EXPECT_EQ(p.proc, 17u);
  EXPECT_EQ(p.procedure_name, "READDIRPLUS");
  EXPECT_EQ(Mount3Procedure(Mount3Proc::kExport).procedure_name, "EXPORT");
}

TEST(Nfs3XdrTest, ReaddirplusArgsLayout) {
  std::string out;
  EncodeReaddirplusArgs(
      {.dir = "FH", .cookie = 7, .cookieverf = 9, .dircount = 4096, .maxcount = 65536}, &out);
  XdrDecoder d(out);
  EXPECT_EQ(*d.ReadOpaque("fh"), "FH");
  EXPECT_EQ(*d.ReadUint64("cookie"), 7u);
  EXPECT_EQ(*d.ReadUint64("verf"), 9u);
  EXPECT_EQ(*d.ReadUint32("dircount"), 4096u);
  EXPECT_EQ(*d.ReadUint32("maxcount"), 65536u);
  EXPECT_TRUE(d.done());
}

TEST(Nfs3XdrTest, WriteArgsCarryCountStableAndData) {
  std::string out;
  EncodeWriteArgs(
      {.file = "FH", .offset = 100, .stable = StableHow::kUnstable, .data = "abcde"}, &out);
  XdrDecoder d(out);
  EXPECT_EQ(*d.ReadOpaque("fh"), "FH");
  EXPECT_EQ(*d.ReadUint64("offset"), 100u);
  EXPECT_EQ(*d.ReadUint32("count"), 5u);
  EXPECT_EQ(*d.ReadUint32("stable"), 0u);
  EXPECT_EQ(*d.ReadOpaque("data"), "abcde");
  EXPECT_TRUE(d.done());
}

TEST(Nfs3XdrTest, Sattr3EncodesOnlyWhatIsSet) {
  std::string out;
  Sattr3 s;
  s.mode = 0755;
  EncodeSattr3(s, &out);
  // mode (TRUE, 0755), uid, gid, size (FALSE), atime, mtime (DONT_CHANGE).
  EXPECT_EQ(out.size(), 4u * 7);
}

TEST(Nfs3XdrTest, ReaddirplusResultRoundTripsWithViewsIntoTheRecord) {
  ReaddirplusResult in;
  in.status = Nfs3Status::kOk;
  in.cookieverf = 99;
  in.eof = true;
  DirEntryPlus e1;
  e1.fileid = 1;
  e1.name = "new\nline ü";
  e1.cookie = 10;
  e1.attributes = SampleAttrs();
  e1.handle = std::string_view("HANDLE1");
  DirEntryPlus e2;
  e2.fileid = 2;
  e2.name = "noattrs";
  e2.cookie = 20;
  in.entries = {e1, e2};
  std::string wire;
  EncodeReaddirplusResult(in, &wire);
  absl::StatusOr<ReaddirplusResult> out = DecodeReaddirplusResult(wire);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->entries.size(), 2u);
  EXPECT_EQ(out->cookieverf, 99u);
  EXPECT_TRUE(out->eof);
  EXPECT_EQ(out->entries[0].name, "new\nline ü");
  EXPECT_EQ(out->entries[0].attributes, SampleAttrs());
  EXPECT_EQ(*out->entries[0].handle, "HANDLE1");
  EXPECT_FALSE(out->entries[1].attributes.has_value());
  EXPECT_FALSE(out->entries[1].handle.has_value());
  EXPECT_EQ(out->entries[1].cookie, 20u);
}

TEST(Nfs3XdrTest, ReaddirplusFailureDecodesTheStatus) {
  ReaddirplusResult in;
  in.status = Nfs3Status::kBadCookie;
  std::string wire;
  EncodeReaddirplusResult(in, &wire);
  absl::StatusOr<ReaddirplusResult> out = DecodeReaddirplusResult(wire);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->status, Nfs3Status::kBadCookie);
}

TEST(Nfs3XdrTest, TruncatedReaddirplusIsDataLoss) {
  ReaddirplusResult in;
  DirEntryPlus e;
  e.name = "x";
  e.attributes = SampleAttrs();
  in.entries = {e};
  std::string wire;
  EncodeReaddirplusResult(in, &wire);
  for (size_t cut : {wire.size() - 4, wire.size() - 40, size_t{10}}) {
    absl::StatusOr<ReaddirplusResult> out = DecodeReaddirplusResult(wire.substr(0, cut));
    EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss) << cut;
    EXPECT_THAT(out.status().message(), HasSubstr("READDIRPLUS3res"));
  }
}

TEST(Nfs3XdrTest, TooManyEntriesIsDataLoss) {
  ReaddirplusResult in;
  in.entries.resize(5);
  std::string wire;
  EncodeReaddirplusResult(in, &wire);
  EXPECT_EQ(DecodeReaddirplusResult(wire, 4).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Nfs3XdrTest, GetAttrResultDecodesAttributes) {
  std::string wire;
  XdrEncoder(&wire).WriteUint32(0);
  EncodeFattr3(SampleAttrs(), &wire);
  absl::StatusOr<GetAttrResult> r = DecodeGetAttrResult(wire);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->attributes, SampleAttrs());
  wire += "junk";
  EXPECT_EQ(DecodeGetAttrResult(wire).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Nfs3XdrTest, ReadResultWhoseCountDisagreesWithDataIsDataLoss) {
  std::string wire;
  XdrEncoder e(&wire);
  e.WriteUint32(0);      // NFS3_OK
  e.WriteBool(false);    // no attributes
  e.WriteUint32(5);      // count
  e.WriteBool(true);     // eof
  e.WriteOpaque("abc");  // 3 bytes
  EXPECT_EQ(DecodeReadResult(wire).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Nfs3XdrTest, MountResultCarriesHandleAndFlavors) {
  std::string wire;
  XdrEncoder e(&wire);
  e.WriteUint32(0);
  e.WriteOpaque("ROOTFH");
  e.WriteUint32(1);
  e.WriteUint32(1);  // AUTH_SYS
  absl::StatusOr<MountResult> r = DecodeMountResult(wire);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->root, "ROOTFH");
  EXPECT_THAT(r->auth_flavors, ::testing::ElementsAre(1u));
}

TEST(Nfs3XdrTest, ExportListDecodes) {
  std::string wire;
  XdrEncoder e(&wire);
  e.WriteBool(true);
  e.WriteString("/export");
  e.WriteBool(true);
  e.WriteString("*");
  e.WriteBool(false);
  e.WriteBool(true);
  e.WriteString("/other");
  e.WriteBool(false);
  e.WriteBool(false);
  absl::StatusOr<std::vector<ExportEntry>> r = DecodeExportResult(wire);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].path, "/export");
  EXPECT_THAT((*r)[0].groups, ::testing::ElementsAre("*"));
  EXPECT_EQ((*r)[1].path, "/other");
}

TEST(Nfs3XdrTest, WriteResultCarriesVerifier) {
  std::string wire;
  XdrEncoder e(&wire);
  e.WriteUint32(0);
  e.WriteBool(false);  // pre_op_attr
  e.WriteBool(false);  // post_op_attr
  e.WriteUint32(4096);
  e.WriteUint32(0);  // UNSTABLE
  e.WriteUint64(0xfeedface);
  absl::StatusOr<WriteResult> r = DecodeWriteResult(wire);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count, 4096u);
  EXPECT_EQ(r->verifier, 0xfeedfaceu);
}

TEST(Nfs3ErrorTest, CodesFollowTheCommonTable) {
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kNoEnt), absl::StatusCode::kNotFound);
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kAcces), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kPerm), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kExist), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kNotEmpty), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kNoSpc), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Nfs3StatusCode(Nfs3Status::kJukebox), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Nfs3StatusCode(static_cast<Nfs3Status>(777)), absl::StatusCode::kInternal);
}

TEST(Nfs3ErrorTest, MessageNamesOperationPathAndCodeAndCarriesIt) {
  absl::Status s = Nfs3StatusToStatus(Nfs3Status::kAcces, "READDIRPLUS", "nfs://h/export/x");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("NFS3 READDIRPLUS nfs://h/export/x: NFS3ERR_ACCES"));
  EXPECT_EQ(GetNfs3Status(s), Nfs3Status::kAcces);
  EXPECT_EQ(GetNfs3Status(absl::NotFoundError("x")), std::nullopt);
  EXPECT_TRUE(Nfs3StatusToStatus(Nfs3Status::kOk, "GETATTR", "p").ok());
  EXPECT_EQ(Nfs3StatusName(static_cast<Nfs3Status>(12345)), "nfsstat3 12345");
}

TEST(Nfs3ErrorTest, MountErrorsNameThePath) {
  absl::Status s = Mount3StatusToStatus(Mount3Status::kNoEnt, "MNT", "nfs://h/nope");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("MNT3ERR_NOENT"));
  EXPECT_THAT(s.message(), HasSubstr("nfs://h/nope"));
}

}  // namespace
}  // namespace ferry::nfs
