// SPDX-License-Identifier: Apache-2.0
// DMA-BUF on a real kernel: system dma-heap, udmabuf, sync brackets, sharing with another process,
// imports, leaks, threads, permissions. Each test skips with the reason where /dev/dma_heap/system or
// /dev/udmabuf is missing; ET_DMABUF_REQUIRE_DEVICES=1 (set by tests/kernel/dmabuf_lane.sh) turns a
// missing device into a failure. Runs as root in the kernel lane (the EACCES test drops privileges).
#include <edgetensor/dmabuf.h>
#include <edgetensor/edgetensor.h>

#include <fcntl.h>
#include <grp.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/storage.h"
#include "base/sys_testing.h"
#include "support/test_support.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

constexpr const char* kSystemHeap = "/dev/dma_heap/system";
constexpr const char* kUdmabuf = "/dev/udmabuf";

#define NEED_DEVICE(path)                                                                           \
  do {                                                                                              \
    if (::access(path, F_OK) != 0) {                                                                \
      if (et_test::dmabuf_devices_required()) FAIL() << path << " is missing but ET_DMABUF_REQUIRE_DEVICES=1";       \
      GTEST_SKIP() << path << " is missing: this kernel has no such DMA-BUF device (run the kernel " \
                   << "lane: tests/kernel/dmabuf_lane.sh)";                                         \
    }                                                                                               \
  } while (0)

// The kernel's page size (4, 16 or 64 KiB on arm64): udmabuf and dma-heap buffers are whole pages.
std::size_t page_size() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

Result<TensorDyn> alloc(std::size_t bytes, const std::string& heap, const std::string& name = "hw-test",
                        std::shared_ptr<dmabuf::Allocator> allocator = nullptr) {
  AllocateOptions o;
  o.memory = MemoryKind::DmaBuf;
  o.dma_heap = heap;
  o.name = name;
  o.dmabuf_allocator = std::move(allocator);
  return TensorDyn::allocate({bytes}, DType::U8, o);
}

// The default allocator keeps each node it opens (dmabuf.h): on a machine with DMA-BUF devices, open
// them once before any test, so that tests counting fds around their first allocation see no change.
class OpenDefaultAllocatorNodes : public ::testing::Environment {
 public:
  void SetUp() override {
    for (const char* heap : {"system", "udmabuf"}) (void)dmabuf::default_allocator()->allocate(4096, heap);
  }
};
[[maybe_unused]] const auto* const kOpenDefaultAllocatorNodes =
    ::testing::AddGlobalTestEnvironment(new OpenDefaultAllocatorNodes);

std::string fdinfo_field(int fd, const std::string& key) {
  std::ifstream f("/proc/self/fdinfo/" + std::to_string(fd));
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) {
      auto v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return {};
}

void fill(const TensorDyn& t, std::uint8_t v) {
  auto w = t.map_write();
  ASSERT_OK(w);
  std::memset(w->data(), v, w->bytes().size());
}

void expect_all(const TensorDyn& t, std::uint8_t v) {
  auto r = t.map_read();
  ASSERT_OK(r);
  auto b = r->bytes();
  auto it = std::find_if(b.begin(), b.end(), [v](std::byte x) { return x != std::byte{v}; });
  ASSERT_EQ(it, b.end()) << "byte " << (it - b.begin()) << " differs";
}

// Records DMA_BUF_IOCTL_SYNC flags on one fd (the kernel still runs every call).
class SyncRecorder {
 public:
  explicit SyncRecorder(int fd)
      : hook_([this, fd](const sys::CallInfo& c) {
          if (c.call == sys::Call::Ioctl && c.request == DMA_BUF_IOCTL_SYNC && c.fd == fd) {
            std::lock_guard lock(mutex_);
            flags_.push_back(static_cast<const dma_buf_sync*>(c.arg)->flags);
          }
          return 0;
        }) {}
  std::vector<std::uint64_t> flags() {
    std::lock_guard lock(mutex_);
    return flags_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::uint64_t> flags_;
  et_test::ScopedFaultHook hook_;
};

TEST(DmaBufHardware, SystemHeapAllocationIsNamedAndReadsBack) {
  NEED_DEVICE(kSystemHeap);
  auto t = alloc(1 << 20, "system", "hw-system");
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::DmaBuf);
  EXPECT_EQ(t->memory_detail(), "dma-heap system");
  EXPECT_EQ(t->buffer_bytes(), 1u << 20);
  int fd = detail::storage_of(*t)->backing().fd();
  EXPECT_EQ(fdinfo_field(fd, "exp_name"), "system");
  EXPECT_EQ(fdinfo_field(fd, "name"), "et:hw-system") << "DMA_BUF_SET_NAME took effect";
  expect_all(*t, 0);  // heap memory comes zeroed
  fill(*t, 0x5a);
  expect_all(*t, 0x5a);
}

TEST(DmaBufHardware, LongNamesAreTruncatedNotRefused) {
  NEED_DEVICE(kSystemHeap);
  auto t = alloc(4096, "system", std::string(100, 'q'));
  ASSERT_OK(t);
  EXPECT_EQ(fdinfo_field(detail::storage_of(*t)->backing().fd(), "name"), "et:" + std::string(28, 'q'));
}

TEST(DmaBufHardware, AutoSelectionServesFromTheSystemHeap) {
  NEED_DEVICE(kSystemHeap);
  auto t = TensorDyn::allocate({480, 640, 3}, DType::U8);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::DmaBuf);
  EXPECT_EQ(t->memory_detail(), "dma-heap system");  // Debian kernels have no CMA heap
  auto st = dmabuf::default_allocator()->report();
  EXPECT_EQ(st.serving, "dma-heap system");
  EXPECT_NE(std::find(st.kernel_heaps.begin(), st.kernel_heaps.end(), "system"), st.kernel_heaps.end());
  auto bs = backend_status(MemoryKind::DmaBuf);
  EXPECT_TRUE(bs.available) << bs.detail;
  EXPECT_NE(bs.detail.find("\"system\" (rw)"), std::string::npos) << bs.detail;
}

TEST(DmaBufHardware, MapsIssueTheExactSyncSequence) {
  NEED_DEVICE(kSystemHeap);
  auto t = alloc(65536, "system");
  ASSERT_OK(t);
  SyncRecorder rec(detail::storage_of(*t)->backing().fd());
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    auto w = t->map_write();
    ASSERT_OK(w);
    w->bytes()[7] = std::byte{9};
    EXPECT_EQ(r->bytes()[7], std::byte{9});
    EXPECT_EQ(rec.flags().size(), 1u);
  }
  { auto w = t->map_write(); }
  EXPECT_EQ(rec.flags(), (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,
                                                     DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW,
                                                     DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE,
                                                     DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE}));
}

TEST(DmaBufHardware, ConcurrentReadersAndWritersShareOneBracket) {
  NEED_DEVICE(kSystemHeap);
  auto t = alloc(8 * 4096, "system");
  ASSERT_OK(t);
  SyncRecorder rec(detail::storage_of(*t)->backing().fd());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 1; n <= 200; ++n) {
        const auto slot = static_cast<std::size_t>(i) * 4096;
        if (n % 2) {
          auto w = t->map_write();
          if (!w) { ++bad; continue; }
          std::memset(w->data() + slot, n & 0xff, 4096);
        } else {
          auto r = t->map_read();
          if (!r) { ++bad; continue; }
          if (r->bytes()[slot] != std::byte(static_cast<std::uint8_t>((n - 1) & 0xff))) ++bad;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  auto s = rec.flags();
  ASSERT_FALSE(s.empty());
  ASSERT_EQ(s.size() % 2, 0u);
  for (std::size_t k = 0; k < s.size(); k += 2) {
    ASSERT_EQ(s[k] & DMA_BUF_SYNC_END, 0u) << k;
    ASSERT_EQ(s[k + 1] & DMA_BUF_SYNC_END, DMA_BUF_SYNC_END) << k + 1;
    ASSERT_EQ(s[k + 1] & s[k] & DMA_BUF_SYNC_RW, s[k] & DMA_BUF_SYNC_RW) << k;
  }
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
}

std::string peer_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string self(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  return self.substr(0, self.rfind('/') + 1) + "edgetensor_dmabuf_peer";
}

TEST(DmaBufHardware, SeparateProcessImportsOverScmRightsAndWritesBack) {
  NEED_DEVICE(kSystemHeap);
  const std::string peer = peer_path();
  ASSERT_EQ(::access(peer.c_str(), X_OK), 0) << peer << " missing (copy it into the VM with --file)";
  int fds_before = et_test::open_fd_count();
  {
    auto t = alloc(3 * 4096 + 100, "system", "shared");
    ASSERT_OK(t);
    fill(*t, 0x11);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd mine(sv[0]), theirs(sv[1]);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int fd = ::dup(theirs.get());  // without CLOEXEC: survives exec
      std::string arg = std::to_string(fd);
      ::execl(peer.c_str(), peer.c_str(), arg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    theirs.reset();
    struct {
      std::uint64_t size_bytes;
      std::uint8_t expect;
      std::uint8_t write;
    } req{t->packed_bytes(), 0x11, 0x77};  // the tensor's bytes (the buffer is page-rounded)
    auto exported = t->export_fd();
    ASSERT_OK(exported);
    ASSERT_OK(ipc::send_fds(mine.get(), std::as_bytes(std::span(&req, 1)), {exported->get()}));
    char reply[512] = {};
    auto got = ipc::receive_fds(mine.get(), std::as_writable_bytes(std::span(reply, sizeof reply - 1)), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_OK(got);
    EXPECT_EQ(std::string(reply, got->size_bytes), "K");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "peer status " << status;
    // The peer's writes are visible here (cache-correct maps on both sides).
    auto r = t->map_read();
    ASSERT_OK(r);
    EXPECT_EQ(r->bytes()[0], std::byte{0x77});
    EXPECT_EQ(r->bytes()[r->bytes().size() - 1], std::byte{0x77});
  }
  EXPECT_EQ(et_test::open_fd_count(), fds_before);
}

TEST(DmaBufHardware, UdmabufFromMemfdSharesThePages) {
  NEED_DEVICE(kUdmabuf);
  const std::size_t P = page_size();  // udmabuf works in whole pages: 4, 16 or 64 KiB
  UniqueFd m(::memfd_create("hw-udmabuf", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_TRUE(m);
  ASSERT_EQ(::ftruncate(m.get(), 4 * P), 0);
  // Unsealed: refused by us, and the kernel agrees (EINVAL).
  EXPECT_ERROR(dmabuf::udmabuf_from_memfd(m.get(), 0, 4 * P), ErrorCode::InvalidArgument, "F_SEAL_SHRINK");
  {
    UniqueFd dev(::open(kUdmabuf, O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(dev);
    udmabuf_create c{static_cast<__u32>(m.get()), UDMABUF_FLAGS_CLOEXEC, 0, 4 * P};
    errno = 0;
    EXPECT_LT(::ioctl(dev.get(), UDMABUF_CREATE, &c), 0);
    EXPECT_EQ(errno, EINVAL) << "the kernel refuses an unsealed memfd";
  }
  ASSERT_EQ(::fcntl(m.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  auto fd = dmabuf::udmabuf_from_memfd(m.get(), P, 2 * P);
  ASSERT_OK(fd);
  auto t = TensorDyn::adopt_fd(std::move(*fd), {2, P}, DType::U8);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::DmaBuf);
  EXPECT_EQ(t->buffer_bytes(), 2 * P);
  EXPECT_NE(t->memory_detail().find("udmabuf"), std::string::npos) << t->memory_detail();
  fill(*t, 0x3c);
  void* p = ::mmap(nullptr, 4 * P, PROT_READ, MAP_SHARED, m.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* bytes = static_cast<const std::uint8_t*>(p);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[P], 0x3c);
  EXPECT_EQ(bytes[3 * P - 1], 0x3c);
  EXPECT_EQ(bytes[3 * P], 0);
  ::munmap(p, 4 * P);
}

TEST(DmaBufHardware, UdmabufAllocationOnRequest) {
  NEED_DEVICE(kUdmabuf);
  auto t = alloc(10000, "udmabuf", "hw-udmabuf");
  ASSERT_OK(t);
  EXPECT_EQ(t->memory_detail(), "udmabuf");
  EXPECT_EQ(t->buffer_bytes(), (10000 + page_size() - 1) / page_size() * page_size()) << "whole pages";
  EXPECT_EQ(fdinfo_field(detail::storage_of(*t)->backing().fd(), "exp_name"), "udmabuf");
  EXPECT_EQ(fdinfo_field(detail::storage_of(*t)->backing().fd(), "name"), "et:hw-udmabuf");
  fill(*t, 0xc3);
  expect_all(*t, 0xc3);
}

TEST(DmaBufHardware, UdmabufSizeLimitIsNamed) {
  NEED_DEVICE(kUdmabuf);
  auto st = dmabuf::default_allocator()->report();
  ASSERT_TRUE(st.udmabuf.size_limit_mb.has_value()) << "cannot read /sys/module/udmabuf/parameters/size_limit_mb";
  const std::size_t limit_mb = *st.udmabuf.size_limit_mb;
  if (const std::string want = et_test::env("ET_DMABUF_EXPECT_SIZE_LIMIT_MB"); !want.empty()) {
    ASSERT_EQ(limit_mb, std::stoul(want)) << "udmabuf.size_limit_mb= on the kernel command line took no effect";
  }
  const std::size_t limit = limit_mb << 20;
  auto over = alloc(limit + page_size(), "udmabuf");
  EXPECT_ERROR(over, ErrorCode::OutOfRange, "udmabuf.size_limit_mb=" + std::to_string(limit_mb));
  // Our check matches the kernel: UDMABUF_CREATE itself refuses limit + 1 page.
  UniqueFd m(::memfd_create("hw-limit", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(m.get(), static_cast<off_t>(limit + page_size())), 0);
  ASSERT_EQ(::fcntl(m.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_ERROR(dmabuf::udmabuf_from_memfd(m.get(), 0, limit + page_size()), ErrorCode::OutOfRange, "size_limit_mb");
  UniqueFd dev(::open(kUdmabuf, O_RDWR | O_CLOEXEC));
  udmabuf_create c{static_cast<__u32>(m.get()), UDMABUF_FLAGS_CLOEXEC, 0, limit + page_size()};
  errno = 0;
  EXPECT_LT(::ioctl(dev.get(), UDMABUF_CREATE, &c), 0);
  EXPECT_EQ(errno, EINVAL);
  if (limit_mb <= 16) {  // exactly the limit works (kept small: it pins the pages)
    auto at = alloc(limit, "udmabuf");
    ASSERT_OK(at);
    EXPECT_EQ(at->buffer_bytes(), limit);
  }
}

TEST(DmaBufHardware, ImportExportRoundTrips) {
  NEED_DEVICE(kSystemHeap);
  const std::size_t P = page_size();  // two whole pages: the buffer is exactly the tensor
  auto t = alloc(2 * P, "system");
  ASSERT_OK(t);
  fill(*t, 0x42);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  EXPECT_TRUE(::fcntl(fd->get(), F_GETFD) & FD_CLOEXEC);
  auto im = TensorDyn::import_fd_dup(fd->get(), {2, P}, DType::U8);
  ASSERT_OK(im);
  EXPECT_EQ(im->memory(), MemoryKind::DmaBuf);
  EXPECT_TRUE(im->same_buffer(*t));
  EXPECT_TRUE(t->same_buffer(*im));
  EXPECT_NE(im->memory_detail().find("imported DMA-BUF (system)"), std::string::npos) << im->memory_detail();
  EXPECT_EQ(fdinfo_field(detail::storage_of(*im)->backing().fd(), "name"), "et:hw-test") << "imports are never renamed";
  expect_all(*im, 0x42);
  fill(*im, 0x24);
  expect_all(*t, 0x24);
  // A smaller declared shape is fine; a larger one is refused naming both numbers.
  ASSERT_OK(TensorDyn::import_fd_dup(fd->get(), {100}, DType::U8));
  auto big = TensorDyn::import_fd_dup(fd->get(), {2 * P + 1}, DType::U8);
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code(), ErrorCode::OutOfRange);
  EXPECT_NE(big.error().message().find(std::to_string(2 * P + 1)), std::string::npos) << big.error().message();
  EXPECT_NE(big.error().message().find(std::to_string(2 * P)), std::string::npos) << big.error().message();
  // A separately allocated buffer is not the same.
  auto other = alloc(2 * P, "system");
  ASSERT_OK(other);
  EXPECT_FALSE(other->same_buffer(*t));
}

// The frame channel over real dma-heap buffers: a pool of two DMA-BUFs, twenty frames. Each
// buffer's fd crosses once; afterwards a frame carries no fd, the receiver opens no fd and maps nothing
// new, and every frame's bytes (written by the sender through its own map) are what the receiver reads.
TEST(DmaBufHardware, ChannelAnnouncesEachBufferOnceThenFramesCarryNoFd) {
  NEED_DEVICE(kSystemHeap);
  PoolOptions po;
  po.name = "hw-channel";
  po.max_buffers = 2;
  po.allocate.memory = MemoryKind::DmaBuf;
  po.allocate.dma_heap = "system";
  auto pool = Pool::create({2 * page_size()}, DType::U8, po);
  ASSERT_OK(pool);
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto sender = channel::Sender::create(std::move(sp->first));
  auto receiver = channel::Receiver::create(std::move(sp->second));
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  // Warm-up: both buffers out at once, so both are announced, and each mapped once on either side (a
  // DMA-BUF is mapped on its first CPU access and the mapping is kept), before the counted frames.
  {
    auto a = sender->acquire(*pool, std::chrono::seconds(1));
    auto b = sender->acquire(*pool, std::chrono::seconds(1));
    ASSERT_OK(a);
    ASSERT_OK(b);
    fill(*a, 0xA0);
    fill(*b, 0xB0);
    ASSERT_OK(sender->send(*a));
    ASSERT_OK(sender->send(*b));
    auto da = receiver->receive(std::chrono::seconds(1));
    auto db = receiver->receive(std::chrono::seconds(1));
    ASSERT_OK(da);
    ASSERT_OK(db);
    expect_all(da->tensor, 0xA0);
    expect_all(db->tensor, 0xB0);
  }
  ASSERT_OK(sender->drain(std::chrono::seconds(1)));
  const int fds = et_test::open_fd_count();
  const std::uint64_t mmaps = sys::call_count(sys::Call::Mmap);
  for (int i = 0; i < 20; ++i) {
    auto t = sender->acquire(*pool, std::chrono::seconds(1));
    ASSERT_OK(t);
    fill(*t, static_cast<std::uint8_t>(i + 1));
    ASSERT_OK(sender->send(*t));
    t = TensorDyn();
    auto d = receiver->receive(std::chrono::seconds(1));
    ASSERT_OK(d);
    EXPECT_EQ(d->tensor.memory(), MemoryKind::DmaBuf);
    expect_all(d->tensor, static_cast<std::uint8_t>(i + 1));
    d->tensor = TensorDyn();  // the release goes back; the pool may hand the buffer out again
    EXPECT_EQ(et_test::open_fd_count(), fds) << "frame " << i << ": no fd after the announce";
    EXPECT_EQ(sys::call_count(sys::Call::Mmap), mmaps) << "frame " << i << ": no new mapping";
  }
  ASSERT_OK(sender->drain(std::chrono::seconds(1)));
  EXPECT_EQ(sender->stats().frames_sent, 22u);
  EXPECT_EQ(sender->stats().releases, 22u);
  EXPECT_EQ(sender->stats().announces, 2u) << "two pool buffers, each announced once";
  EXPECT_EQ(receiver->stats().announces, 2u);
  EXPECT_EQ(pool->stats().in_use, 0u);
}

TEST(DmaBufHardware, ReadOnlyFdMapsReadOnly) {
  NEED_DEVICE(kSystemHeap);
  UniqueFd heap(::open(kSystemHeap, O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(heap);
  dma_heap_allocation_data d{};
  d.len = 4096;
  d.fd_flags = O_RDONLY | O_CLOEXEC;
  ASSERT_EQ(::ioctl(heap.get(), DMA_HEAP_IOCTL_ALLOC, &d), 0) << std::strerror(errno);
  auto t = TensorDyn::adopt_fd(UniqueFd(static_cast<int>(d.fd)), {4096}, DType::U8);
  ASSERT_OK(t);
  EXPECT_TRUE(t->read_only());
  EXPECT_ERROR(t->map_write(), ErrorCode::PermissionDenied, "read-only");
  SyncRecorder rec(detail::storage_of(*t)->backing().fd());
  {
    auto r = t->map_read();
    ASSERT_OK(r);
  }
  EXPECT_EQ(rec.flags(), (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,
                                                     DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ}));
}

TEST(DmaBufHardware, UnmappableBufferStillExports) {
  NEED_DEVICE(kSystemHeap);
  auto t = alloc(4096, "system");
  ASSERT_OK(t);
  {
    et_test::ScopedFaultHook hook([](const sys::CallInfo& c) { return c.call == sys::Call::Mmap ? ENODEV : 0; });
    EXPECT_ERROR(t->map_read(), ErrorCode::Unsupported, "not CPU-mappable");
    auto fd = t->export_fd();
    ASSERT_OK(fd);
  }
  ASSERT_OK(t->map_read());
}

TEST(DmaBufHardware, LeakRegressionTenThousandCycles) {
  NEED_DEVICE(kSystemHeap);
  NEED_DEVICE(kUdmabuf);
  auto cycle = [](const std::string& heap) {
    auto t = alloc(4096, heap);
    ASSERT_OK(t);
    fill(*t, 1);
    auto fd = t->export_fd();
    ASSERT_OK(fd);
    auto im = TensorDyn::import_fd_dup(fd->get(), {4096}, DType::U8);
    ASSERT_OK(im);
    expect_all(*im, 1);
  };
  cycle("system");  // warm-up: first-use allocations (log, statics) are not leaks
  cycle("udmabuf");
  const int fds = et_test::open_fd_count();
  const int maps = et_test::mapping_count();
  for (int i = 0; i < 10000; ++i) {
    cycle(i % 10 == 9 ? "udmabuf" : "system");
    if (HasFatalFailure()) FAIL() << "cycle " << i;
  }
  EXPECT_EQ(et_test::open_fd_count(), fds);
  EXPECT_EQ(et_test::mapping_count(), maps);
}

TEST(DmaBufHardware, EightThreadsAllocateAndMapAtOnce) {
  NEED_DEVICE(kSystemHeap);
  const int fds = et_test::open_fd_count();
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 150; ++n) {
        auto t = TensorDyn::allocate({page_size() * (1 + (n % 4))}, DType::U8);
        if (!t || t->memory() != MemoryKind::DmaBuf) { ++bad; continue; }
        const auto v = static_cast<std::uint8_t>(i * 16 + n % 16);
        if (auto w = t->map_write()) std::memset(w->data(), v, w->bytes().size()); else { ++bad; continue; }
        auto fd = t->export_fd();
        if (!fd) { ++bad; continue; }
        auto im = TensorDyn::import_fd_dup(fd->get(), {t->buffer_bytes()}, DType::U8);
        if (!im) { ++bad; continue; }
        auto r = im->map_read();
        if (!r || r->bytes()[r->bytes().size() - 1] != std::byte{v}) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST(DmaBufHardware, UnprivilegedUserGetsEaccesWithAHint) {
  NEED_DEVICE(kSystemHeap);
  NEED_DEVICE(kUdmabuf);
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges to uid 65534 (runs as root in the kernel lane)";
  struct stat st {};
  ASSERT_EQ(::stat(kSystemHeap, &st), 0);
  if (st.st_mode & S_IWOTH) GTEST_SKIP() << kSystemHeap << " is world-writable here; no EACCES to see";
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    std::string report;
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
      report = "setuid failed";
    } else {
      // A new allocator: the default one keeps the nodes it opened as root (dmabuf.h).
      auto allocator = dmabuf::Allocator::create();
      if (!allocator) ::_exit(2);
      for (const char* heap : {"system", "udmabuf"}) {
        auto t = alloc(4096, heap, "hw-test", *allocator);
        if (t) report += std::string(heap) + ": allocation succeeded unprivileged; ";
        else if (t.error().code() != ErrorCode::PermissionDenied || t.error().sys_errno() != EACCES ||
                 t.error().message().find("video") == std::string::npos)
          report += std::string(heap) + ": " + t.error().to_string() + "; ";
      }
      auto st2 = (*allocator)->report();
      if (!st2.serving.empty()) report += "probe says '" + st2.serving + "' serves unprivileged; ";
    }
    if (!report.empty()) (void)!::write(pipefd[1], report.data(), report.size());
    ::_exit(report.empty() ? 0 : 1);
  }
  ::close(pipefd[1]);
  char buf[2048] = {};
  ssize_t n = ::read(pipefd[0], buf, sizeof buf - 1);
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << std::string(buf, n > 0 ? std::size_t(n) : 0);
}

}  // namespace
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
