// SPDX-License-Identifier: Apache-2.0
// edgetensor.ipc (edgetensor/ipc.h): tensors and frames over AF_UNIX sockets, fd and header in one
// message. Sockets are socket.socket objects or int fds, borrowed for the call. Every call releases the
// GIL while it blocks.
#include "bindings.h"

#include <pybind11/stl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>

namespace etpy {
namespace {

template <class T, class Fn>
T blocking(Fn&& fn) {
  std::optional<et::Result<T>> result;
  {
    py::gil_scoped_release release;
    result.emplace(fn());
  }
  if constexpr (std::is_void_v<T>)
    unwrap(std::move(*result));
  else
    return unwrap(std::move(*result));
}

et::ipc::ReceiveOptions receive_options(const std::optional<std::size_t>& max_buffer_bytes) {
  et::ipc::ReceiveOptions o;
  if (max_buffer_bytes) o.max_buffer_bytes = *max_buffer_bytes;
  return o;
}

// The wait a call makes, as Python's socket module does: timeout= when given, else a socket.socket's
// own timeout (settimeout; None blocks, 0.0 does not wait), else (an int fd) block.
std::optional<double> wait_seconds(const py::handle& sock, const py::object& timeout) {
  py::object t = timeout;
  if (t.is_none() && !PyIndex_Check(sock.ptr()) && py::hasattr(sock, "gettimeout")) t = sock.attr("gettimeout")();
  if (t.is_none()) return std::nullopt;
  if (!PyFloat_Check(t.ptr()) && !PyLong_Check(t.ptr()))
    throw py::type_error("timeout must be None or a number of seconds, not " +
                         py::str(py::type::of(t).attr("__name__")).cast<std::string>());
  const double seconds = t.cast<double>();
  if (!(seconds >= 0)) raise(et::Error(et::ErrorCode::InvalidArgument, "timeout " + py::repr(t).cast<std::string>() +
                                                                          " s is negative (None blocks)"));
  return seconds;
}

// Waits until `fd` is ready for `events` (POLLIN / POLLOUT) with the GIL released, like a socket call:
// a signal wakes it and runs Python's handlers (Ctrl-C raises KeyboardInterrupt here), then the wait
// goes on for what is left of the timeout. On expiry: TimeoutError, or BlockingIOError (an
// edgetensor.BusyError) for a zero timeout, as socket does. A closed peer or an error condition makes
// the fd ready: the call after it reports that.
void wait_ready(int fd, short events, std::optional<double> seconds, const char* what) {
  // A socket the library refuses at once (fd -1 of a closed socket.socket, not a socket, not AF_UNIX,
  // SOCK_STREAM) is not waited on: the call goes straight to the library, whose error names why
  // (poll(2) ignores a negative fd and would wait forever; a stream socket may never be readable).
  int type = 0, domain = 0;
  socklen_t len = sizeof type;
  if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return;
  len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX || type == SOCK_STREAM) return;
  using clock = std::chrono::steady_clock;
  const auto deadline =
      seconds ? clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(*seconds))
              : clock::time_point::max();
  for (;;) {
    int timeout_ms = -1;
    if (seconds) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
    }
    pollfd p{fd, events, 0};
    int n = 0;
    int saved_errno = 0;
    {
      py::gil_scoped_release release;
      n = ::poll(&p, 1, timeout_ms);
      saved_errno = errno;
    }
    if (n > 0) return;
    if (n < 0 && saved_errno == EINTR) {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      continue;
    }
    if (n < 0) raise(et::Error::from_errno(saved_errno, std::string(what) + ": poll on fd " + std::to_string(fd)));
    if (timeout_ms == 0 && seconds && *seconds == 0)
      raise(et::Error(et::ErrorCode::Busy, std::string(what) + ": fd " + std::to_string(fd) +
                                               " is not ready and the timeout is 0 (non-blocking)", EAGAIN));
    if (clock::now() >= deadline) {
      PyErr_SetString(PyExc_TimeoutError,
                      (std::string(what) + ": timed out after " + py::repr(py::float_(*seconds)).cast<std::string>() +
                       " s on fd " + std::to_string(fd))
                          .c_str());
      throw py::error_already_set();
    }
  }
}

}  // namespace

void bind_ipc(py::module_& ipc) {
  ipc.doc() =
      "Tensors and frames between processes over a Unix-domain socket that keeps message boundaries "
      "(socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET), or SOCK_DGRAM; SOCK_STREAM is refused). "
      "One message carries the header and the buffer's fd (SCM_RIGHTS), never the bytes (docs/WIRE.md).";
  ipc.def(
      "send",
      [](const py::handle& sock, const et::TensorDyn& tensor, const py::object& timeout) {
        int fd = to_fd(sock);
        wait_ready(fd, POLLOUT, wait_seconds(sock, timeout), "edgetensor.ipc.send");
        blocking<void>([&] { return et::ipc::send(fd, tensor); });
      },
      py::arg("sock"), py::arg("tensor"), py::kw_only(), py::arg("timeout") = py::none(),
      "Sends the tensor (view, dtype, name, image metadata, quantization) and its buffer's fd. sock: a "
      "connected socket.socket or an int fd, borrowed. Only memory a receiver can trust is sent (sealed memfd, "
      "DMA-BUF): heap and PBO tensors raise UnsupportedError. Blocks with the GIL released.");
  ipc.def(
      "receive",
      [](const py::handle& sock, std::optional<std::size_t> max_buffer_bytes, const py::object& timeout) {
        int fd = to_fd(sock);
        auto o = receive_options(max_buffer_bytes);
        wait_ready(fd, POLLIN, wait_seconds(sock, timeout), "edgetensor.ipc.receive");
        return blocking<et::TensorDyn>([&] { return et::ipc::receive(fd, o); });
      },
      py::arg("sock"), py::kw_only(), py::arg("max_buffer_bytes") = py::none(), py::arg("timeout") = py::none(),
      "Receives one tensor sent with send(): every field and the fd are checked before the tensor is built. "
      "max_buffer_bytes: the largest buffer accepted (default 64 GiB). UnavailableError when the peer closed. "
      "timeout: seconds to wait (None: the socket's own timeout, socket.settimeout, or block for an int fd); "
      "TimeoutError when it passes, BlockingIOError (BusyError) when it is 0 and nothing is waiting. Waits with "
      "the GIL released; a signal runs Python's handlers (Ctrl-C raises KeyboardInterrupt).");
  ipc.def(
      "send_frame",
      [](const py::handle& sock, const et::Frame& frame, const py::object& timeout) {
        int fd = to_fd(sock);
        wait_ready(fd, POLLOUT, wait_seconds(sock, timeout), "edgetensor.ipc.send_frame");
        blocking<void>([&] { return et::ipc::send_frame(fd, frame); });
      },
      py::arg("sock"), py::arg("frame"), py::kw_only(), py::arg("timeout") = py::none(),
      "Sends a Frame: layout, colorimetry and one fd per distinct buffer. timeout as in receive().");
  ipc.def(
      "receive_frame",
      [](const py::handle& sock, std::optional<std::size_t> max_buffer_bytes, const py::object& timeout) {
        int fd = to_fd(sock);
        auto o = receive_options(max_buffer_bytes);
        wait_ready(fd, POLLIN, wait_seconds(sock, timeout), "edgetensor.ipc.receive_frame");
        return blocking<et::Frame>([&] { return et::ipc::receive_frame(fd, o); });
      },
      py::arg("sock"), py::kw_only(), py::arg("max_buffer_bytes") = py::none(), py::arg("timeout") = py::none(),
      "Receives one Frame sent with send_frame(), checked as receive() checks a tensor; timeout as in receive().");
}

}  // namespace etpy
