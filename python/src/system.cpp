// SPDX-License-Identifier: Apache-2.0
// The rest of the public API a Python user needs: the version, backend status, the machine report
// (probe(), as JSON for info()), named POSIX shm (edgetensor.shm), the CUDA report (edgetensor.cuda) and
// headless GL contexts for PBO tensors (edgetensor.gl).
#include "bindings.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

namespace etpy {
namespace {

void bind_shm(py::module_& shm) {
  shm.doc() = "Named POSIX shared memory objects (/dev/shm): create one with allocate(..., memory='shm', "
              "shm_name='/name').";
  shm.def(
      "open",
      [](const std::string& name, const py::handle& shape, const py::handle& dtype, bool read_only,
         bool allow_shrinkable) {
        auto s = to_shape(shape);
        auto d = to_dtype(dtype);
        et::ImportOptions o;
        o.allow_shrinkable = allow_shrinkable;
        return unwrap(et::shm::open(name, s, d, read_only, o));
      },
      py::arg("name"), py::arg("shape"), py::arg("dtype"), py::arg("read_only") = false, py::kw_only(),
      py::arg("allow_shrinkable") = false,
      "Opens an existing named object as a tensor (the library owns the fd it opens). A named object can "
      "never be sealed, so any process that can open it can truncate it, killing this one with SIGBUS: open "
      "refuses (InvalidArgumentError) unless allow_shrinkable=True, for trusted writers only. "
      "NotFoundError, PermissionDeniedError, OutOfRangeError (object too small).");
  shm.def(
      "remove", [](const std::string& name) { unwrap(et::shm::remove(name)); }, py::arg("name"),
      "Removes a named object (shm_unlink); live tensors stay valid. NotFoundError when absent.");
}

void bind_cuda(py::module_& cuda) {
  cuda.doc() = "CUDA availability and the runtime's report. The runtime is loaded with dlopen on first use "
               "(EDGETENSOR_CUDART, EDGETENSOR_DISABLE_CUDA; edgetensor/cuda.h).";
  py::class_<et::cuda::DeviceInfo>(cuda, "DeviceInfo")
      .def_readonly("ordinal", &et::cuda::DeviceInfo::ordinal)
      .def_readonly("name", &et::cuda::DeviceInfo::name)
      .def_readonly("total_memory_bytes", &et::cuda::DeviceInfo::total_memory_bytes)
      .def_readonly("compute_capability_major", &et::cuda::DeviceInfo::compute_capability_major)
      .def_readonly("compute_capability_minor", &et::cuda::DeviceInfo::compute_capability_minor)
      .def_readonly("integrated", &et::cuda::DeviceInfo::integrated)
      .def_readonly("can_map_host_memory", &et::cuda::DeviceInfo::can_map_host_memory);
  using S = et::cuda::RuntimeReport;
  py::class_<S>(cuda, "RuntimeReport", "What the CUDA runtime offers this process (edgetensor/cuda.h, "
                                       "cuda::RuntimeReport).")
      .def_readonly("available", &S::available)
      .def_readonly("error", &S::error, "Why unavailable; empty when available.")
      .def_readonly("runtime_file", &S::runtime_file)
      .def_readonly("runtime_version", &S::runtime_version, "1000 * major + 10 * minor (13000 = 13.0).")
      .def_readonly("driver_version", &S::driver_version)
      .def_readonly("device_count", &S::device_count)
      .def_readonly("devices", &S::devices)
      .def_readonly("unavailable_paths", &S::unavailable_paths)
      .def_readonly("forked_child", &S::forked_child)
      .def("summary", &S::summary)
      .def("__repr__", [](const S& s) { return "<edgetensor.cuda.RuntimeReport " + s.summary() + ">"; });
  cuda.def(
      "report",
      [] {
        py::gil_scoped_release release;  // the first call loads the runtime and asks the driver
        return et::cuda::report();
      },
      "The runtime's report; never raises.");
  cuda.def(
      "available",
      [] {
        py::gil_scoped_release release;
        return et::cuda::available();
      },
      "report().available, cheaply.");
}

void bind_gl(py::module_& gl) {
  gl.doc() = "Headless EGL/GLES contexts, each on its own worker thread, for 'gl_pbo' tensors (edgetensor/gl.h).";
  py::enum_<et::gl::Platform>(gl, "Platform")
      .value("AUTO", et::gl::Platform::Auto)
      .value("DEVICE", et::gl::Platform::Device)
      .value("SURFACELESS", et::gl::Platform::Surfaceless);
  using I = et::gl::ContextInfo;
  py::class_<I>(gl, "ContextInfo")
      .def_readonly("platform", &I::platform)
      .def_readonly("platform_detail", &I::platform_detail)
      .def_readonly("device_index", &I::device_index)
      .def_readonly("device_count", &I::device_count)
      .def_readonly("device_file", &I::device_file)
      .def_readonly("egl_library", &I::egl_library)
      .def_readonly("egl_vendor", &I::egl_vendor)
      .def_readonly("egl_version", &I::egl_version)
      .def_readonly("vendor", &I::vendor)
      .def_readonly("renderer", &I::renderer)
      .def_readonly("version", &I::version);
  py::class_<et::gl::Context, std::shared_ptr<et::gl::Context>>(
      gl, "Context",
      "A headless GLES 3 context on a worker thread. Pass it as allocate(..., memory='gl_pbo', gl_context=ctx). "
      "Tensors do not keep it alive: keep a reference while its PBO tensors are used. Maps of its PBOs wait "
      "on its thread with the GIL released.")
      .def_static(
          "create",
          [](et::gl::Platform platform, int device_index, double timeout_s, std::string egl_library) {
            et::gl::ContextOptions o;
            o.platform = platform;
            o.device_index = device_index;
            o.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000.0));
            o.egl_library = std::move(egl_library);
            return released([&] { return et::gl::Context::create(o); });
          },
          py::arg("platform") = et::gl::Platform::Auto, py::arg("device_index") = -1, py::arg("timeout_s") = 10.0,
          py::arg("egl_library") = "",
          "Starts the worker thread and makes the context (GIL released). UnavailableError without a headless "
          "EGL platform.")
      .def_property_readonly("info", &et::gl::Context::info, py::return_value_policy::copy);
}

}  // namespace

void bind_system(py::module_& m) {
  m.attr("__version__") = std::string(et::version());
  py::class_<et::BackendStatus>(m, "BackendStatus", "Whether a backend can allocate here, and why not.")
      .def_readonly("kind", &et::BackendStatus::kind)
      .def_readonly("built", &et::BackendStatus::built)
      .def_readonly("available", &et::BackendStatus::available)
      .def_readonly("detail", &et::BackendStatus::detail)
      .def("__repr__", [](const et::BackendStatus& s) {
        return "<edgetensor.BackendStatus " + std::string(et::memory_kind_name(s.kind)) +
               (s.available ? " available: " : " unavailable: ") + s.detail + ">";
      });
  m.def(
      "backend_status", [](const py::handle& kind) { return et::backend_status(to_memory_kind(kind)); },
      py::arg("kind"), "Probes one backend cheaply (no allocation).");
  m.def(
      "_probe_json",
      [] {
        py::gil_scoped_release release;  // allocations, a GL context, the CUDA runtime: about 0.1 s
        return et::probe().to_json();
      },
      "edgetensor::probe() (no cross-process round trips) as its JSON text; info() parses it.");
  auto shm = m.def_submodule("shm");
  bind_shm(shm);
  auto cuda = m.def_submodule("cuda");
  bind_cuda(cuda);
  auto gl = m.def_submodule("gl");
  bind_gl(gl);
}

}  // namespace etpy
