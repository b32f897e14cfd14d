#include "ferry/base/status_macros.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/strings.h"

namespace ferry {

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok() || context.empty()) return status;
  absl::Status out(status.code(), absl::StrCat(ToAbsl(context), ": ", status.message()));
  // Keep payloads (e.g. a server's own error code) attached.
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

absl::Status AppendToMessage(const absl::Status& status, std::string_view note) {
  if (status.ok() || note.empty()) return status;
  absl::Status out(status.code(), absl::StrCat(status.message(), ToAbsl(note)));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

absl::Status ErrnoStatus(int err, std::string_view what, std::string_view path) {
  std::string message = absl::StrCat(ToAbsl(what), " ", ToAbsl(path), ": ", std::strerror(err));
  // Marked so bindings raise IsADirectoryError / NotADirectoryError.
  if (err == EISDIR) return IsADirectoryStatus(message);
  if (err == ENOTDIR) return NotADirectoryStatus(message);
  return absl::Status(absl::ErrnoToStatusCode(err), message);
}

}  // namespace ferry
