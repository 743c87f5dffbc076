// SPDX-License-Identifier: Apache-2.0
// edgetensor.Map: a CPU map (edgetensor/map.h) as a context manager with the buffer protocol (PEP 3118).
//
// Each buffer export (numpy.asarray(map), memoryview(map)) holds a reference to the Map object, and the
// Map holds the C++ map, which holds the storage: the bytes outlive every view of them. close() (and
// leaving the `with` block) ends the Map: no new export is given. The CPU access itself (the C++ map:
// a DMA-BUF's sync bracket, a PBO's glMapBufferRange) ends at once when no export is alive, else when
// the last one is released, so an array made inside the block stays valid while it lives and numpy is
// never left with a dangling pointer.
#include "bindings.h"

#include <array>
#include <chrono>
#include <optional>
#include <variant>

namespace etpy {
namespace {

struct PyMap {
  std::variant<std::monostate, et::ReadMap, et::WriteMap, et::ReadWriteMap> map;
  et::MapMode mode = et::MapMode::Read;
  et::DType dtype = et::DType::U8;
  bool contiguous = true;
  int ndim = 0;
  std::array<Py_ssize_t, et::kMaxRank> shape{};
  std::array<Py_ssize_t, et::kMaxRank> strides{};
  std::size_t element_count = 0;
  std::byte* data = nullptr;
  std::size_t extent_bytes = 0;
  bool may_block = false;  // map_may_block(memory)
  Py_ssize_t exports = 0;  // live buffer exports (getbuffer minus releasebuffer)
  bool closed = false;     // close() or the block's end: no new exports
  bool mapped = false;     // the C++ map is held (until closed and exports == 0)
};

// A non-null address for exports of zero-element maps (their data() is null; consumers may treat a
// null buf as "no buffer").
std::byte g_empty_buffer[8];

PyMap* self_of(PyObject* self) { return py::handle(self).cast<PyMap*>(); }

int buffer_error(const char* message) {
  PyErr_SetString(PyExc_BufferError, message);
  return -1;
}

int map_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  PyMap* m = nullptr;
  try {
    m = self_of(self);
  } catch (const py::cast_error&) {
    return buffer_error("edgetensor.Map: not initialised");
  }
  if (m->closed) return buffer_error("edgetensor.Map is closed: map the tensor again");
  bool readonly = m->mode == et::MapMode::Read;
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && readonly)
    return buffer_error("edgetensor.Map from map_read() is read-only: use map_write() or map_read_write()");
  bool wants_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
  if (!wants_strides && !m->contiguous)
    return buffer_error("edgetensor.Map of a strided tensor: the consumer must accept strides");
  if (((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS || (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS) &&
      !m->contiguous)
    return buffer_error("edgetensor.Map of a strided tensor is not C-contiguous");
  if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !(m->contiguous && m->ndim <= 1))
    return buffer_error("edgetensor.Map is C-ordered, not Fortran-contiguous");

  std::size_t itemsize = et::dtype_size(m->dtype);
  view->obj = py::handle(self).inc_ref().ptr();
  view->buf = m->data != nullptr ? m->data : g_empty_buffer;
  view->len = static_cast<Py_ssize_t>(m->element_count * itemsize);
  view->readonly = readonly ? 1 : 0;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  if ((flags & PyBUF_ND) == PyBUF_ND) {
    view->itemsize = static_cast<Py_ssize_t>(itemsize);
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(buffer_format(m->dtype)) : nullptr;
    view->ndim = m->ndim;
    view->shape = m->shape.data();
    view->strides = wants_strides ? m->strides.data() : nullptr;
  } else {  // a simple request: len bytes (contiguous, checked above)
    view->itemsize = 1;
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>("B") : nullptr;
    view->ndim = 1;
    view->shape = nullptr;
    view->strides = nullptr;
  }
  ++m->exports;
  return 0;
}

// Ends the CPU access (the C++ map's unmap). A PBO unmap runs on the GL thread and a DMA-BUF's
// SYNC_END may wait: those run with the GIL released (m is no longer exported, so no Python code
// reaches its state meanwhile).
void unmap_now(PyMap& m) {
  if (!m.mapped) return;
  m.mapped = false;
  auto map = std::move(m.map);
  m.map = std::monostate{};
  auto unmap = [&map] {
    std::visit([](auto& mp) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(mp)>, std::monostate>) mp.unmap();
    }, map);
  };
  if (m.may_block) {
    py::gil_scoped_release release;
    unmap();
  } else {
    unmap();
  }
}

void map_releasebuffer(PyObject* self, Py_buffer* /*view*/) {
  PyMap* m = nullptr;
  try {
    m = self_of(self);
  } catch (const py::cast_error&) {
    return;
  }
  // The last export of a closed map ends its CPU access (the close was deferred to it).
  if (--m->exports == 0 && m->closed) unmap_now(*m);
}

void close_map(PyMap& m) {
  m.closed = true;
  if (m.exports == 0) unmap_now(m);
}

const char* mode_name(et::MapMode mode) {
  switch (mode) {
    case et::MapMode::Read: return "read";
    case et::MapMode::Write: return "write";
    default: return "read_write";
  }
}

}  // namespace

py::object make_map(const et::TensorDyn& tensor, et::MapMode mode, const py::object& timeout) {
  et::MapOptions options;
  const auto ms = to_timeout_ms(timeout);
  options.timeout = ms ? *ms : std::chrono::milliseconds(-1);  // None: no bound (map.h's negative)
  PyMap m;
  m.mode = mode;
  m.dtype = tensor.dtype();
  m.contiguous = tensor.is_contiguous();
  m.ndim = static_cast<int>(tensor.rank());
  for (std::size_t i = 0; i < tensor.rank(); ++i) {
    m.shape[i] = static_cast<Py_ssize_t>(tensor.shape()[i]);
    m.strides[i] = static_cast<Py_ssize_t>(tensor.strides()[i]);
  }
  m.element_count = tensor.element_count();
  m.may_block = map_may_block(tensor.memory());
  et::Error error(et::ErrorCode::Internal, "");
  bool ok = false;
  {
    std::optional<py::gil_scoped_release> release;  // a PBO map waits on the GL thread; DMA-BUF syncs
    if (m.may_block) release.emplace();
    auto take = [&](auto result) {
      if (!result) {
        error = result.error();
        return;
      }
      m.data = result->data() == nullptr ? nullptr : const_cast<std::byte*>(result->data());
      m.extent_bytes = result->extent_bytes();
      m.map = std::move(*result);
      m.mapped = true;
      ok = true;
    };
    switch (mode) {
      case et::MapMode::Read: take(tensor.map_read(options)); break;
      case et::MapMode::Write: take(tensor.map_write(options)); break;
      default: take(tensor.map_read_write(options)); break;
    }
  }
  if (!ok) raise(error);
  return py::cast(std::move(m));
}

void bind_map(py::module_& m) {
  py::class_<PyMap>(m, "Map", py::custom_type_setup([](PyHeapTypeObject* heap_type) {
                      heap_type->ht_type.tp_as_buffer = &heap_type->as_buffer;
                      heap_type->as_buffer.bf_getbuffer = map_getbuffer;
                      heap_type->as_buffer.bf_releasebuffer = map_releasebuffer;
                    }),
                    "A CPU map of a tensor (Tensor.map_read, map_write, map_read_write): a context manager "
                    "exposing the tensor's elements through the buffer protocol, so numpy.asarray(map) is a "
                    "zero-copy view (writable unless the map is a read map). Shape and strides (bytes) are the "
                    "tensor's; bfloat16 elements appear as the struct 'T{H:bf16:}' of their uint16 bits. "
                    "close() or the end of the `with` block closes the Map: it gives no new export (memoryview, "
                    "numpy.asarray), and never raises. The CPU access ends (DMA-BUF: the end of the sync bracket, "
                    "DMA_BUF_SYNC_END; PBO: glUnmapBuffer) at once when no export is alive, else when the last "
                    "one is released: an array made inside the block stays valid, and writes through it land, "
                    "for as long as it lives. Until then the map counts as open for the tensor's other maps "
                    "(C++ map rules: a PBO's second map is a BusyError; a DMA-BUF stays inside one sync "
                    "bracket; a pool buffer stays out of its pool). A map dropped without close() ends when "
                    "collected. Threads: use a Map from one thread at a time (the GIL serialises its calls). A "
                    "write map's initial contents are undefined on write-combined memory: write every element "
                    "you care about.")
      .def("close", [](PyMap& self) { close_map(self); },
           "Closes the Map (idempotent, never raises): no new exports; the CPU access ends now, or when "
           "the last live export (numpy array, memoryview) is released. `mapped` tells which.")
      .def(
          "__array__",
          [](const py::object& self, const py::object& dtype, const py::object& copy) {
            // numpy tries the buffer protocol first; it comes here only when that failed (a closed map), and
            // without this would wrap the Map in a 0-d object array. memoryview() raises the map's own error.
            py::object view = py::reinterpret_steal<py::object>(PyMemoryView_FromObject(self.ptr()));
            if (!view) throw py::error_already_set();
            py::object numpy = py::module_::import("numpy");
            if (!copy.is_none() && copy.cast<bool>()) return numpy.attr("array")(view, dtype);
            return numpy.attr("asarray")(view, dtype);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
          "numpy's array protocol, as the buffer protocol: zero-copy while the map is open; a closed map raises "
          "BufferError (numpy would otherwise make a 0-d object array of it).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyMap& self, const py::object&, const py::object&, const py::object&) {
             close_map(self);  // deferred while the block's arrays live, whether or not it raised
             return false;
           })
      .def_property_readonly("closed", [](const PyMap& self) { return self.closed; },
                             "True once close() ran or the `with` block ended: no new exports.")
      .def_property_readonly("mapped", [](const PyMap& self) { return self.mapped; },
                             "True while the CPU access is held: until closed and no export is alive.")
      .def_property_readonly("mode", [](const PyMap& self) { return mode_name(self.mode); },
                             "\"read\", \"write\" or \"read_write\".")
      .def_property_readonly("readonly", [](const PyMap& self) { return self.mode == et::MapMode::Read; })
      .def_property_readonly("shape",
                             [](const PyMap& self) {
                               return to_tuple(std::vector<Py_ssize_t>(self.shape.begin(), self.shape.begin() + self.ndim));
                             })
      .def_property_readonly("strides",
                             [](const PyMap& self) {
                               return to_tuple(
                                   std::vector<Py_ssize_t>(self.strides.begin(), self.strides.begin() + self.ndim));
                             },
                             "Bytes between neighbours along each dimension.")
      .def_property_readonly("dtype", [](const PyMap& self) { return numpy_dtype(self.dtype); })
      .def_property_readonly("format", [](const PyMap& self) { return buffer_format(self.dtype); },
                             "The PEP 3118 format of one element.")
      .def_property_readonly("extent_bytes", [](const PyMap& self) { return self.mapped ? self.extent_bytes : std::size_t{0}; },
                             "Bytes from the first element to one past the last (0 once unmapped).")
      .def_property_readonly("exports", [](const PyMap& self) { return self.exports; },
                             "Buffer exports (numpy arrays, memoryviews) alive now.")
      .def("__repr__", [](const PyMap& self) {
        return std::string("<edgetensor.Map ") + mode_name(self.mode) + " " + numpy_name(self.dtype) +
               (!self.closed ? " open>" : self.mapped ? " closed, mapped until its exports go>" : " closed>");
      });
}

}  // namespace etpy
