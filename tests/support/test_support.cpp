// SPDX-License-Identifier: Apache-2.0
#include "support/test_support.h"

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
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

}  // namespace et_test
