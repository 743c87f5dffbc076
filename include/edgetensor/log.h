// SPDX-License-Identifier: Apache-2.0
// Logging: the library writes nothing to stdout/stderr by itself. It reports only what it swallows
// (a failed close or munmap in a destructor, a fallback it took) through one user-settable callback.
#pragma once

#include <edgetensor/export.h>

#include <functional>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

enum class LogLevel : int { Debug = 0, Info = 1, Warning = 2, Error = 3 };

/// "debug", "info", "warning", "error".
ET_API std::string_view log_level_name(LogLevel level) noexcept;

/// Receives one line per event. May be called from any thread, including the GL worker thread and
/// destructors; it must not throw (an exception is caught and dropped) and must not call back into
/// edgetensor objects whose destructor is running.
using LogCallback = std::function<void(LogLevel, std::string_view)>;

/// Installs `callback` (empty = silence, the default) and returns the previous one. Thread-safe.
ET_API LogCallback set_log_callback(LogCallback callback);

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
