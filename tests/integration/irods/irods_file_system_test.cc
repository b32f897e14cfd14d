// IrodsClient and IrodsFileSystem against ferry's iRODS test peer
// (tests/peers/irods, 127.0.0.1:1247, zone tempZone).
#include "ferry/irods/irods_file_system.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ferry/fs/local_file_system.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"
#include "gtest/gtest.h"
#include "testing/sequential_reads.h"

namespace ferry::irods {
namespace {

IrodsAccount Account(const std::string& user = "rods", const std::string& password = "") {
  static const std::map<std::string, std::string> kPasswords = {
      {"rods", "rods"}, {"alice", "apass"}, {"bob", "bpass"}};
  IrodsAccount a;
  a.host = "127.0.0.1";
  a.port = 1247;
  a.zone = "tempZone";
  a.user = user;
  a.password = password.empty() ? kPasswords.at(user) : password;
  return a;
}

std::string Unique(std::string_view stem) {
  static std::atomic<int> n{0};
  return absl::StrCat(std::string(stem), "-", ::getpid(), "-", n++, "-",
                      std::random_device{}() % 100000);
}

std::string RandomBytes(size_t n) {
  std::string s(n, '\0');
  std::mt19937_64 rng(n);
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string PeerLog() {
  std::ifstream in(FERRY_IRODS_PEER_LOG);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

class IrodsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fs = IrodsFileSystem::Connect(Account());
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *fs;
    coll_ = absl::StrCat("tempZone/home/rods/", Unique("t"));
    ASSERT_TRUE(fs_->CreateDir(coll_, false).ok());
    local_root_ = std::filesystem::temp_directory_path() / Unique("ferry-irods");
    std::filesystem::create_directories(local_root_);
  }
  void TearDown() override { std::filesystem::remove_all(local_root_); }

  std::string WriteLocal(const std::string& name, const std::string& data) {
    std::filesystem::path p = local_root_ / name;
    std::ofstream(p, std::ios::binary) << data;
    return fs::LocalPathToFsPath(p.string());
  }
  std::string ReadLocal(const std::string& name) {
    std::ifstream in(local_root_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  Runtime runtime_;
  fs::LocalFileSystem local_;
  std::shared_ptr<IrodsFileSystem> fs_;
  std::string coll_;
  std::filesystem::path local_root_;
};

TEST(IrodsLogin, TheAuthFrameworkLogsIn) {
  auto c = IrodsClient::Connect(Account("alice"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->Stat("/tempZone/home/alice")->type, IrodsObjectType::kCollection);
}

TEST(IrodsLogin, LegacyNativeAuthLogsIn) {
  IrodsAccount a = Account("alice");
  a.force_legacy_auth = true;
  auto c = IrodsClient::Connect(a);
  ASSERT_TRUE(c.ok()) << c.status();
}

TEST(IrodsLogin, AWrongPasswordIsUnauthenticatedAndNamesTheCode) {
  for (bool legacy : {false, true}) {
    IrodsAccount a = Account("alice", "wrong");
    a.force_legacy_auth = legacy;
    auto c = IrodsClient::Connect(a);
    EXPECT_TRUE(absl::IsUnauthenticated(c.status())) << c.status();
    EXPECT_NE(c.status().message().find("CAT_INVALID_AUTHENTICATION"), absl::string_view::npos);
  }
}

TEST(IrodsLogin, AnUnsetPasswordIsUnauthenticatedAndSaysItIsUnset) {
  IrodsAccount a = Account("alice");
  a.password.clear();
  auto c = IrodsClient::Connect(a);
  EXPECT_TRUE(absl::IsUnauthenticated(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("no password is set"), absl::string_view::npos) << c.status();
}

TEST(IrodsLogin, ARefusedPasswordNamesWhereItCameFromButNotItself) {
  IrodsAccount a = Account("alice", "wrong-Pw-3zQ");
  a.password_source = "$IRODS_PASSWORD";
  auto c = IrodsClient::Connect(a);
  EXPECT_NE(c.status().message().find("the password from $IRODS_PASSWORD was refused"),
            absl::string_view::npos)
      << c.status();
  EXPECT_EQ(c.status().message().find("wrong-Pw-3zQ"), absl::string_view::npos) << c.status();
}

TEST(IrodsLogin, AnUnknownUserIsUnauthenticated) {
  auto c = IrodsClient::Connect(Account("mallory", "x"));
  EXPECT_TRUE(absl::IsUnauthenticated(c.status())) << c.status();
}

TEST(IrodsLogin, AnUnreachableServerIsUnavailable) {
  IrodsAccount a = Account();
  a.port = 1;  // nothing listens
  auto c = IrodsClient::Connect(a);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
}

TEST_F(IrodsTest, StatOfAMissingPathIsNotFound) {
  auto st = fs_->Stat(absl::StrCat(coll_, "/nope"));
  EXPECT_TRUE(absl::IsNotFound(st.status())) << st.status();
}

TEST_F(IrodsTest, CreatesListsAndRemovesCollections) {
  ASSERT_TRUE(fs_->CreateDir(absl::StrCat(coll_, "/a/b"), true).ok());
  std::vector<std::string> names;
  ASSERT_TRUE(fs_->List(coll_, [&](std::vector<fs::Entry>& b) {
                    for (auto& e : b) names.push_back(e.path);
                    return true;
                  }).ok());
  EXPECT_EQ(names, std::vector<std::string>{"a"});
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->RemoveDir(absl::StrCat(coll_, "/a"))));
  ASSERT_TRUE(fs_->client().RemoveCollection(LogicalPath(absl::StrCat(coll_, "/a")), true).ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->Stat(absl::StrCat(coll_, "/a")).status()));
}

TEST_F(IrodsTest, ListReadsEveryPageOnceByContinuationIndex) {
  IrodsClientOptions small_pages;
  small_pages.query_page_rows = 7;
  auto c = IrodsClient::Connect(Account(), small_pages);
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE((*c)->CreateCollection(absl::StrCat("/", coll_, "/c", i), false).ok());
  }
  std::multiset<std::string> seen;
  int batches = 0;
  ASSERT_TRUE((*c)->List(absl::StrCat("/", coll_), [&](std::vector<IrodsEntry>& b) {
                     ++batches;
                     for (auto& e : b) seen.insert(e.name);
                     return true;
                   }).ok());
  EXPECT_EQ(seen.size(), 30u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 30u);
  EXPECT_GE(batches, 5);
}

TEST_F(IrodsTest, A20000EntryCollectionListsEveryEntryExactlyOnce) {
  auto c = IrodsClient::Connect(Account(), {.connections = 8});
  ASSERT_TRUE(c.ok());
  const std::string base = absl::StrCat("/", coll_);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 20000; i += 8) {
        if (!(*c)->CreateCollection(absl::StrCat(base, "/e", i), false).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  std::set<std::string> names;
  size_t total = 0;
  ASSERT_TRUE(fs_->List(coll_, [&](std::vector<fs::Entry>& b) {
                    for (auto& e : b) names.insert(e.path);
                    total += b.size();
                    return true;
                  }).ok());
  EXPECT_EQ(total, 20000u);
  EXPECT_EQ(names.size(), 20000u);
}

TEST_F(IrodsTest, CopiesSmallFilesBothWaysByteForByte) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{1} << 20}) {
    const std::string data = RandomBytes(size);
    const std::string name = absl::StrCat("f", size);
    auto up = CopyFile(runtime_, local_, WriteLocal(name, data), *fs_, absl::StrCat(coll_, "/", name));
    ASSERT_TRUE(up.ok()) << up.status();
    EXPECT_EQ(fs_->Stat(absl::StrCat(coll_, "/", name))->size, static_cast<int64_t>(size));
    auto down = CopyFile(runtime_, *fs_, absl::StrCat(coll_, "/", name), local_,
                         fs::LocalPathToFsPath((local_root_ / (name + ".back")).string()));
    ASSERT_TRUE(down.ok()) << down.status();
    EXPECT_EQ(ReadLocal(name + ".back"), data) << size;
  }
}

TEST_F(IrodsTest, A40MiBFileMovesOverJoinedParallelStreams) {
  const std::string data = RandomBytes(40 << 20);
  const size_t joins_before = Count(PeerLog(), "(big) joined replica");
  auto up = CopyFile(runtime_, local_, WriteLocal("big", data), *fs_, absl::StrCat(coll_, "/big"));
  ASSERT_TRUE(up.ok()) << up.status();
  auto down = CopyFile(runtime_, *fs_, absl::StrCat(coll_, "/big"), local_,
                       fs::LocalPathToFsPath((local_root_ / "big.back").string()));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_TRUE(ReadLocal("big.back") == data);
  // The read joined the replica by token (the write's temporary has another name).
  EXPECT_GT(Count(PeerLog(), "(big) joined replica (read)"), joins_before);
}

// Sequential reads are read ahead (IrodsStream): whatever the pieces, the
// bytes come back in order and exactly.

TEST_F(IrodsTest, SequentialReadsInPiecesOfAnySizeReturnEveryByteInOrder) {
  const std::string data = RandomBytes((20 << 20) + 12345);
  const std::string path = absl::StrCat(coll_, "/seq");
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("seq", data), *fs_, path).ok());
  for (size_t piece : {size_t{1} << 16, size_t{100003}, size_t{3} << 20, size_t{8} << 20, size_t{24} << 20}) {
    auto f = fs_->OpenRead(path);
    ASSERT_TRUE(f.ok()) << f.status();
    absl::StatusOr<std::string> got = testing::ReadInPieces(**f, piece);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got == data) << "pieces of " << piece << ": " << got->size() << " bytes";
    EXPECT_TRUE((*f)->Close().ok());
  }
}

TEST_F(IrodsTest, SeeksAmidReadAheadReturnTheBytesAtTheNewOffset) {
  const std::string data = RandomBytes(24 << 20);
  const std::string path = absl::StrCat(coll_, "/seek");
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("seek", data), *fs_, path).ok());
  auto f = fs_->OpenRead(path);
  ASSERT_TRUE(f.ok()) << f.status();
  // Sequential reads to start the read-ahead, then a jump within what came
  // ahead, back before it, far past it, and sequential again from there.
  const absl::Status reads = testing::CheckReadsAt(**f, data,
                                                   {0, 1 << 16, 2 << 16, 5 << 16, 6 << 16, 7 << 16, 1000, 9 << 20,
                                                    9 << 20 | 1 << 16, 9 << 20 | 2 << 16, (24 << 20) - 100, 3},
                                                   1 << 16);
  EXPECT_TRUE(reads.ok()) << reads;
}

TEST_F(IrodsTest, AReaderThatStopsAmidReadAheadLeavesItsSessionReadyForTheNextCall) {
  // One connection: whatever follows the close runs on the same session.
  IrodsFileSystemOptions o;
  o.client.connections = 1;
  auto one = IrodsFileSystem::Connect(Account(), o);
  ASSERT_TRUE(one.ok()) << one.status();
  const std::string a = RandomBytes(12 << 20), b = RandomBytes(3 << 20);
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("a", a), *fs_, absl::StrCat(coll_, "/a")).ok());
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("b", b), *fs_, absl::StrCat(coll_, "/b")).ok());
  {
    auto f = (*one)->OpenRead(absl::StrCat(coll_, "/a"));
    ASSERT_TRUE(f.ok()) << f.status();
    std::string buf(1 << 16, '\0');
    for (int64_t at : {0, 1 << 16, 2 << 16}) ASSERT_TRUE((*f)->ReadAt(at, absl::MakeSpan(buf)).ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  auto st = (*one)->Stat(absl::StrCat(coll_, "/b"));
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->size, static_cast<int64_t>(b.size()));
  auto f = (*one)->OpenRead(absl::StrCat(coll_, "/b"));
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::string> got = testing::ReadInPieces(**f, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == b);
}

// Read-ahead buffers are held under a bound
// (IrodsClientOptions::read_ahead_budget), taken only when it has room.
class IrodsReadAheadBoundTest : public IrodsTest {
 protected:
  // A filesystem whose streams read ahead under `bound`.
  std::shared_ptr<IrodsFileSystem> Bounded(MemoryBudget& bound) {
    IrodsFileSystemOptions o;
    o.client.read_ahead_budget = &bound;
    auto fs = IrodsFileSystem::Connect(Account(), o);
    EXPECT_TRUE(fs.ok()) << fs.status();
    return fs.ok() ? *fs : nullptr;
  }
  // A new object of `size` random bytes named `name`; its bytes.
  std::string Put(const std::string& name, size_t size) {
    const std::string data = RandomBytes(size);
    EXPECT_TRUE(CopyFile(runtime_, local_, WriteLocal(name, data), *fs_, Path(name)).ok());
    return data;
  }
  std::string Path(const std::string& name) { return absl::StrCat(coll_, "/", name); }
  // Reads `pieces` pieces of `piece` bytes of `file` in order from
  // `*offset` on (moving it) and checks them against `data`.
  static void ReadOn(fs::File& file, const std::string& data, int64_t* offset, size_t pieces,
                     size_t piece = size_t{64} << 10) {
    std::string buf(piece, '\0');
    for (size_t i = 0; i < pieces; ++i) {
      absl::StatusOr<size_t> n = file.ReadAt(*offset, absl::MakeSpan(buf));
      ASSERT_TRUE(n.ok()) << n.status();
      ASSERT_EQ(*n, piece) << "at " << *offset;
      ASSERT_TRUE(buf == data.substr(*offset, piece)) << "at " << *offset;
      *offset += static_cast<int64_t>(piece);
    }
  }
};

TEST_F(IrodsReadAheadBoundTest, AStreamHoldsAWindowOfTheBoundWhileItReadsAheadAndNoneAtTheEnd) {
  MemoryBudget bound(64 << 20);
  std::shared_ptr<IrodsFileSystem> fs = Bounded(bound);
  ASSERT_NE(fs, nullptr);
  const std::string data = Put("held", 12 << 20);
  auto f = fs->OpenRead(Path("held"));
  ASSERT_TRUE(f.ok()) << f.status();
  int64_t at = 0;
  ReadOn(**f, data, &at, 3);
  EXPECT_EQ(bound.in_use(), 8 << 20);
  ReadOn(**f, data, &at, 192 - 3);  // to the end, the file still open
  EXPECT_EQ(bound.in_use(), 0);
  EXPECT_TRUE((*f)->Close().ok());
}

TEST_F(IrodsReadAheadBoundTest, TwoOpenFilesShareTheBoundAndEachGetsEveryByte) {
  MemoryBudget bound(8 << 20);  // one window
  std::shared_ptr<IrodsFileSystem> fs = Bounded(bound);
  ASSERT_NE(fs, nullptr);
  // Names of their own: the peer's log is every test's.
  const std::string a_name = Unique("a"), b_name = Unique("b");
  const std::string a = Put(a_name, 6 << 20), b = Put(b_name, 6 << 20);
  auto fa = fs->OpenRead(Path(a_name));
  auto fb = fs->OpenRead(Path(b_name));
  ASSERT_TRUE(fa.ok()) << fa.status();
  ASSERT_TRUE(fb.ok()) << fb.status();
  int64_t at_a = 0, at_b = 0;
  ReadOn(**fa, a, &at_a, 4);  // a's window takes the whole bound
  ReadOn(**fb, b, &at_b, 96);
  EXPECT_EQ(Count(PeerLog(), absl::StrCat("(", b_name, ") read ")), 96u) << "b finds no room and reads as asked";
  ReadOn(**fa, a, &at_a, 92);
  EXPECT_EQ(bound.peak(), 8 << 20);
}

TEST_F(IrodsReadAheadBoundTest, WithNoRoomSmallPiecesReadInOrderGetEveryByte) {
  MemoryBudget bound(0);
  std::shared_ptr<IrodsFileSystem> fs = Bounded(bound);
  ASSERT_NE(fs, nullptr);
  const std::string name = Unique("plain");
  const std::string data = Put(name, 3 << 20);
  auto f = fs->OpenRead(Path(name));
  ASSERT_TRUE(f.ok()) << f.status();
  int64_t at = 0;
  ReadOn(**f, data, &at, 48);
  EXPECT_EQ(Count(PeerLog(), absl::StrCat("(", name, ") read ")), 48u);
  EXPECT_EQ(bound.peak(), 0);
}

TEST_F(IrodsReadAheadBoundTest, AReaderOfLargePiecesThatTurnsToSmallOnesWithNoRoomGetsEveryByte) {
  // Large pieces are asked ahead at their own size (no buffer: each reply
  // lands in the reader's); when the reader then asks for less, the rest
  // of the reply asked ahead has no room, is dropped and asked for again.
  MemoryBudget bound(0);
  std::shared_ptr<IrodsFileSystem> fs = Bounded(bound);
  ASSERT_NE(fs, nullptr);
  const std::string name = Unique("turns");
  const std::string data = Put(name, 16 << 20);
  auto f = fs->OpenRead(Path(name));
  ASSERT_TRUE(f.ok()) << f.status();
  int64_t at = 0;
  ReadOn(**f, data, &at, 3, 2 << 20);
  ReadOn(**f, data, &at, 40);
  ReadOn(**f, data, &at, 2, 2 << 20);
  ReadOn(**f, data, &at, 8);
  EXPECT_EQ(bound.peak(), 0);
  // The 2 MiB at 6 MiB and 8 MiB were asked ahead; the first 64 KiB piece
  // took its first bytes, the rest and the read after it were dropped, and
  // the second piece asked again.
  const std::string log = PeerLog();
  EXPECT_EQ(Count(log, absl::StrCat("(", name, ") read 2097152 at ", 8 << 20, "\n")), 1u);
  EXPECT_EQ(Count(log, absl::StrCat("(", name, ") read 65536 at ", (6 << 20) + (64 << 10), "\n")), 1u);
}

TEST_F(IrodsReadAheadBoundTest, AFileSystemFromTheProviderReadsAheadUnderItsRuntimesBound) {
  const std::string data = Put("provided", 12 << 20);
  Runtime runtime;
  IrodsFileSystemOptions o;
  o.password = "rods";
  std::unique_ptr<fs::FileSystemProvider> provider = NewIrodsProvider(o);
  absl::StatusOr<fs::Location> at_url =
      provider->Resolve(runtime, absl::StrCat("irods://rods@127.0.0.1:1247/", Path("provided")));
  ASSERT_TRUE(at_url.ok()) << at_url.status();
  auto f = at_url->fs->OpenRead(at_url->path);
  ASSERT_TRUE(f.ok()) << f.status();
  int64_t at = 0;
  ReadOn(**f, data, &at, 3);
  EXPECT_EQ(runtime.read_ahead_budget().in_use(), 8 << 20);
  EXPECT_TRUE((*f)->Close().ok());
  EXPECT_EQ(runtime.read_ahead_budget().in_use(), 0);
}

TEST_F(IrodsTest, TwoThreadsReadingOneFileInOrderEachGetTheirBytes) {
  const std::string data = RandomBytes(32 << 20);
  const std::string path = absl::StrCat(coll_, "/halves");
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("halves", data), *fs_, path).ok());
  auto f = fs_->OpenRead(path);
  ASSERT_TRUE(f.ok()) << f.status();
  const size_t half = data.size() / 2;
  auto halves = testing::ReadHalvesAtOnce(**f, half, 1 << 20);
  ASSERT_TRUE(halves.ok()) << halves.status();
  EXPECT_TRUE(halves->first == data.substr(0, half));
  EXPECT_TRUE(halves->second == data.substr(half));
}

TEST_F(IrodsTest, Sha256ContentHashIsTheServersChecksumOfTheBytes) {
  const std::string data = RandomBytes(300000);
  const std::string path = absl::StrCat(coll_, "/hashed");
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("hashed", data), *fs_, path).ok());
  absl::StatusOr<ContentHasher> local = ContentHasher::Create(HashKind::kSha256);
  ASSERT_TRUE(local.ok()) << local.status();
  local->Update(std::span<const char>(data.data(), data.size()));
  auto stored = fs_->ContentHash(path, fs::Entry{}, HashKind::kSha256, /*read_if_needed=*/false);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, local->Finish());
  EXPECT_EQ(fs_->server_hash(), HashKind::kSha256);
}

TEST_F(IrodsTest, ContentHashOfAMissingObjectIsNotFound) {
  auto h = fs_->ContentHash(absl::StrCat(coll_, "/none"), fs::Entry{}, HashKind::kSha256, false);
  EXPECT_TRUE(absl::IsNotFound(h.status())) << h.status();
}

TEST_F(IrodsTest, AnotherUserIsDeniedUntilGrantedRead) {
  auto up = CopyFile(runtime_, local_, WriteLocal("s", "secret"), *fs_, absl::StrCat(coll_, "/s"));
  ASSERT_TRUE(up.ok());
  auto alice = IrodsFileSystem::Connect(Account("alice"));
  ASSERT_TRUE(alice.ok());
  auto denied = (*alice)->OpenRead(absl::StrCat(coll_, "/s"));
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << denied.status();
  ASSERT_TRUE(fs_->client().SetAccess(LogicalPath(absl::StrCat(coll_, "/s")), "alice", "read", false).ok());
  auto f = (*alice)->OpenRead(absl::StrCat(coll_, "/s"));
  ASSERT_TRUE(f.ok()) << f.status();
  char buf[16];
  EXPECT_EQ(*(*f)->ReadAt(0, absl::MakeSpan(buf, sizeof(buf))), 6u);
  auto acl = fs_->client().GetAccess(LogicalPath(absl::StrCat(coll_, "/s")), false);
  ASSERT_TRUE(acl.ok());
  EXPECT_NE(std::find(acl->begin(), acl->end(), std::make_pair(std::string("alice"), std::string("read_object"))),
            acl->end());
}

TEST_F(IrodsTest, MetadataIsAddedListedAndRemoved) {
  const std::string p = LogicalPath(coll_);
  ASSERT_TRUE(fs_->client().AddMetadata(p, true, {"color", "blue", "nm"}).ok());
  auto avus = fs_->client().ListMetadata(p, true);
  ASSERT_TRUE(avus.ok());
  ASSERT_EQ(avus->size(), 1u);
  EXPECT_EQ((*avus)[0].value, "blue");
  ASSERT_TRUE(fs_->client().RemoveMetadata(p, true, {"color", "blue", "nm"}).ok());
  EXPECT_TRUE(fs_->client().ListMetadata(p, true)->empty());
}

TEST_F(IrodsTest, MetadataByPathWorksOnDataObjectsAndCollections) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("m", "x"), *fs_, absl::StrCat(coll_, "/m")).ok());
  for (const std::string& p : {absl::StrCat(coll_, "/m"), coll_}) {
    ASSERT_TRUE(fs_->AddMetadata(p, {"run", "7", "id"}).ok()) << p;
    auto avus = fs_->ListMetadata(p);
    ASSERT_TRUE(avus.ok()) << avus.status();
    ASSERT_EQ(avus->size(), 1u) << p;
    EXPECT_EQ((*avus)[0].attribute, "run");
    EXPECT_EQ((*avus)[0].units, "id");
    ASSERT_TRUE(fs_->RemoveMetadata(p, {"run", "7", "id"}).ok());
    EXPECT_TRUE(fs_->ListMetadata(p)->empty()) << p;
  }
}

TEST_F(IrodsTest, MetadataOnAMissingPathIsNotFound) {
  auto s = fs_->AddMetadata(absl::StrCat(coll_, "/absent"), {"a", "b", ""});
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
}

TEST_F(IrodsTest, SetAccessByPathGrantsAndGetAccessShowsIt) {
  const std::string p = absl::StrCat(coll_, "/g");
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("g", "granted"), *fs_, p).ok());
  ASSERT_TRUE(fs_->SetAccess(p, "bob", "read", false).ok());
  auto acl = fs_->GetAccess(p);
  ASSERT_TRUE(acl.ok()) << acl.status();
  EXPECT_NE(std::find(acl->begin(), acl->end(), std::make_pair(std::string("bob"), std::string("read_object"))),
            acl->end());
  auto bob = IrodsFileSystem::Connect(Account("bob"));
  ASSERT_TRUE(bob.ok());
  EXPECT_TRUE((*bob)->OpenRead(p).ok());
}

TEST_F(IrodsTest, ACachedFileSystemsSetAccessDropsItsCachedPermissions) {
  IrodsFileSystemOptions o;
  o.cache = IrodsCacheOptions{};
  auto cached = IrodsFileSystem::Connect(Account(), o);
  ASSERT_TRUE(cached.ok());
  auto before = (*cached)->GetAccess(coll_);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE((*cached)->SetAccess(coll_, "alice", "read", false).ok());
  auto after = (*cached)->GetAccess(coll_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), before->size() + 1);
}

TEST_F(IrodsTest, ADiscardedWriterLeavesNoObject) {
  auto w = fs_->OpenWrite(absl::StrCat(coll_, "/partial"), {.size = 100});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteAt(0, absl::MakeConstSpan("half", 4)).ok());
  ASSERT_TRUE((*w)->Discard().ok());
  std::vector<std::string> names;
  ASSERT_TRUE(fs_->List(coll_, [&](std::vector<fs::Entry>& b) {
                    for (auto& e : b) names.push_back(e.path);
                    return true;
                  }).ok());
  EXPECT_TRUE(names.empty()) << names.size();
}

TEST_F(IrodsTest, AWriteFromADescriptorSendsThatRangeOfTheFile) {
  const std::string data = RandomBytes(3 << 20);
  auto source = local_.OpenRead(WriteLocal("range", data));
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_GE((*source)->descriptor(), 0);
  auto w = fs_->OpenWrite(absl::StrCat(coll_, "/range"), {.size = 2 << 20});
  ASSERT_TRUE(w.ok()) << w.status();
  absl::StatusOr<size_t> n = (*w)->WriteFromDescriptor(0, (*source)->descriptor(), 1 << 20, 2 << 20);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, size_t{2} << 20);
  ASSERT_TRUE((*w)->Close().ok());
  ASSERT_TRUE(CopyFile(runtime_, *fs_, absl::StrCat(coll_, "/range"), local_,
                       fs::LocalPathToFsPath((local_root_ / "range.back").string()))
                  .ok());
  EXPECT_TRUE(ReadLocal("range.back") == data.substr(1 << 20));
}

TEST_F(IrodsTest, AWriteFromADescriptorThatEndsEarlyTakesWhatThereIsAndPublishesNothing) {
  auto source = local_.OpenRead(WriteLocal("short", RandomBytes(1000)));
  ASSERT_TRUE(source.ok()) << source.status();
  auto w = fs_->OpenWrite(absl::StrCat(coll_, "/short"), {.size = 5000});
  ASSERT_TRUE(w.ok()) << w.status();
  absl::StatusOr<size_t> n = (*w)->WriteFromDescriptor(0, (*source)->descriptor(), 0, 5000);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1000u);
  absl::Status discarded = (*w)->Discard();  // as the engine does with a file that failed
  EXPECT_TRUE(discarded.ok()) << discarded;
  std::vector<std::string> names;  // no temporary left either
  ASSERT_TRUE(fs_->List(coll_, [&](std::vector<fs::Entry>& b) {
                    for (auto& e : b) names.push_back(e.path);
                    return true;
                  }).ok());
  EXPECT_TRUE(names.empty()) << names.front();
  // The pool carries on with fresh sessions.
  EXPECT_TRUE(CopyFile(runtime_, local_, WriteLocal("after", "ok"), *fs_, absl::StrCat(coll_, "/after")).ok());
}

TEST_F(IrodsTest, AnOverwriteReplacesTheObjectWhole) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("a", RandomBytes(100000)), *fs_, absl::StrCat(coll_, "/x")).ok());
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("b", "short"), *fs_, absl::StrCat(coll_, "/x")).ok());
  ASSERT_TRUE(CopyFile(runtime_, *fs_, absl::StrCat(coll_, "/x"), local_,
                       fs::LocalPathToFsPath((local_root_ / "x.back").string()))
                  .ok());
  EXPECT_EQ(ReadLocal("x.back"), "short");
}

TEST_F(IrodsTest, TreesCopyBothWays) {
  std::filesystem::create_directories(local_root_ / "tree/sub");
  WriteLocal("tree/one", "1");
  WriteLocal("tree/sub/two", RandomBytes(3000));
  auto up = CopyTree(runtime_, local_, fs::LocalPathToFsPath((local_root_ / "tree").string()), *fs_,
                     absl::StrCat(coll_, "/tree"));
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->files_failed, 0);
  auto down = CopyTree(runtime_, *fs_, absl::StrCat(coll_, "/tree"), local_,
                       fs::LocalPathToFsPath((local_root_ / "back").string()));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_TRUE(ReadLocal("back/sub/two") == ReadLocal("tree/sub/two"));
  EXPECT_EQ(ReadLocal("back/one"), "1");
  EXPECT_EQ(down->files_failed, 0);
}

TEST_F(IrodsTest, RenameMovesADataObjectAndACollection) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("r", "r"), *fs_, absl::StrCat(coll_, "/r")).ok());
  ASSERT_TRUE(fs_->Rename(absl::StrCat(coll_, "/r"), absl::StrCat(coll_, "/r2")).ok());
  ASSERT_TRUE(fs_->CreateDir(absl::StrCat(coll_, "/d"), false).ok());
  ASSERT_TRUE(fs_->Rename(absl::StrCat(coll_, "/d"), absl::StrCat(coll_, "/d2")).ok());
  EXPECT_EQ(fs_->Stat(absl::StrCat(coll_, "/r2"))->kind, fs::EntryKind::kFile);
  EXPECT_EQ(fs_->Stat(absl::StrCat(coll_, "/d2"))->kind, fs::EntryKind::kDirectory);
}

TEST_F(IrodsTest, AProxyLoginActsForItsClientUser) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("m", "mine"), *fs_, absl::StrCat(coll_, "/m")).ok());
  IrodsAccount as_alice = Account();
  as_alice.client_user = "alice";  // rods (a rodsadmin) logs in for alice
  auto alice = IrodsFileSystem::Connect(as_alice);
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_TRUE(absl::IsPermissionDenied((*alice)->OpenRead(absl::StrCat(coll_, "/m")).status()));
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("a", "hers"), **alice, "tempZone/home/alice/" + Unique("p")).ok());
}

TEST_F(IrodsTest, PathOfIdNamesTheDataObjectAndTheCollectionWithThatId) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("p", "p"), *fs_, absl::StrCat(coll_, "/a b")).ok());
  auto file = fs_->Stat(absl::StrCat(coll_, "/a b"));
  auto dir = fs_->Stat(coll_);
  ASSERT_TRUE(file.ok() && dir.ok());
  auto file_path = fs_->client().PathOfId(file->id, false);
  ASSERT_TRUE(file_path.ok()) << file_path.status();
  EXPECT_EQ(*file_path, LogicalPath(absl::StrCat(coll_, "/a b")));
  auto dir_path = fs_->client().PathOfId(dir->id, true);
  ASSERT_TRUE(dir_path.ok()) << dir_path.status();
  EXPECT_EQ(*dir_path, LogicalPath(coll_));
}

TEST_F(IrodsTest, PathOfIdIsNotFoundOnceTheObjectIsRemovedOrForTheOtherKind) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("q", "q"), *fs_, absl::StrCat(coll_, "/q")).ok());
  auto file = fs_->Stat(absl::StrCat(coll_, "/q"));
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->client().PathOfId(file->id, true).status()));
  ASSERT_TRUE(fs_->Remove(absl::StrCat(coll_, "/q")).ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->client().PathOfId(file->id, false).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(fs_->client().PathOfId(0, false).status()));
}

}  // namespace
}  // namespace ferry::irods

namespace ferry::irods {
namespace {

// NFSRODS's caches: served until invalidated, and invalidated for everyone.
class IrodsCacheTest : public IrodsTest {
 protected:
  std::vector<std::string> Names(IrodsCacheSet& cache, const std::string& user) {
    std::vector<std::string> out;
    auto l = cache.List(user, LogicalPath(coll_));
    EXPECT_TRUE(l.ok()) << l.status();
    if (l.ok()) {
      for (const auto& e : **l) out.push_back(e.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  void MakeOutsideTheCache(const std::string& name) {
    ASSERT_TRUE(fs_->client().CreateCollection(LogicalPath(absl::StrCat(coll_, "/", name)), false).ok());
  }
};

TEST_F(IrodsCacheTest, AListingIsServedFromTheCacheUntilInvalidated) {
  IrodsCacheSet cache(fs_->client());
  EXPECT_TRUE(Names(cache, "rods").empty());
  MakeOutsideTheCache("a");
  EXPECT_TRUE(Names(cache, "rods").empty());  // cached
  cache.Changed(LogicalPath(absl::StrCat(coll_, "/a")));
  EXPECT_EQ(Names(cache, "rods"), std::vector<std::string>{"a"});
}

TEST_F(IrodsCacheTest, AChangeInvalidatesEveryUsersListing) {
  IrodsCacheSet cache(fs_->client());
  Names(cache, "rods");
  Names(cache, "alice");
  MakeOutsideTheCache("b");
  cache.Changed(LogicalPath(absl::StrCat(coll_, "/b")));
  EXPECT_EQ(Names(cache, "rods"), std::vector<std::string>{"b"});
  EXPECT_EQ(Names(cache, "alice"), std::vector<std::string>{"b"});
}

TEST_F(IrodsCacheTest, ARenameInvalidatesBothCollectionsAndTheSubtreesStats) {
  IrodsCacheSet cache(fs_->client());
  MakeOutsideTheCache("from");
  MakeOutsideTheCache("from/x");
  MakeOutsideTheCache("to");
  const std::string from = LogicalPath(absl::StrCat(coll_, "/from"));
  const std::string to = LogicalPath(absl::StrCat(coll_, "/to/moved"));
  ASSERT_TRUE(cache.Stat("rods", from + "/x").ok());
  ASSERT_TRUE(cache.List("rods", LogicalPath(absl::StrCat(coll_, "/to"))).ok());
  ASSERT_TRUE(fs_->client().Rename(from, to, true).ok());
  cache.Renamed(from, to);
  EXPECT_TRUE(absl::IsNotFound(cache.Stat("rods", from + "/x").status()));
  auto moved = cache.List("rods", LogicalPath(absl::StrCat(coll_, "/to")));
  ASSERT_TRUE(moved.ok());
  ASSERT_EQ((*moved)->size(), 1u);
  EXPECT_EQ((**moved)[0].name, "moved");
}

TEST_F(IrodsCacheTest, APathRecreatedAsTheOtherKindShowsItsNewType) {
  IrodsCacheSet cache(fs_->client());
  const std::string p = absl::StrCat(coll_, "/flip");
  MakeOutsideTheCache("flip");
  EXPECT_EQ(*cache.ObjectType(LogicalPath(p)), IrodsObjectType::kCollection);
  ASSERT_TRUE(fs_->client().RemoveCollection(LogicalPath(p), true).ok());
  cache.Changed(LogicalPath(p));
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("flip", "now a file"), *fs_, p).ok());
  cache.Changed(LogicalPath(p));
  EXPECT_EQ(*cache.ObjectType(LogicalPath(p)), IrodsObjectType::kDataObject);
}

TEST_F(IrodsCacheTest, AnAclChangeInvalidatesThePermissions) {
  IrodsCacheSet cache(fs_->client());
  const std::string p = LogicalPath(coll_);
  auto before = cache.Permissions(p, true);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(fs_->client().SetAccess(p, "alice", "read", false).ok());
  EXPECT_EQ((*cache.Permissions(p, true))->size(), (*before)->size());  // cached
  cache.AclChanged(p, false);
  EXPECT_EQ((*cache.Permissions(p, true))->size(), (*before)->size() + 1);
}

TEST_F(IrodsCacheTest, UserTypesAreCachedAndUnknownUsersAreNotFound) {
  IrodsCacheSet cache(fs_->client());
  EXPECT_EQ(*cache.UserType("rods"), "rodsadmin");
  EXPECT_EQ(*cache.UserType("alice"), "rodsuser");
  EXPECT_TRUE(absl::IsNotFound(cache.UserType("mallory").status()));
}

TEST_F(IrodsCacheTest, AFileSystemsOwnWritesInvalidateItsCachedListing) {
  IrodsFileSystemOptions o;
  o.cache = IrodsCacheOptions{};
  auto cached = IrodsFileSystem::Connect(Account(), o);
  ASSERT_TRUE(cached.ok());
  auto names = [&] {
    std::vector<std::string> out;
    EXPECT_TRUE((*cached)->List(coll_, [&](std::vector<fs::Entry>& b) {
                          for (auto& e : b) out.push_back(e.path);
                          return true;
                        }).ok());
    return out;
  };
  EXPECT_TRUE(names().empty());
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("n", "n"), **cached, absl::StrCat(coll_, "/n")).ok());
  EXPECT_EQ(names(), std::vector<std::string>{"n"});
  ASSERT_TRUE((*cached)->Remove(absl::StrCat(coll_, "/n")).ok());
  EXPECT_TRUE(names().empty());
}

}  // namespace
}  // namespace ferry::irods

#include "testing/peers.h"

namespace ferry::irods {
namespace {

// Faults through toxiproxy: the connection to the peer is cut mid-transfer.
class IrodsFaultTest : public IrodsTest {
 protected:
  // A filesystem of its own on the peer through a new toxiproxy proxy
  // (proxy_) called `name`; null (and a test failure) if either fails.
  std::shared_ptr<IrodsFileSystem> ThroughProxy(std::string_view name) {
    proxy_ = std::make_unique<peers::ScopedProxy>(toxiproxy_, Unique(name), 1247);
    EXPECT_TRUE(proxy_->status().ok()) << proxy_->status();
    if (!proxy_->status().ok()) return nullptr;
    IrodsAccount a = Account();
    a.port = proxy_->port();
    IrodsFileSystemOptions o;
    o.client.timeouts.call = absl::Seconds(10);
    // The cuts below are for good: give up after 2 s of retries, not 20.
    o.client.timeouts.retry_window = absl::Seconds(2);
    auto fs = IrodsFileSystem::Connect(a, o);
    EXPECT_TRUE(fs.ok()) << fs.status();
    return fs.ok() ? *fs : nullptr;
  }
  // The same, with `stream` ("upstream" or "downstream") cut after 6 MiB.
  std::shared_ptr<IrodsFileSystem> ThroughCut(std::string_view name, std::string stream) {
    auto via = ThroughProxy(name);
    if (via == nullptr) return nullptr;
    const absl::Status cut = proxy_->AddToxic(
        {.name = "cut", .type = "limit_data", .stream = std::move(stream), .attributes = {{"bytes", 6 << 20}}});
    EXPECT_TRUE(cut.ok()) << cut;
    return cut.ok() ? via : nullptr;
  }
  bool Exists(const std::string& path) { return fs_->Stat(path).ok(); }

  peers::ToxiproxyClient toxiproxy_;
  std::unique_ptr<peers::ScopedProxy> proxy_;  // after toxiproxy_: destroyed first
};

TEST_F(IrodsFaultTest, AnUploadCutMidwayFailsClearlyAndLeavesNoObject) {
  auto via = ThroughCut("irods_cut_up", "upstream");
  ASSERT_NE(via, nullptr);
  auto up = CopyFile(runtime_, local_, WriteLocal("big", RandomBytes(40 << 20)), *via,
                     absl::StrCat(coll_, "/big"));
  ASSERT_FALSE(up.ok());
  EXPECT_TRUE(absl::IsUnavailable(up.status()) || absl::IsDataLoss(up.status()) ||
              absl::IsAborted(up.status()))
      << up.status();
  EXPECT_NE(up.status().message().find("127.0.0.1"), absl::string_view::npos) << up.status();
  EXPECT_FALSE(Exists(absl::StrCat(coll_, "/big")));  // never published
}

TEST_F(IrodsFaultTest, ADownloadCutMidwayFailsAndLeavesNoLocalFile) {
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("big", RandomBytes(40 << 20)), *fs_,
                       absl::StrCat(coll_, "/big"))
                  .ok());
  auto via = ThroughCut("irods_cut_down", "downstream");
  ASSERT_NE(via, nullptr);
  auto down = CopyFile(runtime_, *via, absl::StrCat(coll_, "/big"), local_,
                       fs::LocalPathToFsPath((local_root_ / "big.back").string()));
  ASSERT_FALSE(down.ok());
  EXPECT_FALSE(std::filesystem::exists(local_root_ / "big.back"));
}

TEST_F(IrodsFaultTest, SequentialReadsWhoseConnectionsAreCutGoOnFromTheRightByte) {
  const std::string data = RandomBytes(20 << 20);
  ASSERT_TRUE(CopyFile(runtime_, local_, WriteLocal("big", data), *fs_, absl::StrCat(coll_, "/big")).ok());
  // Every connection through the proxy dies after 6 MiB of replies, some
  // amid a reply read ahead: each read is retried on a fresh one.
  auto via = ThroughCut("irods_cut_read_ahead", "downstream");
  ASSERT_NE(via, nullptr);
  auto f = via->OpenRead(absl::StrCat(coll_, "/big"));
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::string> got = testing::ReadInPieces(**f, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == data) << got->size() << " bytes";
}

TEST_F(IrodsFaultTest, ADroppedIdleConnectionIsReplacedForTheNextStat) {
  auto via = ThroughProxy("irods_idle_drop");
  ASSERT_NE(via, nullptr);
  ASSERT_TRUE(via->Stat(coll_).ok());
  ASSERT_TRUE(proxy_->SetEnabled(false).ok());  // closes every connection
  ASSERT_TRUE(proxy_->SetEnabled(true).ok());
  auto st = via->Stat(coll_);  // idempotent: retried on a fresh login
  EXPECT_TRUE(st.ok()) << st.status();
}

}  // namespace
}  // namespace ferry::irods
