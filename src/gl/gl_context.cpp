// SPDX-License-Identifier: Apache-2.0
// gl::Context on top of the GL thread (gl::with_buffer, which needs a PBO, is in backends/gl_pbo).
#include <edgetensor/gl.h>

#include "base/c_string.h"
#include "gl/gl_worker.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace gl {

using detail::GlContextAccess;
using detail::GlWorker;

Context::Context(std::shared_ptr<GlWorker> worker) noexcept : worker_(std::move(worker)) {}

Context::~Context() {
  if (worker_) worker_->shutdown();
}

Result<std::shared_ptr<Context>> Context::create(const ContextOptions& options) {
  ET_TRY(detail::check_c_string(options.egl_library, "gl::ContextOptions::egl_library"));  // dlopen's path
  ET_TRY_ASSIGN(auto worker, GlWorker::start(options));
  return GlContextAccess::wrap(std::move(worker));
}

const ContextInfo& Context::info() const noexcept { return worker_->info(); }
std::chrono::milliseconds Context::timeout() const noexcept { return worker_->timeout(); }
bool Context::on_gl_thread() const noexcept { return worker_->on_thread(); }

Result<void> Context::run(std::function<Result<void>()> fn) const { return run(std::move(fn), worker_->timeout()); }

Result<void> Context::run(std::function<Result<void>()> fn, std::chrono::milliseconds timeout) const {
  if (!fn) return fail(ErrorCode::InvalidArgument, "gl::Context::run: empty callable");
  return worker_->call<void>(std::move(fn), timeout);
}

void* Context::proc_address(const char* name) const noexcept {
  if (!name) return nullptr;
  return reinterpret_cast<void*>(worker_->egl().GetProcAddress(name));
}

std::size_t Context::live_buffer_count() const noexcept { return worker_->live_resources(); }

}  // namespace gl
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
