// Status propagation helpers.
//
// abseil 20220623 (Debian 12) ships no status macros, so ferry defines the
// two it uses everywhere, once:
//
//   absl::StatusOr<Listing> ListDir(const Path& p) {
//     FERRY_ASSIGN_OR_RETURN(Handle h, Lookup(p));
//     FERRY_RETURN_IF_ERROR(CheckReadable(h));
//     return ReadDir(h);
//   }
#ifndef FERRY_BASE_STATUS_MACROS_H_
#define FERRY_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns `expr` (an absl::Status) from the enclosing function if it is not OK.
#define FERRY_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    if (::absl::Status ferry_status_ = (expr);        \
        !ferry_status_.ok()) [[unlikely]] {           \
      return ferry_status_;                           \
    }                                                 \
  } while (0)

#define FERRY_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
#define FERRY_STATUS_MACROS_CONCAT_(x, y) FERRY_STATUS_MACROS_CONCAT_INNER_(x, y)

// Evaluates `rexpr` (an absl::StatusOr<T>); returns its status if not OK,
// otherwise moves the value into `lhs` (a declaration or an lvalue).
#define FERRY_ASSIGN_OR_RETURN(lhs, rexpr) \
  FERRY_ASSIGN_OR_RETURN_IMPL_(            \
      FERRY_STATUS_MACROS_CONCAT_(ferry_statusor_, __LINE__), lhs, rexpr)

#define FERRY_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) [[unlikely]] {                       \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = std::move(statusor).value()

namespace ferry {

// Returns `status` with `context` prepended to its message ("context: message"),
// keeping its code. OK stays OK.
absl::Status Annotate(const absl::Status& status, std::string_view context);

// Returns `status` with `note` appended to its message (code and payloads
// kept): how a clean-up that failed after a failure is told without
// replacing it. OK stays OK.
absl::Status AppendToMessage(const absl::Status& status, std::string_view note);

// The status for a failed system call on a local file: the errno's
// canonical code (absl::ErrnoToStatusCode) and "what path: strerror".
//   if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "fstat", path);
absl::Status ErrnoStatus(int err, std::string_view what, std::string_view path);

}  // namespace ferry

#endif  // FERRY_BASE_STATUS_MACROS_H_
