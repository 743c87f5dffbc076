// SPDX-License-Identifier: Apache-2.0
#include "support/env.h"

#include <cstdlib>

#ifndef ET_TEST_REQUIRE_GL
#define ET_TEST_REQUIRE_GL 0  // 1 in builds configured with -DET_REQUIRE_GL=ON (tests/CMakeLists.txt)
#endif

namespace et_test {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool env_flag(const char* name) { return env(name) == "1"; }

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) ::setenv(name, value, 1);
  else ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
  else ::unsetenv(name_.c_str());
}

bool gl_required() { return ET_TEST_REQUIRE_GL || env_flag("EDGETENSOR_REQUIRE_GL"); }

bool dmabuf_devices_required() { return env_flag("ET_DMABUF_REQUIRE_DEVICES"); }

}  // namespace et_test
