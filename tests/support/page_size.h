// SPDX-License-Identifier: Apache-2.0
// Runs a scope as if the kernel's page size were another one (sys::set_page_size_for_testing): 16 KiB
// as on Raspberry Pi 5 kernels, 64 KiB as on some arm64 servers.
#pragma once

#include <cstddef>

#include "base/sys_testing.h"

namespace et_test {

inline constexpr std::size_t kOtherPageSizes[] = {16 * 1024, 64 * 1024};

class ScopedPageSize {
 public:
  explicit ScopedPageSize(std::size_t bytes) { edgetensor::sys::set_page_size_for_testing(bytes); }
  ~ScopedPageSize() { edgetensor::sys::set_page_size_for_testing(0); }
  ScopedPageSize(const ScopedPageSize&) = delete;
  ScopedPageSize& operator=(const ScopedPageSize&) = delete;
};

}  // namespace et_test
