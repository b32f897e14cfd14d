// ferry.ManualClock: the C++ ManualClock, for tests that drive a TtlCache's
// expiry without sleeping. Held by std::shared_ptr so a cache that reads it
// keeps it alive without touching Python reference counts.
#include <memory>

#include <pybind11/pybind11.h>

#include "absl/time/time.h"
#include "bindings.h"
#include "ferry/base/clock.h"
#include "python_object.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {

void RegisterManualClock(py::module_& m) {
  py::class_<ManualClock, std::shared_ptr<ManualClock>>(m, "ManualClock", R"doc(
A clock that moves only when told to: pass it to TtlCache(clock=...) and
advance() it to expire entries in tests, without sleeping.)doc")
      .def(py::init([](double start) {
             return std::make_shared<ManualClock>(absl::UnixEpoch() + absl::Seconds(start));
           }),
           py::arg("start") = 3600.0, "Starts at `start` seconds (an arbitrary epoch).")
      .def(
          "now", [](const ManualClock& c) { return absl::ToDoubleSeconds(c.Now() - absl::UnixEpoch()); },
          "The current time in seconds.")
      .def(
          "advance",
          [](ManualClock& c, const py::object& by) {
            const absl::Duration d = DurationFromPython(by, "ManualClock.advance");
            if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
              ThrowStatus(absl::InvalidArgumentError("ManualClock.advance: by an infinite time"));
            }
            c.Advance(d);
          },
          py::arg("by"), "Moves the clock forward by `by` (seconds or a timedelta).")
      .def(
          "set",
          [](ManualClock& c, double seconds) { c.Set(absl::UnixEpoch() + absl::Seconds(seconds)); },
          py::arg("seconds"), "Sets the time to `seconds`.");
}

}  // namespace ferry::python
