// SPDX-License-Identifier: Apache-2.0
#include "support/test_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <array>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace et_test {
namespace {
int count_dir(const char* path) {
  DIR* d = ::opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") ++n;
  }
  ::closedir(d);
  return n - (std::string(path) == "/proc/self/fd" ? 1 : 0);  // the DIR's own fd
}
}  // namespace

int open_fd_count() { return count_dir("/proc/self/fd"); }
int thread_count() { return count_dir("/proc/self/task"); }

int wait_child_or_kill(int pid, int hang_bound_ms) {
  int status = 0;
  for (int i = 0; i < hang_bound_ms; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

std::string proc_fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

std::string fd_link(int fd) {
  char buf[512];
  const ssize_t n = ::readlink(proc_fd_path(fd).c_str(), buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, static_cast<std::size_t>(n));
}

std::string unique_shm_name(const char* tag) {
  static std::atomic<int> n{0};
  return "/et-test-" + std::to_string(::getpid()) + "-" + tag + "-" + std::to_string(++n);
}
int dev_shm_entry_count() { return count_dir("/dev/shm"); }

int mapping_count() {
  std::ifstream f("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

int file_mapping_count() {
  std::ifstream f("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(f, line);) {
    // "address perms offset dev inode pathname": the sixth field, when present.
    std::istringstream fields(line);
    std::string skip, path;
    for (int i = 0; i < 5; ++i) fields >> skip;
    if (fields >> path && path.front() != '[') ++n;
  }
  return n;
}

long rss_bytes() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  return -1;
}

edgetensor::sys::FaultHook fail_nth(edgetensor::sys::Call call, int n, int err) {
  auto seen = std::make_shared<std::atomic<int>>(0);
  return [=](const edgetensor::sys::CallInfo& info) {
    if (info.call != call) return 0;
    return ++*seen == n ? err : 0;
  };
}

ScopedLogCapture::ScopedLogCapture() : state_(std::make_shared<State>()) {
  previous_ = edgetensor::set_log_callback([state = state_](edgetensor::LogLevel level, std::string_view line) {
    std::lock_guard lock(state->mutex);
    state->lines.push_back(std::string(edgetensor::log_level_name(level)) + ": " + std::string(line));
  });
}
ScopedLogCapture::~ScopedLogCapture() { edgetensor::set_log_callback(std::move(previous_)); }

std::vector<std::string> ScopedLogCapture::lines() const {
  std::lock_guard lock(state_->mutex);
  return state_->lines;
}

bool ScopedLogCapture::contains(const std::string& needle) const {
  std::lock_guard lock(state_->mutex);
  for (const auto& l : state_->lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

bool recvmsg_reports_ctrunc() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return true;
  edgetensor::UniqueFd a(sv[0]), b(sv[1]);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return true;
  edgetensor::UniqueFd pr(p[0]), pw(p[1]);
  int four[4] = {p[0], p[1], p[0], p[1]};  // room is made below for one (two fit on LP64)
  char byte = 'b';
  iovec iov{&byte, 1};
  alignas(cmsghdr) std::array<std::byte, CMSG_SPACE(sizeof(four))> out{};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = out.data();
  m.msg_controllen = out.size();
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(four));
  std::memcpy(CMSG_DATA(c), four, sizeof(four));
  if (::sendmsg(a.get(), &m, 0) != 1) return true;
  alignas(cmsghdr) std::array<std::byte, CMSG_SPACE(sizeof(int))> in{};
  msghdr r{};
  r.msg_iov = &iov;
  r.msg_iovlen = 1;
  r.msg_control = in.data();
  r.msg_controllen = in.size();
  if (::recvmsg(b.get(), &r, MSG_CMSG_CLOEXEC) != 1) return true;
  for (cmsghdr* h = CMSG_FIRSTHDR(&r); h; h = CMSG_NXTHDR(&r, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
      ::close(fd);
    }
  }
  return (r.msg_flags & MSG_CTRUNC) != 0;
}

}  // namespace et_test
