// SPDX-License-Identifier: Apache-2.0
// Internal logging: forwards to the user's callback (if any). Used only for what the library swallows.
#pragma once

#include <edgetensor/log.h>

#include "text/format.h"

#include <string>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

bool log_enabled() noexcept;
void log_message(LogLevel level, const std::string& message) noexcept;

template <class... Args>
void log(LogLevel level, text::format_string<Args...> format, Args&&... args) noexcept {
  if (!log_enabled()) return;
  try {
    log_message(level, text::format(format, std::forward<Args>(args)...));
  } catch (...) {
  }
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
