// SPDX-License-Identifier: Apache-2.0
// The DMA-BUF backend against fake devices: heap nodes are regular files in a temporary directory, and
// the ioctls (DMA_HEAP_IOCTL_ALLOC, UDMABUF_CREATE, DMA_BUF_SET_NAME, DMA_BUF_IOCTL_SYNC) are emulated
// through the syscall seam, with "DMA-BUFs" that are memfds. Every ioctl is recorded, so the tests
// prove the exact sequences. The real kernel runs the same paths in tests/hardware/dmabuf_test.cpp.
#include <edgetensor/dmabuf.h>
#include <edgetensor/edgetensor.h>

#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/dmabuf/dma_heap.h"
#include "backends/dmabuf/dmabuf.h"
#include "core/backend.h"
#include "base/sys_testing.h"
#include "support/env.h"
#include "support/page_size.h"
#include "support/test_support.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

namespace fs = std::filesystem;

// The default allocator keeps each node it opens (dmabuf.h): on a machine with DMA-BUF devices, open
// them once before any test, so that tests counting fds around their first allocation see no change.
class OpenDefaultAllocatorNodes : public ::testing::Environment {
 public:
  void SetUp() override {
    for (const char* heap : {"", "udmabuf"}) (void)dmabuf::default_allocator()->allocate(4096, heap);
  }
};
[[maybe_unused]] const auto* const kOpenDefaultAllocatorNodes =
    ::testing::AddGlobalTestEnvironment(new OpenDefaultAllocatorNodes);

struct IoctlRecord {
  unsigned long request;
  std::string target;       // basename of the fd's path ("system", "memfd:...")
  std::uint64_t value = 0;  // ALLOC: len; SYNC: flags; UDMABUF_CREATE: size
  std::uint64_t extra = 0;  // ALLOC: fd_flags; UDMABUF_CREATE: flags
  std::string name;         // SET_NAME
};

std::string fd_target(int fd) {
  const std::string p = et_test::fd_link(fd);
  if (p.empty()) return "?";
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

class FakeDmaBuf : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/et-dmabuf-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "dev/dma_heap");
    fs::create_directories(root_ / "sys/dma_heap");
    allocator_ = make_allocator();
    ::unsetenv(dmabuf::kHeapEnvVar);
    fds_before_ = et_test::open_fd_count();
    sys::set_fault_hook([this](const sys::CallInfo& c) { return on_call(c); });
    sys::set_ioctl_emulator([this](int fd, unsigned long req, void* arg) { return emulate(fd, req, arg); });
  }
  void TearDown() override {
    sys::set_ioctl_emulator({});
    sys::set_fault_hook({});
    ::unsetenv(dmabuf::kHeapEnvVar);
    allocator_.reset();  // closes the nodes it kept, before the fd count
    std::error_code ec;
    fs::remove_all(root_, ec);
    EXPECT_EQ(et_test::open_fd_count(), fds_before_) << "fd leak";
  }

  // An allocator over this test's fake device tree.
  std::shared_ptr<dmabuf::Allocator> make_allocator() {
    dmabuf::AllocatorOptions o;
    o.heap_dir = root_ / "dev/dma_heap";
    o.kernel_heap_dir = root_ / "sys/dma_heap";
    o.udmabuf_dev = root_ / "dev/udmabuf";
    o.udmabuf_limit = root_ / "size_limit_mb";
    auto a = dmabuf::Allocator::create(std::move(o));
    EXPECT_TRUE(a.has_value());
    return a ? *a : nullptr;
  }

  void add_heap(const std::string& name, bool kernel_lists = true) {
    std::ofstream(root_ / "dev/dma_heap" / name).put('\0');
    if (kernel_lists) fs::create_directories(root_ / "sys/dma_heap" / name);
  }
  void add_udmabuf(std::size_t limit_mb = 64) {
    std::ofstream(root_ / "dev/udmabuf").put('\0');
    std::ofstream(root_ / "size_limit_mb") << limit_mb << "\n";
  }

  // Fault hook: records ioctls (before any emulation) and injects the configured errors.
  int on_call(const sys::CallInfo& c) {
    if (c.call == sys::Call::Ioctl) {
      IoctlRecord r{c.request, fd_target(c.fd), 0, 0, {}};
      if (c.request == DMA_HEAP_IOCTL_ALLOC) {
        auto* d = static_cast<const dma_heap_allocation_data*>(c.arg);
        r.value = d->len;
        r.extra = d->fd_flags | (d->heap_flags << 32);
      } else if (c.request == DMA_BUF_IOCTL_SYNC) {
        r.value = static_cast<const dma_buf_sync*>(c.arg)->flags;
      } else if (c.request == UDMABUF_CREATE) {
        auto* u = static_cast<const udmabuf_create*>(c.arg);
        r.value = u->size;
        r.extra = u->flags;
      } else if (c.request == DMA_BUF_SET_NAME) {
        r.name = static_cast<const char*>(c.arg);
      }
      std::lock_guard lock(mutex_);
      ioctls_.push_back(r);
      if (c.request == DMA_BUF_IOCTL_SYNC && sync_errors_ > 0) {
        --sync_errors_;
        return sync_errno_;
      }
    }
    return extra_hook_ ? extra_hook_(c) : 0;
  }

  std::optional<int> emulate(int fd, unsigned long req, void* arg) {
    std::string target = fd_target(fd);
    if (req == DMA_HEAP_IOCTL_ALLOC) {
      if (auto it = alloc_errno_.find(target); it != alloc_errno_.end()) {
        errno = it->second;
        return -1;
      }
      auto* d = static_cast<dma_heap_allocation_data*>(arg);
      int m = ::memfd_create("fake-dmabuf", MFD_CLOEXEC);
      const std::size_t page = sys::page_size();  // the kernel's PAGE_ALIGN(len)
      std::size_t len = (d->len + page - 1) & ~(page - 1);
      if (m < 0 || ::ftruncate(m, static_cast<off_t>(len)) != 0) return -1;
      d->fd = static_cast<__u32>(m);
      return 0;
    }
    if (req == UDMABUF_CREATE) {
      auto* u = static_cast<udmabuf_create*>(arg);
      int seals = ::fcntl(static_cast<int>(u->memfd), F_GET_SEALS);
      const std::size_t page = sys::page_size();  // drivers/dma-buf/udmabuf.c: IS_ALIGNED(offset/size, PAGE_SIZE)
      if (seals < 0 || !(seals & F_SEAL_SHRINK) || !(u->flags & UDMABUF_FLAGS_CLOEXEC) || u->offset % page != 0 ||
          u->size % page != 0) {
        errno = EINVAL;  // what drivers/dma-buf/udmabuf.c answers
        return -1;
      }
      return ::fcntl(static_cast<int>(u->memfd), F_DUPFD_CLOEXEC, 0);
    }
    if (req == DMA_BUF_SET_NAME || req == DMA_BUF_IOCTL_SYNC) {
      if (target.rfind("memfd:", 0) != 0) return std::nullopt;  // a real fd: let the kernel answer
      if (req == DMA_BUF_SET_NAME && set_name_errno_) {
        errno = set_name_errno_;
        return -1;
      }
      return 0;
    }
    return std::nullopt;
  }

  std::vector<IoctlRecord> ioctls(unsigned long request) {
    std::lock_guard lock(mutex_);
    std::vector<IoctlRecord> out;
    for (const auto& r : ioctls_)
      if (r.request == request) out.push_back(r);
    return out;
  }
  std::vector<std::uint64_t> syncs() {
    std::vector<std::uint64_t> out;
    for (const auto& r : ioctls(DMA_BUF_IOCTL_SYNC)) out.push_back(r.value);
    return out;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    ioctls_.clear();
  }

  Result<TensorDyn> alloc(std::size_t bytes, std::string heap = {}, std::string name = "frame") {
    AllocateOptions o = auto_options();
    o.memory = MemoryKind::DmaBuf;
    o.dma_heap = std::move(heap);
    o.name = std::move(name);
    return TensorDyn::allocate({bytes}, DType::U8, o);
  }
  // Auto allocation through this test's allocator.
  AllocateOptions auto_options() const {
    AllocateOptions o;
    o.dmabuf_allocator = allocator_;
    return o;
  }

  fs::path root_;
  std::shared_ptr<dmabuf::Allocator> allocator_;
  int fds_before_ = 0;
  std::mutex mutex_;
  std::vector<IoctlRecord> ioctls_;
  std::map<std::string, int> alloc_errno_;
  int sync_errors_ = 0;
  int sync_errno_ = 0;
  int set_name_errno_ = 0;
  sys::FaultHook extra_hook_;
};

constexpr std::uint64_t kStartRead = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ;
constexpr std::uint64_t kStartWrite = DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE;
constexpr std::uint64_t kEndRead = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
constexpr std::uint64_t kEndRw = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;

TEST_F(FakeDmaBuf, CmaExhaustedFallsBackToSystemAndNamesTheBuffer) {
  add_heap("linux,cma");
  add_heap("system");
  alloc_errno_["linux,cma"] = ENOMEM;
  auto t = alloc(10000);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::DmaBuf);
  EXPECT_EQ(t->memory_detail(), "dma-heap system");
  EXPECT_EQ(t->buffer_bytes(), 12288u);  // the kernel's page-rounded size, read back with lseek
  auto allocs = ioctls(DMA_HEAP_IOCTL_ALLOC);
  ASSERT_EQ(allocs.size(), 2u);
  EXPECT_EQ(allocs[0].target, "linux,cma");
  EXPECT_EQ(allocs[1].target, "system");
  for (const auto& a : allocs) {
    EXPECT_EQ(a.value, 10000u);
    EXPECT_EQ(a.extra, static_cast<std::uint64_t>(O_RDWR | O_CLOEXEC));  // fd_flags, heap_flags 0
  }
  auto names = ioctls(DMA_BUF_SET_NAME);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].name, "et:frame");
  EXPECT_TRUE(syncs().empty()) << "allocation issues no sync";
}

TEST_F(FakeDmaBuf, ProbeOrderIsCmaNamesThenSystem) {
  for (const char* h : {"system", "reserved", "default_cma_region", "vendor,secure"}) add_heap(h);
  alloc_errno_["default_cma_region"] = ENOMEM;
  alloc_errno_["reserved"] = ENOMEM;
  ASSERT_OK(alloc(4096));
  std::vector<std::string> order;
  for (const auto& a : ioctls(DMA_HEAP_IOCTL_ALLOC)) order.push_back(a.target);
  EXPECT_EQ(order, (std::vector<std::string>{"default_cma_region", "reserved", "system"}))
      << "vendor heaps are never probed";
}

TEST_F(FakeDmaBuf, RequiredHeapDoesNotFallBack) {
  add_heap("linux,cma");
  add_heap("system");
  alloc_errno_["linux,cma"] = ENOMEM;
  auto t = alloc(4096, "linux,cma");
  EXPECT_ERROR(t, ErrorCode::OutOfMemory, "DMA_HEAP_IOCTL_ALLOC of 4096 B on");
  EXPECT_NE(t.error().message().find("linux,cma"), std::string::npos);
  EXPECT_EQ(t.error().sys_errno(), ENOMEM);
  EXPECT_EQ(ioctls(DMA_HEAP_IOCTL_ALLOC).size(), 1u);
}

TEST_F(FakeDmaBuf, EnvironmentSelectsAHeapByName) {
  add_heap("system");
  add_heap("vendor,uncached");
  std::optional<et_test::ScopedEnv> heap_env(std::in_place, dmabuf::kHeapEnvVar, "vendor,uncached");
  auto t = alloc(4096);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory_detail(), "dma-heap vendor,uncached");
  ASSERT_EQ(ioctls(DMA_HEAP_IOCTL_ALLOC).size(), 1u);
  // The API option wins over the environment.
  auto t2 = alloc(4096, "system");
  ASSERT_OK(t2);
  EXPECT_EQ(t2->memory_detail(), "dma-heap system");
  heap_env.emplace(dmabuf::kHeapEnvVar, "../x");
  EXPECT_ERROR(alloc(4096), ErrorCode::InvalidArgument, "EDGETENSOR_DMA_HEAP");
}

TEST_F(FakeDmaBuf, MissingRequiredHeapNodeIsNamed) {
  fs::create_directories(root_ / "sys/dma_heap/system");  // the kernel has it, /dev lacks it
  auto t = alloc(4096, "system");
  EXPECT_ERROR(t, ErrorCode::Unavailable, "device node is missing");
  EXPECT_NE(t.error().message().find((root_ / "dev/dma_heap/system").string()), std::string::npos);
  EXPECT_EQ(t.error().sys_errno(), ENOENT);
  EXPECT_ERROR(alloc(4096, "linux,cma"), ErrorCode::Unavailable, "no heap \"linux,cma\"; its heaps: \"system\"");
}

TEST_F(FakeDmaBuf, OpenEaccesAndEnomemAreTellable) {
  add_heap("system");
  extra_hook_ = et_test::fail_nth(sys::Call::Open, 1, EACCES);
  auto t = alloc(4096, "system");
  EXPECT_ERROR(t, ErrorCode::PermissionDenied, "video");
  EXPECT_NE(t.error().message().find("udev rule"), std::string::npos);
  EXPECT_NE(t.error().message().find("/dev/dma_heap/system"), std::string::npos);
  EXPECT_EQ(t.error().sys_errno(), EACCES);
  extra_hook_ = et_test::fail_nth(sys::Call::Open, 1, ENOMEM);
  EXPECT_ERROR(alloc(4096, "system"), ErrorCode::OutOfMemory, "ENOMEM");
}

TEST_F(FakeDmaBuf, AutoProbeReportsEveryFailureWhenNothingServes) {
  add_heap("system");
  extra_hook_ = [](const sys::CallInfo& c) { return c.call == sys::Call::Open ? EACCES : 0; };
  auto t = alloc(4096);
  EXPECT_ERROR(t, ErrorCode::PermissionDenied, "no DMA-BUF allocator served 4096 B");
  EXPECT_NE(t.error().message().find("default_cma_region"), std::string::npos) << t.error().message();
  EXPECT_NE(t.error().message().find("EACCES"), std::string::npos) << t.error().message();
  EXPECT_NE(t.error().message().find("udmabuf"), std::string::npos) << t.error().message();
}

TEST_F(FakeDmaBuf, AutoSelectionPrefersDmaBufThenShm) {
  add_heap("system");
  auto t = TensorDyn::allocate({64}, DType::F32, auto_options());
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::DmaBuf);
  fs::remove(root_ / "dev/dma_heap/system");
  allocator_->refresh();  // it keeps the node it opened
  auto t2 = TensorDyn::allocate({64}, DType::F32, auto_options());
  ASSERT_OK(t2);
  EXPECT_EQ(t2->memory(), MemoryKind::Shm);
}

// An Auto allocation on a machine without dma-heap nodes or udmabuf: the first one looks (13 failed
// open / opendir calls before shared memory serves); later ones make no failed system call (counted
// through the seam), until the allocator's refresh() asks them to look again.
TEST_F(FakeDmaBuf, AutoMakesNoFailedSystemCallAfterTheFirstAllocation) {
  et_test::ScopedEnv no_force("EDGETENSOR_FORCE_MEM", nullptr);
  const auto before = sys::total_failed();
  auto first = TensorDyn::allocate({4096}, DType::U8, auto_options());
  ASSERT_OK(first);
  EXPECT_EQ(first->memory(), MemoryKind::Shm);
  const auto first_failed = sys::total_failed() - before;
  EXPECT_GE(first_failed, 5u) << "the first allocation tries every heap node";
  for (int i = 0; i < 3; ++i) {
    const auto failed = sys::total_failed();
    const auto opens = sys::call_count(sys::Call::Open);
    et_test::ScopedLogCapture log;  // Auto logs each backend it falls back from, at Debug, with its error
    auto t = TensorDyn::allocate({1920, 1080, 4}, DType::U8, auto_options());
    ASSERT_OK(t);
    EXPECT_EQ(t->memory(), MemoryKind::Shm);
    EXPECT_EQ(sys::total_failed() - failed, 0u) << "allocation " << i + 2 << " (the first made " << first_failed << ")";
    EXPECT_EQ(sys::call_count(sys::Call::Open), opens) << "no device node opened again";
    EXPECT_FALSE(log.contains("dmabuf failed")) << "the memo skips DMA-BUF: no error (and no text) is made";
  }
  // An explicit DmaBuf request says why, still without a failed call.
  AllocateOptions o = auto_options();
  o.memory = MemoryKind::DmaBuf;
  const auto failed = sys::total_failed();
  auto d = TensorDyn::allocate({100}, DType::U8, o);
  EXPECT_ERROR(d, ErrorCode::Unavailable,
               "no DMA-BUF allocator served 100 B (heaps tried in this order: \"default_cma_region\", \"linux,cma\", "
               "\"reserved\", \"default-pool\", \"system\", then udmabuf): no node in " +
                   (root_ / "dev/dma_heap").string() +
                   " for \"default_cma_region\", \"linux,cma\", \"reserved\", \"default-pool\", \"system\" "
                   "(the kernel's heaps: none)");
  EXPECT_NE(d.error().message().find("udmabuf"), std::string::npos) << d.error().message();
  EXPECT_EQ(sys::total_failed(), failed);

  add_heap("system");  // a device node appears: remembered as missing until refresh()
  auto stale = TensorDyn::allocate({4096}, DType::U8, auto_options());
  ASSERT_OK(stale);
  EXPECT_EQ(stale->memory(), MemoryKind::Shm);
  EXPECT_EQ(allocator_->report().serving, "dma-heap system") << "report() names the node";
  auto still = TensorDyn::allocate({4096}, DType::U8, auto_options());
  ASSERT_OK(still);
  EXPECT_EQ(still->memory(), MemoryKind::Shm) << "report() does not clear what the allocator remembers";
  allocator_->refresh();
  auto fresh = TensorDyn::allocate({4096}, DType::U8, auto_options());
  ASSERT_OK(fresh);
  EXPECT_EQ(fresh->memory_detail(), "dma-heap system");
}

// A node that refuses this process is not opened again either; its error is kept for the message.
TEST_F(FakeDmaBuf, RefusedNodeIsRememberedWithItsError) {
  add_heap("system");
  int system_opens = 0;  // every open is refused; the heap nodes are the only files Auto opens here
  extra_hook_ = [&](const sys::CallInfo& c) {
    if (c.call != sys::Call::Open) return 0;
    ++system_opens;
    return EACCES;
  };
  EXPECT_ERROR(alloc(4096), ErrorCode::PermissionDenied, "EACCES");
  const int opens_first = system_opens;
  EXPECT_GE(opens_first, 1);
  auto again = alloc(4096);
  EXPECT_ERROR(again, ErrorCode::PermissionDenied, "EACCES");
  EXPECT_NE(again.error().message().find("system"), std::string::npos) << again.error().message();
  EXPECT_EQ(system_opens, opens_first) << "no node opened again";
  extra_hook_ = {};
  allocator_->refresh();  // access granted since: refresh() makes allocation look again
  auto t = alloc(4096);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory_detail(), "dma-heap system");
}

TEST_F(FakeDmaBuf, UdmabufServesWhenNoHeapExists) {
  add_udmabuf();
  auto t = alloc(5000);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory_detail(), "udmabuf");
  EXPECT_EQ(t->buffer_bytes(), 8192u);
  auto creates = ioctls(UDMABUF_CREATE);
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].target, "udmabuf");
  EXPECT_EQ(creates[0].value, 8192u);  // page-rounded
  EXPECT_EQ(creates[0].extra, static_cast<std::uint64_t>(UDMABUF_FLAGS_CLOEXEC));
  ASSERT_EQ(ioctls(DMA_BUF_SET_NAME).size(), 1u);
}

TEST_F(FakeDmaBuf, UdmabufOverTheLimitNamesIt) {
  add_udmabuf(1);
  auto t = alloc((1u << 20) + 1, "udmabuf");
  EXPECT_ERROR(t, ErrorCode::OutOfRange, "udmabuf.size_limit_mb=1");
  EXPECT_NE(t.error().message().find("1 MiB"), std::string::npos);
  EXPECT_TRUE(ioctls(UDMABUF_CREATE).empty());
  ASSERT_OK(alloc(1u << 20, "udmabuf"));  // exactly at the limit is fine
}

// A limit of 4096 MiB or more: 32-bit builds computed limit * 1 MiB in size_t, wrapped to 0 and
// refused every udmabuf.
TEST_F(FakeDmaBuf, UdmabufLimitOf4GiBOrMoreIsNotWrapped) {
  for (std::size_t limit_mb : {4096u, 8192u}) {
    add_udmabuf(limit_mb);
    allocator_->refresh();  // the limit is read once per refresh
    ASSERT_OK(alloc(1u << 20, "udmabuf"));
  }
}

TEST_F(FakeDmaBuf, UdmabufFromMemfdChecksSealsAlignmentAndRange) {
  add_udmabuf();
  UniqueFd m(::memfd_create("caller", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(m.get(), 16384), 0);
  EXPECT_ERROR(allocator_->udmabuf_from_memfd(m.get(), 0, 8192), ErrorCode::InvalidArgument, "F_SEAL_SHRINK");
  ASSERT_EQ(::fcntl(m.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_ERROR(allocator_->udmabuf_from_memfd(m.get(), 100, 4096), ErrorCode::InvalidArgument, "page size");
  EXPECT_ERROR(allocator_->udmabuf_from_memfd(m.get(), 8192, 12288), ErrorCode::OutOfRange, "passes the end");
  EXPECT_ERROR(allocator_->udmabuf_from_memfd(m.get(), 0, 0), ErrorCode::InvalidArgument, "0 B");
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  EXPECT_ERROR(allocator_->udmabuf_from_memfd(p[0], 0, 4096), ErrorCode::InvalidArgument, "not a memfd");
  ::close(p[0]);
  ::close(p[1]);
  auto fd = allocator_->udmabuf_from_memfd(m.get(), 4096, 8192);
  ASSERT_OK(fd);
  auto creates = ioctls(UDMABUF_CREATE);
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].value, 8192u);
  EXPECT_TRUE(ioctls(DMA_BUF_SET_NAME).empty()) << "the caller's buffer is not renamed";
}

// 16 and 64 KiB pages: dma-heap sizes come back page-rounded by the kernel, udmabuf sizes are rounded by
// the library to the real page size (the fake kernel refuses anything else), and udmabuf_from_memfd
// checks the offset and size against it.
TEST_F(FakeDmaBuf, OtherPageSizesRoundDmaHeapAndUdmabuf) {
  add_heap("system");
  add_udmabuf();
  for (std::size_t page : et_test::kOtherPageSizes) {
    SCOPED_TRACE(page);
    et_test::ScopedPageSize scoped(page);
    clear();
    auto h = alloc(10000, "system");
    ASSERT_OK(h);
    EXPECT_EQ(h->buffer_bytes(), page);
    auto big = alloc(page + 1, "system");
    ASSERT_OK(big);
    EXPECT_EQ(big->buffer_bytes(), 2 * page);
    auto u = alloc(5000, "udmabuf");
    ASSERT_OK(u);
    EXPECT_EQ(u->buffer_bytes(), page);
    auto creates = ioctls(UDMABUF_CREATE);
    ASSERT_EQ(creates.size(), 1u);
    EXPECT_EQ(creates[0].value, page) << "rounded to the page size, not to 4 KiB";

    UniqueFd m(::memfd_create("caller", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    ASSERT_EQ(::ftruncate(m.get(), static_cast<off_t>(4 * page)), 0);
    ASSERT_EQ(::fcntl(m.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
    EXPECT_ERROR(allocator_->udmabuf_from_memfd(m.get(), 4096, page), ErrorCode::InvalidArgument,
                 "page size " + std::to_string(page) + " B");
    EXPECT_ERROR(allocator_->udmabuf_from_memfd(m.get(), 0, page + 4096), ErrorCode::InvalidArgument, "page size");
    auto fd = allocator_->udmabuf_from_memfd(m.get(), page, 2 * page);
    ASSERT_OK(fd);
  }
}

TEST_F(FakeDmaBuf, SetNameRefusalIsNotFatal) {
  add_heap("system");
  set_name_errno_ = EBUSY;
  std::vector<std::string> logged;
  auto old = set_log_callback([&](LogLevel, std::string_view m) { logged.emplace_back(m); });
  auto t = alloc(4096, "", std::string(80, 'n'));
  set_log_callback(old);
  ASSERT_OK(t);
  auto names = ioctls(DMA_BUF_SET_NAME);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].name.size(), 31u);  // DMA_BUF_NAME_LEN - 1
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("EBUSY"), std::string::npos);
}

TEST_F(FakeDmaBuf, OneBracketCoversConcurrentMapsWithUnionOfDirections) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  clear();
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    EXPECT_EQ(syncs(), std::vector<std::uint64_t>{kStartRead});
    {
      auto w = t->map_write();
      ASSERT_OK(w);
      w->bytes()[0] = std::byte{42};
      EXPECT_EQ(syncs().size(), 1u) << "no START while another map is open";
    }
    EXPECT_EQ(syncs().size(), 1u) << "no END while a map is still open";
    EXPECT_EQ(r->bytes()[0], std::byte{42});
  }
  EXPECT_EQ(syncs(), (std::vector<std::uint64_t>{kStartRead, kEndRw}));
  clear();
  { auto w = t->map_write(); }
  { auto r = t->map_read(); }
  EXPECT_EQ(syncs(), (std::vector<std::uint64_t>{kStartWrite, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE, kStartRead, kEndRead}));
  // Views share the storage and so the bracket.
  clear();
  auto v = t->view(1024, {16});
  ASSERT_OK(v);
  {
    auto a = t->map_read();
    auto b = v->map_read_write();
    ASSERT_OK(a);
    ASSERT_OK(b);
  }
  EXPECT_EQ(syncs(), (std::vector<std::uint64_t>{kStartRead, kEndRw}));
}

TEST_F(FakeDmaBuf, ConcurrentReadersAndWritersKeepOneBracket) {
  add_heap("system");
  auto t = alloc(1 << 16);
  ASSERT_OK(t);
  clear();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 300; ++n) {
        if ((i + n) % 3 == 0) {
          auto w = t->map_write();
          if (!w) ++failures;
          else w->bytes()[static_cast<std::size_t>(i)] = std::byte(n);
        } else {
          auto r = t->map_read();
          if (!r) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto s = syncs();
  ASSERT_FALSE(s.empty());
  ASSERT_EQ(s.size() % 2, 0u);
  for (std::size_t k = 0; k < s.size(); k += 2) {
    EXPECT_EQ(s[k] & DMA_BUF_SYNC_END, 0u) << "entry " << k << " must be a START";
    EXPECT_EQ(s[k + 1] & DMA_BUF_SYNC_END, DMA_BUF_SYNC_END) << "entry " << k + 1 << " must be an END";
    // The END covers at least the START's direction.
    EXPECT_EQ(s[k + 1] & s[k] & DMA_BUF_SYNC_RW, s[k] & DMA_BUF_SYNC_RW);
  }
  bool any_write_end = false;
  for (std::size_t k = 1; k < s.size(); k += 2) any_write_end |= (s[k] & DMA_BUF_SYNC_WRITE) != 0;
  EXPECT_TRUE(any_write_end);
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
}

TEST_F(FakeDmaBuf, FailedStartFailsTheMapAndKeepsErrno) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  clear();
  sync_errors_ = 1;
  sync_errno_ = EIO;
  auto m = t->map_read();
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().sys_errno(), EIO);
  EXPECT_NE(m.error().message().find("DMA_BUF_IOCTL_SYNC START|READ"), std::string::npos) << m.error().message();
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
  EXPECT_EQ(syncs(), std::vector<std::uint64_t>{kStartRead}) << "no END for a bracket that never opened";
  auto again = t->map_read();
  ASSERT_OK(again);
}

TEST_F(FakeDmaBuf, SyncRetriesEintrAndEagain) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  clear();
  sync_errors_ = 2;
  sync_errno_ = EINTR;
  {
    auto m = t->map_write();
    ASSERT_OK(m);
  }
  EXPECT_EQ(syncs(), (std::vector<std::uint64_t>{kStartWrite, kStartWrite, kStartWrite, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE}));
  clear();
  sync_errors_ = 1000;
  sync_errno_ = EAGAIN;
  auto m = t->map_read();
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().sys_errno(), EAGAIN);
  EXPECT_NE(m.error().message().find("64 attempts"), std::string::npos) << m.error().message();
  sync_errors_ = 0;
}

TEST_F(FakeDmaBuf, EndRunsWhenTheHolderThrows) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  clear();
  try {
    auto m = t->map_read_write();
    ASSERT_OK(m);
    throw std::runtime_error("user code failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(syncs(), (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW, kEndRw}));
}

TEST_F(FakeDmaBuf, UnmappableBufferStillExports) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  extra_hook_ = [](const sys::CallInfo& c) { return c.call == sys::Call::Mmap ? ENODEV : 0; };
  auto m = t->map_read();
  EXPECT_ERROR(m, ErrorCode::Unsupported, "not CPU-mappable");
  EXPECT_EQ(m.error().sys_errno(), ENODEV);
  EXPECT_TRUE(syncs().empty()) << "no sync for a map that could not be made";
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  EXPECT_GE(detail::storage_of(*t)->backing().fd(), 0);
  extra_hook_ = {};
  ASSERT_OK(t->map_read());  // the mapping is made lazily: a later map may succeed
}

TEST_F(FakeDmaBuf, PersistentMappingIsMadeOnce) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  auto mmaps = sys::call_count(sys::Call::Mmap);
  for (int i = 0; i < 5; ++i) ASSERT_OK(t->map_read());
  EXPECT_EQ(sys::call_count(sys::Call::Mmap) - mmaps, 1u);
}

TEST_F(FakeDmaBuf, ExportIsACloexecDupOfTheSameBuffer) {
  add_heap("system");
  auto t = alloc(4096);
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  EXPECT_NE(fd->get(), detail::storage_of(*t)->backing().fd());
  EXPECT_TRUE(::fcntl(fd->get(), F_GETFD) & FD_CLOEXEC);
  struct stat a {}, b {};
  ASSERT_EQ(::fstat(fd->get(), &a), 0);
  ASSERT_EQ(::fstat(detail::storage_of(*t)->backing().fd(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
}

TEST_F(FakeDmaBuf, ImportedReadOnlyMapsReadOnlyAndIsNeverRenamed) {
  UniqueFd m(::memfd_create("imported", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(m.get(), 8192), 0);
  UniqueFd ro(::open(et_test::proc_fd_path(m.get()).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(ro);
  detail::FdInfo info;
  info.kind = MemoryKind::DmaBuf;
  info.buffer_bytes = 8192;
  info.read_only = true;
  struct stat st {};
  ASSERT_EQ(::fstat(ro.get(), &st), 0);
  info.key = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  auto b = detail::dmabuf_backend().import_fd(std::move(ro), info);
  ASSERT_OK(b);
  EXPECT_TRUE((*b)->read_only());
  EXPECT_NE((*b)->detail().find("imported DMA-BUF"), std::string::npos);
  detail::Storage s(std::move(*b));
  EXPECT_ERROR(s.acquire_cpu(MapMode::Write), ErrorCode::PermissionDenied, "read-only");
  auto p = s.acquire_cpu(MapMode::Read);
  ASSERT_OK(p);
  s.release_cpu(MapMode::Read);
  EXPECT_TRUE(ioctls(DMA_BUF_SET_NAME).empty());
  EXPECT_EQ(syncs(), (std::vector<std::uint64_t>{kStartRead, kEndRead}));
  // Two imports of one buffer are the same object.
  auto b2 = detail::dmabuf_backend().import_fd(UniqueFd(::fcntl(m.get(), F_DUPFD_CLOEXEC, 0)), info);
  ASSERT_OK(b2);
  EXPECT_EQ((*b2)->object_key(), s.backing().object_key());
}

TEST_F(FakeDmaBuf, NothingLeaksOnAnyFailingCall) {
  add_heap("linux,cma");
  add_heap("system");
  add_udmabuf();
  for (auto call : {sys::Call::Open, sys::Call::Ioctl, sys::Call::Fstat, sys::Call::Lseek, sys::Call::MemfdCreate,
                    sys::Call::Ftruncate, sys::Call::Fcntl, sys::Call::Poll}) {
    for (int n = 1; n <= 6; ++n) {
      for (const char* heap : {"", "system", "udmabuf"}) {
        int fds = et_test::open_fd_count();
        // Our own mappings, counted through the seam (/proc/self/maps also moves with the allocator's
        // arenas, e.g. under ASan).
        auto live_maps = [] { return sys::call_count(sys::Call::Mmap) - sys::call_count(sys::Call::Munmap); };
        auto maps = live_maps();
        extra_hook_ = et_test::fail_nth(call, n, ENOMEM);
        {
          auto t = alloc(4096, heap);
          if (t) {
            auto m = t->map_write();
            (void)m;
          }
        }
        extra_hook_ = {};
        allocator_->refresh();  // closes the nodes it kept
        EXPECT_EQ(et_test::open_fd_count(), fds) << sys::call_name(call) << " #" << n << " heap '" << heap << "'";
        EXPECT_EQ(live_maps(), maps) << sys::call_name(call) << " #" << n;
      }
    }
  }
}

TEST_F(FakeDmaBuf, ReportAndBackendStatusNameHeapsAndWhatServes) {
  add_heap("system");
  add_heap("vendor,secure", false);
  add_udmabuf(32);
  auto st = allocator_->report();
  EXPECT_EQ(st.serving, "dma-heap system");
  EXPECT_EQ(st.kernel_heaps, std::vector<std::string>{"system"});
  ASSERT_EQ(st.heaps.size(), 6u);
  EXPECT_EQ(st.heaps[0].name, "default_cma_region");
  EXPECT_FALSE(st.heaps[0].present);
  EXPECT_EQ(st.heaps[4].name, "system");
  EXPECT_TRUE(st.heaps[4].present);
  EXPECT_TRUE(st.heaps[4].accessible);
  EXPECT_EQ(st.heaps[5].name, "vendor,secure");
  EXPECT_FALSE(st.heaps[5].in_probe_order);
  EXPECT_TRUE(st.udmabuf.accessible);
  EXPECT_EQ(st.udmabuf.size_limit_mb, std::optional<std::size_t>(32));
  auto bs = detail::dmabuf_backend_status(st);
  EXPECT_TRUE(bs.built);
  EXPECT_TRUE(bs.available);
  EXPECT_NE(bs.detail.find("dma-heap system"), std::string::npos) << bs.detail;
  EXPECT_NE(bs.detail.find("limit 32 MiB"), std::string::npos) << bs.detail;
  fs::remove(root_ / "dev/dma_heap/system");
  EXPECT_EQ(allocator_->report().serving, "udmabuf");
  fs::remove(root_ / "dev/udmabuf");
  auto none = allocator_->report();
  EXPECT_TRUE(none.serving.empty());
  EXPECT_NE(none.why_none.find("no DMA-BUF allocator usable"), std::string::npos) << none.why_none;
  EXPECT_FALSE(detail::dmabuf_backend_status(none).available);
}

// An allocator opens a heap node once and keeps it: N allocations make one open of the node (counted
// through the seam), by name and automatically, until refresh().
TEST_F(FakeDmaBuf, HeapNodeIsOpenedOnceAcrossAllocations) {
  add_heap("system");
  constexpr int kAllocations = 8;
  const auto opens = sys::call_count(sys::Call::Open);
  for (int i = 0; i < kAllocations; ++i) ASSERT_OK(alloc(4096, "system"));
  EXPECT_EQ(sys::call_count(sys::Call::Open) - opens, 1u) << "the required heap is opened once";
  const auto auto_opens = sys::call_count(sys::Call::Open);
  for (int i = 0; i < kAllocations; ++i) ASSERT_OK(alloc(4096));
  EXPECT_EQ(sys::call_count(sys::Call::Open) - auto_opens, 4u)
      << "the four missing CMA names, once; the system heap is already open";
  EXPECT_EQ(ioctls(DMA_HEAP_IOCTL_ALLOC).size(), 2u * kAllocations);
  allocator_->refresh();
  const auto after_refresh = sys::call_count(sys::Call::Open);
  ASSERT_OK(alloc(4096, "system"));
  EXPECT_EQ(sys::call_count(sys::Call::Open) - after_refresh, 1u) << "refresh() drops the kept node";
}

// Each allocator has its own memo: a second one over the same paths sees a node the first remembers
// as missing, and neither's report() changes the other's (or its own) memo.
TEST_F(FakeDmaBuf, AllocatorsRememberSeparately) {
  EXPECT_ERROR(alloc(4096), ErrorCode::Unavailable, "no DMA-BUF allocator served");
  EXPECT_TRUE(allocator_->known_unusable());
  add_heap("system");
  auto other = make_allocator();
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->known_unusable()) << "nothing tried yet";
  EXPECT_EQ(other->report().serving, "dma-heap system");
  EXPECT_EQ(allocator_->report().serving, "dma-heap system");
  EXPECT_TRUE(allocator_->known_unusable()) << "report() reports; it does not clear the memo";
  auto a = other->allocate(4096);
  ASSERT_OK(a);
  EXPECT_EQ(a->source, "dma-heap system");
  EXPECT_ERROR(alloc(4096), ErrorCode::Unavailable, "no DMA-BUF allocator served");
  allocator_->refresh();
  EXPECT_FALSE(allocator_->known_unusable());
  ASSERT_OK(alloc(4096));
}

TEST_F(FakeDmaBuf, AllocateNamesTheBufferAndSaysWhatServed) {
  add_udmabuf();
  auto a = allocator_->allocate(5000, "", "raw");
  ASSERT_OK(a);
  EXPECT_EQ(a->source, "udmabuf");
  EXPECT_TRUE(::fcntl(a->fd.get(), F_GETFD) & FD_CLOEXEC);
  auto names = ioctls(DMA_BUF_SET_NAME);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].name, "et:raw");
  EXPECT_ERROR(allocator_->allocate(4096, "../x"), ErrorCode::InvalidArgument, "../x");
}

TEST_F(FakeDmaBuf, CreateRefusesRelativeOrEmptyPaths) {
  dmabuf::AllocatorOptions o;
  o.heap_dir = "dev/dma_heap";
  EXPECT_ERROR(dmabuf::Allocator::create(o), ErrorCode::InvalidArgument, "heap_dir 'dev/dma_heap'");
  o = {};
  o.udmabuf_limit.clear();
  EXPECT_ERROR(dmabuf::Allocator::create(o), ErrorCode::InvalidArgument, "udmabuf_limit ''");
  auto ok = dmabuf::Allocator::create();
  ASSERT_OK(ok);
  EXPECT_EQ((*ok)->options().heap_dir, "/dev/dma_heap");
}

// Paths and names reach the kernel as C strings: a NUL byte inside would cut them, so it is refused,
// naming the argument and the byte.
TEST_F(FakeDmaBuf, NulBytesInPathsAndNamesAreRefused) {
  struct Field {
    std::string dmabuf::AllocatorOptions::*member;
    const char* name;
  };
  for (const Field f : {Field{&dmabuf::AllocatorOptions::heap_dir, "heap_dir"},
                        Field{&dmabuf::AllocatorOptions::kernel_heap_dir, "kernel_heap_dir"},
                        Field{&dmabuf::AllocatorOptions::udmabuf_dev, "udmabuf_dev"},
                        Field{&dmabuf::AllocatorOptions::udmabuf_limit, "udmabuf_limit"}}) {
    SCOPED_TRACE(f.name);
    dmabuf::AllocatorOptions o;
    o.*f.member = std::string("/dev\0/x", 7);
    EXPECT_ERROR(dmabuf::Allocator::create(o), ErrorCode::InvalidArgument,
                 std::string("dmabuf::AllocatorOptions::") + f.name + " has a NUL byte at byte 4 of 7");
  }
  add_heap("system");
  const auto opens = sys::call_count(sys::Call::Open);
  EXPECT_ERROR(allocator_->allocate(4096, std::string_view("sys\0tem", 7)), ErrorCode::InvalidArgument,
               "dmabuf::Allocator::allocate: heap_name has a NUL byte at byte 3 of 7");
  EXPECT_ERROR(allocator_->allocate(4096, "system", std::string_view("cam\0", 4)), ErrorCode::InvalidArgument,
               "dmabuf::Allocator::allocate: buffer_name has a NUL byte at byte 3 of 4");
  EXPECT_EQ(sys::call_count(sys::Call::Open), opens) << "refused before any node is opened";
  EXPECT_ERROR(alloc(4096, std::string("sys\0tem", 7)), ErrorCode::InvalidArgument,
               "AllocateOptions::dma_heap has a NUL byte at byte 3 of 7");
  EXPECT_ERROR(alloc(4096, "system", std::string("cam\0one", 7)), ErrorCode::InvalidArgument,
               "AllocateOptions::name has a NUL byte at byte 3 of 7 (counting from 0): a C string ends there, so the "
               "system call would see only \"cam\"");
  EXPECT_TRUE(ioctls(DMA_HEAP_IOCTL_ALLOC).empty());
}

// An allocator whose heap_dir is a regular file: the caller's mistake, said once (InvalidArgument, not
// ENOTDIR twice), remembered, and automatic allocation tries no other device (docs/DMABUF.md).
TEST_F(FakeDmaBuf, HeapDirThatIsAFileIsRefusedOnceAndNothingElseIsTried) {
  add_udmabuf();
  std::ofstream(root_ / "heaps") << "not a directory\n";
  dmabuf::AllocatorOptions o = allocator_->options();
  o.heap_dir = root_ / "heaps";
  auto a = dmabuf::Allocator::create(o);
  ASSERT_OK(a);
  const std::string said = "dmabuf::AllocatorOptions::heap_dir \"" + (root_ / "heaps").string() +
                           "\" is a regular file, not a directory: no dma-heap node can be in it";
  auto r = (*a)->allocate(4096);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().to_string(), "InvalidArgument: " + said);
  EXPECT_EQ(r.error().sys_errno(), ENOTDIR);
  EXPECT_TRUE(ioctls(UDMABUF_CREATE).empty()) << "automatic allocation tries nothing else";
  EXPECT_FALSE((*a)->known_unusable()) << "a mistake, not a missing device: Auto must ask and say it";
  const auto opens = sys::call_count(sys::Call::Open);
  EXPECT_EQ((*a)->allocate(4096).error().message(), said);
  EXPECT_EQ(sys::call_count(sys::Call::Open), opens) << "remembered until refresh()";
  EXPECT_EQ((*a)->allocate(4096, "system").error().to_string(), "InvalidArgument: " + said) << "by name too";
  EXPECT_TRUE((*a)->allocate(4096, "udmabuf").has_value()) << "udmabuf asked for by name does not use heap_dir";

  // Tensors: an explicit DmaBuf request gets the error, and so does Auto with this named allocator (the
  // mistake is the caller's; Auto does not hide it behind shared memory), every time, without a system call.
  AllocateOptions ao;
  ao.dmabuf_allocator = *a;
  ao.memory = MemoryKind::DmaBuf;
  EXPECT_ERROR(TensorDyn::allocate({16}, DType::U8, ao), ErrorCode::InvalidArgument, said);
  (*a)->refresh();
  ao.memory = MemoryKind::Auto;
  {
    et_test::ScopedEnv no_force("EDGETENSOR_FORCE_MEM", nullptr);
    auto first = TensorDyn::allocate({16}, DType::U8, ao);
    EXPECT_ERROR(first, ErrorCode::InvalidArgument, "auto allocation of 16 B: the named dmabuf_allocator: " + said);
    const auto opens_now = sys::call_count(sys::Call::Open);
    EXPECT_ERROR(TensorDyn::allocate({16}, DType::U8, ao), ErrorCode::InvalidArgument, said);
    EXPECT_EQ(sys::call_count(sys::Call::Open), opens_now) << "remembered: no node opened again";
  }

  // A parent that is a file, and a report() that says what is wrong instead of listing ENOTDIR opens.
  o.heap_dir = root_ / "heaps/dma_heap";
  auto nested = dmabuf::Allocator::create(o);
  ASSERT_OK(nested);
  EXPECT_ERROR((*nested)->allocate(4096, "system"), ErrorCode::InvalidArgument,
               "heap_dir \"" + (root_ / "heaps/dma_heap").string() + "\" has a parent that is not a directory");
  fs::remove(root_ / "dev/udmabuf");
  auto st = (*a)->report();
  ASSERT_EQ(st.path_problems.size(), 1u);
  EXPECT_EQ(st.path_problems[0], "dmabuf::AllocatorOptions::heap_dir \"" + (root_ / "heaps").string() +
                                     "\" is a regular file, not a directory");
  for (const auto& h : st.heaps) EXPECT_FALSE(h.present) << h.name;
  EXPECT_NE(st.why_none.find(st.path_problems[0]), std::string::npos) << st.why_none;
  EXPECT_EQ(st.why_none.find("ENOTDIR"), std::string::npos) << st.why_none;
  EXPECT_NE(detail::dmabuf_backend_status(st).detail.find(st.path_problems[0]), std::string::npos);
}

// kernel_heap_dir and udmabuf_limit are read for messages and the size check only; when they exist but
// are the wrong kind of file, that is said where they are reported, never read as "none".
TEST_F(FakeDmaBuf, KernelHeapDirAndUdmabufLimitOfTheWrongKindAreSaid) {
  add_udmabuf();
  fs::remove(root_ / "size_limit_mb");
  fs::create_directories(root_ / "size_limit_mb");  // a directory where the parameter file belongs
  fs::remove_all(root_ / "sys/dma_heap");
  std::ofstream(root_ / "sys/dma_heap") << "x\n";  // a file where the kernel's heap list belongs
  const std::string kernel_dir = "dmabuf::AllocatorOptions::kernel_heap_dir \"" + (root_ / "sys/dma_heap").string() +
                                 "\" is a regular file, not a directory";
  const std::string limit = "dmabuf::AllocatorOptions::udmabuf_limit \"" + (root_ / "size_limit_mb").string() +
                            "\" is a directory, not a regular file";
  auto st = allocator_->report();
  EXPECT_EQ(st.path_problems, (std::vector<std::string>{kernel_dir, limit}));
  EXPECT_TRUE(st.kernel_heaps.empty());
  EXPECT_FALSE(st.udmabuf.size_limit_mb.has_value());

  EXPECT_ERROR(alloc(4096, "system"), ErrorCode::Unavailable,
               "whether this kernel has heap \"system\" is unknown: " + kernel_dir);
  {
    et_test::ScopedLogCapture log;
    auto served = alloc(4096);  // udmabuf serves; its limit is unknown, which is logged once
    ASSERT_OK(served);
    EXPECT_EQ(served->memory_detail(), "udmabuf");
    EXPECT_TRUE(log.contains("warning: udmabuf's size limit is unknown: " + limit))
        << ::testing::PrintToString(log.lines());
    ASSERT_OK(alloc(4096));
    const auto lines = log.lines();
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return l.find("size limit is unknown") != std::string::npos; }),
              1)
        << ::testing::PrintToString(lines);
  }
  fs::remove(root_ / "dev/udmabuf");
  allocator_->refresh();
  EXPECT_ERROR(alloc(4096), ErrorCode::Unavailable, "(the kernel's heaps: unknown, " + kernel_dir + ")");

  // A FIFO at the limit's path is reported, not opened for a blocking read.
  fs::remove(root_ / "size_limit_mb");
  ASSERT_EQ(::mkfifo((root_ / "size_limit_mb").c_str(), 0600), 0);
  auto fifo = allocator_->report();
  ASSERT_EQ(fifo.path_problems.size(), 2u);
  EXPECT_NE(fifo.path_problems[1].find("is a FIFO, not a regular file"), std::string::npos) << fifo.path_problems[1];
}

TEST_F(FakeDmaBuf, UdmabufDevOfTheWrongKindIsNamed) {
  fs::create_directories(root_ / "dev/udmabuf");
  EXPECT_ERROR(alloc(4096, "udmabuf"), ErrorCode::InvalidArgument,
               "dmabuf::AllocatorOptions::udmabuf_dev \"" + (root_ / "dev/udmabuf").string() +
                   "\" is a directory, not a device node");
}

// A regular file where a device node should be opens fine and answers the device ioctl with ENOTTY: the
// error names the configured path and the file's kind, not just the kernel's ENOTTY.
TEST_F(FakeDmaBuf, RegularFileWhereANodeShouldBeIsNamed) {
  add_heap("system");  // the fakes are regular files, served by the ioctl emulator
  alloc_errno_["system"] = ENOTTY;  // what the kernel answers for DMA_HEAP_IOCTL_ALLOC on a regular file
  const std::string heap = (root_ / "dev/dma_heap/system").string();
  auto t = alloc(4096, "system");
  EXPECT_ERROR(t, ErrorCode::InvalidArgument,
               "dmabuf::AllocatorOptions::heap_dir \"" + (root_ / "dev/dma_heap").string() + "\" holds \"" + heap +
                   "\", which is a regular file, not a character device");
  EXPECT_NE(t.error().message().find("ENOTTY"), std::string::npos) << t.error().message();
  // Automatic allocation names it too, among the heaps it tried.
  auto a = alloc(4096);
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message().find("which is a regular file, not a character device"), std::string::npos)
      << a.error().message();
  // Any other ioctl error stays the kernel's answer.
  alloc_errno_["system"] = ENOMEM;
  EXPECT_ERROR(alloc(4096, "system"), ErrorCode::OutOfMemory, "DMA_HEAP_IOCTL_ALLOC");

  add_udmabuf();
  extra_hook_ = [](const sys::CallInfo& c) { return c.call == sys::Call::Ioctl && c.request == UDMABUF_CREATE ? ENOTTY : 0; };
  EXPECT_ERROR(alloc(4096, "udmabuf"), ErrorCode::InvalidArgument,
               "dmabuf::AllocatorOptions::udmabuf_dev \"" + (root_ / "dev/udmabuf").string() +
                   "\" is a regular file, not a character device");
  int memfd = ::memfd_create("et-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(::ftruncate(memfd, 4096), 0);
  ASSERT_EQ(::fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_ERROR(allocator_->udmabuf_from_memfd(memfd, 0, 4096), ErrorCode::InvalidArgument,
               "is a regular file, not a character device");
  ::close(memfd);
}

// The kind check itself: a character device passes (its ENOTTY stays the kernel's answer), anything
// else is named.
TEST(DmaBufNodeKind, CharacterDevicesPassOtherFilesAreNamed) {
  UniqueFd null_dev(::open("/dev/null", O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(null_dev);
  EXPECT_EQ(detail::device_kind_problem(null_dev.get()), "");
  UniqueFd memfd(::memfd_create("et-test", MFD_CLOEXEC));
  ASSERT_TRUE(memfd);
  EXPECT_EQ(detail::device_kind_problem(memfd.get()), "is a regular file, not a character device");
  UniqueFd dir(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  EXPECT_EQ(detail::device_kind_problem(dir.get()), "is a directory, not a character device");
}

// A zero-byte request is the caller's mistake, refused before any node is opened (no DMA-BUF is 0 B).
TEST_F(FakeDmaBuf, AllocateRefusesZeroBytesBeforeOpeningANode) {
  add_heap("system");
  auto a = dmabuf::Allocator::create();
  ASSERT_OK(a);
  const auto opens = sys::call_count(sys::Call::Open);
  EXPECT_ERROR((*a)->allocate(0), ErrorCode::InvalidArgument, "size 0 B");
  EXPECT_ERROR((*a)->allocate(0, "system"), ErrorCode::InvalidArgument, "size 0 B");
  EXPECT_EQ(sys::call_count(sys::Call::Open), opens);
}

// A pool's AllocateOptions name the allocator: the pool keeps it alive and every buffer comes from it.
TEST_F(FakeDmaBuf, PoolAllocatesFromTheAllocatorItNames) {
  add_heap("system");
  PoolOptions po;
  po.name = "cam";
  po.max_buffers = 2;
  po.allocate = auto_options();
  po.allocate.memory = MemoryKind::DmaBuf;
  std::weak_ptr<dmabuf::Allocator> weak = allocator_;
  auto pool = Pool::create({4096}, DType::U8, po);
  ASSERT_OK(pool);
  po.allocate.dmabuf_allocator.reset();
  allocator_.reset();
  EXPECT_FALSE(weak.expired()) << "the pool keeps its allocator";
  auto a = pool->try_acquire();
  auto b = pool->try_acquire();
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(a->memory_detail(), "dma-heap system");
  EXPECT_EQ(ioctls(DMA_HEAP_IOCTL_ALLOC).size(), 2u);
}

// Allocations on many threads while another refreshes: every one is served, nothing leaks, and an fd
// in use by an allocation in flight is never closed under it.
TEST_F(FakeDmaBuf, AllocateIsThreadSafeAgainstRefresh) {
  add_heap("system");
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::thread refresher([&] {
    while (!stop.load()) allocator_->refresh();
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int n = 0; n < 100; ++n)
        if (!allocator_->allocate(4096, n % 2 ? "system" : "")) ++failures;
    });
  for (auto& t : threads) t.join();
  stop = true;
  refresher.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(DmaBufDefault, IsOneObjectCreatedOnce) {
  auto a = dmabuf::default_allocator();
  auto b = dmabuf::default_allocator();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->options().heap_dir, "/dev/dma_heap");
}

// The default is destroyed at exit (not leaked), and a call after that gets a working allocator, not a
// destroyed one. The check is an atexit handler registered at static initialisation, before the default
// exists, so it runs after the default's destructor; it acts only in the death test's child.
std::atomic<bool> g_late_default_armed{false};
std::weak_ptr<dmabuf::Allocator> g_first_default;
[[maybe_unused]] const int kLateDefaultCheck = [] {
  std::atexit([] {
    if (!g_late_default_armed.load()) return;
    const bool destroyed = g_first_default.expired();
    auto late = dmabuf::default_allocator();
    auto r = late->allocate(4096);  // served or refused (this host), never undefined
    const bool works = r.has_value() || !r.error().message().empty();
    std::_Exit(destroyed && works ? 7 : 8);
  });
  return 0;
}();

TEST(DmaBufDefault, IsDestroyedAtExitAndStillServesAfter) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        g_first_default = dmabuf::default_allocator();
        g_late_default_armed = true;
        std::exit(0);
      },
      ::testing::ExitedWithCode(7), "");
}

TEST(DmaBufHost, ThisMachineWithoutDevicesFallsBackToShm) {
  if (::access("/dev/dma_heap", F_OK) == 0 || ::access("/dev/udmabuf", F_OK) == 0)
    GTEST_SKIP() << "this machine has DMA-BUF devices; the fallback is covered by FakeDmaBuf";
  int fds = et_test::open_fd_count();
  {
    auto t = TensorDyn::allocate({100}, DType::U8);
    ASSERT_OK(t);
    EXPECT_EQ(t->memory(), MemoryKind::Shm);
    AllocateOptions o;
    o.memory = MemoryKind::DmaBuf;
    auto d = TensorDyn::allocate({100}, DType::U8, o);
    EXPECT_ERROR(d, ErrorCode::Unavailable, "no DMA-BUF allocator served 100 B");
    EXPECT_FALSE(backend_status(MemoryKind::DmaBuf).available);
  }
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

// The same on this machine's real paths: after one Auto allocation, the next makes no failed call.
TEST(DmaBufHost, AutoMakesNoFailedSystemCallAfterTheFirstAllocation) {
  if (::access("/dev/dma_heap", F_OK) == 0 || ::access("/dev/udmabuf", F_OK) == 0)
    GTEST_SKIP() << "this machine has DMA-BUF devices; FakeDmaBuf covers the case without";
  et_test::ScopedEnv no_force("EDGETENSOR_FORCE_MEM", nullptr);
  auto first = TensorDyn::allocate({4096}, DType::U8);
  ASSERT_OK(first);
  const auto failed = sys::total_failed();
  auto second = TensorDyn::allocate({3840, 2160, 4}, DType::U8);
  ASSERT_OK(second);
  EXPECT_EQ(second->memory(), MemoryKind::Shm);
  EXPECT_EQ(sys::total_failed(), failed);
}

}  // namespace
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
