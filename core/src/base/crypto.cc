// libcrypto through dlopen/dlsym (see crypto.h for why).
#include "ferry/base/crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <utility>

#include "absl/status/status.h"
#include "ferry/base/shared_library.h"
#include "ferry/base/status_macros.h"

namespace ferry {

struct Crypto::Functions {
  decltype(&::EVP_MD_CTX_new) md_ctx_new = nullptr;
  decltype(&::EVP_MD_CTX_free) md_ctx_free = nullptr;
  decltype(&::EVP_DigestInit_ex) digest_init = nullptr;
  decltype(&::EVP_DigestUpdate) digest_update = nullptr;
  decltype(&::EVP_DigestFinal_ex) digest_final = nullptr;
  decltype(&::EVP_Digest) digest = nullptr;
  decltype(&::EVP_sha256) sha256 = nullptr;
  decltype(&::EVP_sha1) sha1 = nullptr;
  decltype(&::HMAC) hmac = nullptr;
};

namespace {

constexpr char kLibCrypto[] = "libcrypto.so.3";

// Fills `f` from `handle`; `library` names it in errors.
absl::Status Resolve(void* handle, std::string_view library, Crypto::Functions& f) {
  SymbolResolver r(handle, library, "crypto", "not an OpenSSL 3 libcrypto?");
  r.Find(f.md_ctx_new, "EVP_MD_CTX_new");
  r.Find(f.md_ctx_free, "EVP_MD_CTX_free");
  r.Find(f.digest_init, "EVP_DigestInit_ex");
  r.Find(f.digest_update, "EVP_DigestUpdate");
  r.Find(f.digest_final, "EVP_DigestFinal_ex");
  r.Find(f.digest, "EVP_Digest");
  r.Find(f.sha256, "EVP_sha256");
  r.Find(f.sha1, "EVP_sha1");
  r.Find(f.hmac, "HMAC");
  return r.status();
}

absl::StatusOr<Crypto::Functions> Load() {
  Crypto::Functions f;
  FERRY_RETURN_IF_ERROR(FindSharedLibrary(
      {.defining = "EVP_DigestInit_ex", .beside_ferry = "libferry_crypto.so", .soname = kLibCrypto,
       .who = "crypto", .package = "libssl3"},
      [&](void* handle, std::string_view name) { return Resolve(handle, name, f); }));
  return f;
}

const unsigned char* Bytes(std::span<const char> s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

absl::StatusOr<const Crypto*> Crypto::Get() {
  // Loaded once, by the first caller, under the C++ runtime's guard for
  // function-local statics; never destroyed (no exit-time ordering), as
  // the library stays loaded.
  static const absl::StatusOr<Crypto::Functions>* const functions =
      new absl::StatusOr<Crypto::Functions>(Load());
  static const Crypto* const crypto = functions->ok() ? new Crypto(&**functions) : nullptr;
  if (crypto == nullptr) return functions->status();
  return crypto;
}

std::string Crypto::Digest(const void* md, std::span<const char> bytes) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  f_->digest(bytes.data(), bytes.size(), out, &len, static_cast<const EVP_MD*>(md), nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Crypto::Sha256(std::span<const char> bytes) const { return Digest(f_->sha256(), bytes); }

std::string Crypto::Sha1(std::span<const char> bytes) const { return Digest(f_->sha1(), bytes); }

std::string Crypto::HmacSha256(std::span<const char> key, std::span<const char> data) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  f_->hmac(f_->sha256(), key.data(), static_cast<int>(key.size()), Bytes(data), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

Crypto::Sha256Stream::Sha256Stream(const Crypto& crypto)
    : crypto_(&crypto), ctx_(crypto.f_->md_ctx_new()) {
  crypto_->f_->digest_init(static_cast<EVP_MD_CTX*>(ctx_), crypto_->f_->sha256(), nullptr);
}

Crypto::Sha256Stream::~Sha256Stream() {
  if (ctx_ != nullptr) crypto_->f_->md_ctx_free(static_cast<EVP_MD_CTX*>(ctx_));
}

Crypto::Sha256Stream::Sha256Stream(Sha256Stream&& other) noexcept
    : crypto_(other.crypto_), ctx_(std::exchange(other.ctx_, nullptr)) {}

void Crypto::Sha256Stream::Update(std::span<const char> bytes) {
  crypto_->f_->digest_update(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}

std::string Crypto::Sha256Stream::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  auto* ctx = static_cast<EVP_MD_CTX*>(ctx_);
  crypto_->f_->digest_final(ctx, out, &len);
  crypto_->f_->digest_init(ctx, crypto_->f_->sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace ferry
