// SPDX-License-Identifier: Apache-2.0
// Fences on the frame channel with real, unsignalled fences (docs/CHANNEL.md, "Fences"): vgem's, exported
// from a vgem buffer as a sync_file, ride with a frame of a dma-heap buffer (the receiver's map waits,
// bounded, then passes once vgem signals) and with its release (the sender's pool holds the buffer back
// until vgem signals). Run by tests/kernel/dmabuf_lane.sh with vgem loaded; skips without vgem or the
// system heap (fails instead with ET_FENCE_REQUIRE_VGEM=1 / ET_DMABUF_REQUIRE_DEVICES=1).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "hardware/fence_devices.h"
#include "support/env.h"
#include "support/test_support.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

using namespace std::chrono_literals;

struct Ends {
  channel::Sender sender;
  channel::Receiver receiver;
};

std::optional<Ends> make_ends() {
  auto sp = channel::socket_pair();
  EXPECT_TRUE(sp.has_value());
  if (!sp) return std::nullopt;
  auto s = channel::Sender::create(std::move(sp->first), {.name = "vgem"});
  auto r = channel::Receiver::create(std::move(sp->second), {.name = "vgem"});
  EXPECT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_TRUE(r.has_value()) << r.error().to_string();
  if (!s || !r) return std::nullopt;
  return Ends{std::move(*s), std::move(*r)};
}

Result<Pool> heap_pool(const char* name) {
  AllocateOptions o;
  o.memory = MemoryKind::DmaBuf;
  o.dma_heap = "system";
  return Pool::create({16384}, DType::U8, {.name = name, .max_buffers = 1, .allocate = o});
}

// An unsignalled vgem fence as a sync_file: a writer's fence on a vgem buffer, exported.
sync::Fence pending_vgem_fence(et_test::Vgem& vgem, __u32& fence) {
  auto bo = vgem.create(32, 32);
  EXPECT_TRUE(bo.dmabuf);
  fence = vgem.attach(bo, true);
  auto f = sync::export_fence(bo.dmabuf.get(), sync::Access::Read);
  EXPECT_TRUE(f.has_value()) << f.error().to_string();
  return f ? std::move(*f) : sync::Fence();
}

TEST(FenceVgemChannel, ReceiversMapWaitsForTheFramesAcquireFence) {
  ET_SYSTEM_HEAP_OR_SKIP();
  ET_VGEM_OR_SKIP(vgem);
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto pool = heap_pool("acquire");
  ASSERT_OK(pool);
  __u32 vgem_fence = 0;
  sync::Fence fence = pending_vgem_fence(vgem, vgem_fence);
  ASSERT_FALSE(fence.is_signalled_without_fd());
  {
    auto t = ends->sender.acquire(*pool, 1s);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t, {.acquire_fences = std::span(&fence, 1)}));
  }
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->tensor.memory(), MemoryKind::DmaBuf);
  ASSERT_EQ(d->acquire_fences.size(), 1u);
  ASSERT_TRUE(d->acquire_fences[0]);
  auto st = d->acquire_fences[0]->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 0) << "the receiver's copy is vgem's pending fence";
  ASSERT_EQ(st->fences.size(), 1u);
  EXPECT_EQ(st->fences[0].driver, "vgem");

  const auto t0 = std::chrono::steady_clock::now();
  auto r = d->tensor.map_read(MapOptions{200ms});
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_ERROR(r, ErrorCode::Timeout, "the acquire fence of channel 'vgem' tensor frame sequence 0 (buffer 0)");
  EXPECT_EQ(r.error().sys_errno(), ETIMEDOUT);
  EXPECT_NE(r.error().message().find("vgem/"), std::string::npos) << r.error().message();
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5000ms) << "bounded well under vgem's own 10 s";
  std::printf("[ INFO ] %s\n", r.error().to_string().c_str());
  EXPECT_ERROR(d->tensor.map_read(MapOptions{0ms}), ErrorCode::Busy, "the timeout is 0 (non-blocking)");

  vgem.signal(vgem_fence);
  auto m = d->tensor.map_read(MapOptions{1000ms});
  ASSERT_OK(m);  // signalled: the map passes
  EXPECT_EQ(m->extent_bytes(), 16384u);
}

TEST(FenceVgemChannel, ReleaseFenceHoldsTheSendersPoolBackUntilSignalled) {
  ET_SYSTEM_HEAP_OR_SKIP();
  ET_VGEM_OR_SKIP(vgem);
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto pool = heap_pool("release");
  ASSERT_OK(pool);
  {
    auto t = ends->sender.acquire(*pool, 1s);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
  }
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  ASSERT_OK(d->tensor.map_read(MapOptions{1000ms}));
  // The consumer's device still reads the frame: its fence goes with the release.
  __u32 vgem_fence = 0;
  ASSERT_OK(ends->receiver.add_release_fence(d->tensor, pending_vgem_fence(vgem, vgem_fence)));
  d = channel::Delivery();
  ASSERT_OK(ends->sender.drain(1s));  // the release arrived at once
  EXPECT_EQ(ends->sender.stats().release_fences, 1u);
  EXPECT_EQ(pool->stats().device_pending, 1u) << "back in the pool, fenced";
  const auto t0 = std::chrono::steady_clock::now();
  auto held = ends->sender.acquire(*pool, 200ms);
  EXPECT_ERROR(held, ErrorCode::Busy, "pool 'release'");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  std::printf("[ INFO ] %s\n", held.error().to_string().c_str());

  vgem.signal(vgem_fence);
  auto again = ends->sender.acquire(*pool, 1s);
  ASSERT_OK(again);  // signalled: the pool hands the buffer out again
  EXPECT_EQ(pool->stats().device_pending, 0u);
}

}  // namespace
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
