// SPDX-License-Identifier: Apache-2.0
#include "backends/shm/shm.h"

#include <edgetensor/shm.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>

#include <cerrno>
#include <cstdint>

#include "text/format.h"

#include "base/address_space.h"
#include "core/fd_backing.h"
#include "base/log_internal.h"
#include "base/memfd.h"
#include "base/shm_name.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

class ShmBacking final : public FdBacking {
 public:
  ShmBacking(UniqueFd fd, std::size_t size, bool read_only, ObjectKey key, std::string detail, unsigned seals)
      : FdBacking(std::move(fd), size, read_only, key, std::move(detail), seals) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Shm; }
  // Heap-like: the persistent mapping is all a map needs, so maps take the storage's lock-free path.
  bool needs_cpu_access_bracket() const noexcept override { return false; }
  Result<std::byte*> cpu_address() override {
    if (int e = ensure_mapping(); e != 0)
      return fail(mapping_error(e, text::format("mmap of {} ({} B)", detail_, buffer_bytes_), buffer_bytes_));
    return base();
  }
  Result<std::byte*> begin_cpu_access(MapMode) override { return cpu_address(); }
};

BackendStatus shm_status() {
  BackendStatus s{MemoryKind::Shm, true, false, {}};
  int fd = sys::memfd_create("edgetensor-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    s.detail = Error::from_errno(errno, "memfd_create").message();
    return s;
  }
  sys::close(fd);
  s.available = true;
  s.detail = "memfd";
  return s;
}

// A memfd is sparse: ftruncate to any size succeeds and the pages come on first touch. A size larger
// than this machine's memory (RAM + swap, sysinfo(2)) could never be backed, so it is refused here, not
// at a map or a SIGBUS later (issue 25's trial: a 1 PiB memfd "allocated").
Result<void> check_memfd_size(std::size_t size) {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return {};  // unknown: the kernel's own limits apply
  const std::uint64_t unit = info.mem_unit == 0 ? 1 : info.mem_unit;
  const std::uint64_t units = static_cast<std::uint64_t>(info.totalram) + static_cast<std::uint64_t>(info.totalswap);
  if (size / unit <= units) return {};
  auto bytes = [&](std::uint64_t n) {  // saturating n x mem_unit (32-bit sysinfo counts a unit each)
    std::uint64_t b = 0;
    return __builtin_mul_overflow(n, unit, &b) ? UINT64_MAX : b;
  };
  return fail(ErrorCode::OutOfMemory,
              text::format("memfd of {} B is larger than this machine's memory ({} B RAM + {} B swap, sysinfo): it "
                           "could never be backed", size, bytes(info.totalram), bytes(info.totalswap)),
              ENOMEM);
}

Result<std::unique_ptr<Backing>> allocate_memfd(std::size_t size, const std::string& name) {
  ET_TRY(check_memfd_size(size));
  // Importers may trust the size only if nobody can shrink the file under their mapping (SIGBUS).
  // F_SEAL_SEAL: no receiver can add F_SEAL_WRITE/F_SEAL_FUTURE_WRITE and lock us out of our own
  // buffer (fcntl(2): EPERM); the price is that we can never make it read-only later either.
  constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  ET_TRY_ASSIGN(UniqueFd fd, create_sealed_memfd(memfd_name("edgetensor", name), size, kSeals));
  ET_TRY_ASSIGN(auto key, object_key_of(fd.get(), "new shm"));
  return std::make_unique<ShmBacking>(std::move(fd), size, false, key, "memfd", kSeals);
}

Result<std::unique_ptr<Backing>> allocate_named(std::size_t size, const std::string& name) {
  ET_TRY(check_shm_name(name, "AllocateOptions::shm_name"));
  UniqueFd fd(sys::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    int e = errno;
    if (e == EEXIST)
      return fail(ErrorCode::AlreadyExists,
                  text::format("POSIX shm name '{}' exists; remove it (shm::remove) or open it", name), e);
    return fail(Error::from_errno(e, text::format("shm_open('{}', O_CREAT|O_EXCL)", name)));
  }
  auto undo = [&](Error err) {
    sys::shm_unlink(name.c_str());
    return fail(std::move(err));
  };
  if (sys::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
    return undo(Error::from_errno(errno, text::format("ftruncate of shm '{}' to {} B", name, size)));
  // Reserve the pages now, so a full /dev/shm is an error here rather than a SIGBUS on first touch.
  if (int e = sys::posix_fallocate(fd.get(), 0, static_cast<off_t>(size)); e != 0) {
    struct statvfs vfs {};
    std::string room = ::statvfs("/dev/shm", &vfs) == 0
                           ? text::format("; /dev/shm has {} B free", static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize)
                           : "";
    return undo(Error::from_errno(e, text::format("reserving {} B for shm '{}' (posix_fallocate){}", size, name, room)));
  }
  auto key = object_key_of(fd.get(), "new shm");
  if (!key) return undo(key.error());
  // POSIX shm objects cannot be sealed (no MFD_ALLOW_SEALING): no seals.
  return std::make_unique<ShmBacking>(std::move(fd), size, false, *key, "posix shm " + name, 0u);
}

Result<std::unique_ptr<Backing>> shm_allocate(std::size_t size, const AllocateOptions& options) {
  if (!options.shm_name.empty()) return allocate_named(size, options.shm_name);
  return allocate_memfd(size, options.name);
}

Result<std::unique_ptr<Backing>> shm_import(UniqueFd fd, const FdInfo& info) {
  return std::make_unique<ShmBacking>(std::move(fd), info.buffer_bytes, info.read_only, info.key,
                                      "imported " + info.what, info.seals);
}

}  // namespace

Result<std::unique_ptr<Backing>> shm_open_named(const std::string& name, bool read_only, FdInfo* info_out) {
  ET_TRY(check_shm_name(name, "shm::open: shm_name"));
  UniqueFd fd(sys::shm_open(name.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC, 0));
  if (!fd) {
    int e = errno;
    if (e == ENOENT) return fail(ErrorCode::NotFound, text::format("POSIX shm '{}' does not exist", name), e);
    return fail(Error::from_errno(e, text::format("shm_open('{}')", name)));
  }
  ET_TRY_ASSIGN(auto info, probe_fd(fd.get()));
  *info_out = info;
  return std::make_unique<ShmBacking>(std::move(fd), info.buffer_bytes, info.read_only, info.key, "posix shm " + name,
                                      info.seals);
}

const BackendOps& shm_backend() {
  static constexpr BackendOps ops{MemoryKind::Shm, &shm_status, &shm_allocate, &shm_import, nullptr};
  return ops;
}

}  // namespace detail


Result<TensorDyn> shm::open(const std::string& shm_name, ArrayRef<std::size_t> shape, DType dtype, bool read_only,
                            const ImportOptions& options) {
  ET_TRY(detail::check_shm_name(shm_name, "shm::open: shm_name"));
  // Opened first, so a missing name is NotFound whatever the options (the mapping goes with `backing`).
  detail::FdInfo info;
  ET_TRY_ASSIGN(auto backing, detail::shm_open_named(shm_name, read_only, &info));
  // The kernel marks every shm_open object F_SEAL_SEAL: it can never get F_SEAL_SHRINK (tensor.h).
  if (!options.allow_shrinkable)
    return fail(ErrorCode::InvalidArgument,
                text::format("shm::open('{}'): a named POSIX shm object can never be sealed, so any process that "
                            "can open it can truncate it, and this process would then die of SIGBUS touching the "
                            "lost pages; if its writers are trusted, pass ImportOptions{{.allow_shrinkable = true}}, "
                            "else share a sealed memfd with ipc::send instead", shm_name));
  return detail::tensor_from_backing(std::move(backing), shape, dtype, options);
}

Result<void> shm::remove(const std::string& shm_name) {
  ET_TRY(detail::check_shm_name(shm_name, "shm::remove: shm_name"));
  if (sys::shm_unlink(shm_name.c_str()) != 0) {
    int e = errno;
    if (e == ENOENT) return fail(ErrorCode::NotFound, text::format("POSIX shm '{}' does not exist", shm_name), e);
    return fail(Error::from_errno(e, text::format("shm_unlink('{}')", shm_name)));
  }
  return {};
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
