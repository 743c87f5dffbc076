// SPDX-License-Identifier: Apache-2.0
#include "core/fd_backing.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>

#include "text/format.h"

#include "base/log_internal.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

FdBacking::~FdBacking() {
  if (base_ && sys::munmap(base_, buffer_bytes_) != 0)
    log(LogLevel::Warning, "munmap of {} ({} B) failed: {}", detail_, buffer_bytes_, errno_name(errno));
}

int FdBacking::ensure_mapping() noexcept {
  if (base_) return 0;
  int prot = read_only_ ? PROT_READ : PROT_READ | PROT_WRITE;
  void* p = sys::mmap(nullptr, buffer_bytes_, prot, MAP_SHARED, fd_.get(), 0);
  if (p == MAP_FAILED) return errno;
  base_ = static_cast<std::byte*>(p);
  return 0;
}

Result<ObjectKey> object_key_of(int fd, std::string_view what) {
  struct stat st {};
  if (sys::fstat(fd, &st) != 0) return fail(Error::from_errno(errno, text::format("fstat of {} fd {}", what, fd)));
  return ObjectKey{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
