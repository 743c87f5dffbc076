// SPDX-License-Identifier: Apache-2.0
// Recognising fds from the kernel's answers (src/core/fd_probe.cpp) and the import rules built on it:
// what is refused (named), real size vs. offset + extent, file offset untouched, borrow vs. adopt,
// nothing leaked on any error path.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "core/backend.h"
#include "support/test_support.h"

using namespace edgetensor;
using namespace edgetensor::detail;
using et_test::open_fd_count;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

// Sealed against shrink and grow, as a careful sender's memfd is (so it imports with default options;
// unsealed ones: shrinkable_import_test.cpp).
UniqueFd memfd_of_size(std::size_t size) {
  UniqueFd fd(::memfd_create("et-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

// A regular file on a disk filesystem: the build directory's (checked, and skipped if it is tmpfs).
struct DiskFile {
  DiskFile() {
    for (const char* dir : {".", "/var/tmp", "/tmp"}) {
      std::string tmpl = std::string(dir) + "/et-probe-XXXXXX";
      int file = ::mkstemp(tmpl.data());
      if (file < 0) continue;
      struct statfs sfs {};
      if (::fstatfs(file, &sfs) == 0 && detail::fs_magic(sfs.f_type) != TMPFS_MAGIC &&
          detail::fs_magic(sfs.f_type) != HUGETLBFS_MAGIC) {
        path = tmpl;
        fd = UniqueFd(file);
        magic = detail::fs_magic(sfs.f_type);
        EXPECT_EQ(::ftruncate(file, 4096), 0);
        return;
      }
      ::close(file);
      ::unlink(tmpl.c_str());
    }
  }
  ~DiskFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
  std::string path;
  UniqueFd fd;
  std::uint64_t magic = 0;
};

// ---- pure classification -------------------------------------------------------------------------
TEST(FdProbe, ClassifiesByFsMagicAndMode) {
  auto shm = classify_fd(TMPFS_MAGIC, S_IFREG | 0600);
  ASSERT_OK(shm);
  EXPECT_EQ(*shm, MemoryKind::Shm);
  auto huge = classify_fd(HUGETLBFS_MAGIC, S_IFREG | 0600);
  ASSERT_OK(huge);
  EXPECT_EQ(*huge, MemoryKind::Shm);
  auto dmabuf = classify_fd(0x444d4142, S_IFREG | 0600);  // DMA_BUF_MAGIC, include/uapi/linux/magic.h
  ASSERT_OK(dmabuf);
  EXPECT_EQ(*dmabuf, MemoryKind::DmaBuf);
  EXPECT_ERROR(classify_fd(PIPEFS_MAGIC, S_IFIFO | 0600), ErrorCode::InvalidArgument, "pipe");
  EXPECT_ERROR(classify_fd(SOCKFS_MAGIC, S_IFSOCK | 0600), ErrorCode::InvalidArgument, "socket");
  EXPECT_ERROR(classify_fd(TMPFS_MAGIC, S_IFDIR | 0700), ErrorCode::InvalidArgument, "directory");
  EXPECT_ERROR(classify_fd(TMPFS_MAGIC, S_IFCHR | 0600), ErrorCode::InvalidArgument, "character device node");
  EXPECT_ERROR(classify_fd(TMPFS_MAGIC, S_IFBLK | 0600), ErrorCode::InvalidArgument, "block device node");
  EXPECT_ERROR(classify_fd(TMPFS_MAGIC, S_IFLNK | 0600), ErrorCode::InvalidArgument, "not a regular file");
  EXPECT_ERROR(classify_fd(EXT4_SUPER_MAGIC, S_IFREG | 0600), ErrorCode::InvalidArgument,
               "file on ext2/3/4 (fs magic 0xef53)");
  EXPECT_ERROR(classify_fd(0x58465342, S_IFREG | 0600), ErrorCode::InvalidArgument, "file on xfs");
  EXPECT_ERROR(classify_fd(0x12345678, S_IFREG | 0600), ErrorCode::InvalidArgument,
               "file on an unknown filesystem (fs magic 0x12345678)");
}

// ---- real fds ------------------------------------------------------------------------------------
TEST(FdProbe, RecognisesMemfdAndReadsItsRealSizeAndSeals) {
  UniqueFd fd(::memfd_create("et-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(fd.get(), 12345), 0);
  ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  auto info = probe_fd(fd.get());
  ASSERT_OK(info);
  EXPECT_EQ(info->kind, MemoryKind::Shm);
  EXPECT_EQ(info->buffer_bytes, 12345u);
  EXPECT_FALSE(info->read_only);
  EXPECT_EQ(info->seals & F_SEAL_SHRINK, static_cast<unsigned>(F_SEAL_SHRINK));
  struct stat st {};
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(info->key.b, static_cast<std::uint64_t>(st.st_ino));
}

TEST(FdProbe, RecognisesATmpfsFile) {
  const std::string path = "/dev/shm" + et_test::unique_shm_name("probe");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.is_valid()) << std::strerror(errno);
  ::unlink(path.c_str());
  ASSERT_EQ(::ftruncate(fd.get(), 8192), 0);
  auto info = probe_fd(fd.get());
  ASSERT_OK(info);
  EXPECT_EQ(info->kind, MemoryKind::Shm);
  EXPECT_EQ(info->buffer_bytes, 8192u);
  // A tmpfs file can never be sealed: importing it needs the caller's trust (ShrinkableImport.*).
  auto t = TensorDyn::import_fd_dup(fd.get(), {2048}, DType::F32, ImportOptions{.allow_shrinkable = true});
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::Shm);
  EXPECT_FALSE(t->read_only());
}

struct RefusedCase {
  const char* what;
  UniqueFd fd;
  const char* needle;
};

TEST(FdProbe, ImportRefusesWhatIsNotSharedMemoryAndNamesIt) {
  DiskFile disk;
  ASSERT_FALSE(disk.path.empty()) << "no disk filesystem found for the test file";
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd pipe_w(p[1]);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd sock_b(sv[1]);
  RefusedCase cases[] = {
      {"pipe", UniqueFd(p[0]), "it is a pipe/FIFO"},
      {"socket", UniqueFd(sv[0]), "it is a socket"},
      {"directory", UniqueFd(::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC)), "it is a directory"},
      {"/dev/null", UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC)), "character device node"},
      {"disk file", std::move(disk.fd), "it is a file on"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_TRUE(c.fd.is_valid());
    const int base = open_fd_count();
    const int fd = c.fd.get();
    auto r = TensorDyn::import_fd_dup(fd, {16}, DType::U8);
    EXPECT_ERROR(r, ErrorCode::InvalidArgument, c.needle);
    EXPECT_NE(r.error().message().find("fd " + std::to_string(fd)), std::string::npos) << r.error().message();
    EXPECT_TRUE(is_open(fd)) << "a borrowed fd must stay open";
    EXPECT_EQ(open_fd_count(), base);
    // Adopting: the fd is consumed (closed) on the error path, nothing else leaks.
    auto a = TensorDyn::adopt_fd(std::move(c.fd), {16}, DType::U8);
    EXPECT_ERROR(a, ErrorCode::InvalidArgument, c.needle);
    EXPECT_FALSE(is_open(fd)) << "an adopted fd must be closed on error";
    EXPECT_EQ(open_fd_count(), base - 1);
  }
  // The disk file's message names the filesystem by its magic.
  DiskFile disk2;
  auto r = TensorDyn::import_fd_dup(disk2.fd.get(), {16}, DType::U8);
  ASSERT_FALSE(r.has_value());
  char magic[32];
  std::snprintf(magic, sizeof magic, "%#llx", static_cast<unsigned long long>(disk2.magic));
  EXPECT_NE(r.error().message().find(magic), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("not shared memory"), std::string::npos) << r.error().message();
}

TEST(FdProbe, ClosedAndNegativeFdsAreRefused) {
  const int base = open_fd_count();
  int fd = ::memfd_create("et-closed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd, {1}, DType::U8), ErrorCode::InvalidArgument,
               "fd " + std::to_string(fd) + " is not an open file descriptor");
  EXPECT_ERROR(TensorDyn::import_fd_dup(-1, {1}, DType::U8), ErrorCode::InvalidArgument, "fd -1 is not a valid fd");
  EXPECT_ERROR(TensorDyn::adopt_fd(UniqueFd(), {1}, DType::U8), ErrorCode::InvalidArgument, "fd -1 is not a valid fd");
  EXPECT_EQ(open_fd_count(), base);
}

TEST(FdProbe, ImportDoesNotMoveTheCallersFileOffset) {
  UniqueFd fd = memfd_of_size(4096);
  ASSERT_EQ(::lseek(fd.get(), 100, SEEK_SET), 100);
  auto t = TensorDyn::import_fd_dup(fd.get(), {4096}, DType::U8);
  ASSERT_OK(t);
  EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), 100);
  auto m = t->map_read();  // mapping does not move it either
  ASSERT_OK(m);
  EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), 100);
}

TEST(FdProbe, FdSmallerThanOffsetPlusExtentIsRefusedNamingBothNumbers) {
  UniqueFd fd = memfd_of_size(1000);
  const int base = open_fd_count();
  ASSERT_OK(TensorDyn::import_fd_dup(fd.get(), {1000}, DType::U8));
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {1001}, DType::U8), ErrorCode::OutOfRange,
               "needs 1001 B (offset 0 B + extent 1001 B) but the buffer has 1000 B");
  ImportOptions opts;
  opts.offset_bytes = 8;
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {125}, DType::F64, opts), ErrorCode::OutOfRange,
               "needs 1008 B (offset 8 B + extent 1000 B) but the buffer has 1000 B");
  ASSERT_OK(TensorDyn::import_fd_dup(fd.get(), {124}, DType::F64, opts));
  opts.offset_bytes = 16;
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {124}, DType::F64, opts), ErrorCode::OutOfRange,
               "needs 1008 B (offset 16 B + extent 992 B) but the buffer has 1000 B");
  // Strided import: 4 rows of 100 B, 300 B apart: extent 3 * 300 + 100 = 1000.
  ImportOptions strided;
  strided.strides_bytes = {300, 1};
  ASSERT_OK(TensorDyn::import_fd_dup(fd.get(), {4, 100}, DType::U8, strided));
  strided.strides_bytes = {301, 1};
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {4, 100}, DType::U8, strided), ErrorCode::OutOfRange,
               "needs 1003 B");
  strided.strides_bytes = {-300, 1};
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {4, 100}, DType::U8, strided), ErrorCode::InvalidArgument,
               "negative");
  ImportOptions odd;
  odd.offset_bytes = 2;
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {4}, DType::F32, odd), ErrorCode::InvalidArgument,
               "offset 2 B is not a multiple of the element size 4 B");
  // An fd that is too small, adopted: closed on the error path.
  int raw = fd.get();
  EXPECT_ERROR(TensorDyn::adopt_fd(std::move(fd), {2000}, DType::U8), ErrorCode::OutOfRange, "has 1000 B");
  EXPECT_FALSE(is_open(raw));
  EXPECT_EQ(open_fd_count(), base - 1);
}

TEST(FdProbe, BorrowKeepsTheCallersFdAndAdoptOwnsIt) {
  const int base = open_fd_count();
  UniqueFd fd = memfd_of_size(64);
  const int raw = fd.get();
  {
    auto t = TensorDyn::import_fd_dup(raw, {64}, DType::U8);
    ASSERT_OK(t);
    EXPECT_EQ(open_fd_count(), base + 2);  // ours + the library's dup
  }
  EXPECT_TRUE(is_open(raw));
  EXPECT_EQ(open_fd_count(), base + 1);
  {
    auto t = TensorDyn::adopt_fd(std::move(fd), {64}, DType::U8);
    ASSERT_OK(t);
    EXPECT_EQ(open_fd_count(), base + 1);  // no dup: the tensor holds our fd
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw)) << "an adopted fd closes with its storage";
  EXPECT_EQ(open_fd_count(), base);
}

TEST(FdProbe, FailuresInsideTheProbeLeakNothing) {
  UniqueFd fd = memfd_of_size(64);
  const int base = open_fd_count();
  const sys::Call calls[] = {sys::Call::Fstat, sys::Call::Fstatfs, sys::Call::Fcntl, sys::Call::Dup};
  for (sys::Call call : calls) {
    SCOPED_TRACE(sys::call_name(call));
    et_test::ScopedFaultHook hook(et_test::fail_nth(call, 1, call == sys::Call::Dup ? EMFILE : EIO));
    auto r = TensorDyn::import_fd_dup(fd.get(), {64}, DType::U8);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), call == sys::Call::Dup ? ErrorCode::Busy : ErrorCode::Internal) << r.error().to_string();
    EXPECT_EQ(open_fd_count(), base);
  }
}

}  // namespace
