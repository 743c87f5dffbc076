// SPDX-License-Identifier: Apache-2.0
// The test environment in one place: environment variables, the "required" switches that turn a skip
// into a failure (EDGETENSOR_REQUIRE_GL, ET_DMABUF_REQUIRE_DEVICES), and the GL context guard.
#pragma once

#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

namespace et_test {

/// The value of environment variable `name`, or "" when it is unset.
std::string env(const char* name);

/// True when `name` is set to exactly "1" (the convention of every *_REQUIRE_* switch).
bool env_flag(const char* name);

/// Sets `name` to `value` (nullptr: unsets it) for the scope of this object, then restores the old
/// value. setenv is not thread-safe: use it only while the test runs no other thread.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// True when GL tests must fail instead of skipping: EDGETENSOR_REQUIRE_GL=1 (CI), or the build was
/// configured with -DET_REQUIRE_GL=ON.
bool gl_required();

/// True when DMA-BUF device tests must fail instead of skipping: ET_DMABUF_REQUIRE_DEVICES=1 (the
/// kernel lane, tests/kernel/dmabuf_lane.sh).
bool dmabuf_devices_required();

}  // namespace et_test

/// Declares `std::shared_ptr<edgetensor::gl::Context> var` made with Context::create(options...), or
/// skips naming the reason (fails instead when et_test::gl_required()).
#define ET_GL_CONTEXT_OR_SKIP(var, ...)                                                              \
  auto var##_result = ::edgetensor::gl::Context::create(__VA_ARGS__);                               \
  if (!var##_result) {                                                                               \
    if (::et_test::gl_required())                                                                    \
      FAIL() << "GL is required (EDGETENSOR_REQUIRE_GL=1 or ET_REQUIRE_GL=ON) but "                  \
             << var##_result.error().to_string();                                                    \
    GTEST_SKIP() << "no headless GL here: " << var##_result.error().to_string();                     \
  }                                                                                                  \
  std::shared_ptr<::edgetensor::gl::Context> var = std::move(*var##_result)
