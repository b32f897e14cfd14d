// Status <-> Python exception translation for ferry._core.
//
// Every binding turns a non-OK absl::Status into a Python exception with
// ThrowStatus, and a Python exception raised by a user callback (a TtlCache
// loader) into a Status with StatusFromPython. One table, DESIGN.md "Errors":
//
//   NotFound          ferry.NotFoundError          (ferry.Error, FileNotFoundError)
//   PermissionDenied  ferry.PermissionDeniedError  (ferry.Error, PermissionError)
//   Unauthenticated   ferry.UnauthenticatedError   (ferry.Error, PermissionError)
//   DeadlineExceeded  ferry.DeadlineExceededError  (ferry.Error, TimeoutError)
//   Unavailable       ferry.UnavailableError       (ferry.Error, ConnectionError)
//   InvalidArgument   ferry.InvalidArgumentError   (ferry.Error, ValueError)
//   DataLoss          ferry.ProtocolError          (ferry.Error)
//   anything else     ferry.Error
//
// The exception's str() is the status message and its `.code` the code's
// name ("NotFound", as in absl::StatusCode::kNotFound).
#ifndef FERRY_BINDINGS_PYTHON_STATUS_EXCEPTIONS_H_
#define FERRY_BINDINGS_PYTHON_STATUS_EXCEPTIONS_H_

#include <optional>
#include <string>
#include <string_view>

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ferry::python {

// "NotFound" for kNotFound, ..., "Code(42)" for a number absl does not name.
std::string StatusCodeName(absl::StatusCode code);

// The code named `name` (as StatusCodeName spells it); nullopt if none.
std::optional<absl::StatusCode> StatusCodeFromName(std::string_view name);

// Raises the exception for `status`. REQUIRES: !status.ok(), GIL held.
[[noreturn]] void ThrowStatus(const absl::Status& status);

// Returns `*r`, or raises the exception for its status. REQUIRES: GIL held.
template <typename T>
T ValueOrThrow(absl::StatusOr<T> r) {
  if (!r.ok()) ThrowStatus(r.status());
  return std::move(*r);
}
inline void ThrowIfError(const absl::Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

// The Status a Python exception stands for: a ferry.Error keeps its code;
// FileNotFoundError is NotFound (so a loader's miss is negatively cached),
// PermissionError PermissionDenied, TimeoutError DeadlineExceeded,
// ConnectionError Unavailable, ValueError InvalidArgument, anything else
// Unknown. The message is "`context`: <Type>: <str(exc)>" for foreign
// exceptions and str(exc) for ferry.Error ones. REQUIRES: GIL held.
absl::Status StatusFromPython(const pybind11::error_already_set& e, std::string_view context);

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_STATUS_EXCEPTIONS_H_
