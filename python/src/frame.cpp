// SPDX-License-Identifier: Apache-2.0
// edgetensor.Frame (edgetensor/frame.h): an image whose planes may live in separate buffers.
#include "bindings.h"

#include <pybind11/stl.h>

namespace etpy {

void bind_frame(py::module_& m) {
  py::class_<et::Frame>(m, "Frame",
                        "An image whose planes may live in separate buffers (V4L2 NV12M, libcamera's one fd "
                        "per plane). Per plane a uint8 tensor over that plane's buffer; planes given as fds of "
                        "one buffer share one storage. Make one with Frame.allocate, Frame.from_tensor, "
                        "Frame.import_planes or ipc.receive_frame.")
      .def_static(
          "allocate",
          [](const et::ImageLayout& layout, const py::handle& memory, std::string name) {
            et::AllocateOptions o;
            o.memory = to_memory_kind(memory);
            o.name = std::move(name);
            return released([&] { return et::Frame::allocate(layout, o); });
          },
          py::arg("layout"), py::kw_only(), py::arg("memory") = "auto", py::arg("name") = "",
          "Allocates an image with all planes in one buffer.")
      .def_static("from_tensor", [](const et::TensorDyn& t) { return unwrap(et::Frame::from_tensor(t)); },
                  py::arg("image"), "Wraps a single-buffer image tensor (one with an image_layout) without a copy.")
      .def_static(
          "import_planes",
          [](const py::sequence& fds, const et::ImageLayout& layout, bool allow_shrinkable) {
            std::vector<int> ints;
            for (const auto& fd : fds) ints.push_back(to_fd(fd));
            et::ImportOptions o;
            o.allow_shrinkable = allow_shrinkable;
            return released([&] { return et::Frame::import_planes_dup(ints, layout, o); });
          },
          py::arg("fds"), py::arg("layout"), py::kw_only(), py::arg("allow_shrinkable") = false,
          "Imports one borrowed fd per plane (the library dups them; the caller keeps and closes its own). "
          "Plane i lies at layout.planes[i].offset_bytes in fds[i]'s buffer.")
      .def_property_readonly("layout", &et::Frame::layout)
      .def_property_readonly("plane_count", &et::Frame::plane_count)
      .def_property_readonly("buffer_count", &et::Frame::buffer_count, "Distinct buffers (1 to plane_count).")
      .def_property_readonly("is_empty", &et::Frame::is_empty)
      .def("plane_buffer", &et::Frame::plane_buffer, py::arg("plane"), "Which buffer plane `plane` lies in.")
      .def("buffer", [](const et::Frame& f, std::size_t i) { return unwrap(f.buffer(i)); }, py::arg("index"),
           "A uint8 tensor over buffer `index` (export it, send it).")
      .def("plane", [](const et::Frame& f, std::size_t i) { return unwrap(f.plane(i)); }, py::arg("index"),
           "The view of plane `index` (Tensor.plane's shapes).")
      .def_property_readonly(
          "planes",
          [](const et::Frame& f) {
            py::tuple planes(f.plane_count());
            for (std::size_t i = 0; i < f.plane_count(); ++i) planes[i] = py::cast(unwrap(f.plane(i)));
            return planes;
          },
          "Every plane's view, in order (plane(i) each; layout.planes gives their offsets and row strides).")
      .def_property("colorimetry", &et::Frame::colorimetry, &et::Frame::set_colorimetry)
      .def(
          "export_plane_fds",
          [](const et::Frame& f) {
            auto fds = unwrap(f.export_plane_fds());
            std::vector<int> ints;
            for (auto& fd : fds) ints.push_back(fd.release());
            return ints;
          },
          "One new CLOEXEC fd per plane: the caller owns them and closes each (os.close).")
      .def("__repr__", [](const et::Frame& f) {
        return "<edgetensor.Frame " + std::string(et::pixel_format_name(f.layout().format)) + " " +
               std::to_string(f.layout().width) + "x" + std::to_string(f.layout().height) + ", " +
               std::to_string(f.buffer_count()) + " buffer(s)>";
      });
}

}  // namespace etpy
