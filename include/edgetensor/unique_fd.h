// SPDX-License-Identifier: Apache-2.0
// UniqueFd: sole owner of one file descriptor (move-only), closed exactly once.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Owns one fd. Destruction closes it (never retried on EINTR: Linux always releases the fd; a close
/// failure is reported through the log callback). `release()` gives the fd up without closing it.
/// Thread rules: like an int; do not share one UniqueFd between threads without locking.
class ET_API UniqueFd {
 public:
  UniqueFd() noexcept = default;
  /// Takes ownership of `fd` (-1 = empty).
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  /// The fd, still owned by this object (-1 when empty).
  int get() const noexcept { return fd_; }
  bool is_valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return is_valid(); }

  /// Gives up ownership: the caller must close the returned fd.
  [[nodiscard]] int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes the current fd (if any) and takes ownership of `fd`.
  void reset(int fd = -1) noexcept;

  /// A new CLOEXEC duplicate (F_DUPFD_CLOEXEC) of the borrowed `fd`; the caller owns the result.
  /// Errors: InvalidArgument for a negative fd; from_errno (EBADF -> InvalidArgument, EMFILE -> Busy).
  [[nodiscard]] static Result<UniqueFd> duplicate(int borrowed_fd);
  /// A CLOEXEC duplicate of the fd held here.
  [[nodiscard]] Result<UniqueFd> dup() const { return duplicate(fd_); }

 private:
  int fd_ = -1;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
