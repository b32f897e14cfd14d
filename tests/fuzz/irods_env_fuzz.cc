// Fuzzes the reading of the iRODS environment file
// (~/.irods/irods_environment.json, LoadIrodsAccount), the JSON the
// iCommands and python-irodsclient share with ferry.
//
// Whatever the bytes: an account or InvalidArgument; and an accepted
// account says what the file says: its irods_port, when the file has an
// integer one, is that port (a value outside 1..65535 is refused, never
// wrapped), and its host, user and zone are the file's strings.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "ferry/irods/irods_client.h"
#include "fuzz_check.h"
#include "fuzz_file.h"

using ferry::fuzz::Check;
using ferry::fuzz::FuzzFile;

namespace {
FuzzFile* env_file = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  env_file = new FuzzFile("irods-environment");
  setenv("IRODS_ENVIRONMENT_FILE", env_file->path().c_str(), 1);
  for (const char* v : {"IRODS_HOST", "IRODS_PORT", "IRODS_USER_NAME", "IRODS_ZONE_NAME",
                        "IRODS_PASSWORD", "IRODS_PASSWORD_FILE"}) {
    unsetenv(v);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  env_file->Set(text);
  absl::StatusOr<ferry::irods::IrodsAccount> a = ferry::irods::LoadIrodsAccount();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!a.ok()) {
    Check(a.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  Check(!j.is_discarded() && j.is_object());
  auto str = [&](const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  Check(a->host == str("irods_host") && a->user == str("irods_user_name") &&
        a->zone == str("irods_zone_name"));
  if (j.contains("irods_port") && j["irods_port"].is_number_integer()) {
    const nlohmann::json& port = j["irods_port"];
    Check(port.is_number_unsigned() ? port.get<uint64_t>() == a->port
                                    : port.get<int64_t>() == a->port);
  }
  return 0;
}
