// SPDX-License-Identifier: Apache-2.0
// edgetensor.ipc (edgetensor/ipc.h): tensors and frames over AF_UNIX sockets, fd and header in one
// message. Sockets are socket.socket objects or int fds, borrowed for the call. Every call releases the
// GIL while it blocks.
#include "bindings.h"

#include <pybind11/stl.h>

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

}  // namespace

void bind_ipc(py::module_& ipc) {
  ipc.doc() =
      "Tensors and frames between processes over a Unix-domain socket that keeps message boundaries "
      "(socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET), or SOCK_DGRAM; SOCK_STREAM is refused). "
      "One message carries the header and the buffer's fd (SCM_RIGHTS), never the bytes (docs/WIRE.md).";
  ipc.def(
      "send",
      [](const py::handle& sock, const et::TensorDyn& tensor) {
        int fd = to_fd(sock);
        blocking<void>([&] { return et::ipc::send(fd, tensor); });
      },
      py::arg("sock"), py::arg("tensor"),
      "Sends the tensor (view, dtype, name, image metadata, quantization) and its buffer's fd. sock: a "
      "connected socket.socket or an int fd, borrowed. Only memory a receiver can trust is sent (sealed memfd, "
      "DMA-BUF): heap and PBO tensors raise UnsupportedError. Blocks with the GIL released.");
  ipc.def(
      "receive",
      [](const py::handle& sock, std::optional<std::size_t> max_buffer_bytes) {
        int fd = to_fd(sock);
        auto o = receive_options(max_buffer_bytes);
        return blocking<et::TensorDyn>([&] { return et::ipc::receive(fd, o); });
      },
      py::arg("sock"), py::kw_only(), py::arg("max_buffer_bytes") = py::none(),
      "Receives one tensor sent with send(): every field and the fd are checked before the tensor is built. "
      "max_buffer_bytes: the largest buffer accepted (default 64 GiB). UnavailableError when the peer closed. "
      "Blocks with the GIL released.");
  ipc.def(
      "send_frame",
      [](const py::handle& sock, const et::Frame& frame) {
        int fd = to_fd(sock);
        blocking<void>([&] { return et::ipc::send_frame(fd, frame); });
      },
      py::arg("sock"), py::arg("frame"), "Sends a Frame: layout, colorimetry and one fd per distinct buffer.");
  ipc.def(
      "receive_frame",
      [](const py::handle& sock, std::optional<std::size_t> max_buffer_bytes) {
        int fd = to_fd(sock);
        auto o = receive_options(max_buffer_bytes);
        return blocking<et::Frame>([&] { return et::ipc::receive_frame(fd, o); });
      },
      py::arg("sock"), py::kw_only(), py::arg("max_buffer_bytes") = py::none(),
      "Receives one Frame sent with send_frame(), checked as receive() checks a tensor.");
}

}  // namespace etpy
