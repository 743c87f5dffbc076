// SPDX-License-Identifier: Apache-2.0
// Shared declarations of the native module edgetensor._edgetensor (python/src/*.cpp).
//
// The binding layer only binds: it converts Python values to C++ ones (convert.cpp), calls the public
// C++ API, and turns an Error into the matching Python exception (errors.cpp). GIL rules: a call that
// may block (IPC, waits on the GL thread, CUDA synchronisation, map creation, which may wait on the GL
// thread) runs with the GIL released, and touches no Python object meanwhile.
#pragma once

#include <edgetensor/edgetensor.h>

#include <pybind11/pybind11.h>

#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace etpy {

namespace py = pybind11;
namespace et = edgetensor;

// ---- errors.cpp ---------------------------------------------------------------------------------
/// Creates edgetensor.Error and its subclasses, and edgetensor.ErrorCode, in `m`.
void bind_errors(py::module_& m);
/// Raises the Python exception for `error` (its code's class; message = the library's message).
[[noreturn]] void raise(const et::Error& error);
/// Raises edgetensor.DLPackError (also a BufferError) carrying `error`'s code, errno and message: the
/// exception the DLPack protocol asks for.
[[noreturn]] void raise_dlpack(const et::Error& error);
/// A bad argument found by the binding itself (unknown dtype or memory name, negative dimension):
/// edgetensor.InvalidArgumentError, an edgetensor.Error and a ValueError, as the library's own are.
[[noreturn]] inline void raise_invalid(const std::string& message) {
  raise(et::Error(et::ErrorCode::InvalidArgument, message));
}

template <class T>
T unwrap(et::Result<T>&& result) {
  if (!result) raise(result.error());
  return std::move(*result);
}
inline void unwrap(et::Result<void>&& result) {
  if (!result) raise(result.error());
}

/// Runs `fn` (returning an et::Result) with the GIL released when `release` (a call that may block:
/// IPC, a wait on the GL thread or a device), then unwraps its result with the GIL held. `fn` touches
/// no Python object, except through a callback that takes the GIL itself; an exception such a callback
/// left set (a signal handler's KeyboardInterrupt) is raised instead of the call's error.
template <class Fn>
auto released(Fn&& fn, bool release = true) {
  std::optional<std::invoke_result_t<Fn>> result;
  {
    std::optional<py::gil_scoped_release> unlocked;
    if (release) unlocked.emplace();
    result.emplace(fn());
  }
  if (!*result && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return unwrap(std::move(*result));
}

/// Runs Python's signal handlers (takes the GIL): a wait's interruption check (ipc's on_interrupt,
/// PoolOptions::on_wait). An exception a handler raised (Ctrl-C: KeyboardInterrupt) stays set and the
/// check fails, which ends the wait; released() then raises that exception.
inline et::Result<void> run_signal_handlers() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return {};
  return et::fail(et::ErrorCode::Internal, "edgetensor: a signal handler raised");
}

// ---- convert.cpp --------------------------------------------------------------------------------
/// A dtype from a numpy name ("float32"), our name ("f32"), a numpy.dtype, a numpy scalar type or
/// anything numpy.dtype() accepts, or an edgetensor.DType. ValueError / TypeError naming the value.
et::DType to_dtype(const py::handle& obj);
/// numpy's name of `dtype` ("float32"; "bfloat16" for BF16).
const char* numpy_name(et::DType dtype);
/// The PEP 3118 format of one element ("B", "f", ...; BF16: "T{H:bf16:}", a struct of one uint16).
const char* buffer_format(et::DType dtype);
/// The numpy.dtype of `dtype` (imports numpy; BF16: the struct dtype matching buffer_format).
py::object numpy_dtype(et::DType dtype);
/// A MemoryKind from an edgetensor.MemoryKind or its name ("shm", "dmabuf", ...).
et::MemoryKind to_memory_kind(const py::handle& obj);
/// A PixelFormat from an edgetensor.PixelFormat or its name ("nv12").
et::PixelFormat to_pixel_format(const py::handle& obj);
/// A shape from an int or a sequence of ints (anything with __index__). ValueError for a negative one.
std::vector<std::size_t> to_shape(const py::handle& obj, const char* what = "shape");
/// An integer argument `name` as T: TypeError for a non-int (anything with __index__ is one), OverflowError
/// naming the parameter, the value and T's range for one outside it (pybind11's own conversion would
/// answer "incompatible function arguments" with the whole signature).
template <class T>
T int_arg(const py::handle& obj, const char* name);
/// As int_arg, None giving nullopt.
template <class T>
std::optional<T> optional_int_arg(const py::handle& obj, const char* name) {
  if (obj.is_none()) return std::nullopt;
  return int_arg<T>(obj, name);
}
/// Byte strides from a sequence of ints (negative allowed here; the library refuses them by name).
std::vector<std::int64_t> to_strides(const py::handle& obj);
/// An fd from an int or an object with fileno() (socket.socket, a file): borrowed.
int to_fd(const py::handle& obj);
/// A timeout in seconds (int or float, as Python's socket and threading take it) as whole milliseconds,
/// rounded up (a short positive timeout still waits; 0 does not wait); nullopt for None (no bound) and
/// for one too large to count. TypeError for another type; InvalidArgumentError for a negative or NaN one.
std::optional<std::chrono::milliseconds> to_timeout_ms(const py::object& seconds);
py::tuple to_tuple(const auto& values) {
  py::tuple t(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) t[i] = py::int_(values[i]);
  return t;
}

/// The Python member name of an enum value from the library's name of it: upper case, with `_` where
/// a word starts ("bt709" -> BT709, "gl_pbo" -> GL_PBO, "InvalidArgument" -> INVALID_ARGUMENT).
inline std::string enum_member_name(std::string_view name) {
  std::string s;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (i > 0 && std::isupper(c) && std::islower(static_cast<unsigned char>(name[i - 1]))) s += '_';
    s += static_cast<char>(std::toupper(c));
  }
  return s;
}

/// An enum whose C++ values run from `first` up to the first one the library's `name` function calls
/// `end` ("invalid", "Unknown"): members are enum_member_name of those names.
template <class E>
py::enum_<E> bind_named_enum(py::module_& m, const char* py_name, const char* doc, std::string_view (*name)(E),
                             unsigned first = 0, std::string_view end = "invalid") {
  py::enum_<E> e(m, py_name, doc);
  for (unsigned v = first;; ++v) {
    const std::string_view n = name(static_cast<E>(v));
    if (n == end) break;
    e.value(enum_member_name(n).c_str(), static_cast<E>(v));
  }
  return e;
}

// ---- the other binding units --------------------------------------------------------------------
void bind_enums(py::module_& m);     // convert.cpp: DType, MemoryKind
void bind_image(py::module_& m);     // image.cpp: PixelFormat, ImageLayout, Colorimetry, Quantization
void bind_tensor(py::module_& m);    // tensor.cpp: Tensor, allocate, import_fd, ...
void bind_map(py::module_& m);       // map.cpp: Map (context manager, buffer protocol)
void bind_frame(py::module_& m);     // frame.cpp: Frame
void bind_pool(py::module_& m);      // pool.cpp: Pool, PoolStats
void bind_ipc(py::module_& ipc);     // ipc.cpp: edgetensor.ipc
void bind_channel(py::module_& ch);  // channel.cpp: edgetensor.channel
void bind_system(py::module_& m);    // system.cpp: edgetensor.shm, edgetensor.cuda, edgetensor.gl, versions
/// dlpack.cpp: Tensor.__dlpack__, Tensor.__dlpack_device__, edgetensor.from_dlpack.
void bind_dlpack(py::module_& m, py::class_<et::TensorDyn>& tensor);
/// fence.cpp: Fence, FenceAccess, FenceStatus, FenceInfo, Tensor.export_fence / import_fence.
void bind_fence(py::module_& m, py::class_<et::TensorDyn>& tensor);

/// Whether a CPU map (or its end) of `kind` may wait: on the GL thread (PBO) or on DMA-BUF fences
/// (DMA_BUF_IOCTL_SYNC). Those run with the GIL released; heap, shm and foreign maps make no call
/// that can block, and skip the release (it costs more than the map).
inline bool map_may_block(et::MemoryKind kind) {
  return kind == et::MemoryKind::DmaBuf || kind == et::MemoryKind::GlPbo;
}

/// Map.__new__ for Tensor.map_read/map_write/map_read_write (map.cpp): maps with the GIL released
/// where map_may_block. timeout: seconds (to_timeout_ms; None: no bound), MapOptions::timeout.
py::object make_map(const et::TensorDyn& tensor, et::MapMode mode, const py::object& timeout);

}  // namespace etpy
