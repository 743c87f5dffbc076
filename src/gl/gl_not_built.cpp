// SPDX-License-Identifier: Apache-2.0
// The gl:: API of a library built without GL (ET_WITH_EGL=OFF): the same public header, every entry
// answers Unavailable. Compiled instead of src/gl's sources; the PBO backend (backends/gl_pbo, where
// gl::with_buffer lives in a GL build) is not built at all then (see src/CMakeLists.txt).
#include <edgetensor/gl.h>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace gl {
namespace {
constexpr const char* kWhy = "GL unavailable: the GL backend was not built into this library (ET_WITH_EGL=OFF)";
}

// No Context can exist in this build (create() never makes one), so the members below are never
// reached through a live object; they exist so that programs link identically in every build.
Context::Context(std::shared_ptr<detail::GlWorker> worker) noexcept : worker_(std::move(worker)) {}
Context::~Context() = default;
Result<std::shared_ptr<Context>> Context::create(const ContextOptions&) { return fail(ErrorCode::Unavailable, kWhy); }
const ContextInfo& Context::info() const noexcept {
  static const ContextInfo none;
  return none;
}
std::chrono::milliseconds Context::timeout() const noexcept { return {}; }
bool Context::on_gl_thread() const noexcept { return false; }
Result<void> Context::run(std::function<Result<void>()>) const { return fail(ErrorCode::Unavailable, kWhy); }
Result<void> Context::run(std::function<Result<void>()>, std::chrono::milliseconds) const {
  return fail(ErrorCode::Unavailable, kWhy);
}
void* Context::proc_address(const char*) const noexcept { return nullptr; }
std::size_t Context::live_buffer_count() const noexcept { return 0; }

Result<void> with_buffer(const TensorDyn&, std::function<Result<void>(const GlBuffer&)>) {
  return fail(ErrorCode::Unavailable, kWhy);
}
Result<void> with_buffer(const TensorDyn&, std::function<Result<void>(const GlBuffer&)>, std::chrono::milliseconds) {
  return fail(ErrorCode::Unavailable, kWhy);
}

}  // namespace gl
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
