// ferry.TtlCache: ferry::TtlCache<std::string, CachedValue> holding Python
// objects, with Python callables as loaders.
//
// GIL discipline (the one rule that keeps this deadlock-free): no thread
// ever waits for a shard lock while holding the GIL. The cache may drop the
// last reference to a value while it holds a shard lock, and dropping a
// Python object needs the GIL (DeleteWithGil waits for it); so a GIL holder
// waiting for that shard lock would close the cycle. Hence:
//   - a hit is looked up with the GIL held only through
//     TtlCache::TryVisitFresh, which takes the shard lock only if it is
//     free, drops nothing under it (the visitor just increfs), and otherwise
//     returns false having counted nothing;
//   - everything else (the fallback of get/get_if_present, put, the
//     invalidations, stats, ...) calls into the C++ cache with the GIL
//     released.
// Loaders, the weigher and the refresh-time hook take the GIL themselves,
// on whichever thread the cache runs them (the caller that missed, or a
// Runtime blocking thread for refresh-ahead); none runs under a shard lock.
// Waiters of a single-flight load therefore wait without the GIL and the
// loading thread can take it. (InvalidateIf's predicate does take the GIL
// under a shard lock: allowed, since no GIL holder waits for one.)
//
// Why the hit path is special: a hit through pybind11's dispatch with the
// GIL released and re-taken cost ~220 ns against ~40 ns for a
// functools.lru_cache hit. get and get_if_present are therefore CPython
// METH_FASTCALL methods (FastGet) that answer the common call, one str
// that is a fresh hit, with the GIL held and no pybind11 in the way; any
// other call goes to the pybind11-bound general path. A fresh hit costs one
// UTF-8 view of the str (cached by CPython), one std::string (no allocation
// up to 15 bytes), one clock read, one hash, one try-lock and an incref.
//
// Values are CachedValue records made under the GIL by the loader wrapper,
// which also runs the Python weigher and refresh_time_for there: the C++
// hooks just read the stored numbers, so a Python exception in either
// propagates like one from the loader, and the cache never needs the GIL
// for them.
//
// Errors: the caller whose loader raised gets the original exception back
// (traceback included); callers that waited on that load get the exception
// ferry maps its status to (FileNotFoundError -> NotFound, which is cached
// negatively, and so on; see status_exceptions.h).
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bindings.h"
#include "ferry/base/clock.h"
#include "ferry/cache/ttl_cache.h"
#include "python_object.h"
#include "runtime_handle.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// One cached Python value and what the Python hooks said about it.
struct CachedValue {
  py::object object;
  int64_t weight = 1;
  absl::Duration refresh_time;  // only read when refresh_time_for was given
};
using ValuePtr = std::shared_ptr<const CachedValue>;
using Cache = TtlCache<std::string, CachedValue>;

// The Python hooks a cache was made with; shared with background reloads.
struct Hooks {
  SharedObject weigher;           // null: every entry weighs 1
  SharedObject refresh_time_for;  // null: the cache's refresh_time
};

// Makes the record for `value`, running the hooks. REQUIRES: GIL held.
// Throws py::error_already_set when a hook raises.
ValuePtr MakeValue(const Hooks& hooks, const std::string& key, py::object value) {
  auto v = std::unique_ptr<CachedValue>(new CachedValue{std::move(value)});
  if (hooks.weigher != nullptr) {
    const int64_t w = (*hooks.weigher)(key, v->object).cast<int64_t>();
    if (w < 0) {
      ThrowStatus(absl::InvalidArgumentError(
          absl::StrCat("TtlCache weigher for \"", key, "\" returned ", w, " (must be >= 0)")));
    }
    v->weight = w;
  }
  if (hooks.refresh_time_for != nullptr) {
    v->refresh_time = DurationFromPython((*hooks.refresh_time_for)(key, v->object),
                                         "TtlCache refresh_time_for");
  }
  return ValuePtr(v.release(), &DeleteWithGil<const CachedValue>);
}

// The loader handed to the C++ cache: calls a Python callable with the GIL.
//
// `raised` points at the calling frame's slot for the original exception.
// A copy (what the cache hands to the executor for refresh-ahead) has no
// caller to raise to, so copies do not record.
class PyLoader {
 public:
  PyLoader(SharedObject fn, std::shared_ptr<const Hooks> hooks,
           std::optional<py::error_already_set>* raised)
      : fn_(std::move(fn)), hooks_(std::move(hooks)), raised_(raised) {}
  PyLoader(const PyLoader& other) : fn_(other.fn_), hooks_(other.hooks_), raised_(nullptr) {}
  PyLoader& operator=(const PyLoader&) = delete;

  absl::StatusOr<ValuePtr> operator()(const std::string& key) const {
    if (PyGILState_Check() == 0 && InterpreterFinalizing()) {
      return absl::CancelledError(
          absl::StrCat("TtlCache loader for \"", key, "\": the interpreter is shutting down"));
    }
    py::gil_scoped_acquire gil;
    try {
      return MakeValue(*hooks_, key, (*fn_)(key));
    } catch (py::error_already_set& e) {
      absl::Status status = StatusFromPython(e, absl::StrCat("TtlCache loader for \"", key, "\""));
      if (raised_ != nullptr) raised_->emplace(e);
      return status;
    }
  }

 private:
  SharedObject fn_;
  std::shared_ptr<const Hooks> hooks_;
  std::optional<py::error_already_set>* raised_;
};

// The Python object ferry.TtlCache.
class PyTtlCache {
 public:
  PyTtlCache(Cache::Options options, SharedObject default_loader, std::shared_ptr<const Hooks> hooks,
             std::shared_ptr<ManualClock> clock)
      : default_loader_(std::move(default_loader)),
        hooks_(std::move(hooks)),
        clock_(std::move(clock)),
        cache_(std::make_unique<Cache>(std::move(options))) {}
  PyTtlCache(const PyTtlCache&) = delete;
  PyTtlCache& operator=(const PyTtlCache&) = delete;
  ~PyTtlCache() {
    // Waits for background reloads, which need the GIL to finish.
    py::gil_scoped_release nogil;
    cache_.reset();
  }

  py::object Get(const std::string& key, const py::object& loader) {
    if (ValuePtr hit = cache_->TryGetFresh(key)) return hit->object;
    SharedObject fn = loader.is_none() ? default_loader_ : Share(loader);
    if (fn == nullptr) {
      throw py::type_error("TtlCache.get: no loader; pass one, or make the cache with loader=");
    }
    std::optional<py::error_already_set> raised;
    absl::StatusOr<ValuePtr> r;
    {
      const PyLoader l(std::move(fn), hooks_, &raised);
      py::gil_scoped_release nogil;
      r = cache_->Get(key, l);
    }
    if (!r.ok()) {
      if (raised.has_value()) throw *raised;  // this call ran the loader: its own exception
      ThrowStatus(r.status());
    }
    return (*r)->object;
  }

  py::object GetIfPresent(const std::string& key, const py::object& default_value) {
    ValuePtr v = cache_->TryGetFresh(key);
    if (v == nullptr) {
      py::gil_scoped_release nogil;
      v = cache_->GetIfPresent(key);
    }
    return v == nullptr ? default_value : v->object;
  }

  void Put(const std::string& key, py::object value, const py::object& refresh_time) {
    ValuePtr v = MakeValue(*hooks_, key, std::move(value));
    std::optional<absl::Duration> ttl;
    if (!refresh_time.is_none()) ttl = DurationFromPython(refresh_time, "TtlCache.put refresh_time");
    py::gil_scoped_release nogil;
    if (ttl) {
      cache_->Put(key, std::move(v), *ttl);
    } else {
      cache_->Put(key, std::move(v));
    }
  }

  size_t InvalidateIf(const py::object& pred) {
    std::optional<py::error_already_set> raised;
    size_t n;
    {
      py::gil_scoped_release nogil;
      n = cache_->InvalidateIf([&](const std::string& key) {
        py::gil_scoped_acquire gil;
        if (raised.has_value()) return false;  // stop matching after an error
        try {
          return pred(key).cast<bool>();
        } catch (py::error_already_set& e) {
          raised.emplace(e);
          return false;
        }
      });
    }
    if (raised.has_value()) throw *raised;
    return n;
  }

  // A fresh hit for `key`, or null (no Python error set) when the caller
  // must take the general path: `key` is not a str, or not a fresh hit, or
  // its shard is busy. Called with the GIL held: TryVisitFresh never waits.
  PyObject* TryHit(PyObject* key) {
    if (!PyUnicode_Check(key)) return nullptr;
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(key, &size);
    if (utf8 == nullptr) {  // e.g. a lone surrogate: the general path raises
      PyErr_Clear();
      return nullptr;
    }
    // An incref under the shard lock (the GIL is held, and an incref runs
    // no Python code) spares a shared_ptr copy's two atomic operations.
    PyObject* hit = nullptr;
    cache_->TryVisitFresh(std::string(utf8, static_cast<size_t>(size)),
                          [&hit](const ValuePtr& v) { hit = v->object.inc_ref().ptr(); });
    return hit;
  }

  // Runs `fn(cache)` with the GIL released.
  template <typename Fn>
  auto Call(Fn fn) {
    py::gil_scoped_release nogil;
    return fn(*cache_);
  }

 private:
  const SharedObject default_loader_;
  const std::shared_ptr<const Hooks> hooks_;
  const std::shared_ptr<ManualClock> clock_;  // read by cache_: outlives it
  std::unique_ptr<Cache> cache_;
};

std::unique_ptr<PyTtlCache> MakeCache(const py::object& loader, const py::object& refresh_time,
                                      const py::object& refresh_after,
                                      const py::object& negative_refresh_time,
                                      int64_t max_entries, const py::object& max_weight,
                                      const py::object& weigher, const py::object& refresh_time_for,
                                      const py::object& runtime,
                                      std::shared_ptr<ManualClock> clock, int shards) {
  Cache::Options o;
  o.refresh_time = DurationFromPython(refresh_time, "TtlCache refresh_time");
  o.refresh_after = DurationFromPython(refresh_after, "TtlCache refresh_after");
  o.negative_refresh_time =
      DurationFromPython(negative_refresh_time, "TtlCache negative_refresh_time");
  o.max_entries = max_entries;
  o.max_weight = max_weight.is_none() ? Cache::kUnbounded : max_weight.cast<int64_t>();
  o.shards = shards;
  o.clock = clock.get();
  auto hooks = std::make_shared<Hooks>();
  if (!weigher.is_none()) {
    hooks->weigher = Share(weigher);
    o.weigher = [](const std::string&, const CachedValue& v) { return v.weight; };
  }
  if (!refresh_time_for.is_none()) {
    hooks->refresh_time_for = Share(refresh_time_for);
    o.refresh_time_for = [](const std::string&, const CachedValue& v) { return v.refresh_time; };
  }
  if (!runtime.is_none()) {
    // The Runtime's blocking pool runs refresh-ahead reloads; once the
    // Runtime is closed they are dropped and entries simply expire.
    std::shared_ptr<RuntimeHandle> h = HandleOf(runtime);
    o.executor = [h](absl::AnyInvocable<void()> fn) { h->PostBlocking(std::move(fn)); };
  }
  return std::make_unique<PyTtlCache>(std::move(o), loader.is_none() ? nullptr : Share(loader),
                                      std::move(hooks), std::move(clock));
}

// The C++ object of a ferry.TtlCache (or subclass) instance; null if its
// __init__ never ran. CPython's method descriptor has already checked that
// `self` is one, so it has pybind11's instance layout.
PyTtlCache* CacheOf(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  return inst->get_value_and_holder().value_ptr<PyTtlCache>();
}

// Calls the pybind11-bound method `name` of `self` with the same arguments:
// the general path, with pybind11's argument checks and error messages.
PyObject* Forward(PyObject* self, const char* name, PyObject* const* args, size_t nargsf,
                  PyObject* kwnames) {
  PyObject* method = PyObject_GetAttrString(self, name);
  if (method == nullptr) return nullptr;
  PyObject* r = PyObject_Vectorcall(method, args, nargsf, kwnames);
  Py_DECREF(method);
  return r;
}

// TtlCache.get and get_if_present as CPython METH_FASTCALL methods. A hit
// through pybind11's generic dispatch (argument loaders, overload walk,
// casting) cost more than the whole C++ lookup; so the common call, one
// positional str that is a fresh hit, is answered here with the GIL held,
// and every other call (a loader or default given, keywords, a miss, a busy
// shard) goes on unchanged to the pybind11 method `_get` /
// `_get_if_present`, which tries the hit again and then takes the
// GIL-released path. A failed TryHit counts nothing, so each call counts one
// hit, negative hit or miss either way.
PyObject* FastGet(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == nullptr) {
    try {
      PyTtlCache* cache = CacheOf(self);
      if (cache != nullptr) {
        if (PyObject* hit = cache->TryHit(args[0])) return hit;
      }
    } catch (const std::bad_alloc&) {  // the key's std::string
      return PyErr_NoMemory();
    }
  }
  return Forward(self, "_get", args, static_cast<size_t>(nargsf), kwnames);
}

PyObject* FastGetIfPresent(PyObject* self, PyObject* const* args, Py_ssize_t nargsf,
                           PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if ((nargs == 1 || nargs == 2) && kwnames == nullptr) {
    try {
      PyTtlCache* cache = CacheOf(self);
      if (cache != nullptr) {
        if (PyObject* hit = cache->TryHit(args[0])) return hit;
      }
    } catch (const std::bad_alloc&) {
      return PyErr_NoMemory();
    }
  }
  return Forward(self, "_get_if_present", args, static_cast<size_t>(nargsf), kwnames);
}

// Adds `def` to `cls` as a method (a method_descriptor, as for a C type's
// own methods). `def` must outlive the type: CPython keeps the pointer.
void AddFastMethod(py::handle cls, PyMethodDef* def) {
  py::object descr = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def));
  if (!descr) throw py::error_already_set();
  py::setattr(cls, def->ml_name, descr);
}

}  // namespace

void RegisterTtlCache(py::module_& m) {
  py::class_<TtlCacheStats> stats(m, "TtlCacheStats", "What a TtlCache counted since it was made.");
  for (const auto& [name, counter] : kTtlCacheCounters) stats.def_readonly(name, counter);
  stats
      .def("_asdict",
           [](const TtlCacheStats& s) {
             py::dict d;
             for (const auto& [name, counter] : kTtlCacheCounters) d[name] = s.*counter;
             return d;
           })
      .def("__eq__",
           [](const TtlCacheStats& a, const py::object& b) {
             return py::isinstance<TtlCacheStats>(b) &&
                    py::cast(a).attr("_asdict")().equal(b.attr("_asdict")());
           })
      .def("__repr__", [](const TtlCacheStats& s) {
        std::string fields;
        for (const auto& [name, counter] : kTtlCacheCounters) {
          absl::StrAppend(&fields, fields.empty() ? "" : ", ", name, "=", s.*counter);
        }
        return absl::StrCat("TtlCacheStats(", fields, ")");
      });

  const Cache::Options defaults;
  py::class_<PyTtlCache> cls(m, "TtlCache", R"doc(
A thread-safe, bounded TTL cache of Python objects keyed by str (paths),
with single-flight loading: concurrent misses on one key run the loader
once, in one thread, and the others wait (without the GIL) for its value
or its error.

    cache = ferry.TtlCache(lambda path: stat_from_server(path), refresh_time=30)
    st = cache.get("/zone/home/alice/file")
    cache.invalidate_prefix("/zone/home/alice")

Loaders are called as loader(key) with the GIL held. A loader that raises
FileNotFoundError (or ferry.NotFoundError) caches the miss for
`negative_refresh_time`; other exceptions are not cached. The call that ran
the loader gets its exception back unchanged; calls that waited for it get
ferry's exception for the same status (ferry.Error subclasses; the message
names the key and the exception).

Times are seconds (int/float) or datetime.timedelta; None means never.
Refresh-ahead (`refresh_after`) needs `runtime`: reloads then run on its
blocking threads. max_weight bounds the sum of `weigher(key, value)`.
)doc");
  cls.def(py::init(&MakeCache), py::arg("loader") = py::none(), py::kw_only(),
           py::arg("refresh_time") = DurationToSeconds(defaults.refresh_time),
           py::arg("refresh_after") = py::none(),
           py::arg("negative_refresh_time") = DurationToSeconds(defaults.negative_refresh_time),
           py::arg("max_entries") = defaults.max_entries, py::arg("max_weight") = py::none(),
           py::arg("weigher") = py::none(), py::arg("refresh_time_for") = py::none(),
           py::arg("runtime") = py::none(), py::arg("clock") = nullptr,
           py::arg("shards") = defaults.shards)
      .def("put", &PyTtlCache::Put, py::arg("key"), py::arg("value"),
           py::arg("refresh_time") = py::none(), R"doc(
Stores `value` for `key`, replacing any entry and superseding a load in
flight. `refresh_time`: this entry's own time (math.inf: until evicted);
None: the cache's (or refresh_time_for's).)doc")
      .def(
          "invalidate",
          [](PyTtlCache& c, const std::string& key) {
            return c.Call([&](Cache& cache) { return cache.Invalidate(key); });
          },
          py::arg("key"), "Drops `key`'s entry and any load of it in flight. True if there was one.")
      .def(
          "invalidate_prefix",
          [](PyTtlCache& c, const std::string& prefix) {
            return c.Call([&](Cache& cache) { return cache.InvalidatePrefix(prefix); });
          },
          py::arg("prefix"), R"doc(
Drops the entry for the path `prefix` and every entry below it ("/a/b"
drops "/a/b" and "/a/b/c", not "/a/bc"). Returns how many.)doc")
      .def("invalidate_if", &PyTtlCache::InvalidateIf, py::arg("predicate"), R"doc(
Drops every entry whose key satisfies predicate(key). The predicate runs
under a cache lock: it must be quick and must not use this cache.)doc")
      .def(
          "invalidate_all",
          [](PyTtlCache& c) { return c.Call([](Cache& cache) { return cache.InvalidateAll(); }); },
          "Drops every entry and supersedes every load in flight. Returns how many.")
      .def(
          "purge_expired",
          [](PyTtlCache& c) { return c.Call([](Cache& cache) { return cache.PurgeExpired(); }); },
          "Drops the entries whose time is up. Returns how many.")
      .def("stats",
           [](PyTtlCache& c) { return c.Call([](Cache& cache) { return cache.stats(); }); })
      .def("__len__",
           [](PyTtlCache& c) {
             return c.Call([](Cache& cache) { return static_cast<size_t>(cache.size()); });
           })
      .def_property_readonly(
          "weight", [](PyTtlCache& c) { return c.Call([](Cache& cache) { return cache.weight(); }); })
      .def_property_readonly("shard_count", [](PyTtlCache& c) {
        return c.Call([](Cache& cache) { return cache.shard_count(); });
      });

  // The general paths of get and get_if_present (see FastGet), stored as
  // _get / _get_if_present but named get / get_if_present, so that argument
  // errors name the method the caller called.
  cls.attr("_get") = py::cpp_function(
      &PyTtlCache::Get, py::name("get"), py::is_method(cls), py::arg("key"),
      py::arg("loader") = py::none());
  cls.attr("_get_if_present") = py::cpp_function(
      &PyTtlCache::GetIfPresent, py::name("get_if_present"), py::is_method(cls), py::arg("key"),
      py::arg("default") = py::none());

  // CPython keeps pointers to these for as long as the type lives (the
  // process): a constant table, as every C extension type's methods are.
  static PyMethodDef fast_methods[] = {
      {"get", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FastGet)),
       METH_FASTCALL | METH_KEYWORDS,
       "get($self, /, key, loader=None)\n--\n\n"
       "The value for `key`, loading it with `loader` (or the cache's loader) on a\n"
       "miss. Raises what the load raised (see the class docs)."},
      {"get_if_present",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FastGetIfPresent)),
       METH_FASTCALL | METH_KEYWORDS,
       "get_if_present($self, /, key, default=None)\n--\n\n"
       "The cached value for `key`, or `default` when absent, expired or cached as not\n"
       "found. Never loads."},
  };
  for (PyMethodDef& def : fast_methods) AddFastMethod(cls, &def);
}

}  // namespace ferry::python
