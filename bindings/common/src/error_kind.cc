#include "ferry/bindings/error_kind.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace ferry::bindings {
namespace {

struct CodeName {
  absl::StatusCode code;
  const char* name;
};

// The canonical codes, named as absl's enumerators without the `k`.
constexpr std::array<CodeName, 17> kCodeNames = {{
    {absl::StatusCode::kOk, "Ok"},
    {absl::StatusCode::kCancelled, "Cancelled"},
    {absl::StatusCode::kUnknown, "Unknown"},
    {absl::StatusCode::kInvalidArgument, "InvalidArgument"},
    {absl::StatusCode::kDeadlineExceeded, "DeadlineExceeded"},
    {absl::StatusCode::kNotFound, "NotFound"},
    {absl::StatusCode::kAlreadyExists, "AlreadyExists"},
    {absl::StatusCode::kPermissionDenied, "PermissionDenied"},
    {absl::StatusCode::kResourceExhausted, "ResourceExhausted"},
    {absl::StatusCode::kFailedPrecondition, "FailedPrecondition"},
    {absl::StatusCode::kAborted, "Aborted"},
    {absl::StatusCode::kOutOfRange, "OutOfRange"},
    {absl::StatusCode::kUnimplemented, "Unimplemented"},
    {absl::StatusCode::kInternal, "Internal"},
    {absl::StatusCode::kUnavailable, "Unavailable"},
    {absl::StatusCode::kDataLoss, "DataLoss"},
    {absl::StatusCode::kUnauthenticated, "Unauthenticated"},
}};

}  // namespace

ErrorKind ErrorKindFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound: return ErrorKind::kNotFound;
    case absl::StatusCode::kAlreadyExists: return ErrorKind::kAlreadyExists;
    case absl::StatusCode::kPermissionDenied: return ErrorKind::kPermissionDenied;
    case absl::StatusCode::kUnauthenticated: return ErrorKind::kUnauthenticated;
    case absl::StatusCode::kDeadlineExceeded: return ErrorKind::kTimeout;
    case absl::StatusCode::kUnavailable: return ErrorKind::kUnavailable;
    case absl::StatusCode::kDataLoss: return ErrorKind::kProtocol;
    case absl::StatusCode::kInvalidArgument: return ErrorKind::kInvalidArgument;
    case absl::StatusCode::kFailedPrecondition: return ErrorKind::kFailedPrecondition;
    case absl::StatusCode::kCancelled: return ErrorKind::kCancelled;
    default: return ErrorKind::kOther;
  }
}

std::string StatusCodeName(absl::StatusCode code) {
  for (const CodeName& c : kCodeNames) {
    if (c.code == code) return c.name;
  }
  return absl::StrCat("Code(", static_cast<int>(code), ")");
}

std::optional<absl::StatusCode> StatusCodeFromName(std::string_view name) {
  for (const CodeName& c : kCodeNames) {
    if (name == c.name) return c.code;
  }
  return std::nullopt;
}

}  // namespace ferry::bindings
