// The one Status -> exception table (DESIGN.md "Errors"), shared by every
// binding: a binding maps each ErrorKind to its language's class (Python:
// FileNotFoundError, ...; Java: FileNotFoundException, ...) and keeps the
// status message unchanged.
//
//   switch (ErrorKindFor(status.code())) {
//     case ErrorKind::kNotFound: throw JavaFileNotFound(status.message()); ...
//   }
//
// Thread-safety: pure functions.
#ifndef FERRY_BINDINGS_ERROR_KIND_H_
#define FERRY_BINDINGS_ERROR_KIND_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace ferry::bindings {

enum class ErrorKind {
  kNotFound,          // FileNotFoundError / FileNotFoundException
  kAlreadyExists,     // FileExistsError / FileAlreadyExistsException
  kPermissionDenied,  // PermissionError / AccessDeniedException
  kUnauthenticated,   // PermissionError / FerryAuthenticationException
  kTimeout,           // TimeoutError / TimeoutException
  kUnavailable,       // ConnectionError / IOException
  kProtocol,          // ferry.ProtocolError / ProtocolException (DataLoss)
  kInvalidArgument,   // ValueError / IllegalArgumentException
  kFailedPrecondition,  // ferry.Error / IllegalStateException
  kCancelled,         // ferry.Error / CancellationException
  kOther,             // ferry.Error / FerryException
};

ErrorKind ErrorKindFor(absl::StatusCode code);
// The code an error of `kind` stands for (the reverse of ErrorKindFor; kOther:
// Unknown), e.g. for an exception a binding's user code raised.
absl::StatusCode StatusCodeFor(ErrorKind kind);

// "NotFound" for kNotFound, ..., "Code(42)" for a number absl does not name.
std::string StatusCodeName(absl::StatusCode code);

// The code named `name` (as StatusCodeName spells it); nullopt if none.
std::optional<absl::StatusCode> StatusCodeFromName(std::string_view name);

}  // namespace ferry::bindings

#endif  // FERRY_BINDINGS_ERROR_KIND_H_
