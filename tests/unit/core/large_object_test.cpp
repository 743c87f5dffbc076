// SPDX-License-Identifier: Apache-2.0
// Objects near and past what a process can address (32-bit targets above all): a memfd over 2 GiB
// works or is refused with an error naming its size, never truncated (the library's off_t is 64-bit,
// _FILE_OFFSET_BITS=64, also on armhf); an object larger than size_t can hold is refused when it is
// imported; a mapping larger than the address space is refused with an error naming the size and the
// address space. Every case runs on every architecture; where 32- and 64-bit builds must differ, the
// test says which outcome each one has. The memfds are sparse: only the bytes written cost memory.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include <linux/magic.h>

#include "core/backend.h"
#include "base/size_math.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

constexpr bool k32Bit = sizeof(void*) == 4;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

UniqueFd sparse_memfd(std::uint64_t bytes) {
  UniqueFd fd(::memfd_create("et-large", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd);
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(bytes)), 0) << bytes << " B";
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

TEST(LargeObjects, OffTIs64BitsInTheLibraryAndItsTests) {
  static_assert(sizeof(off_t) == 8, "_FILE_OFFSET_BITS=64 reaches the tests (et_internal)");
  SUCCEED();
}

TEST(LargeObjects, CheckedNarrowNeverTruncates) {
  using detail::checked_narrow;
  EXPECT_EQ(checked_narrow<std::uint32_t>(std::int64_t{5} * static_cast<std::int64_t>(kGiB)), std::nullopt);
  EXPECT_EQ(checked_narrow<std::uint32_t>(std::int64_t{4} * static_cast<std::int64_t>(kGiB)), std::nullopt);
  EXPECT_EQ(checked_narrow<std::uint32_t>(std::int64_t{4} * static_cast<std::int64_t>(kGiB) - 1), 0xffffffffu);
  EXPECT_EQ(checked_narrow<std::uint32_t>(std::int64_t{-1}), std::nullopt);
  EXPECT_EQ(checked_narrow<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  EXPECT_EQ(checked_narrow<std::size_t>(std::int64_t{3} * static_cast<std::int64_t>(kGiB)), std::size_t{3} * kGiB);
}

// A 3 GiB memfd tensor: ftruncate gets all of it (a 32-bit off_t would make it negative: EINVAL). Its
// mapping either works (every 64-bit build; a 32-bit process with 3 GiB of free address space) and
// reaches the last byte, or is refused naming the size and the address space.
TEST(LargeObjects, ShmTensorOver2GiBIsWholeOrRefusedAtMapWithTheSize) {
  const std::size_t size = static_cast<std::size_t>(3 * kGiB);
  auto t = TensorDyn::allocate({size}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  EXPECT_EQ(t->buffer_bytes(), size);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  struct stat st {};
  ASSERT_EQ(::fstat(fd->get(), &st), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 3 * kGiB) << "the memfd was truncated";
  auto m = t->map_write();
  if (!m) {
    EXPECT_TRUE(k32Bit) << "a 64-bit process maps 3 GiB: " << m.error().to_string();
    EXPECT_ERROR(m, ErrorCode::OutOfMemory, "3221225472 B");
    EXPECT_NE(m.error().message().find("address space"), std::string::npos) << m.error().message();
    return;
  }
  ASSERT_EQ(m->bytes().size(), size);
  m->bytes()[0] = std::byte{0x5a};
  m->bytes()[size - 1] = std::byte{0xa5};
  m->unmap();
  auto r = t->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes()[0], std::byte{0x5a});
  EXPECT_EQ(r->bytes()[size - 1], std::byte{0xa5});
}

// A 5 GiB memfd: a 64-bit process imports all of it; a 32-bit one cannot hold its size in size_t and
// refuses it naming the size and the limit (it used to take it as 1 GiB: 5 GiB mod 4 GiB).
TEST(LargeObjects, MemfdOver4GiBIsImportedWholeOrRefusedNamingSizeAndLimit) {
  UniqueFd fd = sparse_memfd(5 * kGiB);
  auto t = TensorDyn::import_fd_dup(fd.get(), {16}, DType::U8);
  if (k32Bit) {
    EXPECT_ERROR(t, ErrorCode::OutOfRange, "5368709120 B");
    EXPECT_NE(t.error().message().find("4294967295"), std::string::npos) << t.error().message();
    return;
  }
  ASSERT_OK(t);
  EXPECT_EQ(static_cast<std::uint64_t>(t->buffer_bytes()), 5 * kGiB);
}

// An object larger than any address space: 2^60 B on 64-bit (no Linux architecture maps that much),
// refused when mapped; on 32-bit already refused when imported (size_t cannot hold it).
TEST(LargeObjects, MappingLargerThanTheAddressSpaceIsRefusedClearly) {
  const std::uint64_t huge = std::uint64_t{1} << 60;
  UniqueFd fd = sparse_memfd(huge);
  auto t = TensorDyn::import_fd_dup(fd.get(), {16}, DType::U8);
  if (k32Bit) {
    EXPECT_ERROR(t, ErrorCode::OutOfRange, std::to_string(huge) + " B");
    return;
  }
  ASSERT_OK(t);
  auto m = t->map_read();
  EXPECT_ERROR(m, ErrorCode::OutOfMemory, std::to_string(huge) + " B");
  EXPECT_NE(m.error().message().find("contiguous address space"), std::string::npos) << m.error().message();
}

// Heap: anonymous pages larger than the address space (2^60 B; 4 GiB - 64 KiB on 32-bit, which the
// process's own code and stacks already overlap) are refused naming the size and the address space.
TEST(LargeObjects, HeapLargerThanTheAddressSpaceIsRefusedClearly) {
  const std::size_t size = k32Bit ? std::size_t{0xffff0000u} : static_cast<std::size_t>(std::uint64_t{1} << 60);
  auto t = TensorDyn::allocate({size}, DType::U8, et_test::mem(MemoryKind::Heap));
  EXPECT_ERROR(t, ErrorCode::OutOfMemory, std::to_string(size) + " B");
  EXPECT_NE(t.error().message().find("contiguous address space"), std::string::npos) << t.error().message();
  if (k32Bit) {
    EXPECT_NE(t.error().message().find("32-bit process"), std::string::npos) << t.error().message();
  }
}

// statfs.f_type is a signed int on 32-bit targets: HUGETLBFS_MAGIC (0x958458f6) arrives negative and,
// sign-extended, matched nothing, so armhf refused hugetlbfs fds as "an unknown filesystem".
TEST(LargeObjects, FsMagicAbove2GiBIsNotSignExtended) {
  static_assert(detail::fs_magic(static_cast<std::int32_t>(HUGETLBFS_MAGIC)) == HUGETLBFS_MAGIC);
  static_assert(detail::fs_magic(static_cast<long>(HUGETLBFS_MAGIC)) == HUGETLBFS_MAGIC);
  static_assert(detail::fs_magic(static_cast<std::int32_t>(TMPFS_MAGIC)) == TMPFS_MAGIC);
  UniqueFd fd(::memfd_create("et-huge", MFD_CLOEXEC | MFD_HUGETLB));
  if (!fd) GTEST_SKIP() << "memfd_create(MFD_HUGETLB): " << std::strerror(errno) << " (no hugetlbfs in this kernel)";
  auto info = detail::probe_fd(fd.get());
  ASSERT_OK(info);
  EXPECT_EQ(info->kind, MemoryKind::Shm);
  EXPECT_EQ(info->what, "hugetlbfs file");
}

}  // namespace
