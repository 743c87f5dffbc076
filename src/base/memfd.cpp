// SPDX-License-Identifier: Apache-2.0
#include "base/memfd.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>

#include "text/format.h"

#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

std::string memfd_name(std::string_view prefix, std::string_view tensor_name) {
  if (tensor_name.empty()) return std::string(prefix);
  return text::format("{}:{}", prefix, tensor_name.substr(0, 200));
}

std::string seal_names(unsigned seals) {
  static constexpr struct {
    unsigned bit;
    const char* name;
  } kSeals[] = {{F_SEAL_SEAL, "F_SEAL_SEAL"},   {F_SEAL_SHRINK, "F_SEAL_SHRINK"},
                {F_SEAL_GROW, "F_SEAL_GROW"},   {F_SEAL_WRITE, "F_SEAL_WRITE"},
                {F_SEAL_FUTURE_WRITE, "F_SEAL_FUTURE_WRITE"}};
  std::string out;
  for (const auto& s : kSeals) {
    if (!(seals & s.bit)) continue;
    if (!out.empty()) out += '|';
    out += s.name;
    seals &= ~s.bit;
  }
  if (seals != 0) out += text::format("{}{:#x}", out.empty() ? "" : "|", seals);
  return out.empty() ? "none" : out;
}

Result<UniqueFd> create_sealed_memfd(const std::string& name, std::size_t size_bytes, unsigned seals) {
  UniqueFd fd(sys::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fail(Error::from_errno(errno, text::format("memfd_create('{}')", name)));
  if (sys::ftruncate(fd.get(), static_cast<off_t>(size_bytes)) != 0)
    return fail(Error::from_errno(errno, text::format("ftruncate of memfd to {} B ('{}')", size_bytes, name)));
  if (seals != 0 && sys::fcntl(fd.get(), F_ADD_SEALS, static_cast<long>(seals)) != 0)
    return fail(Error::from_errno(errno, text::format("fcntl(F_ADD_SEALS, {}) on memfd '{}'", seal_names(seals), name)));
  return fd;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
