// CredentialsProvider. The state is shared with the fetch running on the
// blocking pool, so a fetch that outlives a Get's caller touches nothing
// freed; Shutdown waits for it so the store's callbacks it calls run while
// the store is whole.
#include "ferry/s3/credentials_provider.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/credential_fetch.h"

namespace ferry::s3 {

struct CredentialsProvider::State {
  Runtime& runtime;
  const AwsCredentialSource source;
  const CredentialFetchOptions options;
  const absl::Duration refresh_ahead;
  std::atomic<int64_t> fetches{0};

  Mutex mu;
  CondVar fetch_done;
  std::optional<AwsCredentials> kept ABSL_GUARDED_BY(mu);
  absl::Time kept_since ABSL_GUARDED_BY(mu) = absl::InfinitePast();  // when fetched
  bool fetching ABSL_GUARDED_BY(mu) = false;
  int delivering ABSL_GUARDED_BY(mu) = 0;  // fetch results being handed to waiters
  bool shut_down ABSL_GUARDED_BY(mu) = false;
  std::vector<Callback<AwsCredentials>> waiters ABSL_GUARDED_BY(mu);

  State(Runtime& r, AwsCredentialSource s, CredentialFetchOptions o, absl::Duration ahead)
      : runtime(r), source(std::move(s)), options(std::move(o)), refresh_ahead(ahead) {}
};

namespace {

// Runs the fetch on the blocking pool and hands the result to the waiters.
void StartFetch(const std::shared_ptr<CredentialsProvider::State>& state) {
  state->fetches.fetch_add(1, std::memory_order_relaxed);
  state->runtime.PostBlocking([state] {
    absl::StatusOr<AwsCredentials> got = FetchCredentials(state->source, state->options);
    if (!got.ok()) {
      got = absl::Status(got.status().code(),
                         absl::StrCat("S3 credentials from ", state->source.description, ": ",
                                      got.status().message()));
    }
    std::vector<Callback<AwsCredentials>> waiters;
    {
      MutexLock l(&state->mu);
      if (got.ok()) {
        state->kept = *got;
        state->kept_since = absl::Now();
      }
      waiters.swap(state->waiters);
      state->fetching = false;
      ++state->delivering;
    }
    for (Callback<AwsCredentials>& w : waiters) w(got);
    MutexLock l(&state->mu);
    --state->delivering;
    state->fetch_done.SignalAll();
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<CredentialsProvider>> CredentialsProvider::Create(
    Runtime& runtime, const S3Config& config) {
  AwsCredentialSource source = config.credential_source;
  if (source.kind == AwsCredentialSource::Kind::kStatic) {
    source.keys = AwsCredentials{.access_key_id = config.access_key_id,
                                 .secret_access_key = config.secret_access_key,
                                 .session_token = config.session_token};
    if (source.keys.access_key_id.empty() || source.keys.secret_access_key.empty()) {
      return absl::InvalidArgumentError(
          "S3: no credentials (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile in "
          "~/.aws, S3_AUTH_FILE, or --no-sign-request for a public bucket)");
    }
  }
  auto state = std::make_shared<State>(
      runtime, std::move(source), CredentialFetchOptions{.ca_bundle_path = config.ca_bundle_path},
      config.credentials_refresh_ahead);
  if (state->source.kind == AwsCredentialSource::Kind::kStatic ||
      state->source.kind == AwsCredentialSource::Kind::kAnonymous) {
    MutexLock l(&state->mu);
    state->kept = state->source.keys;
  }
  return std::unique_ptr<CredentialsProvider>(new CredentialsProvider(std::move(state)));
}

CredentialsProvider::CredentialsProvider(std::shared_ptr<State> state) : state_(std::move(state)) {}

CredentialsProvider::~CredentialsProvider() { Shutdown(); }

void CredentialsProvider::Shutdown() {
  MutexLock l(&state_->mu);
  state_->shut_down = true;
  while (state_->fetching || state_->delivering > 0) state_->fetch_done.Wait(&state_->mu);
}

void CredentialsProvider::Get(Callback<AwsCredentials> done) {
  State& s = *state_;
  const absl::Time now = absl::Now();
  bool start = false;
  std::optional<AwsCredentials> usable;
  bool cancelled = false;
  {
    MutexLock l(&s.mu);
    // Keys that live less than twice the window are refreshed at half their
    // life: otherwise 15-minute STS keys would be fetched on every request.
    absl::Duration ahead = s.refresh_ahead;
    if (s.kept.has_value() && s.kept->expiration != absl::InfiniteFuture()) {
      ahead = std::min(ahead, (s.kept->expiration - s.kept_since) / 2);
    }
    const absl::Duration must_wait = ahead * 2 / 3;
    if (s.shut_down) {
      cancelled = true;
    } else if (s.kept.has_value() && now < s.kept->expiration - must_wait) {
      usable = *s.kept;
      if (now >= s.kept->expiration - ahead && !s.fetching) {
        s.fetching = true;
        start = true;
      }
    } else {
      s.waiters.push_back(std::move(done));
      if (!s.fetching) {
        s.fetching = true;
        start = true;
      }
    }
  }
  if (cancelled) return done(absl::CancelledError("S3 credentials: the store is shutting down"));
  if (start) StartFetch(state_);
  if (usable.has_value()) done(std::move(*usable));
}

const std::string& CredentialsProvider::description() const { return state_->source.description; }

bool CredentialsProvider::anonymous() const {
  return state_->source.kind == AwsCredentialSource::Kind::kAnonymous;
}

int64_t CredentialsProvider::fetches() const {
  return state_->fetches.load(std::memory_order_relaxed);
}

}  // namespace ferry::s3
