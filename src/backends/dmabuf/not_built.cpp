// SPDX-License-Identifier: Apache-2.0
// The public DMA-BUF API when the backend is not built (ET_WITH_DMABUF=OFF): same header, Unavailable.
#include <edgetensor/dmabuf.h>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dmabuf {
namespace {
constexpr const char* kNotBuilt = "DMA-BUF backend not built into this library";
}

struct Allocator::State {
  AllocatorOptions options;
};

Allocator::Allocator(AllocatorOptions options) : state_(std::make_unique<State>(State{std::move(options)})) {}
Allocator::~Allocator() = default;

Result<std::shared_ptr<Allocator>> Allocator::create(AllocatorOptions options) {
  return std::shared_ptr<Allocator>(new Allocator(std::move(options)));
}

Result<Allocation> Allocator::allocate(std::size_t, std::string_view, std::string_view) {
  return fail(ErrorCode::Unavailable, kNotBuilt);
}

Result<UniqueFd> Allocator::udmabuf_from_memfd(int, std::size_t, std::size_t) {
  return fail(ErrorCode::Unavailable, kNotBuilt);
}

bool Allocator::known_unusable() const { return true; }

AllocatorReport Allocator::report() const {
  AllocatorReport st;
  st.why_none = kNotBuilt;
  return st;
}

void Allocator::refresh() {}

const AllocatorOptions& Allocator::options() const noexcept { return state_->options; }

// An allocator here holds nothing to share: each call makes one (also safe during static destruction).
std::shared_ptr<Allocator> default_allocator() { return *Allocator::create(); }

Result<UniqueFd> udmabuf_from_memfd(int, std::size_t, std::size_t) { return fail(ErrorCode::Unavailable, kNotBuilt); }

}  // namespace dmabuf
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
