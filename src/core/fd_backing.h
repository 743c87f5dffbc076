// SPDX-License-Identifier: Apache-2.0
// FdBacking: the common part of every backing that owns one fd (shm, DMA-BUF): the fd, its real size,
// read-only flag, object key, and one lazy persistent MAP_SHARED mapping reused by every CPU map.
// Teardown: the mapping is unmapped in the destructor body, then the fd closes (member destruction).
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <string>
#include <string_view>

#include "core/storage.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

class FdBacking : public Backing {
 public:
  ~FdBacking() override;
  std::string detail() const override { return detail_; }
  std::size_t buffer_bytes() const noexcept override { return buffer_bytes_; }
  bool read_only() const noexcept override { return read_only_; }
  int fd() const noexcept override { return fd_.get(); }
  unsigned seals() const noexcept override { return seals_; }
  ObjectKey object_key() const noexcept override { return key_; }
  Result<UniqueFd> export_fd() const override { return fd_.dup(); }

 protected:
  FdBacking(UniqueFd fd, std::size_t buffer_bytes, bool read_only, ObjectKey key, std::string detail,
            unsigned seals = 0)
      : fd_(std::move(fd)),
        buffer_bytes_(buffer_bytes),
        read_only_(read_only),
        seals_(seals),
        key_(key),
        detail_(std::move(detail)) {}
  /// Makes the persistent mapping on first use (PROT_READ only when read-only). Returns 0 or the mmap
  /// errno. Call under the storage's map lock (from begin_cpu_access).
  int ensure_mapping() noexcept;
  std::byte* base() const noexcept { return base_; }

  UniqueFd fd_;
  std::size_t buffer_bytes_;
  bool read_only_;
  unsigned seals_;  // F_SEAL_* known set (see Backing::seals)
  ObjectKey key_;
  std::string detail_;

 private:
  std::byte* base_ = nullptr;  // persistent mapping, guarded by the storage's map lock
};

/// (st_dev, st_ino) of `fd`; `what` names the fd in the error (e.g. "new memfd").
Result<ObjectKey> object_key_of(int fd, std::string_view what);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
