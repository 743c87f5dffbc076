// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dma_heap_plan.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "text/format.h"

#include "base/c_string.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {
constexpr HeapCandidate kProbeTable[] = {
    {"default_cma_region", true},  // Linux >= 6.17: the fixed name of the default CMA heap
    {"linux,cma", true},           // devicetree CMA node named linux,cma (before 6.17; legacy alias after)
    {"reserved", true},            // CMA area from cma= / Kconfig (before 6.17; legacy alias after)
    {"default-pool", true},        // devicetree CMA node named default-pool
    {"system", false},
};
}  // namespace

std::span<const HeapCandidate> heap_probe_table() noexcept { return kProbeTable; }

Result<void> check_heap_name(std::string_view name) {
  if (name.empty()) return fail(ErrorCode::InvalidArgument, "dma-heap name is empty");
  if (name.size() >= 255)
    return fail(ErrorCode::InvalidArgument,
                text::format("dma-heap name of {} bytes is too long (limit 254)", name.size()));
  ET_TRY(check_c_string(name, "dma-heap name"));
  if (name.find('/') != std::string_view::npos || name == "." || name == "..")
    return fail(ErrorCode::InvalidArgument,
                text::format("dma-heap name '{}' is not a node name of a heap directory (no '/', '.' or '..')", name));
  return {};
}

Result<HeapPlan> make_heap_plan(std::string_view requested) {
  HeapPlan plan;
  if (requested.empty()) {
    for (const auto& c : kProbeTable) plan.heaps.emplace_back(c.name);
    return plan;
  }
  if (requested == kUdmabufName) return plan;  // no heaps, udmabuf only
  ET_TRY(check_heap_name(requested));
  plan.heaps.emplace_back(requested);
  plan.required = true;
  plan.use_udmabuf = false;
  return plan;
}

std::string dmabuf_buffer_name(std::string_view tensor_name) {
  std::string name = tensor_name.empty() ? std::string("edgetensor") : text::format("et:{}", tensor_name);
  const std::size_t limit = kDmaBufNameLen - 1;
  if (name.size() <= limit) return name;
  std::size_t cut = limit;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  name.resize(cut);
  return name;
}

Result<std::size_t> round_up_to_page(std::size_t bytes, std::size_t page) {
  if (bytes > SIZE_MAX - (page - 1))
    return fail(ErrorCode::OutOfRange, text::format("{} B rounded up to the page size {} B overflows", bytes, page));
  return (bytes + page - 1) & ~(page - 1);
}

namespace {
template <class Name>
std::string quote_all(std::span<const Name> names) {
  std::string out;
  for (const auto& n : names) out += text::format("{}\"{}\"", out.empty() ? "" : ", ", n);
  return out;
}
}  // namespace

std::string quoted_names(std::span<const std::string> names) { return quote_all(names); }
std::string quoted_names(std::span<const std::string_view> names) { return quote_all(names); }

Error device_open_error(std::string_view path, int err, std::string_view heap_name,
                        const std::vector<std::string>& kernel_heaps, std::string_view permissions,
                        std::string_view kernel_heaps_problem) {
  const std::string perm = permissions.empty() ? std::string() : text::format(" (node is {})", permissions);
  switch (err) {
    case ENOENT: {
      std::string why;
      if (heap_name.empty()) {
        why = "this kernel has no udmabuf (CONFIG_UDMABUF) or its device node is missing";
      } else if (std::find(kernel_heaps.begin(), kernel_heaps.end(), heap_name) != kernel_heaps.end()) {
        why = text::format("the kernel has heap \"{}\" (its heap list names it) but the device node is "
                          "missing, e.g. /dev not passed into this container",
                          heap_name);
      } else if (!kernel_heaps.empty()) {
        why = text::format("this kernel has no heap \"{}\"; its heaps: {}", heap_name, quoted_names(kernel_heaps));
      } else if (!kernel_heaps_problem.empty()) {
        why = text::format("whether this kernel has heap \"{}\" is unknown: {}", heap_name, kernel_heaps_problem);
      } else {
        why = "this kernel has no DMA-BUF heaps (CONFIG_DMABUF_HEAPS), or its heap list (the kernel heap directory) is not visible";
      }
      return Error(ErrorCode::Unavailable, text::format("open {}: no such device node (ENOENT): {}", path, why), err);
    }
    case EACCES:
    case EPERM:
      return Error(ErrorCode::PermissionDenied,
                   text::format("open {}: permission denied ({}){}: add the user to the group that owns the "
                               "node (often 'video') or install a udev rule that grants access",
                               path, err == EACCES ? "EACCES" : "EPERM", perm),
                   err);
    case ENOMEM:
      return Error(ErrorCode::OutOfMemory, text::format("open {}: out of memory (ENOMEM)", path), err);
    default:
      return Error::from_errno(err, text::format("open {}{}", path, perm));
  }
}

Error udmabuf_size_limit_error(std::size_t size_bytes, std::size_t limit_mb) {
  return Error(ErrorCode::OutOfRange,
               text::format("udmabuf of {} B exceeds the kernel's limit of {} MiB ({} B; module parameter "
                           "udmabuf.size_limit_mb={}); raise it with udmabuf.size_limit_mb=<MiB> on the kernel "
                           "command line or in /sys/module/udmabuf/parameters/size_limit_mb",
                           size_bytes, limit_mb, std::uint64_t{limit_mb} << 20, limit_mb));  // no 32-bit wrap
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
