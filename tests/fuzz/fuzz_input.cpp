// SPDX-License-Identifier: Apache-2.0
// The fuzz input format and its sender (fuzz_input.h).
#include "fuzz_input.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace et_fuzz {

using edgetensor::UniqueFd;

Input parse(std::span<const std::uint8_t> data) {
  Input in;
  std::size_t at = 0;
  auto take = [&](std::size_t n) -> std::span<const std::uint8_t> {
    n = std::min(n, data.size() - at);
    auto s = data.subspan(at, n);
    at += n;
    return s;
  };
  auto u8 = [&]() -> std::uint8_t {
    auto s = take(1);
    return s.empty() ? 0 : s[0];
  };
  auto u16 = [&]() -> std::uint16_t {
    const std::uint16_t lo = u8();
    return static_cast<std::uint16_t>(lo | (u8() << 8));
  };
  if (data.empty()) return in;
  in.close_sender = (u8() & 1) != 0;
  while (at < data.size() && in.messages.size() < kMaxMessages) {
    Message m;
    const std::size_t nfds = u8() % 8;
    const std::size_t length = u16();
    for (std::size_t i = 0; i < nfds; ++i) {
      FdSpec f;
      f.kind = static_cast<FdKind>(u8() % 8);
      f.size_units = u16();
      m.fds.push_back(f);
    }
    const auto bytes = take(length);
    m.bytes.assign(reinterpret_cast<const std::byte*>(bytes.data()),
                   reinterpret_cast<const std::byte*>(bytes.data()) + bytes.size());
    in.messages.push_back(std::move(m));
  }
  return in;
}

std::vector<std::uint8_t> serialize(const Input& input) {
  std::vector<std::uint8_t> out;
  out.push_back(input.close_sender ? 1 : 0);
  for (const Message& m : input.messages) {
    out.push_back(static_cast<std::uint8_t>(m.fds.size()));
    out.push_back(static_cast<std::uint8_t>(m.bytes.size() & 0xff));
    out.push_back(static_cast<std::uint8_t>(m.bytes.size() >> 8));
    for (const FdSpec& f : m.fds) {
      out.push_back(static_cast<std::uint8_t>(f.kind));
      out.push_back(static_cast<std::uint8_t>(f.size_units & 0xff));
      out.push_back(static_cast<std::uint8_t>(f.size_units >> 8));
    }
    for (std::byte b : m.bytes) out.push_back(static_cast<std::uint8_t>(b));
  }
  return out;
}

namespace {

UniqueFd make_memfd(std::size_t bytes, unsigned seals) {
  UniqueFd fd(::memfd_create("et-fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.is_valid()) return fd;
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return UniqueFd();
  if (seals != 0 && ::fcntl(fd.get(), F_ADD_SEALS, seals) != 0) return UniqueFd();
  return fd;
}

UniqueFd make_fd(const FdSpec& f) {
  const std::size_t bytes = static_cast<std::size_t>(f.size_units) * kFdSizeUnit;
  switch (f.kind) {
    case FdKind::SealedMemfd: return make_memfd(bytes, F_SEAL_SHRINK | F_SEAL_GROW);
    case FdKind::UnsealedMemfd: return make_memfd(bytes, 0);
    case FdKind::ReadOnlyMemfd: return make_memfd(bytes, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    case FdKind::Pipe: {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) return UniqueFd();
      ::close(p[1]);
      return UniqueFd(p[0]);
    }
    case FdKind::DevNull: return UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
    case FdKind::Socket: return UniqueFd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    case FdKind::OPath: return UniqueFd(::open("/dev/null", O_PATH | O_CLOEXEC));
    case FdKind::Directory: return UniqueFd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  return UniqueFd();
}

}  // namespace

std::size_t send_all(const Input& input, UniqueFd& sender) {
  std::size_t sent = 0;
  for (const Message& m : input.messages) {
    std::vector<UniqueFd> owned;
    std::vector<int> raw;
    for (const FdSpec& f : m.fds) {
      owned.push_back(make_fd(f));
      if (owned.back().is_valid()) raw.push_back(owned.back().get());
    }
    iovec iov{const_cast<std::byte*>(m.bytes.data()), m.bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    std::vector<char> control;
    if (!raw.empty()) {
      control.resize(CMSG_SPACE(sizeof(int) * raw.size()));
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * raw.size());
      std::memcpy(CMSG_DATA(c), raw.data(), sizeof(int) * raw.size());
    }
    // Non-blocking: a message that does not fit the socket now is skipped, never waited for.
    if (::sendmsg(sender.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) ++sent;
  }
  if (input.close_sender) sender.reset();
  return sent;
}

SocketPair::SocketPair() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  sender = UniqueFd(sv[0]);
  receiver = UniqueFd(sv[1]);
}

void touch(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  volatile std::byte first = bytes.front();
  volatile std::byte last = bytes.back();
  (void)first;
  (void)last;
}

int open_fd_count() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) std::abort();
  int n = 0;
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n - 3;  // ".", "..", and the directory's own fd
}

void check_fds(int before, int after, const char* target) {
  if (before == after) return;
  std::fprintf(stderr, "%s: %d fds open before the input, %d after: an fd leaked (or was closed twice)\n", target,
               before, after);
  std::abort();
}

}  // namespace et_fuzz
