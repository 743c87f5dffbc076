// SPDX-License-Identifier: Apache-2.0
// Memory kinds (storage backends) and their availability on this machine.
#pragma once

#include <edgetensor/export.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Which backend holds a tensor's bytes. The list is the same in every build: a backend that was not
/// built, or whose device is missing, answers Unavailable.
enum class MemoryKind : std::uint8_t {
  Auto = 0,   ///< Request only: DMA-BUF, then shared memory, then heap (EDGETENSOR_FORCE_MEM=1: heap).
  Heap = 1,   ///< Process-private, 256-byte aligned; not shareable by fd.
  Shm = 2,    ///< memfd (anonymous; sealed against shrink, grow and any further seal, so no receiver can
              ///< make it read-only and its owner never can either) or named POSIX shm (/dev/shm; never
              ///< sealable).
  DmaBuf = 3, ///< dma-heap, udmabuf, or an imported DMA-BUF fd.
  GlPbo = 4,  ///< OpenGL ES pixel-buffer object on a gl::Context.
  Foreign = 5,  ///< Memory another library owns, imported through DLPack (dlpack.h); never allocated, never
                ///< shareable by fd (export_fd, ipc::send and the channel refuse it).
};

/// "auto", "heap", "shm", "dmabuf", "gl_pbo", "foreign".
ET_API std::string_view memory_kind_name(MemoryKind kind) noexcept;
ET_API std::optional<MemoryKind> memory_kind_from_name(std::string_view name) noexcept;

/// Whether a backend can allocate here, and why not.
struct BackendStatus {
  MemoryKind kind = MemoryKind::Heap;
  bool built = false;      ///< Compiled into this library.
  bool available = false;  ///< An allocation is expected to work (a cheap probe; no allocation made).
  std::string detail;      ///< The reason when unavailable, else what would serve (e.g. "memfd").
};

/// Probes one backend. Thread-safe; performs only cheap checks (opens no devices for long).
ET_API BackendStatus backend_status(MemoryKind kind);

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
