// SPDX-License-Identifier: Apache-2.0
// Heap backend (src/backends/heap/): 256-byte alignment, lazy pages, zeroed by construction, not
// shareable, failures reported and leak-free.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <optional>
#include <vector>

#include "core/backend.h"
#include "base/sys_testing.h"
#include "support/page_size.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

AllocateOptions heap() {
  AllocateOptions o;
  o.memory = MemoryKind::Heap;
  return o;
}

std::uintptr_t base_address(const TensorDyn& t) {
  auto m = t.map_read();
  EXPECT_TRUE(m.has_value());
  return m ? reinterpret_cast<std::uintptr_t>(m->data()) : 0;
}

TEST(Heap, EveryAllocationIsAlignedToAtLeast256Bytes) {
  const std::size_t sizes[] = {1, 3, 255, 256, 257, 1000, 4095, 4097, 65535, 65536, 65537, 1 << 20, 1920 * 1080 * 4};
  std::vector<TensorDyn> keep;  // keep them alive so the allocator cannot hand back one address
  for (int round = 0; round < 4; ++round) {
    for (std::size_t size : sizes) {
      auto t = TensorDyn::allocate({size}, DType::U8, heap());
      ASSERT_OK(t);
      EXPECT_EQ(t->memory(), MemoryKind::Heap);
      EXPECT_EQ(base_address(*t) % 256, 0u) << size << " B at " << std::hex << base_address(*t);
      keep.push_back(*t);
    }
  }
}

TEST(Heap, DetailSaysHowTheMemoryWasObtained) {
  auto small = TensorDyn::allocate({100}, DType::U8, heap());
  auto large = TensorDyn::allocate({1 << 20}, DType::U8, heap());
  ASSERT_OK(small);
  ASSERT_OK(large);
  EXPECT_EQ(small->memory_detail(), "heap (malloc)");
  EXPECT_EQ(large->memory_detail(), "heap (anonymous pages)");
}

// Resident bytes of [p, p + n) (mincore(2), whole pages): the pages themselves, not the process's RSS,
// which under QEMU user mode also grows with the emulator's own per-page bookkeeping of a new mapping
// (qemu 7.2: about 24 B per guest page, 6 MiB for 1 GiB).
std::size_t resident_bytes(const std::byte* p, std::size_t n) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + n + page - 1) / page * page;
  std::vector<unsigned char> vec((end - begin) / page);
  if (::mincore(reinterpret_cast<void*>(begin), end - begin, vec.data()) != 0) {
    ADD_FAILURE() << "mincore: " << std::strerror(errno);
    return 0;
  }
  std::size_t resident = 0;
  for (unsigned char v : vec) resident += (v & 1) ? page : 0;
  return resident;
}

TEST(Heap, AllocatingOneGiBDoesNotTouchItsPages) {
  auto t = TensorDyn::allocate({std::size_t{1} << 30}, DType::U8, heap());
  ASSERT_OK(t);
  auto m = t->map_read_write();  // the persistent mapping: opening a map touches nothing either
  ASSERT_OK(m);
  const std::size_t before = resident_bytes(m->data(), m->extent_bytes());
  EXPECT_LT(before, std::size_t{1} << 20) << before << " B of the 1 GiB are resident after allocate";
  // Touching one page makes it resident, and it reads as zero.
  EXPECT_EQ(m->bytes()[(std::size_t{1} << 29) + 17], std::byte{0});
  m->bytes()[(std::size_t{1} << 29) + 17] = std::byte{1};
  EXPECT_GT(resident_bytes(m->data(), m->extent_bytes()), before) << "mincore sees a touched page";
}

TEST(Heap, IsNotShareable) {
  const int base = et_test::open_fd_count();
  for (std::size_t size : {std::size_t{64}, std::size_t{1} << 20}) {
    auto t = TensorDyn::allocate({size}, DType::U8, heap());
    ASSERT_OK(t);
    EXPECT_ERROR(t->export_fd(), ErrorCode::Unsupported, "heap tensor is not shareable");
  }
  EXPECT_EQ(et_test::open_fd_count(), base);
}

TEST(Heap, MmapFailureIsOutOfMemoryAndLeaksNothing) {
  et_test::ScopedFaultHook hook([](const sys::CallInfo& c) { return c.call == sys::Call::Mmap ? ENOMEM : 0; });
  // The first failure warms up the allocator's own mappings (an ASan build maps size classes lazily).
  EXPECT_ERROR(TensorDyn::allocate({1 << 20}, DType::U8, heap()), ErrorCode::OutOfMemory, "heap mmap");
  const int maps = et_test::mapping_count();
  for (int i = 0; i < 100; ++i) {
    auto r = TensorDyn::allocate({1 << 20}, DType::U8, heap());
    EXPECT_ERROR(r, ErrorCode::OutOfMemory, "heap mmap of 1048576 B");
  }
  if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps);
  }
}

TEST(Heap, ImpossibleSizeFailsCleanly) {
  // 2^62 bytes passes the size math but no machine maps it (no address space that large).
  // 32-bit: 4 GiB - 1 MiB, more than any 32-bit process has free.
  const std::size_t impossible = sizeof(std::size_t) == 8 ? static_cast<std::size_t>(std::uint64_t{1} << 62) : 0xfff00000u;
  auto r = TensorDyn::allocate({impossible}, DType::U8, heap());
  if (r) GTEST_SKIP() << "this machine mapped " << impossible << " B";
  EXPECT_EQ(r.error().code(), ErrorCode::OutOfMemory) << r.error().to_string();
  EXPECT_NE(r.error().message().find(std::to_string(impossible) + " B"), std::string::npos) << r.error().message();
}

// A heap tensor is committed memory (no MAP_NORESERVE): under the kernel's default heuristic overcommit
// (mode 0, proc(5)) a tensor larger than RAM + swap is refused at allocate, not handed out to fault later.
TEST(Heap, MoreThanRamAndSwapIsRefusedAtAllocate) {
  if (sizeof(std::size_t) < 8) GTEST_SKIP() << "32-bit: RAM + swap can exceed the address space; ImpossibleSize covers it";
  std::ifstream mode_file("/proc/sys/vm/overcommit_memory");
  int mode = -1;
  mode_file >> mode;
  if (mode == 1) GTEST_SKIP() << "vm.overcommit_memory = 1 (always overcommit): the kernel accepts any size by policy";
  std::ifstream meminfo("/proc/meminfo");
  std::uint64_t total_kb = 0;
  for (std::string key; meminfo >> key;) {
    std::uint64_t kb = 0;
    std::string unit;
    meminfo >> kb >> unit;
    if (key == "MemTotal:" || key == "SwapTotal:") total_kb += kb;
  }
  ASSERT_GT(total_kb, 0u);
  const auto bytes = static_cast<std::size_t>(total_kb * 1024 * 4);  // four times RAM + swap
  auto r = TensorDyn::allocate({bytes}, DType::U8, heap());
  ASSERT_FALSE(r.has_value()) << bytes << " B allocated: more than RAM + swap was committed";
  EXPECT_EQ(r.error().code(), ErrorCode::OutOfMemory) << r.error().to_string();
  EXPECT_NE(r.error().message().find(std::to_string(bytes) + " B"), std::string::npos) << r.error().message();
}

TEST(Heap, MunmapFailureInTheDestructorIsLogged) {
  et_test::ScopedLogCapture log;
  {
    auto t = TensorDyn::allocate({1 << 16}, DType::U8, heap());
    ASSERT_OK(t);
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Munmap, 1, EINVAL));
    t = TensorDyn();  // the last holder goes: munmap fails (injected; 64 KiB stay mapped)
  }
  EXPECT_TRUE(log.contains("warning: munmap of heap tensor (65536 B) failed")) << ::testing::PrintToString(log.lines());
}

// Transparent huge pages: a tensor of at least one PMD huge page starts on a huge-page boundary and is
// advised MADV_HUGEPAGE, for whatever size the kernel reports (faked through the seam: 2 MiB with 4 KiB
// pages, 32 MiB with 16 KiB pages, 512 MiB with 64 KiB pages; never assumed). Smaller ones are not.

class ScopedHugePageSize {
 public:
  explicit ScopedHugePageSize(std::size_t bytes) { sys::set_hpage_pmd_size_for_testing(bytes); }
  ~ScopedHugePageSize() { sys::reset_hpage_pmd_size_for_testing(); }
  ScopedHugePageSize(const ScopedHugePageSize&) = delete;
  ScopedHugePageSize& operator=(const ScopedHugePageSize&) = delete;
};

TEST(Heap, LargeTensorsAreAlignedToTheKernelsHugePageAndAdvised) {
  struct Case {
    std::size_t page, huge;
  };
  for (const Case c : {Case{0, std::size_t{2} << 20}, Case{16 * 1024, std::size_t{32} << 20},
                       Case{64 * 1024, std::size_t{512} << 20}, Case{0, std::size_t{1} << 20}}) {
    std::optional<et_test::ScopedPageSize> page;
    if (c.page) page.emplace(c.page);
    ScopedHugePageSize huge(c.huge);
    std::vector<unsigned long> advice;
    const int maps = et_test::mapping_count();
    {
      et_test::ScopedFaultHook hook([&](const sys::CallInfo& call) {
        if (call.call == sys::Call::Madvise) advice.push_back(call.request);
        return 0;
      });
      for (std::size_t size : {c.huge, c.huge + 12345, 3 * c.huge}) {
        advice.clear();
        auto t = TensorDyn::allocate({size}, DType::U8, heap());
        ASSERT_OK(t);
        EXPECT_EQ(base_address(*t) % c.huge, 0u) << size << " B with huge pages of " << c.huge;
        EXPECT_EQ(advice, std::vector<unsigned long>{MADV_HUGEPAGE}) << size;
        EXPECT_EQ(t->memory_detail(), "heap (anonymous pages, huge pages advised)");
        auto m = t->map_read_write();
        ASSERT_OK(m);
        EXPECT_EQ(m->bytes()[size - 1], std::byte{0}) << "zero by construction";
        m->bytes()[size - 1] = std::byte{1};
      }
      advice.clear();
      auto small = TensorDyn::allocate({c.huge - 1}, DType::U8, heap());
      ASSERT_OK(small);
      EXPECT_TRUE(advice.empty()) << "below one huge page: no advice";
      EXPECT_EQ(small->memory_detail(), "heap (anonymous pages)");
    }
    if (et_test::kExactMappingCount) {
      EXPECT_EQ(et_test::mapping_count(), maps) << "the trimmed reservation was unmapped whole (huge " << c.huge << ")";
    }
  }
}

TEST(Heap, NoHugePagesWithoutThpAndWhenTheAdviceIsRefused) {
  {
    ScopedHugePageSize none(0);  // no /sys/kernel/mm/transparent_hugepage: nothing to align to
    const auto madvises = sys::call_count(sys::Call::Madvise);
    auto t = TensorDyn::allocate({std::size_t{8} << 20}, DType::U8, heap());
    ASSERT_OK(t);
    EXPECT_EQ(sys::call_count(sys::Call::Madvise), madvises);
    EXPECT_EQ(t->memory_detail(), "heap (anonymous pages)");
  }
  ScopedHugePageSize huge(std::size_t{2} << 20);
  et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Madvise, 1, EINVAL));  // a kernel without THP
  auto t = TensorDyn::allocate({std::size_t{8} << 20}, DType::U8, heap());
  ASSERT_OK(t);
  EXPECT_EQ(t->memory_detail(), "heap (anonymous pages)") << "the memory works without the advice";
  EXPECT_EQ(base_address(*t) % (std::size_t{2} << 20), 0u);
}

TEST(Heap, HugePageTrimFailureIsReportedAndLeaksNothing) {
  ScopedHugePageSize huge(std::size_t{2} << 20);
  {
    // Warm-up (see MmapFailureIsOutOfMemoryAndLeaksNothing).
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Munmap, 1, EINVAL));
    (void)TensorDyn::allocate({std::size_t{4} << 20}, DType::U8, heap());
  }
  const int maps = et_test::mapping_count();
  et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Munmap, 1, EINVAL));
  auto t = TensorDyn::allocate({std::size_t{4} << 20}, DType::U8, heap());
  ASSERT_FALSE(t.has_value()) << "the first munmap (of the head, or of the tail when the head is aligned) failed";
  EXPECT_ERROR(t, ErrorCode::InvalidArgument, "heap: trimming the ");
  if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps);
  }
}

TEST(Heap, CannotBeImportedFromAnFd) {
  // Heap memory has no fd: the backend table's import entry refuses, and closes the fd it was given.
  int raw = ::memfd_create("et-heap-import", MFD_CLOEXEC);
  ASSERT_GE(raw, 0);
  const int base = et_test::open_fd_count();
  auto r = detail::backend_ops(MemoryKind::Heap).import_fd(UniqueFd(raw), detail::FdInfo{});
  EXPECT_ERROR(r, ErrorCode::Unsupported, "heap memory cannot be imported from an fd");
  EXPECT_EQ(et_test::open_fd_count(), base - 1);
}

}  // namespace
