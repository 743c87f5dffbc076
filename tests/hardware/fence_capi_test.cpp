// SPDX-License-Identifier: Apache-2.0
// The C API's fences and timed maps on real unsignalled fences (vgem: hardware/fence_devices.h), through
// the C functions only; the C++ API's counterpart is fence_test.cpp's FenceVgemHardware.*.
//   FenceVgemCApi.*  skips without vgem (ET_FENCE_REQUIRE_VGEM=1, set by tests/kernel/dmabuf_lane.sh,
//                    fails instead); the dma-heap case also needs /dev/dma_heap/system. Every case checks
//                    that it leaves as many fds open as it found.
#include <edgetensor/c/edgetensor_c.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "hardware/fence_devices.h"
#include "support/test_support.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using et_test::Vgem;

// The status of a fence wait or a map whose timeout passed (docs/CAPI.md); a zero timeout that finds
// work pending is ET_BUSY (EAGAIN) instead.
constexpr et_status kExpectedTimeoutStatus = ET_TIMEOUT;

// A duration as et_fence_wait's timeout_ns.
constexpr int64_t ns(std::chrono::nanoseconds d) { return d.count(); }

struct TensorRelease {
  void operator()(et_tensor* p) const { et_tensor_release(p); }
};
struct FenceRelease {
  void operator()(et_fence* p) const { et_fence_release(p); }
};
struct MapRelease {
  void operator()(et_map* p) const { et_map_release(p); }
};
// One reference each, released at scope exit (also when an ASSERT returns early: the fd check holds).
using Tensor = std::unique_ptr<et_tensor, TensorRelease>;
using Fence = std::unique_ptr<et_fence, FenceRelease>;
using Map = std::unique_ptr<et_map, MapRelease>;

std::string last_error() {
  return std::string(et_status_name(et_last_error_code())) + " (errno " + std::to_string(et_last_error_errno()) +
         "): " + et_last_error_message();
}

// The vgem buffer's DMA-BUF as a u8 tensor of all its bytes; the library dups the fd, `bo` keeps its own.
Tensor import_bo(const Vgem::Bo& bo) {
  et_tensor* t = nullptr;
  const uint64_t shape = bo.size;
  EXPECT_EQ(et_tensor_import_dup(bo.dmabuf.get(), 1, &shape, ET_DTYPE_U8, nullptr, &t), ET_OK) << last_error();
  return Tensor(t);
}

// A tensor from the system dma-heap (ET_MEMORY_DMABUF), `bytes` long.
Tensor heap_tensor(uint64_t bytes = 16384) {
  et_allocate_options o{};
  o.struct_size = sizeof o;
  o.memory = ET_MEMORY_DMABUF;
  o.dma_heap = "system";
  o.name = "fence-capi-test";
  et_tensor* t = nullptr;
  EXPECT_EQ(et_tensor_allocate(1, &bytes, ET_DTYPE_U8, &o, &t), ET_OK) << last_error();
  return Tensor(t);
}

Fence export_fence(const et_tensor* t, int32_t access) {
  et_fence* f = nullptr;
  EXPECT_EQ(et_tensor_export_fence(t, access, &f), ET_OK) << last_error();
  return Fence(f);
}

et_fence_status status_of(const et_fence* f) {
  et_fence_status s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(et_fence_get_status(f, &s), ET_OK) << last_error();
  return s;
}

// One et_tensor_map with `timeout`: its status, the map (empty on failure) and how long the call took.
struct MapResult {
  et_status status = ET_INTERNAL;
  Map map;
  void* data = nullptr;
  size_t size = 0;
  Clock::duration took{};
};
MapResult map(const et_tensor* t, uint32_t mode, std::chrono::nanoseconds timeout) {
  et_map_options o{};
  o.struct_size = sizeof o;
  o.use_timeout = 1;
  o.timeout_ns = timeout.count();
  MapResult r;
  et_map* m = nullptr;
  const auto t0 = Clock::now();
  r.status = et_tensor_map(t, mode, &o, &m, &r.data, &r.size);
  r.took = Clock::now() - t0;
  r.map.reset(m);
  return r;
}

// The calling thread's last error is a timeout with `sys_errno` (ETIMEDOUT, or EAGAIN for a zero
// timeout), and its message holds `needle`.
void expect_timed_out(int sys_errno, const std::string& needle) {
  EXPECT_EQ(et_last_error_code(), sys_errno == EAGAIN ? ET_BUSY : kExpectedTimeoutStatus) << last_error();
  EXPECT_EQ(et_last_error_errno(), sys_errno) << last_error();
  EXPECT_NE(std::string(et_last_error_message()).find(needle), std::string::npos)
      << "'" << needle << "' not in: " << last_error();
}

class FenceVgemCApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The process's DMA-BUF allocator opens its heap once and keeps it: open it before any case counts fds.
    if (::access(et_test::kSystemHeap, F_OK) == 0) (void)heap_tensor(4096);
  }
  void SetUp() override { fds_before_ = et_test::open_fd_count(); }
  void TearDown() override {
    EXPECT_EQ(et_test::open_fd_count(), fds_before_) << "the case left a different number of fds open";
  }

 private:
  int fds_before_ = 0;
};

// (a) A timed map of an imported vgem buffer waits out its pending writer, then maps once it signals.
TEST_F(FenceVgemCApi, MapOfImportedBufferTimesOutWhileAWriterIsPendingAndMapsOnceSignalled) {
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(64, 64);
  ASSERT_TRUE(bo.dmabuf);
  Tensor t = import_bo(bo);
  ASSERT_TRUE(t);
  et_tensor_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(et_tensor_get_info(t.get(), &info), ET_OK) << last_error();
  EXPECT_EQ(info.memory, ET_MEMORY_DMABUF);
  EXPECT_EQ(info.buffer_bytes, bo.size);
  const __u32 fence = vgem.attach(bo, true);

  MapResult r = map(t.get(), ET_MAP_READ, 200ms);
  EXPECT_EQ(r.status, kExpectedTimeoutStatus);
  expect_timed_out(ETIMEDOUT, "1 of 1 fence pending: vgem/");
  EXPECT_NE(std::string(et_last_error_message()).find("within 0.2 s"), std::string::npos) << last_error();
  EXPECT_FALSE(r.map) << "a failed map sets *out_map to NULL";
  EXPECT_GE(r.took, 200ms);
  EXPECT_LT(r.took, 5000ms) << "bounded well under vgem's own 10 s";
  std::printf("[ INFO ] %s\n", et_last_error_message());
  r = map(t.get(), ET_MAP_WRITE, 0ms);
  EXPECT_EQ(r.status, ET_BUSY);
  expect_timed_out(EAGAIN, "vgem/");

  vgem.signal(fence);
  r = map(t.get(), ET_MAP_READ, 200ms);
  ASSERT_EQ(r.status, ET_OK) << last_error();
  ASSERT_TRUE(r.map);
  EXPECT_NE(r.data, nullptr);
  EXPECT_EQ(r.size, bo.size);
  r.map.reset();
  r = map(t.get(), ET_MAP_READ_WRITE, 0ms);  // nothing pending any more: no wait at all
  ASSERT_EQ(r.status, ET_OK) << last_error();
}

// (b) The buffer's fences exported for a writer: a wait times out while vgem's fence is pending and
// passes once it signals; FILE_INFO says pending, then signalled. The fd functions on a real sync_file.
TEST_F(FenceVgemCApi, ExportedWriteFenceWaitsAndReportsPendingThenSignalled) {
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(64, 64);
  Tensor t = import_bo(bo);
  ASSERT_TRUE(t);
  const __u32 fence = vgem.attach(bo, true);
  Fence f = export_fence(t.get(), ET_FENCE_ACCESS_WRITE);
  ASSERT_TRUE(f);
  int32_t fd = -1;
  ASSERT_EQ(et_fence_get_borrowed_fd(f.get(), &fd), ET_OK);
  ASSERT_GE(fd, 0) << "a real fence has a sync_file";
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  et_fence_status st = status_of(f.get());
  EXPECT_EQ(st.status, 0);
  EXPECT_EQ(st.fence_count, 1u);
  EXPECT_EQ(st.pending_count, 1u);

  const auto t0 = Clock::now();
  EXPECT_EQ(et_fence_wait(f.get(), ns(100ms)), kExpectedTimeoutStatus);
  const auto took = Clock::now() - t0;
  expect_timed_out(ETIMEDOUT, "vgem/");
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 5000ms);
  EXPECT_EQ(et_fence_wait(f.get(), 0), ET_BUSY);
  expect_timed_out(EAGAIN, "vgem/");

  // A caller's own fd of it (et_fence_dup_fd) and a fence around a borrowed one (et_fence_import_dup):
  // the same pending sync_file.
  int32_t own = -1;
  ASSERT_EQ(et_fence_dup_fd(f.get(), &own), ET_OK) << last_error();
  ASSERT_GE(own, 0);
  EXPECT_NE(own, fd);
  EXPECT_NE(::fcntl(own, F_GETFD) & FD_CLOEXEC, 0);
  et_fence* raw = nullptr;
  ASSERT_EQ(et_fence_import_dup(own, &raw), ET_OK) << last_error();
  Fence borrowed(raw);
  EXPECT_EQ(status_of(borrowed.get()).pending_count, 1u);
  ASSERT_EQ(et_fence_import_adopt(own, &raw), ET_OK) << last_error();  // takes `own`
  Fence adopted(raw);

  vgem.signal(fence);
  EXPECT_EQ(et_fence_wait(f.get(), ns(100ms)), ET_OK) << last_error();
  st = status_of(f.get());
  EXPECT_EQ(st.status, 1);
  EXPECT_EQ(st.fence_count, 1u);
  EXPECT_EQ(st.pending_count, 0u);
  for (const Fence* g : {&borrowed, &adopted}) {
    EXPECT_EQ(et_fence_wait(g->get(), 0), ET_OK) << last_error();
    EXPECT_EQ(status_of(g->get()).status, 1);
  }
}

// A DMA-BUF fd is no sync_file: et_fence_import_adopt refuses it, naming what it is, and closes it.
TEST_F(FenceVgemCApi, AdoptRefusesAVgemDmaBufAndClosesIt) {
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(16, 16);
  const int fd = ::fcntl(bo.dmabuf.get(), F_DUPFD_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  static int sentinel;
  et_fence* raw = reinterpret_cast<et_fence*>(&sentinel);  // must come back NULL
  EXPECT_EQ(et_fence_import_adopt(fd, &raw), ET_INVALID_ARGUMENT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_NE(std::string(et_last_error_message()).find("is not a sync_file"), std::string::npos) << last_error();
  EXPECT_EQ(et_last_error_errno(), ENOTTY) << last_error();
  errno = 0;
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "the refused fd is closed";
  EXPECT_EQ(errno, EBADF);
}

// (c) Two real fences merged: pending until both signal, counted one by one; a merge with a signalled
// fence (no fd) is a dup of the other.
TEST_F(FenceVgemCApi, MergeOfTwoRealFences) {
  ET_VGEM_OR_SKIP(vgem);
  auto a = vgem.create(16, 16);
  auto b = vgem.create(16, 16);
  Tensor ta = import_bo(a);
  Tensor tb = import_bo(b);
  ASSERT_TRUE(ta);
  ASSERT_TRUE(tb);
  const __u32 fa = vgem.attach(a, true);
  const __u32 fb = vgem.attach(b, true);
  Fence ea = export_fence(ta.get(), ET_FENCE_ACCESS_READ);
  Fence eb = export_fence(tb.get(), ET_FENCE_ACCESS_READ);
  ASSERT_TRUE(ea);
  ASSERT_TRUE(eb);
  et_fence* raw = nullptr;
  ASSERT_EQ(et_fence_merge(ea.get(), eb.get(), "et-capi-merge", &raw), ET_OK) << last_error();
  Fence m(raw);
  et_fence_status st = status_of(m.get());
  EXPECT_STREQ(st.name, "et-capi-merge");
  EXPECT_EQ(st.status, 0);
  EXPECT_EQ(st.fence_count, 2u);
  EXPECT_EQ(st.pending_count, 2u);
  EXPECT_EQ(et_fence_wait(m.get(), ns(30ms)), kExpectedTimeoutStatus);
  expect_timed_out(ETIMEDOUT, "2 of 2 fences pending");

  vgem.signal(fa);
  EXPECT_EQ(et_fence_wait(m.get(), ns(30ms)), kExpectedTimeoutStatus);
  expect_timed_out(ETIMEDOUT, "1 of 2 fences pending");
  st = status_of(m.get());
  EXPECT_EQ(st.status, 0);
  EXPECT_EQ(st.pending_count, 1u);
  vgem.signal(fb);
  EXPECT_EQ(et_fence_wait(m.get(), ns(1s)), ET_OK) << last_error();
  st = status_of(m.get());
  EXPECT_EQ(st.status, 1);
  EXPECT_EQ(st.pending_count, 0u);

  ASSERT_EQ(et_fence_create_signalled(&raw), ET_OK);
  Fence done(raw);
  ASSERT_EQ(et_fence_merge(ea.get(), done.get(), nullptr, &raw), ET_OK) << last_error();
  Fence d(raw);
  int32_t fd_d = -1, fd_a = -1;
  ASSERT_EQ(et_fence_get_borrowed_fd(d.get(), &fd_d), ET_OK);
  ASSERT_EQ(et_fence_get_borrowed_fd(ea.get(), &fd_a), ET_OK);
  struct stat s1 {}, s2 {};
  ASSERT_EQ(::fstat(fd_d, &s1), 0);
  ASSERT_EQ(::fstat(fd_a, &s2), 0);
  EXPECT_NE(fd_d, fd_a);
  EXPECT_EQ(s1.st_ino, s2.st_ino) << "a dup of the other fence's sync_file";
}

// (c) A vgem writer's fence imported into a dma-heap tensor: that tensor's maps wait for it.
TEST_F(FenceVgemCApi, ImportedFenceHoldsADmaHeapTensorsMapUntilSignalled) {
  ET_SYSTEM_HEAP_OR_SKIP();
  ET_VGEM_OR_SKIP(vgem);
  auto bo = vgem.create(64, 64);
  Tensor gpu = import_bo(bo);
  Tensor heap = heap_tensor();
  ASSERT_TRUE(gpu);
  ASSERT_TRUE(heap);
  et_tensor_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(et_tensor_get_info(heap.get(), &info), ET_OK) << last_error();
  EXPECT_EQ(info.memory, ET_MEMORY_DMABUF);
  ASSERT_EQ(map(heap.get(), ET_MAP_READ_WRITE, 0ms).status, ET_OK) << "free before the import: " << last_error();

  const __u32 fence = vgem.attach(bo, true);
  Fence f = export_fence(gpu.get(), ET_FENCE_ACCESS_READ);
  ASSERT_TRUE(f);
  ASSERT_EQ(et_tensor_import_fence(heap.get(), f.get(), ET_FENCE_ACCESS_WRITE), ET_OK) << last_error();
  MapResult r = map(heap.get(), ET_MAP_READ, 100ms);
  EXPECT_EQ(r.status, kExpectedTimeoutStatus);
  expect_timed_out(ETIMEDOUT, "vgem/");
  EXPECT_NE(std::string(et_last_error_message()).find("read map of dma-heap system"), std::string::npos)
      << last_error();
  EXPECT_FALSE(r.map);
  EXPECT_GE(r.took, 100ms);
  Fence on_heap = export_fence(heap.get(), ET_FENCE_ACCESS_WRITE);
  ASSERT_TRUE(on_heap);
  EXPECT_EQ(status_of(on_heap.get()).status, 0);

  vgem.signal(fence);
  r = map(heap.get(), ET_MAP_READ, 1000ms);
  ASSERT_EQ(r.status, ET_OK) << last_error();
  EXPECT_EQ(r.size, 16384u);
  EXPECT_EQ(et_fence_wait(on_heap.get(), ns(1s)), ET_OK) << last_error();
  r.map.reset();

  // A signalled fence without an fd adds nothing.
  et_fence* raw = nullptr;
  ASSERT_EQ(et_fence_create_signalled(&raw), ET_OK);
  Fence done(raw);
  ASSERT_EQ(et_tensor_import_fence(heap.get(), done.get(), ET_FENCE_ACCESS_WRITE), ET_OK) << last_error();
  ASSERT_EQ(map(heap.get(), ET_MAP_WRITE, 0ms).status, ET_OK) << last_error();
}

// (d) Fences cross the frame channel through the C API: a pending vgem fence sent as a shm tensor's acquire
// fence is shown on the delivery and holds the receiver's map until it signals; a pending release fence
// holds the sender's pool buffer until it signals.
TEST_F(FenceVgemCApi, ChannelCarriesAcquireAndReleaseFences) {
  ET_VGEM_OR_SKIP(vgem);
  auto writer = vgem.create(16, 16);
  auto reader = vgem.create(16, 16);
  Tensor wt = import_bo(writer);
  Tensor rt = import_bo(reader);
  ASSERT_TRUE(wt);
  ASSERT_TRUE(rt);
  const __u32 written = vgem.attach(writer, true);
  Fence acquire = export_fence(wt.get(), ET_FENCE_ACCESS_READ);
  ASSERT_TRUE(acquire);

  int32_t fds[2] = {-1, -1};
  ASSERT_EQ(et_channel_socket_pair(fds), ET_OK) << last_error();
  et_channel_sender* sender = nullptr;
  et_channel_receiver* receiver = nullptr;
  ASSERT_EQ(et_channel_sender_create_adopt(fds[0], nullptr, &sender), ET_OK) << last_error();
  ASSERT_EQ(et_channel_receiver_create_adopt(fds[1], nullptr, &receiver), ET_OK) << last_error();
  std::unique_ptr<et_channel_sender, void (*)(et_channel_sender*)> sender_ref(sender, et_channel_sender_release);
  std::unique_ptr<et_channel_receiver, void (*)(et_channel_receiver*)> receiver_ref(receiver,
                                                                                   et_channel_receiver_release);
  const uint64_t shape = 4096;
  et_allocate_options shm{};
  shm.struct_size = sizeof shm;
  shm.memory = ET_MEMORY_SHM;
  et_pool_options po{};
  po.struct_size = sizeof po;
  po.max_buffers = 1;
  po.allocate = &shm;
  et_pool* raw_pool = nullptr;
  ASSERT_EQ(et_pool_create(1, &shape, ET_DTYPE_U8, &po, &raw_pool), ET_OK) << last_error();
  std::unique_ptr<et_pool, void (*)(et_pool*)> pool(raw_pool, et_pool_release);
  et_tensor* raw = nullptr;
  ASSERT_EQ(et_channel_sender_acquire(sender, pool.get(), 1000, &raw), ET_OK) << last_error();
  Tensor frame(raw);

  const et_fence* fences[1] = {acquire.get()};
  et_channel_send_options so{};
  so.struct_size = sizeof so;
  so.acquire_fences = fences;
  so.acquire_fence_count = 1;
  uint64_t sequence = 0;
  ASSERT_EQ(et_channel_sender_send(sender, frame.get(), &so, &sequence), ET_OK) << last_error();
  frame.reset();  // the channel holds the pool buffer until the receiver releases it

  et_channel_delivery d{};
  d.struct_size = sizeof d;
  ASSERT_EQ(et_channel_receiver_receive(receiver, 5000, &d), ET_OK) << last_error();
  Tensor got(d.tensor);
  ASSERT_TRUE(got);
  ASSERT_EQ(d.acquire_fence_count, 1u);
  ASSERT_NE(d.acquire_fences[0].fence, nullptr);
  et_fence_status st = status_of(d.acquire_fences[0].fence);
  EXPECT_EQ(st.status, 0);
  EXPECT_EQ(st.pending_count, 1u);
  MapResult r = map(got.get(), ET_MAP_READ, 100ms);
  EXPECT_EQ(r.status, kExpectedTimeoutStatus) << "the map waits for the acquire fence";
  expect_timed_out(ETIMEDOUT, "vgem/");
  vgem.signal(written);
  r = map(got.get(), ET_MAP_READ, 1000ms);
  ASSERT_EQ(r.status, ET_OK) << last_error();
  r.map.reset();

  // The consumer's device still reads: a pending release fence; the pool hands the buffer out only after it.
  const __u32 reading = vgem.attach(reader, true);
  Fence release = export_fence(rt.get(), ET_FENCE_ACCESS_READ);
  ASSERT_TRUE(release);
  ASSERT_EQ(et_channel_receiver_add_release_fence(receiver, got.get(), release.get()), ET_OK) << last_error();
  got.reset();
  ASSERT_EQ(et_channel_sender_drain(sender, 5000), ET_OK) << last_error();
  et_channel_sender_stats ss{};
  ss.struct_size = sizeof ss;
  ASSERT_EQ(et_channel_sender_get_stats(sender, &ss), ET_OK) << last_error();
  EXPECT_EQ(ss.acquire_fences_sent, 1u);
  EXPECT_EQ(ss.release_fences, 1u);
  et_channel_receiver_stats rs{};
  rs.struct_size = sizeof rs;
  ASSERT_EQ(et_channel_receiver_get_stats(receiver, &rs), ET_OK) << last_error();
  EXPECT_EQ(rs.acquire_fences, 1u);
  EXPECT_EQ(rs.release_fences_sent, 1u);
  EXPECT_EQ(et_pool_acquire(pool.get(), 0, &raw), ET_BUSY) << "the release fence is pending";
  vgem.signal(reading);
  ASSERT_EQ(et_pool_acquire(pool.get(), 1000000000, &raw), ET_OK) << last_error();
  et_tensor_release(raw);
}

}  // namespace
