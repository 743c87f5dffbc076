// SPDX-License-Identifier: Apache-2.0
// DLPack in Python (edgetensor/dlpack.h below it): Tensor.__dlpack__, Tensor.__dlpack_device__ and
// edgetensor.from_dlpack, as the Python array API standard (2023.12, "__dlpack__", "from_dlpack") and
// DLPack's "Python specification for DLPack" say:
//   - a capsule holds a DLManagedTensor named "dltensor" (legacy, max_version None or major < 1) or a
//     DLManagedTensorVersioned named "dltensor_versioned"; a consumer renames it "used_dltensor" /
//     "used_dltensor_versioned" when it takes ownership, and a capsule destructor calls the deleter only
//     while the name is still the unconsumed one;
//   - from_dlpack asks for max_version=(1, 1) first and falls back to the legacy call on TypeError;
//   - a foreign deleter that may touch Python objects runs with the GIL held, from whatever thread drops
//     the last view, and is skipped once the interpreter is finalizing (the memory then leaks at exit).
#include "bindings.h"

#include <edgetensor/dlpack.h>

#include <pybind11/stl.h>

#include <climits>
#include <functional>
#include <optional>

namespace etpy {
namespace {

namespace dl = et::dlpack;

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";
constexpr int kDLCPU = static_cast<int>(dl::DeviceType::Cpu);
constexpr int kDLCUDA = static_cast<int>(dl::DeviceType::Cuda);

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

std::string type_name(const py::handle& obj) { return py::str(py::type::of(obj).attr("__name__")).cast<std::string>(); }

// An unconsumed capsule frees its export when collected; a renamed (consumed) one belongs to its consumer.
template <class Managed>
void capsule_destructor(PyObject* capsule) {
  const char* name = std::is_same_v<Managed, dl::ManagedTensorVersioned> ? kVersionedName : kLegacyName;
  if (!PyCapsule_IsValid(capsule, name)) return;  // consumed (renamed): not ours any more
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (managed == nullptr || managed->deleter == nullptr) return;
  // The deleter may run Python code (a foreign producer's array goes): keep an exception being raised
  // when the capsule was collected, as the DLPack Python specification's capsule destructor does.
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* raised = PyErr_GetRaisedException();
  managed->deleter(managed);
  PyErr_SetRaisedException(raised);
#else
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
#endif
}

// The array API's argument types, checked by hand: a wrong type is a TypeError naming the parameter
// (pybind11's own cast would say "Unable to cast Python instance", a RuntimeError).

std::pair<long long, long long> int_pair(const py::object& obj, const char* what) {
  if (!PyTuple_Check(obj.ptr()) || PyTuple_GET_SIZE(obj.ptr()) != 2 || !PyIndex_Check(PyTuple_GET_ITEM(obj.ptr(), 0)) ||
      !PyIndex_Check(PyTuple_GET_ITEM(obj.ptr(), 1)))
    throw py::type_error(std::string("edgetensor.Tensor.__dlpack__: ") + what + " must be a tuple of two ints, not " +
                         py::repr(obj).cast<std::string>());
  long long a = PyLong_AsLongLong(PyTuple_GET_ITEM(obj.ptr(), 0));
  long long b = a == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(PyTuple_GET_ITEM(obj.ptr(), 1));
  if (PyErr_Occurred()) throw py::error_already_set();
  return {a, b};
}

[[noreturn]] void refuse(et::ErrorCode code, const std::string& message) {
  raise_dlpack(et::Error(code, "edgetensor.Tensor.__dlpack__: " + message));
}

py::object dlpack(const et::TensorDyn& self, const py::object& stream, const py::object& max_version,
                  const py::object& dl_device, const py::object& copy) {
  bool versioned = false;
  if (!max_version.is_none()) versioned = int_pair(max_version, "max_version").first >= 1;
  dl::ExportOptions options;
  if (!dl_device.is_none()) {
    auto d = int_pair(dl_device, "dl_device");
    if (d.first == kDLCUDA && d.second >= 0 && d.second <= INT_MAX) {
      options.device = dl::ExportDevice::Cuda;
      options.cuda.device = static_cast<int>(d.second);
    } else if (!(d.first == kDLCPU && d.second == 0)) {
      refuse(et::ErrorCode::Unsupported, "dl_device (" + std::to_string(d.first) + ", " + std::to_string(d.second) +
                                             ") cannot be served: a tensor exports to kDLCPU (1, 0), or to kDLCUDA "
                                             "(2, n) through a CUDA device view");
    }
  }
  // stream (array API standard): None or -1 on the CPU; on CUDA an int >= -1 where 0 is ambiguous and
  // refused. Heap, shm and DMA-BUF exports leave no producer work on any stream (CPU writes end with
  // their map; the import and registration are complete when cuda::map returns). A PBO export maps on
  // the legacy default stream (cudaGraphicsMapResources orders GL's work before that stream's): streams
  // 1, 2 and blocking streams follow it; a cudaStreamNonBlocking consumer stream is not ordered after
  // GL's work (docs/CUDA.md, "DLPack streams").
  if (!stream.is_none()) {
    if (!PyIndex_Check(stream.ptr()))
      throw py::type_error("edgetensor.Tensor.__dlpack__: stream must be None or an int, not " + type_name(stream));
    const long long s = PyLong_AsLongLong(stream.ptr());
    if (s == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (options.device == dl::ExportDevice::Cpu && s != -1)
      raise(et::Error(et::ErrorCode::InvalidArgument, "edgetensor.Tensor.__dlpack__: stream " + std::to_string(s) +
                                                          " for a kDLCPU export: only None (or -1) is accepted"));
    if (options.device == dl::ExportDevice::Cuda && (s == 0 || s < -1))
      raise(et::Error(et::ErrorCode::InvalidArgument,
                      "edgetensor.Tensor.__dlpack__: stream " + std::to_string(s) +
                          " is not a CUDA stream (0 is ambiguous; use None, -1, 1, 2 or a cudaStream_t)"));
  }
  if (!copy.is_none() && !PyBool_Check(copy.ptr()))
    throw py::type_error("edgetensor.Tensor.__dlpack__: copy must be None, True or False, not " + type_name(copy));
  const bool make_copy = copy.ptr() == Py_True;
  if (make_copy && options.device == dl::ExportDevice::Cuda)
    refuse(et::ErrorCode::Unsupported, "copy=True to kDLCUDA is not supported (copy on the CPU, then export the copy)");
  et::TensorDyn source = self;
  if (make_copy) {
    // A DMA-BUF or PBO map may wait.
    source = released([&] { return self.contiguous({.memory = et::MemoryKind::Heap}); }, map_may_block(self.memory()));
  }

  std::optional<et::Result<dl::ManagedTensorVersioned*>> v;
  std::optional<et::Result<dl::ManagedTensor*>> l;
  {
    // Maps may wait on the GL thread or DMA-BUF fences; cuda::map loads, registers, maps.
    std::optional<py::gil_scoped_release> release;
    if (options.device == dl::ExportDevice::Cuda || map_may_block(source.memory())) release.emplace();
    if (versioned)
      v.emplace(dl::export_versioned(source, options));
    else
      l.emplace(dl::export_legacy(source, options));
  }
  if (versioned) {
    if (!*v) raise_dlpack(v->error());
    dl::ManagedTensorVersioned* managed = **v;
    if (make_copy) managed->flags |= dl::kFlagIsCopied;
    PyObject* capsule = PyCapsule_New(managed, kVersionedName, &capsule_destructor<dl::ManagedTensorVersioned>);
    if (capsule == nullptr) {
      managed->deleter(managed);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(capsule);
  }
  if (!*l) {
    const et::Error& e = l->error();
    if (e.code() != et::ErrorCode::PermissionDenied) raise_dlpack(e);
    // The C++ message names export_versioned; a Python caller asks for the versioned form by max_version.
    raise_dlpack(et::Error(e.code(), e.message() + " (from Python: __dlpack__(max_version=(1, 0)) or newer, as "
                                                   "numpy >= 2.1 and torch >= 2.9 ask by themselves)", e.sys_errno()));
  }
  dl::ManagedTensor* managed = **l;
  PyObject* capsule = PyCapsule_New(managed, kLegacyName, &capsule_destructor<dl::ManagedTensor>);
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

// The foreign deleter runs under the GIL (it may drop a numpy array or a torch tensor), from any thread.
void run_with_gil(const std::function<void()>& call) {
  if (interpreter_finalizing()) return;  // PyGILState_Ensure would hang or kill the thread: leak instead
  PyGILState_STATE state = PyGILState_Ensure();
  call();
  PyGILState_Release(state);
}

et::TensorDyn adopt_capsule(const py::handle& capsule) {
  dl::ImportOptions options;
  options.run_deleter = &run_with_gil;
  if (PyCapsule_IsValid(capsule.ptr(), kVersionedName)) {
    auto* managed = static_cast<dl::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), kVersionedName));
    // Ownership passes now, success or failure (adopt_* has run the deleter on every error).
    if (PyCapsule_SetName(capsule.ptr(), kUsedVersionedName) != 0) throw py::error_already_set();
    auto t = dl::adopt_versioned(managed, options);
    if (!t) raise_dlpack(t.error());
    return std::move(*t);
  }
  if (PyCapsule_IsValid(capsule.ptr(), kLegacyName)) {
    auto* managed = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kLegacyName));
    if (PyCapsule_SetName(capsule.ptr(), kUsedLegacyName) != 0) throw py::error_already_set();
    auto t = dl::adopt_legacy(managed, options);
    if (!t) raise_dlpack(t.error());
    return std::move(*t);
  }
  if (!PyCapsule_CheckExact(capsule.ptr()))
    throw py::type_error("edgetensor.from_dlpack: __dlpack__() returned " + type_name(capsule) +
                         ", not a DLPack capsule (PyCapsule)");
  const char* name = PyCapsule_GetName(capsule.ptr());
  PyErr_Clear();
  throw py::buffer_error(std::string("edgetensor.from_dlpack: capsule named '") + (name ? name : "(null)") +
                         "': not an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned'; a 'used_' "
                         "one was consumed already)");
}

// Producer types whose __dlpack__ refused max_version (TypeError): called the legacy way directly
// afterwards, so the refusal is paid once per type, not per call. A type's signature does not change.
py::dict& legacy_only_types() {
  static auto* types = new py::dict();  // never destroyed: outlives no interpreter
  return *types;
}

et::TensorDyn from_dlpack(const py::object& obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return adopt_capsule(obj);
  static PyObject* const name = PyUnicode_InternFromString("__dlpack__");  // lives as long as the process
  py::object method = py::getattr(obj, py::handle(name), py::none());
  if (method.is_none())
    throw py::type_error("edgetensor.from_dlpack: " + py::str(py::type::of(obj).attr("__name__")).cast<std::string>() +
                         " has no __dlpack__ (not a DLPack producer)");
  py::handle type = py::type::of(obj);
  py::object capsule;
  if (!legacy_only_types().contains(type)) {
    // method(max_version=(1, 1)) through vectorcall: no kwargs dict per call. Both objects live as long
    // as the process.
    static PyObject* const kwnames = Py_BuildValue("(s)", "max_version");
    static PyObject* const version = Py_BuildValue("(ii)", dl::kVersion.major, dl::kVersion.minor);
    PyObject* const args[] = {version};
    capsule = py::reinterpret_steal<py::object>(PyObject_Vectorcall(method.ptr(), args, 0, kwnames));
    if (!capsule) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
      PyErr_Clear();
      legacy_only_types()[type] = true;
    }
  }
  if (!capsule) capsule = py::reinterpret_steal<py::object>(PyObject_CallNoArgs(method.ptr()));
  if (!capsule) throw py::error_already_set();
  return adopt_capsule(capsule);
}

bool is_cpu_device(const py::object& device) {
  if (py::isinstance<py::str>(device)) return device.cast<std::string>() == "cpu";
  if (PyTuple_Check(device.ptr()) && PyTuple_GET_SIZE(device.ptr()) == 2)
    return device.equal(py::make_tuple(kDLCPU, 0));
  return false;
}

// from_dlpack's result as a Python Tensor. pybind11's default return conversion looks the C++ type up
// by std::type_index (hashing and comparing its mangled name) on every call, about a tenth of a
// from_dlpack here; the type's pybind11 record is looked up once instead, and the tensor is moved into
// the new Python object exactly as the default conversion (return_value_policy::move) would.
py::object to_python(et::TensorDyn&& tensor) {
  static const py::detail::type_info* const type = py::detail::get_type_info(typeid(et::TensorDyn));
  auto move_construct = [](const void* p) -> void* {
    return new et::TensorDyn(std::move(*static_cast<et::TensorDyn*>(const_cast<void*>(p))));
  };
  return py::reinterpret_steal<py::object>(py::detail::type_caster_generic::cast(
      &tensor, py::return_value_policy::move, py::handle(), type, nullptr, move_construct));
}

// edgetensor.from_dlpack(obj, /, *, device=None, copy=None), a vectorcall function of its own: the call is
// on every frame's path, and pybind11's dispatcher (argument records, keyword matching) cost about a fifth
// of it. C++ exceptions become Python ones here, as pybind11 would translate them.
et::TensorDyn from_dlpack_with(const py::object& obj, const py::object& device, const py::object& copy) {
  if (!device.is_none() && !is_cpu_device(device))
    raise_dlpack(et::Error(et::ErrorCode::Unsupported,
                           "edgetensor.from_dlpack: device " + py::repr(device).cast<std::string>() +
                               ": an edgetensor tensor lives in CPU-reachable memory; only None, \"cpu\" or (1, 0) "
                               "(kDLCPU) can be served"));
  if (!copy.is_none() && !PyBool_Check(copy.ptr()))
    throw py::type_error("edgetensor.from_dlpack: copy must be None, True or False, not " + type_name(copy));
  et::TensorDyn t = from_dlpack(obj);
  if (copy.ptr() == Py_True) {
    // Foreign memory: its map makes no call that can wait. The producer is released with the import.
    t = unwrap(t.contiguous({.memory = et::MemoryKind::Heap}));
  }
  return t;
}

PyObject* from_dlpack_entry(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  try {
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1)
      throw py::type_error("edgetensor.from_dlpack() takes 1 positional argument (obj), " + std::to_string(nargs) +
                           " given");
    py::object device = py::none();
    py::object copy = py::none();
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i) {
      const std::string key = py::reinterpret_borrow<py::str>(PyTuple_GET_ITEM(kwnames, i)).cast<std::string>();
      py::object value = py::reinterpret_borrow<py::object>(args[nargs + i]);
      if (key == "device")
        device = value;
      else if (key == "copy")
        copy = value;
      else
        throw py::type_error("edgetensor.from_dlpack() got an unexpected keyword argument '" + key + "'");
    }
    return to_python(from_dlpack_with(py::reinterpret_borrow<py::object>(args[0]), device, copy)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

constexpr const char* kFromDlpackDoc =
    "from_dlpack(obj, /, *, device=None, copy=None)\n--\n\n"
    "A Tensor over the memory of any DLPack producer (numpy array, torch tensor, an object with "
    "__dlpack__, or an unconsumed capsule), without a copy. Asks for max_version=(1, 1) first and calls "
    "__dlpack__() again on TypeError. The producer stays alive until the last view, map or export of "
    "the result is gone; its deleter then runs with the GIL held (skipped once the interpreter is "
    "finalizing). Refusals (device the CPU cannot reach, lanes, unknown dtypes such as bool or complex, "
    "negative strides, misaligned data) raise DLPackError naming them. Array API keywords: device None, "
    "'cpu' or (1, 0) (anything else: DLPackError); copy=True copies into a new heap tensor (the producer "
    "is released at once), copy=False or None never copies.";

}  // namespace

void bind_dlpack(py::module_& m, py::class_<et::TensorDyn>& tensor) {
  tensor.def("__dlpack__", &dlpack, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
             py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
             "A DLPack capsule of this tensor (array API standard): legacy 'dltensor' when max_version is None "
             "or below 1.0, else versioned 'dltensor_versioned' (READ_ONLY for read-only storage; IS_COPIED "
             "with copy=True). copy=False and None never copy. dl_device: None or (1, 0) for kDLCPU, (2, n) "
             "for a kDLCUDA device view (cuda.map); anything else raises BufferError. The capsule holds a "
             "map and a storage reference until its consumer calls the deleter (an unconsumed capsule frees "
             "them when collected): a long-lived export keeps a PBO mapped (Busy) and a pooled buffer out of "
             "its pool. The legacy form of read-only storage is refused (DLPackError, a BufferError).");
  tensor.def(
      "__dlpack_device__", [](const et::TensorDyn&) { return py::make_tuple(kDLCPU, 0); },
      "(1, 0): kDLCPU, device 0. Every edgetensor tensor is CPU-reachable (DMA-BUF, PBO and foreign memory "
      "through a CPU map); a kDLCUDA view is asked for with __dlpack__(dl_device=(2, n)).");
  static PyMethodDef from_dlpack_def = {"from_dlpack", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&from_dlpack_entry)),
                                        METH_FASTCALL | METH_KEYWORDS, kFromDlpackDoc};
  py::object fn = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&from_dlpack_def, nullptr, m.attr("__name__").ptr()));
  if (!fn) throw py::error_already_set();
  m.add_object("from_dlpack", fn);
  m.def("_live_export_count", &dl::live_export_count, "Exports whose deleter has not run (tests).");
  m.def("_live_import_count", &dl::live_import_count, "Imports whose producer deleter has not run (tests).");
}

}  // namespace etpy
