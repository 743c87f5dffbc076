// SPDX-License-Identifier: Apache-2.0
// Library errors as Python exceptions: edgetensor.Error (an OSError, with .code and .errno) and one
// subclass per ErrorCode that also derives from the built-in a Python caller expects.
#include "bindings.h"

#include <array>
#include <cerrno>

namespace etpy {
namespace {

struct ExceptionClass {
  et::ErrorCode code;
  const char* name;
  PyObject* builtin;  // the second base; null: Error only
  const char* doc;
};

// Error(OSError) follows STYLE.md ("Python"); each built-in is the one Python code catches for that
// failure: a bad argument is a ValueError, a missing shm name a FileNotFoundError, and so on.
const ExceptionClass* classes() {
  static const ExceptionClass table[] = {
      {et::ErrorCode::InvalidArgument, "InvalidArgumentError", PyExc_ValueError,
       "A broken contract: bad shape, dtype, stride, name or fd (ErrorCode.INVALID_ARGUMENT)."},
      {et::ErrorCode::OutOfRange, "OutOfRangeError", PyExc_ValueError,
       "A value past a limit: a view out of bounds, a size overflow, a short buffer (ErrorCode.OUT_OF_RANGE)."},
      {et::ErrorCode::NotFound, "NotFoundError", PyExc_FileNotFoundError,
       "A named object does not exist (ErrorCode.NOT_FOUND)."},
      {et::ErrorCode::AlreadyExists, "AlreadyExistsError", PyExc_FileExistsError,
       "A create-exclusive call found the name taken (ErrorCode.ALREADY_EXISTS)."},
      {et::ErrorCode::PermissionDenied, "PermissionDeniedError", PyExc_PermissionError,
       "EACCES/EPERM, or a write map of read-only storage (ErrorCode.PERMISSION_DENIED)."},
      {et::ErrorCode::OutOfMemory, "OutOfMemoryError", PyExc_MemoryError,
       "ENOMEM/ENOSPC: memory or the filesystem is full (ErrorCode.OUT_OF_MEMORY)."},
      {et::ErrorCode::Busy, "BusyError", PyExc_BlockingIOError,
       "Try later: EBUSY/EAGAIN, a PBO already mapped, fds exhausted (ErrorCode.BUSY)."},
      {et::ErrorCode::Unavailable, "UnavailableError", nullptr,
       "Backend not built, device or driver missing, peer gone (ErrorCode.UNAVAILABLE)."},
      {et::ErrorCode::Unsupported, "UnsupportedError", nullptr,
       "This backend or object cannot do the operation (ErrorCode.UNSUPPORTED)."},
      {et::ErrorCode::FailedPrecondition, "FailedPreconditionError", nullptr,
       "The object is in the wrong state: empty tensor, GL context gone (ErrorCode.FAILED_PRECONDITION)."},
      {et::ErrorCode::Internal, "InternalError", nullptr, "A bug or an errno the library does not classify."},
      {et::ErrorCode::Timeout, "TimeoutError", PyExc_TimeoutError,
       "A bounded wait for device work passed: a DMA-BUF map, a fence (ErrorCode.TIMEOUT)."},
  };
  return table;
}
constexpr std::size_t kClassCount = 12;

// Owned by the module too; these references are never released (exception classes live as long as
// the process, and a static py::object would be destroyed after the interpreter).
PyObject* g_error = nullptr;
PyObject* g_dlpack_error = nullptr;
std::array<PyObject*, kClassCount + 1> g_by_code{};  // index = ErrorCode value

PyObject* new_class(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  std::string qualified = std::string("edgetensor.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.attr(name) = py::handle(cls);  // the module's reference; ours is the one PyErr_NewException gave
  return cls;
}

[[noreturn]] void raise_as(PyObject* cls, const et::Error& error) {
  py::object exc = py::reinterpret_borrow<py::object>(cls)(error.message());
  exc.attr("code") = py::cast(error.code());
  // errno only: with strerror set too, OSError's str() would prefix "[Errno N] " to the library's message.
  if (error.sys_errno() != 0) exc.attr("errno") = error.sys_errno();
  PyErr_SetObject(cls, exc.ptr());
  throw py::error_already_set();
}

}  // namespace

void bind_errors(py::module_& m) {
  bind_named_enum<et::ErrorCode>(m, "ErrorCode", "The library's error codes (edgetensor/error.h).",
                                 et::error_code_name, 1, "Unknown");

  g_error = new_class(m, "Error",
                      "Base of every edgetensor error (an OSError). str(e) is the library's message; e.code is "
                      "the ErrorCode; e.errno the saved errno, or None when none applies.",
                      py::make_tuple(py::handle(PyExc_OSError)));
  const ExceptionClass* table = classes();
  for (std::size_t i = 0; i < kClassCount; ++i) {
    const ExceptionClass& c = table[i];
    py::tuple bases = c.builtin ? py::make_tuple(py::handle(g_error), py::handle(c.builtin))
                                : py::make_tuple(py::handle(g_error));
    g_by_code[static_cast<std::size_t>(c.code)] = new_class(m, c.name, c.doc, bases);
  }
  g_dlpack_error = new_class(m, "DLPackError",
                             "A DLPack export or import the library refused (__dlpack__, from_dlpack): a "
                             "BufferError, as the DLPack protocol asks, with the library's code and message.",
                             py::make_tuple(py::handle(g_error), py::handle(PyExc_BufferError)));
  // Raises the exception an Error of this code becomes: for python/tests/test_errors.py, and for the
  // package's pure-Python waits (edgetensor/_channel.py: a timed-out receive_async).
  m.def("_raise_error", [](et::ErrorCode code, const std::string& message, int sys_errno) {
    raise(et::Error(code, message, sys_errno));
  });
}

void raise(const et::Error& error) {
  // A timeout that passed on a queue (a pool, a socket, a channel: Busy with ETIMEDOUT) is
  // edgetensor.TimeoutError as well, a built-in TimeoutError as socket's is: one class for every wait
  // that ran out. A zero timeout's EAGAIN stays a BusyError, a BlockingIOError.
  if (error.code() == et::ErrorCode::Busy && error.sys_errno() == ETIMEDOUT)
    raise_as(g_by_code[static_cast<std::size_t>(et::ErrorCode::Timeout)], error);
  auto index = static_cast<std::size_t>(error.code());
  PyObject* cls = index < g_by_code.size() && g_by_code[index] != nullptr ? g_by_code[index] : g_error;
  raise_as(cls, error);
}

// A refusal (the export or import cannot be made) is a DLPackError, a BufferError as the DLPack protocol
// asks; a resource condition keeps the class it has everywhere else (a PBO already mapped is a BusyError,
// memory that cannot be mapped an OutOfMemoryError), whichever call met it.
void raise_dlpack(const et::Error& error) {
  if (error.code() == et::ErrorCode::Busy || error.code() == et::ErrorCode::OutOfMemory) raise(error);
  raise_as(g_dlpack_error, error);
}

}  // namespace etpy
