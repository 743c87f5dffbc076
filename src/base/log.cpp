// SPDX-License-Identifier: Apache-2.0
#include "base/log_internal.h"

#include <atomic>
#include <memory>
#include <mutex>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {
std::mutex g_mutex;
std::shared_ptr<const LogCallback> g_callback;  // guarded by g_mutex
std::atomic<bool> g_enabled{false};
}  // namespace

std::string_view log_level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "unknown";
}

LogCallback set_log_callback(LogCallback callback) {
  std::lock_guard lock(g_mutex);
  LogCallback previous = g_callback ? *g_callback : LogCallback{};
  g_callback = callback ? std::make_shared<const LogCallback>(std::move(callback)) : nullptr;
  g_enabled.store(g_callback != nullptr, std::memory_order_release);
  return previous;
}

namespace detail {
bool log_enabled() noexcept { return g_enabled.load(std::memory_order_acquire); }

void log_message(LogLevel level, const std::string& message) noexcept {
  std::shared_ptr<const LogCallback> cb;
  {
    std::lock_guard lock(g_mutex);
    cb = g_callback;
  }
  if (!cb) return;
  try {
    (*cb)(level, message);
  } catch (...) {
    // A throwing callback must not take the library (often a destructor) down with it.
  }
}
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
