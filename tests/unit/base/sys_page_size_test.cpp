// SPDX-License-Identifier: Apache-2.0
// Page sizes other than 4 KiB (Raspberry Pi 5 kernels: 16 KiB; some arm64 servers: 64 KiB). The page
// size comes from one place, sys::page_size() (ctest layering.page_size_only_in_sys keeps it so); a
// test sets it to 16 or 64 KiB, and sys::mmap then refuses offsets that such a kernel would refuse.
// The heap, shm (memfd and named) and mapping paths must work unchanged with sizes that are not page
// multiples: nothing may round a size to 4 KiB or map at a 4 KiB offset.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/sys.h"
#include "support/page_size.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

TEST(SysPageSize, IsTheKernelsAndAPowerOfTwo) {
  const std::size_t p = sys::page_size();
  EXPECT_EQ(p, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  EXPECT_GE(p, 4096u);
  EXPECT_EQ(p & (p - 1), 0u) << p;
}

TEST(SysPageSize, TestOverrideAndItsMmapRule) {
  const std::size_t real = sys::page_size();
  UniqueFd fd(sys::memfd_create("et-page-size", MFD_CLOEXEC));
  ASSERT_TRUE(fd);
  ASSERT_EQ(::ftruncate(fd.get(), 128 * 1024), 0);
  for (std::size_t page : et_test::kOtherPageSizes) {
    SCOPED_TRACE(page);
    {
      et_test::ScopedPageSize scoped(page);
      EXPECT_EQ(sys::page_size(), page);
      // An offset that is a multiple of 4 KiB but not of the page is refused, as such a kernel would.
      errno = 0;
      EXPECT_EQ(sys::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd.get(), 4096), MAP_FAILED);
      EXPECT_EQ(errno, EINVAL);
      void* p = sys::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd.get(), static_cast<off_t>(page));
      ASSERT_NE(p, MAP_FAILED);
      EXPECT_EQ(sys::munmap(p, 4096), 0);
    }
    EXPECT_EQ(sys::page_size(), real);
  }
}

// Sizes around the page boundaries of every page size, none a multiple of 4 KiB except the pages.
std::vector<std::size_t> sizes_for(std::size_t page) {
  return {1, 4097, page - 1, page, page + 1, 3 * page + 5, 64 * 1024 + 3, 1 << 20};
}

void fill(const TensorDyn& t, unsigned seed) {
  auto m = t.map_write();
  ASSERT_OK(m);
  auto b = m->bytes();
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
}

void expect_pattern(const TensorDyn& t, unsigned seed, std::size_t first = 0) {
  auto m = t.map_read();
  ASSERT_OK(m);
  auto b = m->bytes();
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i] != static_cast<std::byte>(((first + i) * 7 + seed) & 0xff)) {
      ADD_FAILURE() << "byte " << i << " of " << b.size();
      return;
    }
}

class OtherPageSize : public ::testing::TestWithParam<std::size_t> {};

TEST_P(OtherPageSize, HeapSizesAreExactAndUsable) {
  et_test::ScopedPageSize scoped(GetParam());
  for (std::size_t size : sizes_for(GetParam())) {
    SCOPED_TRACE(size);
    auto t = TensorDyn::allocate({size}, DType::U8, et_test::mem(MemoryKind::Heap));
    ASSERT_OK(t);
    EXPECT_EQ(t->buffer_bytes(), size);
    fill(*t, 3);
    expect_pattern(*t, 3);
  }
}

TEST_P(OtherPageSize, MemfdSizesAreExactAndSharedWhole) {
  const int fds = et_test::open_fd_count();
  {
    et_test::ScopedPageSize scoped(GetParam());
    for (std::size_t size : sizes_for(GetParam())) {
      SCOPED_TRACE(size);
      auto t = TensorDyn::allocate({size}, DType::U8, et_test::mem(MemoryKind::Shm));
      ASSERT_OK(t);
      EXPECT_EQ(t->buffer_bytes(), size);
      fill(*t, 5);
      auto fd = t->export_fd();
      ASSERT_OK(fd);
      struct stat st {};
      ASSERT_EQ(::fstat(fd->get(), &st), 0);
      EXPECT_EQ(static_cast<std::size_t>(st.st_size), size) << "the memfd is the requested size, not page-rounded";
      // The importer maps the whole object at offset 0 and views it at a byte offset of its own.
      auto imported = TensorDyn::import_fd_dup(fd->get(), {size}, DType::U8);
      ASSERT_OK(imported);
      expect_pattern(*imported, 5);
      if (size > 4097) {
        auto tail = imported->view(4097, {size - 4097});
        ASSERT_OK(tail);
        expect_pattern(*tail, 5, 4097);
      }
    }
  }
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST_P(OtherPageSize, NamedShmSizesAreExact) {
  et_test::ScopedPageSize scoped(GetParam());
  const std::size_t size = GetParam() + 1;
  const std::string name = et_test::unique_shm_name("pagesize");
  {
    AllocateOptions o = et_test::mem(MemoryKind::Shm);
    o.shm_name = name;
    auto t = TensorDyn::allocate({size}, DType::U8, o);
    ASSERT_OK(t);
    EXPECT_EQ(t->buffer_bytes(), size);
    fill(*t, 9);
    auto opened = shm::open(name, {size}, DType::U8, /*read_only=*/true, ImportOptions{.allow_shrinkable = true});
    ASSERT_OK(opened);
    EXPECT_EQ(opened->buffer_bytes(), size);
    expect_pattern(*opened, 9);
  }
  ASSERT_OK(shm::remove(name));
}

INSTANTIATE_TEST_SUITE_P(KiB, OtherPageSize, ::testing::ValuesIn(et_test::kOtherPageSizes),
                         [](const ::testing::TestParamInfo<std::size_t>& p) { return std::to_string(p.param / 1024); });

}  // namespace
