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

// One table both ways: the code each kind stands for (every other code is
// kOther, which stands for Unknown).
struct CodeKind {
  absl::StatusCode code;
  ErrorKind kind;
};
constexpr std::array<CodeKind, 10> kCodeKinds = {{
    {absl::StatusCode::kNotFound, ErrorKind::kNotFound},
    {absl::StatusCode::kAlreadyExists, ErrorKind::kAlreadyExists},
    {absl::StatusCode::kPermissionDenied, ErrorKind::kPermissionDenied},
    {absl::StatusCode::kUnauthenticated, ErrorKind::kUnauthenticated},
    {absl::StatusCode::kDeadlineExceeded, ErrorKind::kTimeout},
    {absl::StatusCode::kUnavailable, ErrorKind::kUnavailable},
    {absl::StatusCode::kDataLoss, ErrorKind::kProtocol},
    {absl::StatusCode::kInvalidArgument, ErrorKind::kInvalidArgument},
    {absl::StatusCode::kFailedPrecondition, ErrorKind::kFailedPrecondition},
    {absl::StatusCode::kCancelled, ErrorKind::kCancelled},
}};

}  // namespace

ErrorKind ErrorKindFor(absl::StatusCode code) {
  for (const CodeKind& row : kCodeKinds) {
    if (row.code == code) return row.kind;
  }
  return ErrorKind::kOther;
}

absl::StatusCode StatusCodeFor(ErrorKind kind) {
  for (const CodeKind& row : kCodeKinds) {
    if (row.kind == kind) return row.code;
  }
  return absl::StatusCode::kUnknown;
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
