// SPDX-License-Identifier: Apache-2.0
// Fence: a sync_file fd or "already signalled" (include/edgetensor/fence.h); the bounded poll that
// Fence::wait and the DMA-BUF maps share (sync_internal.h).
#include <edgetensor/fence.h>

#include <poll.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <new>
#include <system_error>

#include "text/format.h"

#include "base/sys.h"
#include "core/backend.h"
#include "sync/sync_internal.h"
#include "sync/sync_uapi.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

// What /proc says `fd` is ("anon_inode:[eventfd]", "pipe:[123]"), for messages; empty when unknown.
std::string fd_description(int fd) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(text::format("/proc/self/fd/{}", fd), ec);
  return ec ? std::string() : target.string();
}

// A fixed-size char array from the kernel as a string (the kernel terminates it; do not trust that).
template <std::size_t N>
std::string kernel_string(const char (&chars)[N]) {
  return std::string(chars, ::strnlen(chars, N));
}

std::string fence_state_text(int status) {
  if (status > 0) return "signalled";
  if (status == 0) return "pending";
  return text::format("signalled with error {}", errno_name(-status));
}

}  // namespace

std::string timeout_text(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) return "no bound";
  return text::format("{} s", static_cast<double>(timeout.count()) / 1000.0);
}

Result<bool> poll_within(int fd, short events, std::chrono::milliseconds timeout, std::string_view what) {
  // A timeout past the clock's range is no bound (milliseconds::max() would overflow now + timeout).
  const auto start = Clock::now();
  const bool bounded =
      timeout.count() >= 0 && timeout < std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - start);
  const auto deadline = bounded ? start + timeout : Clock::time_point::max();
  for (;;) {
    int wait_ms = -1;
    if (bounded) {
      const auto now = Clock::now();
      const auto left = now >= deadline ? 0 : std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      wait_ms = left > INT_MAX ? INT_MAX : static_cast<int>(left);
    }
    pollfd p{fd, events, 0};
    const int n = sys::poll(&p, 1, wait_ms);
    if (n > 0) {
      if (p.revents & POLLNVAL) return fail(Error::from_errno(EBADF, text::format("{}: poll of fd {}", what, fd)));
      return true;
    }
    if (n == 0) {
      if (bounded && Clock::now() >= deadline) return false;
      continue;  // woke before the deadline (a coarse timer): poll again for the rest
    }
    if (errno != EINTR) return fail(Error::from_errno(errno, text::format("{}: poll of fd {}", what, fd)));
    if (bounded && Clock::now() >= deadline) return false;  // a storm of signals cannot extend the wait
  }
}

// The error of a DMA-BUF sync_file ioctl. ENOTTY on a DMA-BUF means the kernel lacks the ioctl; on
// anything else, that the fd is no DMA-BUF (every other file answers an unknown ioctl with ENOTTY).
Error dmabuf_sync_file_error(int e, int fd, std::string_view what, bool known_dmabuf) {
  if (e != ENOTTY) return Error::from_errno(e, text::format("{} on fd {}", what, fd));
  if (!known_dmabuf) {
    auto info = probe_fd(fd);  // what the kernel says the fd is, as imports recognise it
    if (!info || info->kind != MemoryKind::DmaBuf) {
      const std::string is = fd_description(fd);
      return Error(ErrorCode::InvalidArgument,
                   text::format("{}: fd {} is not a DMA-BUF ({}{})", what, fd,
                                info ? info->what : info.error().message(), is.empty() ? "" : ", " + is),
                   e);
    }
  }
  struct utsname u {};
  const std::string release = sys::uname(&u) == 0 ? kernel_string(u.release) : std::string("unknown release");
  return Error(ErrorCode::Unsupported,
               text::format("{} on DMA-BUF fd {}: this kernel (Linux {}) does not have it (ENOTTY); exporting and "
                            "importing sync_files needs Linux >= 6.0 built with CONFIG_SYNC_FILE",
                            what, fd, release),
               e);
}

}  // namespace detail

namespace sync {

using detail::FenceAccess;

std::string FenceStatus::to_string() const {
  if (fences.empty()) return status > 0 ? "signalled" : text::format("no fences, status {}", status);
  std::string out;
  std::size_t pending = 0;
  for (const auto& f : fences) {
    if (!out.empty()) out += ", ";
    out += text::format("{}/{} {}", f.driver, f.timeline, detail::fence_state_text(f.status));
    if (f.status == 0) ++pending;
  }
  return text::format("{} of {} fence{} pending: {}", pending, fences.size(), fences.size() == 1 ? "" : "s", out);
}

namespace {

// Ok when `fd` is a sync_file; otherwise the error names `who`, `named_fd` (the caller's own fd, of which
// `fd` may be the library's dup) and what it is.
Result<void> check_sync_file(int fd, std::string_view who, int named_fd) {
  sync_file_info info{};  // num_fences 0: the kernel fills in the count and the name only
  if (sys::ioctl(fd, SYNC_IOC_FILE_INFO, &info) == 0) return {};
  const int e = errno;
  if (e != ENOTTY && e != EINVAL)
    return fail(Error::from_errno(e, text::format("{}: SYNC_IOC_FILE_INFO on fd {}", who, named_fd)));
  const std::string is = detail::fd_description(fd);
  return fail(Error(ErrorCode::InvalidArgument,
                    text::format("{}: fd {}{} is not a sync_file (SYNC_IOC_FILE_INFO: {}); fences come from drivers "
                                 "(export_fence, a GPU, a codec)",
                                 who, named_fd, is.empty() ? "" : " (" + is + ")", errno_name(e)),
                    e));
}

}  // namespace

Result<Fence> Fence::adopt(UniqueFd fd) {
  if (!fd) return fail(ErrorCode::InvalidArgument, "Fence::adopt: no fd (-1); a signalled fence is Fence()");
  ET_TRY(check_sync_file(fd.get(), "Fence::adopt", fd.get()));
  return Fence(std::move(fd));
}

Result<Fence> Fence::duplicate(int borrowed_fd) {
  if (borrowed_fd == -1) return Fence();
  // The dup refuses a negative or closed fd (EBADF, named); a refusal of the copy names the caller's fd.
  ET_TRY_ASSIGN(auto fd, UniqueFd::duplicate(borrowed_fd));
  ET_TRY(check_sync_file(fd.get(), "Fence::duplicate", borrowed_fd));
  return Fence(std::move(fd));
}

Result<Fence> Fence::merge(const Fence& a, const Fence& b, std::string_view name) {
  if (name.find('\0') != std::string_view::npos)
    return fail(ErrorCode::InvalidArgument, "Fence::merge: the name contains a NUL byte");
  if (!a.fd_) return b.dup();
  if (!b.fd_) return a.dup();
  sync_merge_data data{};  // flags and pad must be 0 (sync_file.h)
  std::memcpy(data.name, name.data(), std::min(name.size(), sizeof data.name - 1));
  data.fd2 = b.fd_.get();
  data.fence = -1;
  if (sys::ioctl(a.fd_.get(), SYNC_IOC_MERGE, &data) != 0)
    return fail(Error::from_errno(errno, text::format("SYNC_IOC_MERGE of sync_files fd {} and fd {}", a.fd_.get(),
                                                      b.fd_.get())));
  return FenceAccess::wrap(UniqueFd(data.fence));  // the kernel's fd is O_CLOEXEC
}

Result<void> Fence::wait(std::chrono::milliseconds timeout) const {
  if (!fd_) return {};
  ET_TRY_ASSIGN(const bool ready, detail::poll_within(fd_.get(), POLLIN, timeout, "Fence::wait"));
  if (ready) return {};
  auto st = status();
  const std::string fences = st ? st->to_string() : "its fences could not be listed: " + st.error().to_string();
  if (timeout.count() == 0)
    return fail(Error(ErrorCode::Busy,
                      text::format("Fence::wait: sync_file fd {} has not signalled and the timeout is 0 "
                                   "(non-blocking); {}", fd_.get(), fences),
                      EAGAIN));
  return fail(Error(ErrorCode::Timeout,
                    text::format("Fence::wait: sync_file fd {} did not signal within {}; {}", fd_.get(),
                                 detail::timeout_text(timeout), fences),
                    ETIMEDOUT));
}

Result<bool> Fence::is_signalled() const {
  if (!fd_) return true;
  return detail::poll_within(fd_.get(), POLLIN, std::chrono::milliseconds(0), "Fence::is_signalled");
}

Result<FenceStatus> Fence::status() const {
  if (!fd_) return FenceStatus{};
  sync_file_info info{};  // first call: the count (num_fences 0 asks for no entries)
  if (sys::ioctl(fd_.get(), SYNC_IOC_FILE_INFO, &info) != 0)
    return fail(Error::from_errno(errno, text::format("SYNC_IOC_FILE_INFO on sync_file fd {}", fd_.get())));
  FenceStatus out;
  out.name = detail::kernel_string(info.name);
  out.status = info.status;
  if (info.num_fences == 0) return out;
  std::vector<sync_fence_info> entries;
  try {
    entries.resize(info.num_fences);
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::OutOfMemory,
                text::format("SYNC_IOC_FILE_INFO on sync_file fd {}: {} fences do not fit in memory", fd_.get(),
                             info.num_fences));
  }
  // Second call: the entries. A sync_file's fences never change, so the count still holds.
  sync_file_info all{};
  all.num_fences = info.num_fences;
  all.sync_fence_info = static_cast<__u64>(reinterpret_cast<std::uintptr_t>(entries.data()));
  if (sys::ioctl(fd_.get(), SYNC_IOC_FILE_INFO, &all) != 0)
    return fail(Error::from_errno(errno, text::format("SYNC_IOC_FILE_INFO of {} fences on sync_file fd {}",
                                                      info.num_fences, fd_.get())));
  const std::size_t n = std::min<std::size_t>(all.num_fences, entries.size());
  out.fences.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    out.fences.push_back({detail::kernel_string(entries[i].driver_name), detail::kernel_string(entries[i].obj_name),
                          entries[i].status, entries[i].timestamp_ns});
  return out;
}

Result<Fence> Fence::dup() const {
  if (!fd_) return Fence();
  ET_TRY_ASSIGN(auto fd, fd_.dup());
  return Fence(std::move(fd));
}

}  // namespace sync
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
