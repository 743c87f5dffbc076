// SPDX-License-Identifier: Apache-2.0
// The devices the fence hardware tests use (fence_test.cpp, fence_capi_test.cpp): vgem, which makes real
// unsignalled fences, and the system dma-heap. vgem (drivers/gpu/drm/vgem, loaded by
// tests/kernel/dmabuf_lane.sh): a dumb buffer on vgem's card node (render nodes refuse dumb buffers),
// PRIME-exported, with a fence attached by DRM_IOCTL_VGEM_FENCE_ATTACH and signalled by
// DRM_IOCTL_VGEM_FENCE_SIGNAL. vgem signals a fence by itself after 10 s and when its DRM fd closes, so
// every wait in a test must be far shorter.
#pragma once

#include <edgetensor/unique_fd.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/ioctl.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "support/env.h"

namespace et_test {

// ---- The DRM and vgem UAPI the tests use, declared from the kernel's headers -------------------
// include/uapi/drm/drm.h and drm_mode.h (Debian ships them only in libdrm-dev, which the library does
// not need) and include/uapi/drm/vgem_drm.h (in no Debian package).
namespace drm_uapi {
struct DrmVersion {  // struct drm_version
  int version_major, version_minor, version_patchlevel;
  __kernel_size_t name_len;
  char* name;
  __kernel_size_t date_len;
  char* date;
  __kernel_size_t desc_len;
  char* desc;
};
struct DrmGemClose {  // struct drm_gem_close
  __u32 handle, pad;
};
struct DrmPrimeHandle {  // struct drm_prime_handle
  __u32 handle, flags;
  __s32 fd;
};
struct DrmModeCreateDumb {  // struct drm_mode_create_dumb
  __u32 height, width, bpp, flags, handle, pitch;
  __u64 size;
};
struct VgemFenceAttach {  // struct drm_vgem_fence_attach
  __u32 handle, flags, out_fence, pad;
};
struct VgemFenceSignal {  // struct drm_vgem_fence_signal
  __u32 fence, flags;
};
constexpr unsigned kDrmBase = 'd';          // DRM_IOCTL_BASE
constexpr unsigned kDrmCommandBase = 0x40;  // DRM_COMMAND_BASE
constexpr __u32 kVgemFenceWrite = 0x1;      // VGEM_FENCE_WRITE
constexpr unsigned long kDrmIoctlVersion = _IOWR(kDrmBase, 0x00, DrmVersion);
constexpr unsigned long kDrmIoctlGemClose = _IOW(kDrmBase, 0x09, DrmGemClose);
constexpr unsigned long kDrmIoctlPrimeHandleToFd = _IOWR(kDrmBase, 0x2d, DrmPrimeHandle);
constexpr unsigned long kDrmIoctlModeCreateDumb = _IOWR(kDrmBase, 0xB2, DrmModeCreateDumb);
constexpr unsigned long kVgemIoctlFenceAttach = _IOWR(kDrmBase, kDrmCommandBase + 0x1, VgemFenceAttach);
constexpr unsigned long kVgemIoctlFenceSignal = _IOW(kDrmBase, kDrmCommandBase + 0x2, VgemFenceSignal);
}  // namespace drm_uapi

inline constexpr const char* kSystemHeap = "/dev/dma_heap/system";

/// True when a missing vgem fails the vgem tests instead of skipping them: ET_FENCE_REQUIRE_VGEM=1
/// (the kernel lane).
inline bool vgem_required() { return env_flag("ET_FENCE_REQUIRE_VGEM"); }

/// vgem's card node, opened; the first opener of a primary node is its master, so PRIME and dumb
/// buffers work as root. Closing it signals every fence this file attached. Not thread-safe.
class Vgem {
 public:
  /// Opens vgem's card node into `out`; on failure `out` stays empty and the text says why.
  static std::string find_card(edgetensor::UniqueFd& out) {
    using namespace drm_uapi;
    std::string seen;
    for (int i = 0; i < 16; ++i) {
      const std::string path = "/dev/dri/card" + std::to_string(i);
      edgetensor::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
      if (!fd) continue;
      char name[64] = {};
      DrmVersion v{};
      v.name = name;
      v.name_len = sizeof name - 1;
      if (::ioctl(fd.get(), kDrmIoctlVersion, &v) != 0) continue;
      if (std::string(name) == "vgem") {
        out = std::move(fd);
        return path;
      }
      seen += (seen.empty() ? "" : ", ") + path + " (" + name + ")";
    }
    return "no vgem card node among /dev/dri/card0..15" + (seen.empty() ? std::string() : ": " + seen) +
           " (load it: modprobe vgem; the kernel lane does: tests/kernel/dmabuf_lane.sh)";
  }
  struct Bo {
    __u32 handle = 0;
    edgetensor::UniqueFd dmabuf;  // the PRIME export, owned here
    std::size_t size = 0;         // bytes
  };
  /// A dumb buffer of width x height x 32 bpp, PRIME-exported read-write (CLOEXEC).
  Bo create(__u32 width, __u32 height) {
    using namespace drm_uapi;
    Bo bo;
    DrmModeCreateDumb c{};
    c.width = width;
    c.height = height;
    c.bpp = 32;
    EXPECT_EQ(::ioctl(fd_.get(), kDrmIoctlModeCreateDumb, &c), 0) << "DRM_IOCTL_MODE_CREATE_DUMB: " << std::strerror(errno);
    bo.handle = c.handle;
    bo.size = static_cast<std::size_t>(c.size);
    DrmPrimeHandle p{};
    p.handle = c.handle;
    p.flags = O_CLOEXEC | O_RDWR;  // DRM_CLOEXEC | DRM_RDWR
    p.fd = -1;
    EXPECT_EQ(::ioctl(fd_.get(), kDrmIoctlPrimeHandleToFd, &p), 0) << "PRIME_HANDLE_TO_FD: " << std::strerror(errno);
    bo.dmabuf.reset(p.fd);
    handles_.push_back(c.handle);
    return bo;
  }
  /// An unsignalled fence on the buffer: a writer's (every access waits) or a reader's (writers wait).
  __u32 attach(const Bo& bo, bool write) {
    using namespace drm_uapi;
    VgemFenceAttach a{};
    a.handle = bo.handle;
    a.flags = write ? kVgemFenceWrite : 0;
    EXPECT_EQ(::ioctl(fd_.get(), kVgemIoctlFenceAttach, &a), 0) << "VGEM_FENCE_ATTACH: " << std::strerror(errno);
    return a.out_fence;
  }
  void signal(__u32 fence) {
    using namespace drm_uapi;
    VgemFenceSignal s{};
    s.fence = fence;
    EXPECT_EQ(::ioctl(fd_.get(), kVgemIoctlFenceSignal, &s), 0) << "VGEM_FENCE_SIGNAL: " << std::strerror(errno);
  }
  ~Vgem() {
    for (__u32 h : handles_) {
      drm_uapi::DrmGemClose c{h, 0};
      (void)::ioctl(fd_.get(), drm_uapi::kDrmIoctlGemClose, &c);
    }
  }
  edgetensor::UniqueFd fd_;

 private:
  std::vector<__u32> handles_;
};

}  // namespace et_test

/// Declares `et_test::Vgem var` on vgem's card node, or skips naming the reason (fails instead with
/// ET_FENCE_REQUIRE_VGEM=1).
#define ET_VGEM_OR_SKIP(var)                                                          \
  ::et_test::Vgem var;                                                                \
  do {                                                                                \
    std::string et_why_ = ::et_test::Vgem::find_card(var.fd_);                        \
    if (!var.fd_) {                                                                   \
      if (::et_test::vgem_required()) FAIL() << et_why_ << " but ET_FENCE_REQUIRE_VGEM=1"; \
      GTEST_SKIP() << et_why_;                                                        \
    }                                                                                 \
  } while (0)

/// Skips when /dev/dma_heap/system is missing, naming it (fails instead with ET_DMABUF_REQUIRE_DEVICES=1).
#define ET_SYSTEM_HEAP_OR_SKIP()                                                                       \
  do {                                                                                                 \
    if (::access(::et_test::kSystemHeap, F_OK) != 0) {                                                 \
      if (::et_test::dmabuf_devices_required())                                                        \
        FAIL() << ::et_test::kSystemHeap << " is missing but ET_DMABUF_REQUIRE_DEVICES=1";             \
      GTEST_SKIP() << ::et_test::kSystemHeap << " is missing (run the kernel lane: tests/kernel/dmabuf_lane.sh)"; \
    }                                                                                                  \
  } while (0)
