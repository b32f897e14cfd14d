// CRC32C has two implementations, chosen per call at run time (a read of
// the CPU model libgcc fills in at start-up, so no state of ours):
//  - on x86-64 CPUs with SSE4.2, the crc32 instruction folds 8 bytes per
//    step (~0.2 s of CPU per GiB, against 0.7-1 s for the table). Only that
//    function is compiled for SSE4.2 (a target attribute), so the build
//    needs no -msse4.2 and the library still runs on older CPUs;
//  - elsewhere, table-driven slicing by 8: eight 256-entry tables built at
//    compile time (constexpr, so no mutable static state) fold 8 input
//    bytes per step, ~1.5 GB/s.
// MD5 is the plain RFC 1321 algorithm.
#include "ferry/transfer/checksum.h"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

#include "absl/strings/escaping.h"
#include "ferry/base/strings.h"
#include "ferry/transfer/internal/crc32c.h"

namespace ferry {
namespace {

// Castagnoli polynomial, bit-reflected.
constexpr uint32_t kCrc32cPoly = 0x82F63B78u;

using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables MakeCrcTables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrc32cPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

constexpr CrcTables kCrcTables = MakeCrcTables();

inline uint32_t LoadLe32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

// MD5 per RFC 1321, section 3.
struct Md5State {
  uint32_t a = 0x67452301, b = 0xefcdab89, c = 0x98badcfe, d = 0x10325476;

  static uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

  void Block(const unsigned char* p) {
    // Per-round shift amounts and sine-derived constants from the RFC.
    static constexpr int kShift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                       5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                       4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                       6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
    static constexpr uint32_t kK[64] = {
        0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
        0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
        0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
        0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
        0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
        0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
        0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
        0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
        0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
        0xeb86d391};
    uint32_t m[16];
    for (int i = 0; i < 16; ++i) m[i] = LoadLe32(p + 4 * i);
    uint32_t aa = a, bb = b, cc = c, dd = d;
    for (int i = 0; i < 64; ++i) {
      uint32_t f;
      int g;
      if (i < 16) {
        f = (bb & cc) | (~bb & dd);
        g = i;
      } else if (i < 32) {
        f = (dd & bb) | (~dd & cc);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = bb ^ cc ^ dd;
        g = (3 * i + 5) % 16;
      } else {
        f = cc ^ (bb | ~dd);
        g = (7 * i) % 16;
      }
      const uint32_t next = bb + Rotl(aa + f + kK[i] + m[g], kShift[i]);
      aa = dd;
      dd = cc;
      cc = bb;
      bb = next;
    }
    a += aa;
    b += bb;
    c += cc;
    d += dd;
  }
};

namespace crc32c_internal {

uint32_t Portable(std::span<const char> bytes, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  uint32_t c = ~crc;
  const auto& t = kCrcTables;
  while (n >= 8) {
    const uint32_t lo = LoadLe32(p) ^ c;
    const uint32_t hi = LoadLe32(p + 4);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return ~c;
}

#if defined(__x86_64__)

// One CPUID, on the first CRC, instead of __builtin_cpu_supports: that one
// links libgcc's CPU model, whose constructor runs about ten CPUIDs at the
// start of every process, and a CPUID is a VM exit (~4.5 us on the 2-core
// VM: #33's start-up).
bool HardwareAvailable() {
  static const bool available = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_SSE4_2) != 0;
  }();
  return available;
}

__attribute__((target("sse4.2"))) uint32_t Hardware(std::span<const char> bytes, uint32_t crc) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  uint64_t c = ~crc;
  // Byte steps up to an 8-byte boundary, so the wide loads are aligned.
  while (n > 0 && reinterpret_cast<uintptr_t>(p) % 8 != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<unsigned char>(*p++));
    --n;
  }
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian, as the CRC wants
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<unsigned char>(*p++));
  return ~static_cast<uint32_t>(c);
}

#else

bool HardwareAvailable() { return false; }

uint32_t Hardware(std::span<const char> bytes, uint32_t crc) { return Portable(bytes, crc); }

#endif

}  // namespace crc32c_internal

uint32_t Crc32c(std::span<const char> bytes, uint32_t crc) {
  return crc32c_internal::HardwareAvailable() ? crc32c_internal::Hardware(bytes, crc)
                                              : crc32c_internal::Portable(bytes, crc);
}

Md5Hasher::Md5Hasher() : state_(std::make_unique<Md5State>()) {}
Md5Hasher::~Md5Hasher() = default;
Md5Hasher::Md5Hasher(Md5Hasher&&) noexcept = default;
Md5Hasher& Md5Hasher::operator=(Md5Hasher&&) noexcept = default;

void Md5Hasher::Update(std::span<const char> bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  length_ += n;
  if (pending_ > 0) {  // fill the partial block first
    const size_t take = std::min(n, sizeof(block_) - pending_);
    std::memcpy(block_ + pending_, p, take);
    pending_ += take;
    p += take;
    n -= take;
    if (pending_ < sizeof(block_)) return;
    state_->Block(block_);
    pending_ = 0;
  }
  for (; n >= 64; p += 64, n -= 64) state_->Block(p);
  std::memcpy(block_, p, n);
  pending_ = n;
}

std::string Md5Hasher::Finish() {
  // Padding: 0x80, zeros to 56 mod 64, then the bit length little-endian.
  unsigned char tail[128] = {};
  std::memcpy(tail, block_, pending_);
  tail[pending_] = 0x80;
  const size_t tail_len = pending_ < 56 ? 64 : 128;
  const uint64_t bits = static_cast<uint64_t>(length_) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 8 + i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t i = 0; i < tail_len; i += 64) state_->Block(tail + i);
  std::string out(16, '\0');
  const uint32_t words[4] = {state_->a, state_->b, state_->c, state_->d};
  for (int w = 0; w < 4; ++w) {
    for (int i = 0; i < 4; ++i) out[4 * w + i] = static_cast<char>(words[w] >> (8 * i));
  }
  *state_ = Md5State();
  pending_ = 0;
  length_ = 0;
  return out;
}

const char* HashKindName(HashKind kind) {
  return kind == HashKind::kMd5 ? "MD5" : "SHA-256";
}

absl::StatusOr<ContentHasher> ContentHasher::Create(HashKind kind) {
  const Crypto* crypto = nullptr;
  if (kind == HashKind::kSha256) {
    // SHA-256 is libcrypto's: hand-written code would be slower than its
    // SHA-NI/AVX2 paths.
    absl::StatusOr<const Crypto*> loaded = Crypto::Get();
    if (!loaded.ok()) return loaded.status();
    crypto = *loaded;
  }
  return ContentHasher(kind, crypto);
}

ContentHasher::ContentHasher(HashKind kind, const Crypto* crypto) : kind_(kind) {
  if (crypto != nullptr) sha256_.emplace(*crypto);
}
ContentHasher::~ContentHasher() = default;
ContentHasher::ContentHasher(ContentHasher&&) noexcept = default;

void ContentHasher::Update(std::span<const char> bytes) {
  if (kind_ == HashKind::kMd5) return md5_.Update(bytes);
  sha256_->Update(bytes);
}

std::string ContentHasher::Finish() {
  if (kind_ == HashKind::kMd5) return md5_.Finish();
  return sha256_->Finish();
}

std::string Md5(std::span<const char> bytes) {
  Md5Hasher h;
  h.Update(bytes);
  return h.Finish();
}

Checksum ComputeChecksum(ChecksumAlgorithm algorithm, std::span<const char> bytes) {
  Checksum c{algorithm, {}};
  switch (algorithm) {
    case ChecksumAlgorithm::kNone:
      break;
    case ChecksumAlgorithm::kMd5:
      c.value = Md5(bytes);
      break;
    case ChecksumAlgorithm::kCrc32c: {
      const uint32_t crc = Crc32c(bytes);
      c.value = {static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                 static_cast<char>(crc >> 8), static_cast<char>(crc)};
      break;
    }
  }
  return c;
}

const char* ChecksumAlgorithmName(ChecksumAlgorithm algorithm) {
  switch (algorithm) {
    case ChecksumAlgorithm::kNone:
      return "none";
    case ChecksumAlgorithm::kMd5:
      return "md5";
    case ChecksumAlgorithm::kCrc32c:
      return "crc32c";
  }
  return "unknown";
}

std::string Md5OfEtag(std::string_view etag) {
  if (etag.size() == 34 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, 32);
  if (etag.size() != 32 || etag.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
    return "";
  }
  return absl::HexStringToBytes(ToAbsl(etag));
}

}  // namespace ferry
