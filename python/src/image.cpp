// SPDX-License-Identifier: Apache-2.0
// Image metadata (edgetensor/image.h, pixel_format.h, quantization.h): PixelFormat, PlaneLayout,
// ImageLayout, the colorimetry enums and Colorimetry, QuantizationKind and Quantization. Values, as in
// C++: a tensor's layout, colorimetry and quantization are read and replaced whole.
#include "bindings.h"

#include <pybind11/stl.h>

#include <cctype>
#include <string_view>

namespace etpy {
namespace {

std::string plane_repr(const et::PlaneLayout& p) {
  return "PlaneLayout(offset_bytes=" + std::to_string(p.offset_bytes) +
         ", row_stride_bytes=" + std::to_string(p.row_stride_bytes) + ")";
}

et::ImageLayout make_layout(const py::handle& format, const py::handle& width, const py::handle& height,
                            const py::sequence& planes, const py::handle& modifier) {
  et::ImageLayout layout;
  layout.format = to_pixel_format(format);
  layout.width = int_arg<std::uint32_t>(width, "width");
  layout.height = int_arg<std::uint32_t>(height, "height");
  layout.modifier = int_arg<std::uint64_t>(modifier, "modifier");
  if (planes.size() > et::kMaxPlanes)
    raise_invalid(std::to_string(planes.size()) + " planes: an image has at most 4");
  for (std::size_t i = 0; i < planes.size(); ++i) {
    py::handle p = planes[i];
    if (py::isinstance<et::PlaneLayout>(p)) {
      layout.planes[i] = p.cast<et::PlaneLayout>();
    } else {
      auto pair = p.cast<std::pair<std::size_t, std::size_t>>();
      layout.planes[i] = {pair.first, pair.second};
    }
  }
  return layout;
}

}  // namespace

void bind_image(py::module_& m) {
  py::enum_<et::PixelFormat> pixel_format(m, "PixelFormat",
                                    "Pixel formats, named by their bytes in memory (edgetensor/pixel_format.h).");
  pixel_format.value("UNKNOWN", et::PixelFormat::Unknown);
  for (const auto& info : et::pixel_formats()) pixel_format.value(enum_member_name(info.name).c_str(), info.format);
  pixel_format.def_property_readonly(
      "plane_count", [](et::PixelFormat f) { return et::pixel_format_info(f).plane_count; }, "Planes of the format.");
  pixel_format.def_static(
      "from_name", [](const std::string& name) { return unwrap(et::pixel_format_from_name(name)); }, py::arg("name"),
      "The format named `name` (\"nv12\"). InvalidArgumentError for an unknown name.");

  py::class_<et::PlaneLayout>(m, "PlaneLayout", "Where one plane lies: offset and row stride, in bytes.")
      .def(py::init([](std::size_t offset, std::size_t stride) { return et::PlaneLayout{offset, stride}; }),
           py::arg("offset_bytes"), py::arg("row_stride_bytes"))
      .def_readonly("offset_bytes", &et::PlaneLayout::offset_bytes)
      .def_readonly("row_stride_bytes", &et::PlaneLayout::row_stride_bytes)
      .def("__eq__", [](const et::PlaneLayout& a, const et::PlaneLayout& b) { return a == b; }, py::is_operator())
      .def("__repr__", &plane_repr);

  py::class_<et::ImageLayout>(m, "ImageLayout",
                              "The byte layout of one image: format, width and height (pixels), per plane an offset "
                              "and a row stride (bytes), and the DRM format modifier (0 = LINEAR). Immutable; "
                              "make() gives the default layout. The same rules as edgetensor/image.h.")
      .def(py::init(&make_layout), py::arg("format"), py::arg("width"), py::arg("height"),
           py::arg("planes") = py::list(), py::arg("modifier") = 0,
           "planes: PlaneLayout or (offset_bytes, row_stride_bytes) per plane. Not validated here: "
           "validate(), imports and Tensor.set_image_layout check it.")
      .def_static(
          "make",
          [](const py::handle& width, const py::handle& height, const py::handle& format, const py::handle& row_align,
             const py::handle& height_align) {
            return unwrap(et::ImageLayout::make(int_arg<std::uint32_t>(width, "width"),
                                                int_arg<std::uint32_t>(height, "height"), to_pixel_format(format),
                                                {int_arg<std::size_t>(row_align, "row_align"),
                                                 int_arg<std::size_t>(height_align, "height_align")}));
          },
          py::arg("width"), py::arg("height"), py::arg("format"), py::arg("row_align") = 1, py::arg("height_align") = 1,
          "The default layout: rows padded to row_align bytes, height to height_align rows (powers of two, <= 4096).")
      .def_static(
          "allocation_bytes",
          [](const py::handle& width, const py::handle& height, const py::handle& format, const py::handle& row_align,
             const py::handle& height_align) {
            return unwrap(et::ImageLayout::allocation_bytes(
                int_arg<std::uint32_t>(width, "width"), int_arg<std::uint32_t>(height, "height"),
                to_pixel_format(format),
                {int_arg<std::size_t>(row_align, "row_align"), int_arg<std::size_t>(height_align, "height_align")}));
          },
          py::arg("width"), py::arg("height"), py::arg("format"), py::arg("row_align") = 1, py::arg("height_align") = 1,
          "Bytes allocate_image reserves for make(...) with the same arguments.")
      .def_readonly("format", &et::ImageLayout::format)
      .def_readonly("width", &et::ImageLayout::width)
      .def_readonly("height", &et::ImageLayout::height)
      .def_readonly("modifier", &et::ImageLayout::modifier)
      .def_property_readonly(
          "planes",
          [](const et::ImageLayout& l) {
            py::tuple t(l.plane_count());
            for (std::size_t i = 0; i < l.plane_count(); ++i) t[i] = py::cast(l.planes[i]);
            return t;
          },
          "The used planes (plane_count of them).")
      .def_property_readonly("plane_count", &et::ImageLayout::plane_count)
      .def("plane_rows", &et::ImageLayout::plane_rows, py::arg("index"))
      .def("plane_row_bytes", &et::ImageLayout::plane_row_bytes, py::arg("index"))
      .def(
          "plane_end_bytes", [](const et::ImageLayout& l, std::size_t i) { return unwrap(l.plane_end_bytes(i)); },
          py::arg("index"), "offset + (rows - 1) * stride + row bytes of the plane.")
      .def(
          "min_buffer_bytes", [](const et::ImageLayout& l) { return unwrap(l.min_buffer_bytes()); },
          "The smallest buffer a single-buffer image of this layout fits in.")
      .def(
          "validate",
          [](const et::ImageLayout& l, std::optional<std::size_t> buffer_bytes) {
            unwrap(buffer_bytes ? l.validate(*buffer_bytes) : l.validate());
          },
          py::arg("buffer_bytes") = py::none(),
          "Checks the layout (and with buffer_bytes, that every plane fits and none overlap); raises the "
          "library's error naming plane, numbers and limit.")
      .def("__eq__", [](const et::ImageLayout& a, const et::ImageLayout& b) { return a == b; }, py::is_operator())
      .def("__repr__", [](const et::ImageLayout& l) {
        std::string s = "ImageLayout(" + enum_member_name(et::pixel_format_name(l.format)) + ", " + std::to_string(l.width) +
                        "x" + std::to_string(l.height) + ", planes=[";
        for (std::size_t i = 0; i < l.plane_count(); ++i) s += (i ? ", " : "") + plane_repr(l.planes[i]);
        s += "]";
        if (l.modifier != et::kDrmFormatModLinear) s += ", modifier=" + std::to_string(l.modifier);
        return s + ")";
      });

  bind_named_enum<et::ColorPrimaries>(m, "ColorPrimaries", "ITU-T H.273 colour primaries.", &et::color_primaries_name);
  bind_named_enum<et::TransferFunction>(m, "TransferFunction", "ITU-T H.273 transfer characteristics.",
                                        &et::transfer_function_name);
  bind_named_enum<et::YcbcrMatrix>(m, "YcbcrMatrix", "ITU-T H.273 matrix coefficients.", &et::ycbcr_matrix_name);
  bind_named_enum<et::ColorRange>(m, "ColorRange", "Full or limited (video) sample range.", &et::color_range_name);

  py::class_<et::Colorimetry>(m, "Colorimetry", "How sample values map to colours (edgetensor/image.h).")
      .def(py::init([](et::ColorPrimaries p, et::TransferFunction t, et::YcbcrMatrix mx, et::ColorRange r) {
             return et::Colorimetry{p, t, mx, r};
           }),
           py::arg("primaries") = et::ColorPrimaries::Unspecified,
           py::arg("transfer") = et::TransferFunction::Unspecified, py::arg("matrix") = et::YcbcrMatrix::Unspecified,
           py::arg("range") = et::ColorRange::Unspecified)
      .def_readonly("primaries", &et::Colorimetry::primaries)
      .def_readonly("transfer", &et::Colorimetry::transfer)
      .def_readonly("matrix", &et::Colorimetry::matrix)
      .def_readonly("range", &et::Colorimetry::range)
      .def("__eq__", [](const et::Colorimetry& a, const et::Colorimetry& b) { return a == b; }, py::is_operator())
      .def("__repr__", [](const et::Colorimetry& c) {
        return "Colorimetry(primaries=" + std::string(et::color_primaries_name(c.primaries)) +
               ", transfer=" + std::string(et::transfer_function_name(c.transfer)) +
               ", matrix=" + std::string(et::ycbcr_matrix_name(c.matrix)) +
               ", range=" + std::string(et::color_range_name(c.range)) + ")";
      });

  py::enum_<et::QuantizationKind>(m, "QuantizationKind")
      .value("NONE", et::QuantizationKind::None)
      .value("PER_TENSOR", et::QuantizationKind::PerTensor)
      .value("PER_AXIS", et::QuantizationKind::PerAxis);
  py::class_<et::Quantization>(m, "Quantization",
                               "Affine quantization, real = scale * (q - zero_point) (edgetensor/quantization.h). "
                               "Quantization() is none; build one with per_tensor or per_axis.")
      .def(py::init<>())
      .def_static(
          "per_tensor", [](float scale, std::int32_t zp) { return unwrap(et::Quantization::per_tensor(scale, zp)); },
          py::arg("scale"), py::arg("zero_point"))
      .def_static(
          "per_axis",
          [](std::size_t axis, const std::vector<float>& scales, const std::vector<std::int32_t>& zero_points) {
            return unwrap(et::Quantization::per_axis(axis, scales, zero_points));
          },
          py::arg("axis"), py::arg("scales"), py::arg("zero_points"))
      .def_property_readonly("kind", &et::Quantization::kind)
      .def_property_readonly("axis", &et::Quantization::axis)
      .def_property_readonly("scales",
                             [](const et::Quantization& q) {
                               auto s = q.scales();
                               py::tuple t(s.size());
                               for (std::size_t i = 0; i < s.size(); ++i) t[i] = py::float_(s[i]);
                               return t;
                             })
      .def_property_readonly("zero_points", [](const et::Quantization& q) { return to_tuple(q.zero_points()); })
      .def("__eq__", [](const et::Quantization& a, const et::Quantization& b) { return a == b; }, py::is_operator())
      .def("__repr__", [](const et::Quantization& q) {
        switch (q.kind()) {
          case et::QuantizationKind::PerTensor:
            return "Quantization.per_tensor(" + py::repr(py::float_(q.scales()[0])).cast<std::string>() + ", " +
                   std::to_string(q.zero_points()[0]) + ")";
          case et::QuantizationKind::PerAxis:
            return "Quantization.per_axis(axis=" + std::to_string(q.axis()) + ", " +
                   std::to_string(q.scales().size()) + " channels)";
          default:
            return std::string("Quantization()");
        }
      });
}

}  // namespace etpy
