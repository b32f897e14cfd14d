// Conversions shared by the bindings. Durations accept what Python code
// naturally has at hand (socket-style float seconds, or a timedelta) and map
// "no limit" to absl::InfiniteDuration, as the C++ options do.
#include "python_object.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {

absl::Duration DurationFromPython(py::handle value, const char* what) {
  if (value.is_none()) return absl::InfiniteDuration();
  double seconds = 0;
  py::module_ datetime = py::module_::import("datetime");
  if (py::isinstance(value, datetime.attr("timedelta"))) {
    seconds = value.attr("total_seconds")().cast<double>();
  } else if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) {
    seconds = value.cast<double>();
  } else {
    ThrowStatus(absl::InvalidArgumentError(
        absl::StrCat(what, ": expected seconds (int or float), a datetime.timedelta or None, got ",
                     py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>())));
  }
  if (std::isnan(seconds)) ThrowStatus(absl::InvalidArgumentError(absl::StrCat(what, ": NaN")));
  if (std::isinf(seconds)) {
    return seconds > 0 ? absl::InfiniteDuration() : -absl::InfiniteDuration();
  }
  return absl::Seconds(seconds);
}

double DurationToSeconds(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return std::numeric_limits<double>::infinity();
  if (d == -absl::InfiniteDuration()) return -std::numeric_limits<double>::infinity();
  return absl::ToDoubleSeconds(d);
}

}  // namespace ferry::python
