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

#include <array>
#include <cstring>
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

// An unconsumed capsule frees its export when collected; a renamed (consumed) one belongs to its consumer.
template <class Managed>
void capsule_destructor(PyObject* capsule) {
  const char* name = std::is_same_v<Managed, dl::ManagedTensorVersioned> ? kVersionedName : kLegacyName;
  if (!PyCapsule_IsValid(capsule, name)) return;  // consumed (renamed): not ours any more
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

// Copies `src`'s elements into the C-contiguous `dst` (same shape and dtype) through CPU maps, one
// memcpy per run of `src` that is contiguous in memory (the innermost dims whose byte strides are those of
// a C-contiguous tensor; a dim of size 1 never breaks a run).
void copy_elements(const et::TensorDyn& src, const et::TensorDyn& dst) {
  if (src.element_count() == 0) return;
  auto in = unwrap(src.map_read());
  auto out = unwrap(dst.map_write());
  std::size_t outer = src.rank();  // dims [outer, rank) form one contiguous run of `run` bytes
  std::size_t run = src.element_size();
  while (outer > 0 && (src.shape()[outer - 1] == 1 || static_cast<std::size_t>(src.strides()[outer - 1]) == run)) {
    run *= src.shape()[outer - 1];
    --outer;
  }
  std::array<std::size_t, et::kMaxRank> index{};
  const std::size_t runs = src.element_count() * src.element_size() / run;
  for (std::size_t k = 0; k < runs; ++k) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < outer; ++d) offset += index[d] * static_cast<std::size_t>(src.strides()[d]);
    std::memcpy(out.data() + k * run, in.data() + offset, run);
    for (std::size_t d = outer; d-- > 0;) {
      if (++index[d] < src.shape()[d]) break;
      index[d] = 0;
    }
  }
}

py::object dlpack(const et::TensorDyn& self, const py::object& stream, const py::object& max_version,
                  const py::object& dl_device, const py::object& copy) {
  bool versioned = false;
  if (!max_version.is_none()) {
    auto v = max_version.cast<std::pair<int, int>>();
    versioned = v.first >= 1;
  }
  dl::ExportOptions options;
  if (!dl_device.is_none()) {
    auto d = dl_device.cast<std::pair<int, int>>();
    if (d.first == kDLCUDA && d.second >= 0) {
      options.device = dl::ExportDevice::Cuda;
      options.cuda.device = d.second;
    } else if (!(d.first == kDLCPU && d.second == 0)) {
      throw py::buffer_error("edgetensor.Tensor.__dlpack__: dl_device (" + std::to_string(d.first) + ", " +
                             std::to_string(d.second) + ") cannot be served: a tensor exports to kDLCPU (1, 0), or "
                             "to kDLCUDA (2, n) through a CUDA device view");
    }
  }
  // stream (array API standard): None or -1 on the CPU; on CUDA an int >= -1 where 0 is ambiguous and
  // refused. No export here leaves producer work pending on any stream (CPU writes end with their map;
  // cuda::map's registration and GL map are complete when it returns), so no wait is needed.
  if (!stream.is_none()) {
    auto s = stream.cast<long long>();
    if (options.device == dl::ExportDevice::Cpu && s != -1)
      throw py::value_error("edgetensor.Tensor.__dlpack__: stream " + std::to_string(s) +
                            " for a kDLCPU export: only None (or -1) is accepted");
    if (options.device == dl::ExportDevice::Cuda && (s == 0 || s < -1))
      throw py::value_error("edgetensor.Tensor.__dlpack__: stream " + std::to_string(s) +
                            " is not a CUDA stream (0 is ambiguous; use None, -1, 1, 2 or a cudaStream_t)");
  }
  const bool make_copy = !copy.is_none() && copy.cast<bool>();
  if (make_copy && options.device == dl::ExportDevice::Cuda)
    throw py::buffer_error("edgetensor.Tensor.__dlpack__: copy=True to kDLCUDA is not supported (copy on the CPU, "
                           "then export the copy)");
  et::TensorDyn source = self;
  if (make_copy) {
    source = unwrap(et::TensorDyn::allocate(self.shape(), self.dtype(), {.memory = et::MemoryKind::Heap}));
    copy_elements(self, source);
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
  if (!*l) raise_dlpack(l->error());
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
  m.def(
      "from_dlpack", [](const py::object& obj) { return to_python(from_dlpack(obj)); }, py::arg("obj"),
        "A Tensor over the memory of any DLPack producer (numpy array, torch tensor, an object with "
        "__dlpack__, or an unconsumed capsule), without a copy. Asks for max_version=(1, 1) first and calls "
        "__dlpack__() again on TypeError. The producer stays alive until the last view, map or export of "
        "the result is gone; its deleter then runs with the GIL held (skipped once the interpreter is "
        "finalizing). Refusals (device the CPU cannot reach, lanes, unknown dtypes such as bool or complex, "
        "negative strides, misaligned data) raise DLPackError naming them.");
  m.def("_live_export_count", &dl::live_export_count, "Exports whose deleter has not run (tests).");
  m.def("_live_import_count", &dl::live_import_count, "Imports whose producer deleter has not run (tests).");
}

}  // namespace etpy
