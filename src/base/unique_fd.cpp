// SPDX-License-Identifier: Apache-2.0
#include <edgetensor/shared_fd.h>
#include <edgetensor/unique_fd.h>

#include <cerrno>

#include "base/log_internal.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

void UniqueFd::reset(int fd) noexcept {
  int old = fd_;
  fd_ = fd;
  if (old >= 0 && old != fd) {
    // Never retry close on EINTR: Linux has released the fd already, a retry could close another one.
    if (sys::close(old) != 0 && errno != EINTR)
      detail::log(LogLevel::Warning, "close(fd {}) failed: errno {} ({})", old, errno, errno_name(errno));
  }
}

Result<UniqueFd> UniqueFd::duplicate(int borrowed_fd) {
  if (borrowed_fd < 0) return fail(ErrorCode::InvalidArgument, "duplicate: fd " + std::to_string(borrowed_fd) + " is not a valid fd");
  int fd = sys::dup_cloexec(borrowed_fd);
  if (fd < 0) return fail(Error::from_errno(errno, "fcntl(F_DUPFD_CLOEXEC) of fd " + std::to_string(borrowed_fd)));
  return UniqueFd(fd);
}

SharedFd SharedFd::adopt(UniqueFd fd) {
  SharedFd s;
  if (fd) s.fd_ = std::make_shared<const UniqueFd>(std::move(fd));
  return s;
}

Result<SharedFd> SharedFd::duplicate(int borrowed_fd) {
  ET_TRY_ASSIGN(auto fd, UniqueFd::duplicate(borrowed_fd));
  return adopt(std::move(fd));
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
