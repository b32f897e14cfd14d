// "Is a directory" and "not a directory": two FailedPrecondition errors
// every filesystem can hit (a file operation on a directory, a directory
// operation on a file) that bindings raise as their language's own classes
// (Python: IsADirectoryError / NotADirectoryError; errno EISDIR / ENOTDIR).
// absl has no code for them, so the status carries a payload saying which;
// the message stays the caller's, and the payload survives annotation
// (FERRY_RETURN_IF_ERROR with context keeps payloads).
//
//   return NotADirectoryStatus(absl::StrCat("list ", url, ": not a directory"));
//   switch (DirectoryErrorOf(status)) { case DirectoryError::kIsADirectory: ... }
//
// Thread-safety: pure functions.
#ifndef FERRY_BASE_DIRECTORY_ERRORS_H_
#define FERRY_BASE_DIRECTORY_ERRORS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "ferry/base/strings.h"

namespace ferry {

enum class DirectoryError { kNone, kIsADirectory, kNotADirectory };

inline constexpr char kDirectoryErrorPayload[] = "type.ferry.dev/ferry.DirectoryError";

// A FailedPrecondition with `message`, marked as `kind`.
inline absl::Status DirectoryErrorStatus(DirectoryError kind, std::string_view message) {
  absl::Status s = absl::FailedPreconditionError(ToAbsl(message));
  if (kind != DirectoryError::kNone) {
    s.SetPayload(kDirectoryErrorPayload,
                 absl::Cord(kind == DirectoryError::kIsADirectory ? "EISDIR" : "ENOTDIR"));
  }
  return s;
}
inline absl::Status IsADirectoryStatus(std::string_view message) {
  return DirectoryErrorStatus(DirectoryError::kIsADirectory, message);
}
inline absl::Status NotADirectoryStatus(std::string_view message) {
  return DirectoryErrorStatus(DirectoryError::kNotADirectory, message);
}

// Which of the two `status` is marked as; kNone for any other status.
inline DirectoryError DirectoryErrorOf(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kFailedPrecondition) return DirectoryError::kNone;
  auto payload = status.GetPayload(kDirectoryErrorPayload);
  if (!payload.has_value()) return DirectoryError::kNone;
  if (*payload == "EISDIR") return DirectoryError::kIsADirectory;
  if (*payload == "ENOTDIR") return DirectoryError::kNotADirectory;
  return DirectoryError::kNone;
}

}  // namespace ferry

#endif  // FERRY_BASE_DIRECTORY_ERRORS_H_
