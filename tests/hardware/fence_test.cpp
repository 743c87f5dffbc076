// SPDX-License-Identifier: Apache-2.0
// Explicit sync on a real kernel: sync_files exported from and imported into DMA-BUFs, merged, asked
// for FILE_INFO and waited on; DMA-BUF maps that time out while a fence is pending.
//   FenceHardware.*      the system dma-heap only: fences that are already signalled (a buffer without
//                        fences exports the kernel's stub fence). Skips without /dev/dma_heap/system;
//                        ET_DMABUF_REQUIRE_DEVICES=1 makes that a failure.
//   FenceVgemHardware.*  real unsignalled fences from vgem (hardware/fence_devices.h says how; loaded by
//                        tests/kernel/dmabuf_lane.sh). Skips without vgem; ET_FENCE_REQUIRE_VGEM=1 fails.
//   FenceVgemCApi.*      the same through the C API: fence_capi_test.cpp.
#include <edgetensor/edgetensor.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/storage.h"
#include "base/sys_testing.h"
#include "hardware/fence_devices.h"
#include "support/env.h"
#include "support/test_support.h"
#include "sync/sync_uapi.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

using namespace std::chrono_literals;
using sync::Access;
using sync::Fence;

Result<TensorDyn> heap_tensor(std::size_t bytes = 16384) {
  AllocateOptions o;
  o.memory = MemoryKind::DmaBuf;
  o.dma_heap = "system";
  o.name = "fence-test";
  return TensorDyn::allocate({bytes}, DType::U8, o);
}

int dmabuf_fd(const TensorDyn& t) { return detail::storage_of(t)->backing().fd(); }

std::string kernel_release() {
  struct utsname u {};
  return ::uname(&u) == 0 ? u.release : "?";
}

// ---- FenceHardware: the system heap alone ---------------------------------------------------------

TEST(FenceHardware, BufferWithoutFencesExportsASignalledSyncFile) {
  ET_SYSTEM_HEAP_OR_SKIP();
  auto t = heap_tensor();
  ASSERT_OK(t);
  for (Access a : {Access::Read, Access::Write}) {
    auto f = sync::export_fence(*t, a);
    ASSERT_OK(f);
    EXPECT_FALSE(f->is_signalled_without_fd()) << "the kernel returns a sync_file (its stub fence)";
    EXPECT_NE(::fcntl(f->fd(), F_GETFD) & FD_CLOEXEC, 0);
    ASSERT_OK(f->wait(0ms));
    auto st = f->status();
    ASSERT_OK(st);
    EXPECT_EQ(st->status, 1) << st->to_string();
    for (const auto& i : st->fences) EXPECT_EQ(i.status, 1) << i.driver << "/" << i.timeline;
    std::printf("[ INFO ] Linux %s: export from an idle buffer: name \"%s\", %s\n", kernel_release().c_str(),
                st->name.c_str(), st->to_string().c_str());
  }
}

TEST(FenceHardware, StubFencesMergeImportAndLeaveMapsFree) {
  ET_SYSTEM_HEAP_OR_SKIP();
  auto a = heap_tensor();
  auto b = heap_tensor();
  ASSERT_OK(a);
  ASSERT_OK(b);
  auto fa = sync::export_fence(*a, Access::Write);
  auto fb = sync::export_fence(*b, Access::Read);
  ASSERT_OK(fa);
  ASSERT_OK(fb);
  auto m = Fence::merge(*fa, *fb, "et-stub-merge");
  ASSERT_OK(m);
  auto st = m->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 1);
  ASSERT_OK(m->wait(0ms));
  ASSERT_OK(sync::import_fence(*b, *m, Access::Write));
  ASSERT_OK(sync::import_fence(*b, *fa, Access::Read));
  ASSERT_OK(b->map_read_write(MapOptions{0ms}));
  auto dup = m->dup();
  ASSERT_OK(dup);
  ASSERT_OK(Fence::adopt(dup->release()));
}

TEST(FenceHardware, AdoptRefusesADmaBufAndExportRefusesAMemfd) {
  ET_SYSTEM_HEAP_OR_SKIP();
  auto t = heap_tensor();
  ASSERT_OK(t);
  auto f = Fence::duplicate(dmabuf_fd(*t));
  EXPECT_ERROR(f, ErrorCode::InvalidArgument, "is not a sync_file");
  EXPECT_EQ(f.error().sys_errno(), ENOTTY);
  UniqueFd m(::memfd_create("fence-test", MFD_CLOEXEC));
  EXPECT_ERROR(sync::export_fence(m.get(), Access::Read), ErrorCode::InvalidArgument, "is not a DMA-BUF");
}

TEST(FenceHardware, EnottyThroughTheSeamIsUnsupportedNamingTheRelease) {
  ET_SYSTEM_HEAP_OR_SKIP();
  auto t = heap_tensor();
  ASSERT_OK(t);
  auto real = sync::export_fence(*t, Access::Read);
  ASSERT_OK(real);
  // What a kernel before 6.0, or one without CONFIG_SYNC_FILE, answers.
  et_test::ScopedFaultHook hook([](const sys::CallInfo& c) {
    return c.call == sys::Call::Ioctl &&
                   (c.request == DMA_BUF_IOCTL_EXPORT_SYNC_FILE || c.request == DMA_BUF_IOCTL_IMPORT_SYNC_FILE)
               ? ENOTTY
               : 0;
  });
  const std::string release = "this kernel (Linux " + kernel_release() + ")";
  auto by_fd = sync::export_fence(dmabuf_fd(*t), Access::Read);  // fstatfs says it is a DMA-BUF
  auto by_tensor = sync::export_fence(*t, Access::Write);
  for (const Result<Fence>* e : {&by_fd, &by_tensor}) {
    EXPECT_ERROR(*e, ErrorCode::Unsupported, release);
    EXPECT_NE(e->error().message().find("needs Linux >= 6.0 built with CONFIG_SYNC_FILE"), std::string::npos);
  }
  auto i = sync::import_fence(dmabuf_fd(*t), *real, Access::Write);
  EXPECT_ERROR(i, ErrorCode::Unsupported, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE WRITE");
  EXPECT_NE(i.error().message().find(release), std::string::npos);
}

// ---- FenceVgemHardware: real unsignalled fences ---------------------------------------------------

TEST(FenceVgemHardware, ReadMapTimesOutWhileAWriterIsPendingAndPassesOnceSignalled) {
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(64, 64);
  ASSERT_TRUE(bo.dmabuf);
  auto t = TensorDyn::import_fd_dup(bo.dmabuf.get(), {bo.size}, DType::U8);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::DmaBuf);
  const __u32 fence = vgem.attach(bo, true);

  const auto t0 = std::chrono::steady_clock::now();
  auto r = t->map_read(MapOptions{200ms});
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_ERROR(r, ErrorCode::Timeout, "the buffer's fences did not signal within 0.2 s");
  EXPECT_EQ(r.error().sys_errno(), ETIMEDOUT);
  EXPECT_NE(r.error().message().find("1 of 1 fence pending: vgem/"), std::string::npos) << r.error().message();
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5000ms) << "bounded well under vgem's own 10 s";
  std::printf("[ INFO ] %s\n", r.error().to_string().c_str());
  EXPECT_ERROR(t->map_write(MapOptions{0ms}), ErrorCode::Busy, "the timeout is 0 (non-blocking)");
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);

  auto exported = sync::export_fence(*t, Access::Read);
  ASSERT_OK(exported);
  auto st = exported->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 0);
  ASSERT_EQ(st->fences.size(), 1u);
  EXPECT_EQ(st->fences[0].driver, "vgem");
  EXPECT_EQ(st->fences[0].status, 0);
  auto w = exported->wait(50ms);
  EXPECT_ERROR(w, ErrorCode::Timeout, "did not signal within 0.05 s");
  EXPECT_NE(w.error().message().find("vgem/"), std::string::npos);

  vgem.signal(fence);
  ASSERT_OK(t->map_read(MapOptions{1000ms}));
  ASSERT_OK(exported->wait(0ms));  // a snapshot of the same dma-fence, now signalled
  st = exported->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 1);
  EXPECT_GT(st->fences.at(0).timestamp_ns, 0u);
}

TEST(FenceVgemHardware, ReadersFenceHoldsWritersOnly) {
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(32, 32);
  auto t = TensorDyn::import_fd_dup(bo.dmabuf.get(), {bo.size}, DType::U8);
  ASSERT_OK(t);
  const __u32 fence = vgem.attach(bo, false);
  ASSERT_OK(t->map_read(MapOptions{0ms}));  // POLLIN: no writer is pending
  auto w = t->map_write(MapOptions{100ms});
  EXPECT_ERROR(w, ErrorCode::Timeout, "write map of");
  EXPECT_NE(w.error().message().find("vgem/"), std::string::npos) << w.error().message();
  auto writers = sync::export_fence(*t, Access::Read);
  auto users = sync::export_fence(*t, Access::Write);
  ASSERT_OK(writers);
  ASSERT_OK(users);
  ASSERT_OK(writers->wait(0ms));
  EXPECT_FALSE(*users->is_signalled());
  vgem.signal(fence);
  ASSERT_OK(users->wait(1000ms));
  ASSERT_OK(t->map_write(MapOptions{0ms}));
}

TEST(FenceVgemHardware, SyncFilesMoveBetweenVgemAndADmaHeapBuffer) {
  ET_SYSTEM_HEAP_OR_SKIP();
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(64, 64);
  auto gpu = TensorDyn::import_fd_dup(bo.dmabuf.get(), {bo.size}, DType::U8);
  auto heap = heap_tensor();
  ASSERT_OK(gpu);
  ASSERT_OK(heap);
  const __u32 fence = vgem.attach(bo, true);
  // The heap buffer's users must now wait for the vgem writer: export from one, import as a writer
  // into the other.
  auto f = sync::export_fence(*gpu, Access::Read);
  ASSERT_OK(f);
  ASSERT_OK(sync::import_fence(*heap, *f, Access::Write));
  auto r = heap->map_read(MapOptions{100ms});
  EXPECT_ERROR(r, ErrorCode::Timeout, "read map of dma-heap system");
  EXPECT_NE(r.error().message().find("vgem/"), std::string::npos) << r.error().message();
  auto on_heap = sync::export_fence(*heap, Access::Write);
  ASSERT_OK(on_heap);
  auto st = on_heap->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 0);
  vgem.signal(fence);
  ASSERT_OK(heap->map_read(MapOptions{1000ms}));
  ASSERT_OK(on_heap->wait(1000ms));
  // The other way: the heap buffer's (signalled) fences into the vgem buffer hold nothing.
  auto idle = sync::export_fence(*heap, Access::Write);
  ASSERT_OK(idle);
  ASSERT_OK(sync::import_fence(*gpu, *idle, Access::Write));
  ASSERT_OK(gpu->map_read_write(MapOptions{0ms}));
}

TEST(FenceVgemHardware, MergeAndFileInfoOnRealFences) {
  ET_VGEM_OR_SKIP(vgem);
  auto a = vgem.create(16, 16);
  auto b = vgem.create(16, 16);
  const __u32 fa = vgem.attach(a, true);
  const __u32 fb = vgem.attach(b, true);
  auto ea = sync::export_fence(a.dmabuf.get(), Access::Read);
  auto eb = sync::export_fence(b.dmabuf.get(), Access::Read);
  ASSERT_OK(ea);
  ASSERT_OK(eb);
  auto m = Fence::merge(*ea, *eb, "et-merge");
  ASSERT_OK(m);
  EXPECT_NE(::fcntl(m->fd(), F_GETFD) & FD_CLOEXEC, 0);
  auto st = m->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->name, "et-merge");
  EXPECT_EQ(st->status, 0);
  ASSERT_EQ(st->fences.size(), 2u);
  for (const auto& i : st->fences) {
    EXPECT_EQ(i.driver, "vgem");
    EXPECT_EQ(i.status, 0);
    EXPECT_EQ(i.timestamp_ns, 0u);
  }
  std::printf("[ INFO ] merged: %s\n", st->to_string().c_str());
  EXPECT_ERROR(m->wait(30ms), ErrorCode::Timeout, "2 of 2 fences pending");
  vgem.signal(fa);
  EXPECT_ERROR(m->wait(30ms), ErrorCode::Timeout, "1 of 2 fences pending");
  st = m->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 0);
  vgem.signal(fb);
  ASSERT_OK(m->wait(1000ms));
  st = m->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 1);
  for (const auto& i : st->fences) EXPECT_GT(i.timestamp_ns, 0u);
  // Merging with a signalled fence gives a dup of the other.
  auto d = Fence::merge(*ea, Fence());
  ASSERT_OK(d);
  struct stat s1 {}, s2 {};
  ASSERT_EQ(::fstat(d->fd(), &s1), 0);
  ASSERT_EQ(::fstat(ea->fd(), &s2), 0);
  EXPECT_EQ(s1.st_ino, s2.st_ino);
}

}  // namespace
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
