// SPDX-License-Identifier: Apache-2.0
// SharedFd: reference-counted ownership of one fd; closed when the last copy goes.
#pragma once

#include <edgetensor/export.h>

#include <edgetensor/unique_fd.h>

#include <memory>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Shares one fd among several owners (copies are cheap; the fd closes with the last copy).
/// Thread-safe like std::shared_ptr: distinct copies may be used from distinct threads.
class ET_API SharedFd {
 public:
  SharedFd() = default;
  /// Takes ownership of the fd held by `fd`.
  static SharedFd adopt(UniqueFd fd);
  /// Duplicates the borrowed `fd` (F_DUPFD_CLOEXEC); the caller keeps its own fd.
  [[nodiscard]] static Result<SharedFd> duplicate(int borrowed_fd);

  /// The shared fd (-1 when empty). Borrowed: valid while any copy of this SharedFd lives.
  int get() const noexcept { return fd_ ? fd_->get() : -1; }
  bool is_valid() const noexcept { return get() >= 0; }
  explicit operator bool() const noexcept { return is_valid(); }
  /// A new CLOEXEC duplicate the caller owns.
  [[nodiscard]] Result<UniqueFd> dup() const { return UniqueFd::duplicate(get()); }

 private:
  std::shared_ptr<const UniqueFd> fd_;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
