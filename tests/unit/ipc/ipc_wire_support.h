// SPDX-License-Identifier: Apache-2.0
// Helpers of the IPC message tests: socket pairs, sealed memfds, and raw messages as a hostile or
// broken sender would write them (src/ipc/ipc_wire.h).
#pragma once

#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>
#include <vector>

#include "ipc/ipc_wire.h"
#include "support/test_support.h"

namespace et_test::ipc_wire {

using namespace edgetensor;

struct Pair {
  explicit Pair(int type = SOCK_SEQPACKET) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
    a = UniqueFd(sv[0]);
    b = UniqueFd(sv[1]);
  }
  UniqueFd a, b;
};

// A memfd of `size` bytes filled with `fill`, sealed with `seals` (0: unsealed, sealing allowed).
inline UniqueFd sealed_memfd(std::size_t size, unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW, int fill = 0) {
  UniqueFd fd(::memfd_create("et-ipc-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  if (fill != 0) {
    std::vector<unsigned char> bytes(size, static_cast<unsigned char>(fill));
    EXPECT_EQ(::pwrite(fd.get(), bytes.data(), size, 0), static_cast<ssize_t>(size));
  }
  if (seals) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seals), 0);
  }
  return fd;
}

// A valid tensor header of a U8 tensor [bytes] in Shm.
inline detail::WireHeader valid_header(std::size_t bytes) {
  detail::WireHeader h;
  h.version = ipc::kTensorMessageVersion;
  h.header_bytes = detail::kWireHeaderBytes;
  h.dtype = static_cast<std::uint8_t>(DType::U8);
  h.rank = 1;
  h.memory = static_cast<std::uint8_t>(MemoryKind::Shm);
  h.shape[0] = bytes;
  h.strides[0] = 1;
  return h;
}

// A valid frame header: NV12 w x h, planes tight (stride w), each in its own buffer at offset 0.
inline detail::FrameWireHeader valid_frame_header(std::uint32_t w, std::uint32_t h) {
  detail::FrameWireHeader f;
  f.version = ipc::kFrameMessageVersion;
  f.header_bytes = detail::kFrameWireHeaderBytes;
  f.pixel_format = static_cast<std::uint16_t>(PixelFormat::Nv12);
  f.plane_count = 2;
  f.buffer_count = 2;
  f.plane_buffer[1] = 1;
  f.image_width = w;
  f.image_height = h;
  f.memory[0] = f.memory[1] = static_cast<std::uint8_t>(MemoryKind::Shm);
  f.planes[0][1] = w;
  f.planes[1][1] = w;
  return f;
}

// Sends `bytes` (cut to `size` when non-zero) and `fds`.
inline void send_bytes(int sock, const std::vector<std::byte>& bytes, std::initializer_list<int> fds,
                       std::size_t size = 0) {
  std::span<const std::byte> span(bytes.data(), size ? size : bytes.size());
  ASSERT_OK(ipc::send_fds(sock, span, fds));
}
inline void send_raw(int sock, const detail::WireHeader& h, std::initializer_list<int> fds, std::size_t size = 0) {
  send_bytes(sock, detail::encode_tensor_message(h), fds, size);
}

}  // namespace et_test::ipc_wire
