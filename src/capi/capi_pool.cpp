// SPDX-License-Identifier: Apache-2.0
// Pools: buffers of one layout, handed out again and again.
#include "capi/capi_support.h"

#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// Fills `o` from the C struct (NULL: defaults; max_buffers 0 is the C++ default, 4).
Result<void> pool_options(const et_pool_options* user, PoolOptions& o) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_POOL_OPTIONS_SIZE_VER0, "et_pool_options"));
  if ((c.flags & ~ET_POOL_ZERO_ON_REUSE) != 0)
    return fail(ErrorCode::InvalidArgument,
                "et_pool_options.flags " + std::to_string(c.flags) + " has bits other than ET_POOL_ZERO_ON_REUSE");
  ET_TRY(allocate_options(c.allocate, o.allocate));
  if (c.name != nullptr) o.name = c.name;
  o.min_buffers = c.min_buffers;
  if (c.max_buffers != 0) o.max_buffers = c.max_buffers;
  o.zero_on_reuse = (c.flags & ET_POOL_ZERO_ON_REUSE) != 0;
  return {};
}

}  // namespace

extern "C" {

et_status et_pool_create(uint32_t rank, const uint64_t* shape, int32_t dtype, const et_pool_options* options,
                         et_pool** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_pool_create", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto s, read_shape("et_pool_create", rank, shape));
    ET_TRY_ASSIGN(auto d, read_dtype("et_pool_create", dtype));
    PoolOptions o;
    ET_TRY(pool_options(options, o));
    ET_TRY_ASSIGN(auto pool, Pool::create(s.ref(), d, o));
    *out = new et_pool{.pool = std::move(pool)};
    return {};
  });
}

et_status et_pool_create_image(uint32_t width, uint32_t height, int32_t format, const et_image_options* image_options,
                               const et_pool_options* options, et_pool** out) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_pool_create_image";
    if (out == nullptr) return null_argument(kFn, "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto f, read_pixel_format(kFn, format));
    ET_TRY_ASSIGN(auto alignment, image_alignment(image_options));
    PoolOptions o;
    ET_TRY(pool_options(options, o));
    // The layout's errors name the call; the pool's own (create_image) name the pool.
    auto layout = ImageLayout::make(width, height, f, alignment);
    if (!layout) return fail(layout.error().code(), std::string(kFn) + ": " + layout.error().message());
    ET_TRY_ASSIGN(auto pool, Pool::create_image(*layout, o));
    *out = new et_pool{.pool = std::move(pool)};
    return {};
  });
}

et_status et_pool_create_image_layout(const et_image_layout* layout, const et_pool_options* options, et_pool** out) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_pool_create_image_layout";
    if (out == nullptr) return null_argument(kFn, "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto l, read_image_layout(kFn, layout));
    PoolOptions o;
    ET_TRY(pool_options(options, o));
    ET_TRY_ASSIGN(auto pool, Pool::create_image(l, o));
    *out = new et_pool{.pool = std::move(pool)};
    return {};
  });
}

et_pool* et_pool_retain(et_pool* pool) { return retain_handle(pool); }
void et_pool_release(et_pool* pool) {
  const int saved = errno;  // the last release frees the free buffers (close, munmap)
  release_handle(pool);
  errno = saved;
}

et_status et_pool_acquire(et_pool* pool, int64_t timeout_ns, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_pool_acquire", "out");
    *out = nullptr;
    if (pool == nullptr) return null_argument("et_pool_acquire", "pool");
    ET_TRY_ASSIGN(auto t, pool->pool.acquire(wait_from_ns(timeout_ns, std::chrono::milliseconds::max())));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_pool_get_stats(const et_pool* pool, et_pool_stats* stats) {
  return guarded([&]() -> Result<void> {
    if (pool == nullptr) return null_argument("et_pool_get_stats", "pool");
    if (stats == nullptr) return null_argument("et_pool_get_stats", "stats");
    const PoolStats s = pool->pool.stats();
    et_pool_stats v{};
    v.struct_size = sizeof v;
    v.allocated = s.allocated;
    v.free = s.free;
    v.device_pending = s.device_pending;
    v.in_use = s.in_use;
    v.peak_in_use = s.peak_in_use;
    v.acquired = s.acquired;
    v.waits = s.waits;
    v.timeouts = s.timeouts;
    v.packed_bytes = pool->pool.packed_bytes();
    return write_output(stats, v, ET_POOL_STATS_SIZE_VER0, "et_pool_stats");
  });
}

}  // extern "C"
