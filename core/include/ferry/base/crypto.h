// SHA-256, SHA-1 and HMAC-SHA256 from OpenSSL's libcrypto, loaded with
// dlopen the first time a process asks for one.
//
//   FERRY_ASSIGN_OR_RETURN(const ferry::Crypto* crypto, ferry::Crypto::Get());
//   std::string digest = crypto->Sha256(bytes);             // 32 raw bytes
//   std::string mac = crypto->HmacSha256(key, message);     // 32 raw bytes
//
// Why loaded, not linked: a process that links libcrypto runs its CPU
// probe (a dozen CPUIDs, each a VM exit: ~55 us of ferry-cp's ~0.9 ms
// start on the 2-core VM, #33) whether or not it ever hashes, and linked
// as a shared library it costs ~1.4 ms of symbol binding at every start.
// Only S3 signing, SHA-256 content comparisons and the resumable
// temporaries' tags hash with it; an S3 process has it loaded already (by
// libcurl). A libcrypto the process already has in scope is used rather
// than a second copy; else the stand-in a package ships beside ferry
// (libferry_crypto.so: the Python wheel's), else libcrypto.so.3
// (FindSharedLibrary, base/shared_library.h).
//
// Thread-safety: Get is thread-safe; a Crypto is immutable and its
// functions may be called from any thread. A Sha256Stream is one
// thread's at a time.
#ifndef FERRY_BASE_CRYPTO_H_
#define FERRY_BASE_CRYPTO_H_

#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ferry {

class Crypto {
 public:
  // The process's libcrypto, loaded by the first call (later calls return
  // the same); FailedPrecondition naming the library if it cannot be
  // loaded (Debian's libssl3 package holds it).
  static absl::StatusOr<const Crypto*> Get();

  std::string Sha256(std::span<const char> bytes) const;
  std::string Sha1(std::span<const char> bytes) const;
  std::string HmacSha256(std::span<const char> key, std::span<const char> data) const;

  // SHA-256 of bytes that arrive in pieces, in order.
  class Sha256Stream {
   public:
    explicit Sha256Stream(const Crypto& crypto);
    ~Sha256Stream();
    Sha256Stream(Sha256Stream&& other) noexcept;
    Sha256Stream& operator=(Sha256Stream&&) = delete;
    Sha256Stream(const Sha256Stream&) = delete;
    Sha256Stream& operator=(const Sha256Stream&) = delete;

    void Update(std::span<const char> bytes);
    // The 32-byte digest of everything given since construction or the
    // last Finish; the stream starts over.
    std::string Finish();

   private:
    const Crypto* crypto_;
    void* ctx_;  // EVP_MD_CTX*
  };

  // The functions of libcrypto ferry calls (filled by Get).
  struct Functions;

 private:
  explicit Crypto(const Functions* f) : f_(f) {}
  std::string Digest(const void* md, std::span<const char> bytes) const;

  const Functions* f_;
};

}  // namespace ferry

#endif  // FERRY_BASE_CRYPTO_H_
