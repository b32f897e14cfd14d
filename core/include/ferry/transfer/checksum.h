// Per-part checksums for uploads: CRC32C and MD5.
//
// S3 verifies a part against Content-MD5 or x-amz-checksum-crc32c; which
// one a third-party store accepts differs, so MultipartUploader takes the
// algorithm as an option. ferry computes both itself: Debian's abseil
// 20220623 has no absl/crc, and linking libcrypto into the protocol-free
// core just for MD5 would add a dependency for 150 lines of code.
//
//   ferry::Checksum c = ferry::ComputeChecksum(ferry::ChecksumAlgorithm::kCrc32c, bytes);
//   // c.value holds the 4 big-endian CRC bytes; an S3 adapter base64-encodes it.
#ifndef FERRY_TRANSFER_CHECKSUM_H_
#define FERRY_TRANSFER_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/base/crypto.h"

namespace ferry {

enum class ChecksumAlgorithm {
  kNone,
  kMd5,     // RFC 1321; S3 Content-MD5
  kCrc32c,  // Castagnoli; S3 x-amz-checksum-crc32c
};

// A digest and the algorithm that made it. `value` holds the raw digest
// bytes (16 for MD5, 4 big-endian for CRC32C, empty for kNone); encoding it
// for the wire (base64, hex) is the adapter's job.
struct Checksum {
  ChecksumAlgorithm algorithm = ChecksumAlgorithm::kNone;
  std::string value;

  bool operator==(const Checksum&) const = default;
};

// CRC32C (polynomial 0x1EDC6F41, reflected) of `bytes`, continuing from
// `crc` (the result of a previous call, or 0 to start). Uses the SSE4.2
// crc32 instruction when the CPU has it (~0.2 s of CPU per GiB), else a
// table (~0.7-1 s per GiB).
uint32_t Crc32c(std::span<const char> bytes, uint32_t crc = 0);

// The 16-byte MD5 digest of `bytes`.
std::string Md5(std::span<const char> bytes);

// The 16-byte MD5 an S3 ETag states ("\"<32 hex>\"", quotes optional: a
// single-part upload's, or a part's); empty for a multipart object's
// ("...-N") or anything else. Thread-safe (pure).
std::string Md5OfEtag(std::string_view etag);

struct Md5State;

// MD5 of bytes that arrive in pieces, in order (a file read chunk by
// chunk for a sync's content comparison).
// Thread-safety: one thread at a time.
class Md5Hasher {
 public:
  Md5Hasher();
  ~Md5Hasher();
  Md5Hasher(Md5Hasher&&) noexcept;
  Md5Hasher& operator=(Md5Hasher&&) noexcept;

  void Update(std::span<const char> bytes);
  // The 16-byte digest of everything given since construction or the last
  // Finish; the hasher starts over.
  std::string Finish();

 private:
  std::unique_ptr<Md5State> state_;
  unsigned char block_[64] = {};
  size_t pending_ = 0;
  uint64_t length_ = 0;
};

// Whole-content hashes a sync compares files by: MD5 (what S3 keeps) or
// SHA-256 (what iRODS keeps by its default checksum scheme).
enum class HashKind { kMd5, kSha256 };

// "MD5" or "SHA-256".
const char* HashKindName(HashKind kind);

// A content hash of bytes that arrive in pieces, in order. SHA-256 is
// libcrypto's (ferry::Crypto): Create fails if it cannot be loaded.
// Thread-safety: one thread at a time.
class ContentHasher {
 public:
  static absl::StatusOr<ContentHasher> Create(HashKind kind);
  ~ContentHasher();
  ContentHasher(ContentHasher&&) noexcept;
  ContentHasher& operator=(ContentHasher&&) = delete;

  void Update(std::span<const char> bytes);
  // The raw digest (16 bytes for MD5, 32 for SHA-256) of everything given
  // since construction or the last Finish; the hasher starts over.
  std::string Finish();

 private:
  ContentHasher(HashKind kind, const Crypto* crypto);

  HashKind kind_;
  Md5Hasher md5_;
  std::optional<Crypto::Sha256Stream> sha256_;
};

// `bytes` digested with `algorithm`. Thread-safe (pure).
Checksum ComputeChecksum(ChecksumAlgorithm algorithm, std::span<const char> bytes);

// "none", "md5" or "crc32c".
const char* ChecksumAlgorithmName(ChecksumAlgorithm algorithm);

}  // namespace ferry

#endif  // FERRY_TRANSFER_CHECKSUM_H_
