// CredentialsProvider: the keys an S3 request is signed with now, from one
// AwsCredentialSource, fetched on first use and again ahead of their
// expiry, so a long copy never signs with expired keys.
//
//   auto provider = CredentialsProvider::Create(runtime, config);
//   provider->Get([](absl::StatusOr<AwsCredentials> c) { if (c.ok()) Sign(*c); });
//
// Refresh: keys with less than `refresh_ahead` left are fetched again in
// the background while requests keep signing with them; only with less
// than two thirds of it left (botocore's 15/10 minutes) do requests wait
// for the fetch; keys that live less than twice `refresh_ahead` are
// refreshed at half their life instead. One fetch at a time; every waiter
// gets its result. A failed background refresh keeps the old keys until
// they are due.
//
// Thread-safety: thread-safe. REQUIRES: Shutdown() (or destruction) before
// the Runtime goes; the callbacks of Get may run inline or on a blocking
// thread.
#ifndef FERRY_S3_CREDENTIALS_PROVIDER_H_
#define FERRY_S3_CREDENTIALS_PROVIDER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ferry/runtime/future.h"
#include "ferry/s3/s3_config.h"

namespace ferry {
class Runtime;
}  // namespace ferry

namespace ferry::s3 {

class CredentialsProvider {
 public:
  // For config.credential_source (kStatic: config's keys, which must be set).
  static absl::StatusOr<std::unique_ptr<CredentialsProvider>> Create(Runtime& runtime,
                                                                     const S3Config& config);
  // Shutdown().
  ~CredentialsProvider();
  CredentialsProvider(const CredentialsProvider&) = delete;
  CredentialsProvider& operator=(const CredentialsProvider&) = delete;

  // Calls `done` with keys valid now: inline when the kept ones are, else
  // once a fetch ends (on a blocking-pool thread).
  void Get(Callback<AwsCredentials> done);

  // Waits for a fetch in flight (its waiters are called); later Gets fail
  // Cancelled. Idempotent. REQUIRES: not called on an I/O thread.
  void Shutdown();

  // Where the keys come from ("profile dev in ~/.aws/credentials", ...).
  const std::string& description() const;
  bool anonymous() const;
  // Fetches started so far (tests: a refresh happened).
  int64_t fetches() const;

  struct State;

 private:
  explicit CredentialsProvider(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace ferry::s3

#endif  // FERRY_S3_CREDENTIALS_PROVIDER_H_
