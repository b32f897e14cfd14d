// The exception classes are created once, in ferry._core, with
// PyErr_NewExceptionWithDoc and two bases where a builtin applies, so
// `except FileNotFoundError` and `except ferry.Error` both catch a NotFound.
// ThrowStatus finds them again through sys.modules["ferry._core"] instead of
// a static cache of class pointers: raising is the slow path anyway, and the
// module stays free of static mutable state.
#include "status_exceptions.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/strings.h"
#include "ferry/bindings/error_kind.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// The ferry._core class raised for `status` (the shared table's kinds; a
// directory error marked as such, see ferry/base/directory_errors.h).
const char* ExceptionClassFor(const absl::Status& status) {
  switch (DirectoryErrorOf(status)) {
    case DirectoryError::kIsADirectory: return "IsDirectoryError";
    case DirectoryError::kNotADirectory: return "NotDirectoryError";
    case DirectoryError::kNone: break;
  }
  switch (bindings::ErrorKindFor(status.code())) {
    case bindings::ErrorKind::kNotFound: return "NotFoundError";
    case bindings::ErrorKind::kAlreadyExists: return "AlreadyExistsError";
    case bindings::ErrorKind::kPermissionDenied: return "PermissionDeniedError";
    case bindings::ErrorKind::kUnauthenticated: return "UnauthenticatedError";
    case bindings::ErrorKind::kTimeout: return "DeadlineExceededError";
    case bindings::ErrorKind::kUnavailable: return "UnavailableError";
    case bindings::ErrorKind::kInvalidArgument: return "InvalidArgumentError";
    case bindings::ErrorKind::kProtocol: return "ProtocolError";
    default: return "Error";
  }
}

// Adds class `name` to `m` with `bases` and a class attribute `code`.
py::object AddException(py::module_& m, const char* name, const char* doc, py::handle bases,
                        const char* code) {
  py::dict attrs;
  attrs["code"] = code;
  const std::string qualified = absl::StrCat("ferry.", name);
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), attrs.ptr());
  if (cls == nullptr) throw py::error_already_set();
  py::object owned = py::reinterpret_steal<py::object>(cls);
  m.attr(name) = owned;
  return owned;
}

std::string SafeStr(const py::handle& h) {
  try {
    return py::str(h).cast<std::string>();
  } catch (const py::error_already_set&) {
    return "<unprintable>";
  }
}

}  // namespace

std::string StatusCodeName(absl::StatusCode code) { return bindings::StatusCodeName(code); }

std::optional<absl::StatusCode> StatusCodeFromName(std::string_view name) {
  return bindings::StatusCodeFromName(name);
}

void ThrowStatus(const absl::Status& status) {
  py::module_ core = py::module_::import("ferry._core");
  py::object cls = core.attr(ExceptionClassFor(status));
  py::object exc = cls(std::string(status.message().data(), status.message().size()));
  exc.attr("code") = StatusCodeName(status.code());
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

absl::Status StatusFromPython(const py::error_already_set& e, std::string_view context) {
  py::module_ core = py::module_::import("ferry._core");
  const py::object& value = e.value();
  if (e.matches(core.attr("Error"))) {
    absl::StatusCode code = absl::StatusCode::kUnknown;
    if (py::hasattr(value, "code")) {
      const std::string name = SafeStr(value.attr("code"));
      code = StatusCodeFromName(name).value_or(absl::StatusCode::kUnknown);
    }
    if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
    return absl::Status(code, SafeStr(value));
  }
  absl::StatusCode code = absl::StatusCode::kUnknown;
  if (e.matches(PyExc_FileNotFoundError)) {
    code = absl::StatusCode::kNotFound;
  } else if (e.matches(PyExc_FileExistsError)) {
    code = absl::StatusCode::kAlreadyExists;
  } else if (e.matches(PyExc_IsADirectoryError) || e.matches(PyExc_NotADirectoryError)) {
    code = absl::StatusCode::kFailedPrecondition;
  } else if (e.matches(PyExc_PermissionError)) {
    code = absl::StatusCode::kPermissionDenied;
  } else if (e.matches(PyExc_TimeoutError)) {
    code = absl::StatusCode::kDeadlineExceeded;
  } else if (e.matches(PyExc_ConnectionError)) {
    code = absl::StatusCode::kUnavailable;
  } else if (e.matches(PyExc_ValueError)) {
    code = absl::StatusCode::kInvalidArgument;
  }
  const std::string type_name = SafeStr(py::type::handle_of(value).attr("__name__"));
  return absl::Status(code, absl::StrCat(ToAbsl(context), ": ", type_name, ": ", SafeStr(value)));
}

void RegisterExceptions(py::module_& m) {
  py::object error = AddException(
      m, "Error",
      "Base of every error ferry raises. `code` is the absl status code's name "
      "(\"NotFound\", \"Unavailable\", ...); str(e) is the C++ status message.",
      PyExc_Exception, "Unknown");
  auto both = [&](PyObject* builtin) { return py::make_tuple(error, py::handle(builtin)); };
  AddException(m, "NotFoundError", "NotFound: no such file, object, key or entry.",
               both(PyExc_FileNotFoundError), "NotFound");
  AddException(m, "AlreadyExistsError", "AlreadyExists: the file, object or directory exists.",
               both(PyExc_FileExistsError), "AlreadyExists");
  AddException(m, "IsDirectoryError",
               "FailedPrecondition: a file operation on a directory (EISDIR), e.g. a copy of "
               "a directory without recursive.",
               both(PyExc_IsADirectoryError), "FailedPrecondition");
  AddException(m, "NotDirectoryError",
               "FailedPrecondition: a directory operation (list, walk) on a file (ENOTDIR).",
               both(PyExc_NotADirectoryError), "FailedPrecondition");
  AddException(m, "PermissionDeniedError", "PermissionDenied: the server refused access.",
               both(PyExc_PermissionError), "PermissionDenied");
  AddException(m, "UnauthenticatedError",
               "Unauthenticated: bad credentials (password, signature, access key).",
               both(PyExc_PermissionError), "Unauthenticated");
  AddException(m, "DeadlineExceededError", "DeadlineExceeded: a deadline passed.",
               both(PyExc_TimeoutError), "DeadlineExceeded");
  AddException(m, "UnavailableError",
               "Unavailable: connection refused or reset, server gone.",
               both(PyExc_ConnectionError), "Unavailable");
  AddException(m, "InvalidArgumentError", "InvalidArgument: a bad URL, option or argument.",
               both(PyExc_ValueError), "InvalidArgument");
  AddException(m, "ProtocolError", "DataLoss: a malformed or truncated reply from a peer.",
               py::make_tuple(error), "DataLoss");

  m.def(
      "_raise_status",
      [](const std::string& code_name, const std::string& message) {
        std::optional<absl::StatusCode> code = StatusCodeFromName(code_name);
        if (!code || *code == absl::StatusCode::kOk) {
          ThrowStatus(absl::InvalidArgumentError(
              absl::StrCat("_raise_status: no error code named \"", code_name, "\"")));
        }
        ThrowStatus(absl::Status(*code, message));
      },
      py::arg("code"), py::arg("message"),
      "Raises the exception ferry raises for a C++ status (code name, message). For tests "
      "and for Python code that wants to raise ferry's errors.");
}

}  // namespace ferry::python
