// SPDX-License-Identifier: Apache-2.0
// edgetensor.Tensor (TensorDyn) and the functions that make one: allocate, allocate_image, import_fd,
// import_image. numpy conventions: shape and strides are tuples, strides in bytes, dtype a numpy.dtype,
// size the element count, nbytes the packed bytes.
#include "bindings.h"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <span>

namespace etpy {
namespace {

et::AllocateOptions allocate_options(const py::handle& memory, std::string name, std::string shm_name,
                                     std::string dma_heap, std::shared_ptr<et::gl::Context> gl_context) {
  et::AllocateOptions o;
  o.memory = to_memory_kind(memory);
  o.name = std::move(name);
  o.shm_name = std::move(shm_name);
  o.dma_heap = std::move(dma_heap);
  o.gl_context = std::move(gl_context);
  return o;
}

et::ImportOptions import_options(std::size_t offset_bytes, const py::handle& strides, std::string name,
                                 bool allow_shrinkable) {
  et::ImportOptions o;
  o.offset_bytes = offset_bytes;
  if (!strides.is_none()) o.strides_bytes = to_strides(strides);
  o.name = std::move(name);
  o.allow_shrinkable = allow_shrinkable;
  return o;
}

std::string repr(const et::TensorDyn& t) {
  if (t.is_empty_handle()) return "<edgetensor.Tensor (empty handle)>";
  std::string shape = "(";
  for (std::size_t i = 0; i < t.rank(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.rank() == 1) shape += ",";
  shape += ")";
  std::string s = "<edgetensor.Tensor shape=" + shape + " dtype=" + numpy_name(t.dtype()) +
                  " memory=" + std::string(et::memory_kind_name(t.memory())) + " (" + t.memory_detail() + ")";
  if (!t.name().empty()) s += " name='" + t.name() + "'";
  if (t.pixel_format() != et::PixelFormat::Unknown) s += " format=" + std::string(et::pixel_format_name(t.pixel_format()));
  return s + ">";
}

const char* kAllocateDoc =
    "Allocates a C-contiguous tensor (contents read as zeros). shape: elements per dimension; dtype: a numpy "
    "name ('float32'), numpy.dtype, numpy scalar type or edgetensor.DType; memory: edgetensor.MemoryKind or its "
    "name ('auto', 'heap', 'shm', 'dmabuf', 'gl_pbo'); Auto takes DMA-BUF, then shared memory, then the heap. "
    "shm_name (with memory='shm'): a named POSIX shm object created exclusively, left in /dev/shm until "
    "edgetensor.shm.remove(name). gl_context: the edgetensor.gl.Context of a 'gl_pbo' tensor. Errors as "
    "TensorDyn::allocate (InvalidArgumentError, OutOfRangeError, UnavailableError, AlreadyExistsError, ...). "
    "Releases the GIL while allocating.";


// MapOptions' default timeout (map.h kDefaultMapTimeout) in seconds, Python's unit for a timeout.
constexpr double kDefaultMapTimeoutSeconds = static_cast<double>(et::kDefaultMapTimeout.count()) / 1000.0;

// numpy's negative axis: dim < 0 counts from the last dimension.
std::size_t axis_in(const et::TensorDyn& t, long long dim) {
  const auto rank = static_cast<long long>(t.rank());
  const long long d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    raise(et::Error(et::ErrorCode::InvalidArgument,  // as TensorDyn::slice says of a dim past the rank
                    "dim " + std::to_string(dim) + " is out of range for rank " + std::to_string(rank)));
  return static_cast<std::size_t>(d);
}

// An index into dimension `dim`, negative counting from the end (numpy's a[-1]).
std::size_t index_in(const et::TensorDyn& t, std::size_t dim, long long i, const char* what) {
  if (t.rank() == 0) raise(et::Error(et::ErrorCode::OutOfRange, "a rank-0 tensor has no dimension to index"));
  const auto size = static_cast<long long>(t.shape()[dim]);
  const long long j = i < 0 ? i + size : i;
  if (j < 0 || j >= size)
    raise(et::Error(et::ErrorCode::OutOfRange, std::string(what) + " " + std::to_string(i) +
                                                   " is out of range for dim " + std::to_string(dim) + " of size " +
                                                   std::to_string(size)));
  return static_cast<std::size_t>(j);
}

// reshape's shape: ints, at most one -1, which takes what the others leave of the element count.
std::vector<std::size_t> reshape_shape(const et::TensorDyn& t, const py::object& obj) {
  py::object items = obj;
  if (PyIndex_Check(obj.ptr())) items = py::make_tuple(obj);
  if (!py::isinstance<py::sequence>(items) || py::isinstance<py::str>(items))
    throw py::type_error("reshape: shape must be ints or a sequence of ints");
  py::list cleaned;
  long long inferred = -1;
  std::size_t known = 1;
  std::size_t i = 0;
  for (const auto& v : py::reinterpret_borrow<py::sequence>(items)) {
    if (PyIndex_Check(v.ptr()) && py::int_(py::reinterpret_borrow<py::object>(v)).equal(py::int_(-1))) {
      if (inferred >= 0) raise_invalid("reshape: more than one dimension is -1 (dims " + std::to_string(inferred) +
                                       " and " + std::to_string(i) + ")");
      inferred = static_cast<long long>(i);
      cleaned.append(py::int_(1));
    } else {
      cleaned.append(v);
    }
    ++i;
  }
  auto shape = to_shape(cleaned);
  if (inferred < 0) return shape;
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (static_cast<long long>(k) != inferred) known *= shape[k];
  if (known == 0 || t.element_count() % known != 0)
    raise_invalid("reshape: cannot infer dim " + std::to_string(inferred) + ": " + std::to_string(t.element_count()) +
                  " elements are not a multiple of the other dims' product " + std::to_string(known));
  shape[static_cast<std::size_t>(inferred)] = t.element_count() / known;
  return shape;
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<et::BufferIdentity>(m, "BufferIdentity",
                                 "A process-unique id per allocation or import, plus a weak liveness token "
                                 "(keeps nothing alive).")
      .def_property_readonly("id", &et::BufferIdentity::id)
      .def_property_readonly("alive", &et::BufferIdentity::alive,
                             "False once every tensor, view, map and export of the storage is gone.")
      .def("__eq__", [](const et::BufferIdentity& a, const et::BufferIdentity& b) { return a == b; },
           py::is_operator())
      .def("__hash__", [](const et::BufferIdentity& a) { return py::hash(py::int_(a.id())); })
      .def("__repr__", [](const et::BufferIdentity& a) {
        return "BufferIdentity(id=" + std::to_string(a.id()) + (a.alive() ? ", alive)" : ", gone)");
      });

  py::class_<et::TensorDyn> tensor(m, "Tensor",
                                   "A tensor over edgetensor memory: storage + dtype + shape + strides (bytes) + "
                                   "offset. Views, batches, maps and DLPack exports share the storage and keep it "
                                   "alive. Make one with allocate(), allocate_image(), import_fd(), shm.open(), "
                                   "ipc.receive() or from_dlpack().");
  tensor
      .def_property_readonly("shape", [](const et::TensorDyn& t) { return to_tuple(t.shape()); },
                             "Elements per dimension.")
      .def_property_readonly("strides", [](const et::TensorDyn& t) { return to_tuple(t.strides()); },
                             "Bytes between neighbours along each dimension (as numpy).")
      .def_property_readonly("ndim", &et::TensorDyn::rank)
      .def_property_readonly("size", &et::TensorDyn::element_count, "Element count (1 for rank 0).")
      .def_property_readonly("itemsize", &et::TensorDyn::element_size, "Bytes per element.")
      .def_property_readonly("nbytes", &et::TensorDyn::packed_bytes, "size * itemsize: a packed copy's bytes.")
      .def_property_readonly("extent_bytes", &et::TensorDyn::extent_bytes,
                             "Bytes from the first element to one past the last reachable one (what a map covers).")
      .def_property_readonly("buffer_bytes", &et::TensorDyn::buffer_bytes, "Bytes of the whole backing buffer.")
      .def_property_readonly("offset_bytes", &et::TensorDyn::offset_bytes,
                             "Byte offset of the first element in the backing buffer.")
      .def_property_readonly("dtype", [](const et::TensorDyn& t) { return numpy_dtype(t.dtype()); },
                             "The numpy.dtype (imports numpy); bfloat16 is the struct dtype [('bf16', '<u2')].")
      .def_property_readonly("dtype_name", [](const et::TensorDyn& t) { return numpy_name(t.dtype()); },
                             "numpy's name of the dtype ('float32', 'bfloat16'); needs no numpy.")
      .def_property_readonly("is_contiguous", &et::TensorDyn::is_contiguous)
      .def_property_readonly("memory", &et::TensorDyn::memory, "The backend that holds the bytes.")
      .def_property_readonly("memory_detail", &et::TensorDyn::memory_detail,
                             "What exactly serves: 'memfd', 'posix shm /cam0', 'dma-heap system', ...")
      .def_property_readonly("read_only", &et::TensorDyn::read_only, "True when write maps are refused.")
      .def_property("name", &et::TensorDyn::name, &et::TensorDyn::set_name)
      .def_property_readonly("identity", &et::TensorDyn::identity)
      .def("same_buffer", &et::TensorDyn::same_buffer, py::arg("other"),
           "True when both reach the same buffer object, even through separate imports.")
      // Image metadata (tensor.h's metadata rule says which operations keep what).
      .def_property_readonly(
          "image_layout",
          [](const et::TensorDyn& t) -> std::optional<et::ImageLayout> {
            if (t.image_layout() == nullptr) return std::nullopt;
            return *t.image_layout();
          },
          "The layout of the whole image this tensor holds, or None.")
      .def_property_readonly("pixel_format", &et::TensorDyn::pixel_format,
                             "The image's format, or that of the image this tensor is a plane of; UNKNOWN otherwise.")
      .def_property_readonly(
          "image_plane",
          [](const et::TensorDyn& t) -> std::optional<int> {
            if (t.image_plane() < 0) return std::nullopt;
            return t.image_plane();
          },
          "Which plane of pixel_format this tensor views, or None.")
      .def("set_image_layout", [](et::TensorDyn& t, const et::ImageLayout& l) { unwrap(t.set_image_layout(l)); },
           py::arg("layout"), "Attaches an image layout; it must fit the tensor's extent.")
      .def("clear_image_layout", &et::TensorDyn::clear_image_layout)
      .def_property("colorimetry", &et::TensorDyn::colorimetry, &et::TensorDyn::set_colorimetry)
      .def_property(
          "quantization", &et::TensorDyn::quantization,
          [](et::TensorDyn& t, const et::Quantization& q) { unwrap(t.set_quantization(q)); },
          "Assigning checks it against dtype and shape (InvalidArgumentError naming the field).")
      .def_property_readonly("is_empty_handle", &et::TensorDyn::is_empty_handle)
      // Views.
      .def("batch", [](const et::TensorDyn& t, long long n) { return unwrap(t.batch(index_in(t, 0, n, "n"))); },
           py::arg("n"),
           "The n-th sub-tensor along dimension 0 (t.batch(n) is numpy's a[n]; n < 0 counts from the end).")
      .def(
          "view",
          [](const et::TensorDyn& t, std::size_t offset, const py::handle& shape, const py::handle& strides) {
            auto s = to_shape(shape);
            std::vector<std::int64_t> st;
            if (!strides.is_none()) st = to_strides(strides);
            return unwrap(t.view(offset, s, st));
          },
          py::arg("offset_bytes"), py::arg("shape"), py::arg("strides") = py::none(),
          "A view at offset_bytes from this tensor's first element; strides in bytes (None = C-contiguous). "
          "Out of bounds is OutOfRangeError, never a clamp.")
      .def(
          "reshape",
          [](const et::TensorDyn& t, const py::args& args) {
            return unwrap(t.reshape(reshape_shape(t, args.size() == 1 ? py::object(args[0]) : py::object(args))));
          },
          "Same bytes, new shape: reshape(2, 3) or reshape((2, 3)); one dimension may be -1 (inferred, as "
          "numpy). The tensor must be contiguous.")
      .def("slice",
           [](const et::TensorDyn& t, long long dim, long long begin, long long end) {
             const std::size_t d = axis_in(t, dim);
             const std::size_t size = t.shape()[d];
             auto bound = [&](long long v, const char* what) -> std::size_t {
               // numpy's rule for a negative bound (size + v); past either end stays out of range and is
               // refused by the library, naming it, rather than clamped.
               if (v < 0) v += static_cast<long long>(size);
               if (v < 0)
                 raise(et::Error(et::ErrorCode::OutOfRange, "slice: " + std::string(what) + " " +
                                                                std::to_string(v - static_cast<long long>(size)) +
                                                                " is before the start of dim " + std::to_string(d) +
                                                                " of size " + std::to_string(size)));
               return static_cast<std::size_t>(v);
             };
             return unwrap(t.slice(d, bound(begin, "begin"), bound(end, "end")));
           },
           py::arg("dim"), py::arg("begin"), py::arg("end"),
           "Indices [begin, end) of dimension dim (numpy's a[..., begin:end]); negative dim, begin and end count "
           "from the end. Out of range is OutOfRangeError, never a clamp.")
      .def("plane", [](const et::TensorDyn& t, std::size_t i) { return unwrap(t.plane(i)); }, py::arg("index"),
           "The view of image plane `index` with its natural shape (NV12 UV: [h/2, w/2, 2]).")
      .def("image_view", [](const et::TensorDyn& t) { return unwrap(t.image_view()); },
           "The whole image as one view (Rgb [h, w, 3]; PlanarRgb [3, h, w]).")
      // Maps.
      .def(
          "map_read", [](const et::TensorDyn& t, const py::object& timeout) { return make_map(t, et::MapMode::Read, timeout); },
          py::kw_only(), py::arg("timeout") = kDefaultMapTimeoutSeconds,
          "A read-only Map (context manager, buffer protocol). timeout: seconds a DMA-BUF map waits for the "
          "device work of the buffer's fences (its writers) before the map opens (MapOptions::timeout; 0 only "
          "checks; None: no bound); other memory never waits. TimeoutError when it passes (BusyError for 0), "
          "naming the pending fences. BusyError for a PBO already mapped. Releases the GIL while mapping "
          "DMA-BUF and PBO memory.")
      .def(
          "map_write", [](const et::TensorDyn& t, const py::object& timeout) { return make_map(t, et::MapMode::Write, timeout); },
          py::kw_only(), py::arg("timeout") = kDefaultMapTimeoutSeconds,
          "A writable Map; a DMA-BUF waits for every user's fences (timeout as map_read). "
          "PermissionDeniedError on read-only storage.")
      .def(
          "map_read_write",
          [](const et::TensorDyn& t, const py::object& timeout) { return make_map(t, et::MapMode::ReadWrite, timeout); },
          py::kw_only(), py::arg("timeout") = kDefaultMapTimeoutSeconds,
          "A readable and writable Map (timeout and errors as map_write).")
      .def(
          "copy_to",
          [](const et::TensorDyn& t, const py::buffer& destination) {
            Py_buffer view;
            if (PyObject_GetBuffer(destination.ptr(), &view, PyBUF_WRITABLE) != 0) throw py::error_already_set();
            const std::span<std::byte> bytes(static_cast<std::byte*>(view.buf), static_cast<std::size_t>(view.len));
            auto result = [&] {
              std::optional<py::gil_scoped_release> release;  // the read map may wait (DMA-BUF, PBO)
              if (map_may_block(t.memory())) release.emplace();
              return t.copy_to(bytes);
            }();
            PyBuffer_Release(&view);
            unwrap(std::move(result));
          },
          py::arg("destination"),
          "Copies the elements in C order into the start of `destination`, a writable C-contiguous buffer "
          "(bytearray, numpy array, memoryview), borrowed for the call: nbytes bytes, whatever this view's "
          "strides. OutOfRangeError when it is smaller than nbytes, InvalidArgumentError when it overlaps "
          "this tensor's bytes, BufferError/TypeError when it is read-only or not contiguous; map_read's "
          "errors. Releases the GIL while a DMA-BUF or PBO map waits.")
      .def(
          "contiguous",
          [](const et::TensorDyn& t, const py::handle& memory, std::string name, std::string shm_name,
             std::string dma_heap, std::shared_ptr<et::gl::Context> gl_context) {
            auto o = allocate_options(memory, std::move(name), std::move(shm_name), std::move(dma_heap),
                                      std::move(gl_context));
            return released([&] { return t.contiguous(o); });
          },
          py::arg("memory") = "auto", py::kw_only(), py::arg("name") = "", py::arg("shm_name") = "",
          py::arg("dma_heap") = "", py::arg("gl_context") = py::none(),
          "A new C-contiguous tensor with a copy of the elements, allocated as allocate(self.shape, "
          "self.dtype, memory, ...) and owned by the caller like any. Keeps quantization and colorimetry; "
          "no image layout (its rows are packed). Errors: allocate's, then copy_to's. Releases the GIL.")
      .def("buffer_key", [](const et::TensorDyn& t) { return t.buffer_key().value(); },
           "An int naming the underlying buffer object (memfd, DMA-BUF, heap block, GL buffer): equal for every "
           "tensor of this process that reaches it while one of them lives, also through separate imports; "
           "never reused for another object; retired when the last tensor of the buffer goes (a later "
           "import gets a new one). A pool's buffer keeps its key. 0 for an empty handle. Thread-safe.")
      .def(
          "unsqueeze",
          [](const et::TensorDyn& t, long long dim) {
            // numpy's expand_dims: -1 inserts after the last dimension (rank + 1 positions).
            const auto rank = static_cast<long long>(t.rank());
            const long long d = dim < 0 ? dim + rank + 1 : dim;
            if (d < 0)
              raise_invalid("unsqueeze: dim " + std::to_string(dim) + " is out of range for rank " +
                            std::to_string(rank) + " (-" + std::to_string(rank + 1) + " to " + std::to_string(rank) +
                            ")");
            return unwrap(t.unsqueeze(static_cast<std::size_t>(d)));
          },
          py::arg("dim"),
          "A view with a new dimension of size 1 before dimension `dim` (numpy's expand_dims, torch's "
          "unsqueeze; dim from -(ndim + 1) to ndim, negative counting from the end): same bytes, no copy, "
          "strided views too. Per-axis quantization moves with its axis; an image layout is dropped, the "
          "format kept. InvalidArgumentError for a dim out of range or a tensor of 8 dimensions.")
      .def(
          "export_fd", [](const et::TensorDyn& t) { return unwrap(t.export_fd()).release(); },
          "A new CLOEXEC fd of the whole backing buffer: the caller owns it and closes it (os.close). Send "
          "offset_bytes, shape, strides and dtype along so the receiver can import the same view.")
      .def("__len__",
           [](const et::TensorDyn& t) {
             if (t.rank() == 0) throw py::type_error("len() of a rank-0 tensor");
             return t.shape()[0];
           })
      .def("__repr__", &repr);
  bind_dlpack(m, tensor);
  bind_fence(m, tensor);

  m.def(
      "allocate",
      [](const py::handle& shape, const py::handle& dtype, const py::handle& memory, std::string name,
         std::string shm_name, std::string dma_heap, std::shared_ptr<et::gl::Context> gl_context) {
        auto s = to_shape(shape);
        auto d = to_dtype(dtype);
        auto o = allocate_options(memory, std::move(name), std::move(shm_name), std::move(dma_heap),
                                  std::move(gl_context));
        return released([&] { return et::TensorDyn::allocate(s, d, o); });
      },
      py::arg("shape"), py::arg("dtype"), py::arg("memory") = "auto", py::kw_only(), py::arg("name") = "",
      py::arg("shm_name") = "", py::arg("dma_heap") = "", py::arg("gl_context") = py::none(), kAllocateDoc);

  m.def(
      "allocate_image",
      [](std::uint32_t width, std::uint32_t height, const py::handle& format, std::size_t row_align,
         std::size_t height_align, const py::handle& memory, std::string name, std::string shm_name,
         std::shared_ptr<et::gl::Context> gl_context) {
        auto f = to_pixel_format(format);
        auto o = allocate_options(memory, std::move(name), std::move(shm_name), "", std::move(gl_context));
        return released([&] { return et::TensorDyn::allocate_image(width, height, f, {row_align, height_align}, o); });
      },
      py::arg("width"), py::arg("height"), py::arg("format"), py::arg("row_align") = 1, py::arg("height_align") = 1,
      py::kw_only(), py::arg("memory") = "auto", py::arg("name") = "", py::arg("shm_name") = "",
      py::arg("gl_context") = py::none(),
      "Allocates an image with all planes in one buffer: a uint8 tensor [bytes] with the default layout "
      "(ImageLayout.make(width, height, format, row_align, height_align)) attached.");
  m.def(
      "allocate_image",
      [](const et::ImageLayout& layout, const py::handle& memory, std::string name, std::string shm_name,
         std::shared_ptr<et::gl::Context> gl_context) {
        auto o = allocate_options(memory, std::move(name), std::move(shm_name), "", std::move(gl_context));
        return released([&] { return et::TensorDyn::allocate_image(layout, o); });
      },
      py::arg("layout"), py::kw_only(), py::arg("memory") = "auto", py::arg("name") = "", py::arg("shm_name") = "",
      py::arg("gl_context") = py::none(), "Allocates layout.min_buffer_bytes() for a layout of yours.");

  m.def(
      "import_fd",
      [](const py::handle& fd, const py::handle& shape, const py::handle& dtype, std::size_t offset_bytes,
         const py::handle& strides, std::string name, bool allow_shrinkable) {
        int f = to_fd(fd);
        auto s = to_shape(shape);
        auto d = to_dtype(dtype);
        auto o = import_options(offset_bytes, strides, std::move(name), allow_shrinkable);
        return released([&] { return et::TensorDyn::import_fd_dup(f, s, d, o); });
      },
      py::arg("fd"), py::arg("shape"), py::arg("dtype"), py::kw_only(), py::arg("offset_bytes") = 0,
      py::arg("strides") = py::none(), py::arg("name") = "", py::arg("allow_shrinkable") = false,
      "Imports a borrowed fd (an int, or an object with fileno()): the library dups it, and the caller keeps "
      "and closes its own. Shared memory (memfd, tmpfs) or a DMA-BUF; the real size is checked against "
      "offset + extent. Shared memory must be sealed against shrinking unless allow_shrinkable (trusted peers "
      "only: a truncation would kill this process with SIGBUS). strides in bytes (None = C-contiguous).");
  m.def(
      "import_image",
      [](const py::handle& fd, const et::ImageLayout& layout, std::size_t offset_bytes, std::string name,
         bool allow_shrinkable) {
        int f = to_fd(fd);
        auto o = import_options(offset_bytes, py::none(), std::move(name), allow_shrinkable);
        return released([&] { return et::TensorDyn::import_image_dup(f, layout, o); });
      },
      py::arg("fd"), py::arg("layout"), py::kw_only(), py::arg("offset_bytes") = 0, py::arg("name") = "",
      py::arg("allow_shrinkable") = false,
      "Imports an image held in one buffer (a borrowed fd, dup'd as import_fd does): a uint8 tensor "
      "[layout.min_buffer_bytes()] with the layout attached; every plane is checked to fit.");
}

}  // namespace etpy
