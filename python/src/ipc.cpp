// SPDX-License-Identifier: Apache-2.0
// edgetensor.ipc (edgetensor/ipc.h): tensors and frames over AF_UNIX sockets, fd and header in one
// message. Sockets are socket.socket objects or int fds, borrowed for the call. Every call releases the
// GIL while it waits; the library's timeout and interruption check do the waiting.
#include "bindings.h"

#include <pybind11/stl.h>

#include <chrono>

namespace etpy {
namespace {

// The wait a call makes, as Python's socket module does: timeout= when given, else a socket.socket's
// own timeout (settimeout; None blocks, 0.0 does not wait), else (an int fd) block. Seconds become
// milliseconds.
std::chrono::milliseconds wait_timeout(const py::handle& sock, const py::object& timeout) {
  py::object t = timeout;
  if (t.is_none() && !PyIndex_Check(sock.ptr()) && py::hasattr(sock, "gettimeout")) t = sock.attr("gettimeout")();
  const auto ms = to_timeout_ms(t);
  return ms ? *ms : et::ipc::kWaitForever;
}

et::ipc::SendOptions send_options(const py::handle& sock, const py::object& timeout) {
  et::ipc::SendOptions o;
  o.timeout = wait_timeout(sock, timeout);
  o.on_interrupt = run_signal_handlers;
  return o;
}

et::ipc::ReceiveOptions receive_options(const py::handle& sock, const std::optional<std::size_t>& max_buffer_bytes,
                                        const py::object& timeout) {
  et::ipc::ReceiveOptions o;
  if (max_buffer_bytes) o.max_buffer_bytes = *max_buffer_bytes;
  o.timeout = wait_timeout(sock, timeout);
  o.on_interrupt = run_signal_handlers;
  return o;
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
        const int fd = to_fd(sock);
        const auto o = send_options(sock, timeout);
        released([&] { return et::ipc::send(fd, tensor, o); });
      },
      py::arg("sock"), py::arg("tensor"), py::kw_only(), py::arg("timeout") = py::none(),
      "Sends the tensor (view, dtype, name, image metadata, quantization) and its buffer's fd. sock: a "
      "connected socket.socket or an int fd, borrowed. Only memory a receiver can trust is sent (sealed memfd, "
      "DMA-BUF): heap and PBO tensors raise UnsupportedError. timeout as in receive(), for room in the socket.");
  ipc.def(
      "receive",
      [](const py::handle& sock, std::optional<std::size_t> max_buffer_bytes, const py::object& timeout) {
        const int fd = to_fd(sock);
        const auto o = receive_options(sock, max_buffer_bytes, timeout);
        return released([&] { return et::ipc::receive(fd, o); });
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
        const int fd = to_fd(sock);
        const auto o = send_options(sock, timeout);
        released([&] { return et::ipc::send_frame(fd, frame, o); });
      },
      py::arg("sock"), py::arg("frame"), py::kw_only(), py::arg("timeout") = py::none(),
      "Sends a Frame: layout, colorimetry and one fd per distinct buffer. timeout as in receive().");
  ipc.def(
      "receive_frame",
      [](const py::handle& sock, std::optional<std::size_t> max_buffer_bytes, const py::object& timeout) {
        const int fd = to_fd(sock);
        const auto o = receive_options(sock, max_buffer_bytes, timeout);
        return released([&] { return et::ipc::receive_frame(fd, o); });
      },
      py::arg("sock"), py::kw_only(), py::arg("max_buffer_bytes") = py::none(), py::arg("timeout") = py::none(),
      "Receives one Frame sent with send_frame(), checked as receive() checks a tensor; timeout as in receive().");
}

}  // namespace etpy
