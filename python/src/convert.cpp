// SPDX-License-Identifier: Apache-2.0
// Python values -> C++ values: dtypes (numpy names and numpy.dtype), memory kinds, pixel formats,
// shapes, fds. numpy is imported only when a numpy object must be read or made, so the module works
// without it (names and edgetensor enums need none).
#include "bindings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <climits>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

namespace etpy {
namespace {

struct DTypeNames {
  et::DType dtype;
  const char* numpy;   // numpy's name
  const char* format;  // PEP 3118 (struct module) format of one element
  char kind;           // numpy dtype.kind
};
// bfloat16 has no numpy dtype and no struct format: it is a struct of one uint16 field named "bf16",
// holding the bit pattern as the library stores it (dtype.h BFloat16), distinct from uint16.
constexpr DTypeNames kDTypes[] = {
    {et::DType::U8, "uint8", "B", 'u'},      {et::DType::I8, "int8", "b", 'i'},
    {et::DType::U16, "uint16", "H", 'u'},    {et::DType::I16, "int16", "h", 'i'},
    {et::DType::U32, "uint32", "I", 'u'},    {et::DType::I32, "int32", "i", 'i'},
    {et::DType::U64, "uint64", "Q", 'u'},    {et::DType::I64, "int64", "q", 'i'},
    {et::DType::F16, "float16", "e", 'f'},   {et::DType::BF16, "bfloat16", "T{H:bf16:}", 'V'},
    {et::DType::F32, "float32", "f", 'f'},   {et::DType::F64, "float64", "d", 'f'},
};

const DTypeNames& names_of(et::DType dtype) {
  for (const auto& n : kDTypes)
    if (n.dtype == dtype) return n;
  raise_invalid("invalid edgetensor dtype value " + std::to_string(static_cast<int>(dtype)));
}

std::string known_dtype_names() {
  std::string s;
  for (const auto& n : kDTypes) s += std::string(s.empty() ? "" : ", ") + n.numpy;
  return s;
}

et::DType from_numpy_dtype(const py::handle& dt) {
  std::string repr = py::str(dt);
  if (!dt.attr("fields").is_none()) {
    py::tuple names = dt.attr("names");
    if (names.size() == 1 && py::str(names[0]).cast<std::string>() == "bf16") {
      py::tuple field = dt.attr("fields")["bf16"];  // (dtype, offset)
      if (py::str(field[0].attr("str")).cast<std::string>() == "<u2") return et::DType::BF16;
    }
    raise_invalid("numpy dtype " + repr + " has no edgetensor dtype (known: " + known_dtype_names() + ")");
  }
  std::string byteorder = py::str(dt.attr("byteorder"));
  if (byteorder == ">")
    raise_invalid("numpy dtype " + repr + " is big-endian: edgetensor tensors hold native (little-endian) "
                          "elements");
  auto kind = py::str(dt.attr("kind")).cast<std::string>();
  auto itemsize = dt.attr("itemsize").cast<std::size_t>();
  for (const auto& n : kDTypes)
    if (kind.size() == 1 && kind[0] == n.kind && itemsize == et::dtype_size(n.dtype)) return n.dtype;
  raise_invalid("numpy dtype " + repr + " has no edgetensor dtype (known: " + known_dtype_names() + ")");
}

}  // namespace

const char* numpy_name(et::DType dtype) { return names_of(dtype).numpy; }
const char* buffer_format(et::DType dtype) { return names_of(dtype).format; }

py::object numpy_dtype(et::DType dtype) {
  py::module_ np = py::module_::import("numpy");
  if (dtype == et::DType::BF16) {
    py::list fields;
    fields.append(py::make_tuple("bf16", "<u2"));
    return np.attr("dtype")(fields);
  }
  return np.attr("dtype")(names_of(dtype).numpy);
}

et::DType to_dtype(const py::handle& obj) {
  if (py::isinstance<et::DType>(obj)) return obj.cast<et::DType>();
  if (py::isinstance<py::str>(obj)) {
    auto text = obj.cast<std::string>();
    if (auto ours = et::dtype_from_name(text)) return *ours;
    for (const auto& n : kDTypes)
      if (text == n.numpy) return n.dtype;
  }
  // A torch dtype (torch.float32, torch.bfloat16): its name without "torch." is ours or numpy's.
  if (!py::isinstance<py::str>(obj)) {
    const std::string module = py::str(py::type::of(obj).attr("__module__")).cast<std::string>();
    const std::string text = py::str(obj).cast<std::string>();
    if (module == "torch" && text.rfind("torch.", 0) == 0) {
      const std::string name = text.substr(6);
      if (auto ours = et::dtype_from_name(name)) return *ours;
      for (const auto& n : kDTypes)
        if (name == n.numpy) return n.dtype;
      raise_invalid("torch dtype " + text + " has no edgetensor dtype (known: " + known_dtype_names() + ")");
    }
  }
  py::module_ np;
  try {
    np = py::module_::import("numpy");
  } catch (py::error_already_set&) {
    raise_invalid("unknown dtype " + py::repr(obj).cast<std::string>() + " (known: " + known_dtype_names() +
                          "; numpy is not installed, so numpy dtypes cannot be read)");
  }
  py::object dt;
  try {
    dt = np.attr("dtype")(obj);
  } catch (py::error_already_set& e) {
    if (py::isinstance<py::str>(obj))
      raise_invalid("unknown dtype " + py::repr(obj).cast<std::string>() + " (known: " + known_dtype_names() +
                    ", or any name numpy.dtype reads)");
    throw py::type_error("not a dtype: " + py::repr(obj).cast<std::string>() + " (numpy.dtype says: " + e.what() +
                         ")");
  }
  return from_numpy_dtype(dt);
}

void bind_enums(py::module_& m) {
  py::enum_<et::DType> dtype(m, "DType", "Element types; names as numpy's (edgetensor/dtype.h).");
  for (const auto& n : kDTypes) dtype.value(enum_member_name(n.numpy).c_str(), n.dtype);
  bind_named_enum<et::MemoryKind>(m, "MemoryKind", "Which backend holds a tensor's bytes (edgetensor/memory.h).",
                                  et::memory_kind_name);
}

et::MemoryKind to_memory_kind(const py::handle& obj) {
  if (py::isinstance<et::MemoryKind>(obj)) return obj.cast<et::MemoryKind>();
  if (py::isinstance<py::str>(obj)) {
    auto text = obj.cast<std::string>();
    if (auto kind = et::memory_kind_from_name(text)) return *kind;
    std::string known;
    for (unsigned v = 0; et::memory_kind_name(static_cast<et::MemoryKind>(v)) != "invalid"; ++v)
      known += (v ? ", " : "") + std::string(et::memory_kind_name(static_cast<et::MemoryKind>(v)));
    raise_invalid("unknown memory kind '" + text + "' (known: " + known + ")");
  }
  throw py::type_error("memory must be an edgetensor.MemoryKind or its name, not " +
                       py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
}

et::PixelFormat to_pixel_format(const py::handle& obj) {
  if (py::isinstance<et::PixelFormat>(obj)) return obj.cast<et::PixelFormat>();
  if (py::isinstance<py::str>(obj)) return unwrap(et::pixel_format_from_name(obj.cast<std::string>()));
  throw py::type_error("format must be an edgetensor.PixelFormat or its name, not " +
                       py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
}

std::vector<std::size_t> to_shape(const py::handle& obj, const char* what) {
  std::vector<std::size_t> shape;
  auto one = [&](const py::handle& v, std::size_t index) {
    if (!PyIndex_Check(v.ptr()))
      throw py::type_error(std::string(what) + "[" + std::to_string(index) + "] must be an int, not " +
                           py::str(py::type::of(v).attr("__name__")).cast<std::string>());
    auto value = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!value) throw py::error_already_set();
    if (value < py::int_(0))
      raise_invalid(std::string(what) + "[" + std::to_string(index) + "] = " +
                            py::str(value).cast<std::string>() + " is negative");
    const std::size_t n = PyLong_AsSize_t(value.ptr());
    if (n == static_cast<std::size_t>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_SetString(PyExc_OverflowError, (std::string(what) + "[" + std::to_string(index) + "] = " +
                                            py::str(value).cast<std::string>() + " does not fit in size_t (at most " +
                                            std::to_string(SIZE_MAX) + ")")
                                               .c_str());
      throw py::error_already_set();
    }
    shape.push_back(n);
  };
  // A sequence first: a numpy array is both a sequence and an __index__ holder (one that fails).
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj)) {
    if (!PyIndex_Check(obj.ptr()) || py::isinstance<py::str>(obj))
      throw py::type_error(std::string(what) + " must be an int or a sequence of ints");
    one(obj, 0);
    return shape;
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  for (std::size_t i = 0; i < seq.size(); ++i) one(seq[i], i);
  return shape;
}

template <class T>
T int_arg(const py::handle& obj, const char* name) {
  static_assert(std::is_integral_v<T>);
  if (!PyIndex_Check(obj.ptr()))
    throw py::type_error(std::string(name) + " must be an int, not " +
                         py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  auto value = py::reinterpret_steal<py::int_>(PyNumber_Index(obj.ptr()));
  if (!value) throw py::error_already_set();
  bool fits = true;
  T out{};
  if constexpr (std::is_unsigned_v<T>) {
    const unsigned long long v = value < py::int_(0) ? 0ULL : PyLong_AsUnsignedLongLong(value.ptr());
    if (value < py::int_(0) || (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) ||
        v > std::numeric_limits<T>::max())
      fits = false;
    out = static_cast<T>(v);
  } else {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred()) || v < std::numeric_limits<T>::min() ||
        v > std::numeric_limits<T>::max())
      fits = false;
    out = static_cast<T>(v);
  }
  if (!fits) {
    PyErr_Clear();
    PyErr_SetString(PyExc_OverflowError, (std::string(name) + " = " + py::str(value).cast<std::string>() +
                                          " is outside " + std::to_string(std::numeric_limits<T>::min()) + ".." +
                                          std::to_string(std::numeric_limits<T>::max()))
                                             .c_str());
    throw py::error_already_set();
  }
  return out;
}
template std::uint32_t int_arg<std::uint32_t>(const py::handle&, const char*);
template std::uint64_t int_arg<std::uint64_t>(const py::handle&, const char*);
template std::int64_t int_arg<std::int64_t>(const py::handle&, const char*);

std::vector<std::int64_t> to_strides(const py::handle& obj) {
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    throw py::type_error("strides must be a sequence of ints (bytes)");
  std::vector<std::int64_t> strides;
  for (const auto& v : py::reinterpret_borrow<py::sequence>(obj)) {
    if (!PyIndex_Check(v.ptr())) throw py::type_error("strides must be ints (bytes)");
    strides.push_back(py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr())).cast<std::int64_t>());
  }
  return strides;
}

int to_fd(const py::handle& obj) {
  py::object value = py::reinterpret_borrow<py::object>(obj);
  if (!PyIndex_Check(obj.ptr())) {
    if (!py::hasattr(obj, "fileno"))
      throw py::type_error("an fd must be an int or have fileno() (socket.socket, a file), not " +
                           py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
    value = obj.attr("fileno")();
  }
  auto fd = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!fd) throw py::error_already_set();
  if (fd < py::int_(INT_MIN) || fd > py::int_(INT_MAX))
    raise_invalid("fd " + py::str(fd).cast<std::string>() + " is not an int fd");
  return fd.cast<int>();
}

std::optional<std::chrono::milliseconds> to_timeout_ms(const py::object& seconds) {
  if (seconds.is_none()) return std::nullopt;
  if (!PyFloat_Check(seconds.ptr()) && !PyLong_Check(seconds.ptr()))
    throw py::type_error("timeout must be None or a number of seconds, not " +
                         py::str(py::type::of(seconds).attr("__name__")).cast<std::string>());
  const double s = seconds.cast<double>();
  if (std::isnan(s)) raise_invalid("timeout nan is not a number of seconds (None: no bound)");
  if (!(s >= 0))
    raise_invalid("timeout " + py::repr(seconds).cast<std::string>() + " s is negative (None: no bound)");
  // Rounded up, less 1 ns of float noise: 0.2 s is 200 ms, not 201.
  const double ms = std::max(std::ceil(s * 1000.0 - 1e-6), s > 0 ? 1.0 : 0.0);
  if (ms >= 9.2e15) return std::nullopt;  // past any wait a machine makes (and far from int64 overflow)
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

}  // namespace etpy
