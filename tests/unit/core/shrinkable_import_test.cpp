// SPDX-License-Identifier: Apache-2.0
// SIGBUS-safe imports (tensor.h, ImportOptions::allow_shrinkable): shared memory whose owner can still
// shrink it (a memfd without F_SEAL_SHRINK, a named POSIX shm object, any tmpfs file) is refused by
// adopt_fd, import_fd_dup and shm::open unless the caller trusts the peer; the hazard itself is shown
// in a child process that truncates such a file under its own import and dies of SIGBUS.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "support/test_support.h"

using namespace edgetensor;
using et_test::open_fd_count;
using et_test::unique_shm_name;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

UniqueFd memfd_of_size(std::size_t size, unsigned flags, unsigned seals = 0) {
  UniqueFd fd(::memfd_create("et-shrinkable", flags));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  if (seals != 0) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seals), 0) << std::strerror(errno);
  }
  return fd;
}

// A regular file on /dev/shm (tmpfs), unlinked at once.
UniqueFd tmpfs_file(std::size_t size) {
  const std::string path = "/dev/shm" + unique_shm_name("tmpfs-file");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  EXPECT_TRUE(fd.is_valid()) << std::strerror(errno);
  ::unlink(path.c_str());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  return fd;
}

// Every refusal names the fd, says why, and gives both remedies.
void expect_refused(const Result<TensorDyn>& r, int fd, const char* seal_advice) {
  SCOPED_TRACE(r ? std::string("accepted") : r.error().message());
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "fd " + std::to_string(fd) + " (");
  const std::string& m = r.error().message();
  for (const char* part : {"tmpfs/memfd file", "not sealed with F_SEAL_SHRINK", "truncate", "SIGBUS",
                           "ImportOptions::allow_shrinkable", seal_advice})
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "'";
}

constexpr const char* kSealIt = "seal it with F_SEAL_SHRINK";
constexpr const char* kNeverSealable = "made with MFD_ALLOW_SEALING";

// ---- refused by default --------------------------------------------------------------------------
TEST(ShrinkableImport, UnsealedMemfdIsRefusedByImportFdDup) {
  const int base = open_fd_count();
  {
    UniqueFd sealable = memfd_of_size(4096, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    expect_refused(TensorDyn::import_fd_dup(sealable.get(), {4096}, DType::U8), sealable.get(), kSealIt);
    // Only growing sealed: still shrinkable.
    UniqueFd grow_only = memfd_of_size(4096, MFD_CLOEXEC | MFD_ALLOW_SEALING, F_SEAL_GROW);
    expect_refused(TensorDyn::import_fd_dup(grow_only.get(), {4096}, DType::U8), grow_only.get(), kSealIt);
    // Made without MFD_ALLOW_SEALING: the kernel marks it F_SEAL_SEAL, so it can never be sealed.
    UniqueFd unsealable = memfd_of_size(4096, MFD_CLOEXEC);
    expect_refused(TensorDyn::import_fd_dup(unsealable.get(), {4096}, DType::U8), unsealable.get(),
                   kNeverSealable);
    // Read-only access does not help: the owner can still truncate the file.
    UniqueFd ro(::open(et_test::proc_fd_path(unsealable.get()).c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(ro.is_valid());
    expect_refused(TensorDyn::import_fd_dup(ro.get(), {4096}, DType::U8), ro.get(), kNeverSealable);
    // Zero elements too: the rule is about the fd, not the view.
    expect_refused(TensorDyn::import_fd_dup(sealable.get(), {0}, DType::U8), sealable.get(), kSealIt);
    EXPECT_TRUE(is_open(sealable.get())) << "import_fd_dup closed the caller's fd";
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(ShrinkableImport, UnsealedMemfdIsRefusedByAdoptFdWhichClosesIt) {
  const int base = open_fd_count();
  for (unsigned flags : {MFD_CLOEXEC | MFD_ALLOW_SEALING, unsigned{MFD_CLOEXEC}}) {
    UniqueFd fd = memfd_of_size(4096, flags);
    const int raw = fd.get();
    expect_refused(TensorDyn::adopt_fd(std::move(fd), {4096}, DType::U8), raw,
                   flags & MFD_ALLOW_SEALING ? kSealIt : kNeverSealable);
    EXPECT_FALSE(is_open(raw)) << "adopt_fd did not close the fd on the error path";
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(ShrinkableImport, TmpfsFileIsRefused) {
  UniqueFd fd = tmpfs_file(8192);
  expect_refused(TensorDyn::import_fd_dup(fd.get(), {8192}, DType::U8), fd.get(), kNeverSealable);
}

TEST(ShrinkableImport, NamedShmIsRefusedByShmOpenNamingTheObject) {
  const int base = open_fd_count();
  const std::string name = unique_shm_name("shrinkable");
  auto owner = TensorDyn::allocate({4096}, DType::U8, [&] {
    AllocateOptions o = et_test::mem(MemoryKind::Shm);
    o.shm_name = name;
    return o;
  }());
  ASSERT_OK(owner);
  for (bool read_only : {false, true}) {
    SCOPED_TRACE(read_only ? "read-only" : "read-write");
    auto r = shm::open(name, {4096}, DType::U8, read_only);
    EXPECT_ERROR(r, ErrorCode::InvalidArgument, "'" + name + "'");
    for (const char* part : {"can never be sealed", "truncate", "SIGBUS", "ImportOptions{.allow_shrinkable = true}",
                             "ipc::send"})
      EXPECT_NE(r.error().message().find(part), std::string::npos) << "missing '" << part << "': " << r.error().message();
  }
  {
    // Its fd, exported, is refused by the fd imports too.
    auto fd = owner->export_fd();
    ASSERT_OK(fd);
    expect_refused(TensorDyn::import_fd_dup(fd->get(), {4096}, DType::U8), fd->get(), kNeverSealable);
  }
  owner = TensorDyn();
  ASSERT_OK(shm::remove(name));
  EXPECT_EQ(open_fd_count(), base);
}

// ---- accepted when the caller trusts the peer ------------------------------------------------------
TEST(ShrinkableImport, AllowShrinkableAcceptsWhatTheDefaultRefuses) {
  const ImportOptions trusted{.allow_shrinkable = true};
  const int base = open_fd_count();
  {
    UniqueFd sealable = memfd_of_size(4096, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    UniqueFd unsealable = memfd_of_size(4096, MFD_CLOEXEC);
    UniqueFd file = tmpfs_file(4096);
    for (int fd : {sealable.get(), unsealable.get(), file.get()}) {
      auto t = TensorDyn::import_fd_dup(fd, {4096}, DType::U8, trusted);
      ASSERT_OK(t);
      EXPECT_EQ(t->memory(), MemoryKind::Shm);
      ASSERT_OK(t->map_write());
    }
    ASSERT_OK(TensorDyn::adopt_fd(std::move(unsealable), {4096}, DType::U8, trusted));
    const std::string name = unique_shm_name("trusted");
    AllocateOptions named = et_test::mem(MemoryKind::Shm);
    named.shm_name = name;
    auto owner = TensorDyn::allocate({4096}, DType::U8, named);
    ASSERT_OK(owner);
    auto opened = shm::open(name, {4096}, DType::U8, false, trusted);
    ASSERT_OK(opened);
    EXPECT_TRUE(opened->same_buffer(*owner));
    ASSERT_OK(shm::remove(name));
  }
  EXPECT_EQ(open_fd_count(), base);
}

// Why the default refuses: an importer of a file its owner truncates dies of SIGBUS on the next touch of
// a lost page (mmap(2)), and the library installs no handler. Shown in a child process (a death test).
TEST(ShrinkableImportDeathTest, ATruncatedTrustedImportKillsTheImporterWithSigbus) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  UniqueFd fd = memfd_of_size(2 * page, MFD_CLOEXEC);
  ASSERT_EQ(::pwrite(fd.get(), "x", 1, static_cast<off_t>(page)), 1);
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {2 * page}, DType::U8), ErrorCode::InvalidArgument, "SIGBUS");
  auto t = TensorDyn::import_fd_dup(fd.get(), {2 * page}, DType::U8, ImportOptions{.allow_shrinkable = true});
  ASSERT_OK(t);
  auto m = t->map_read();
  ASSERT_OK(m);
  const volatile std::byte* second_page = m->data() + page;
  const std::byte before = *second_page;
  ASSERT_EQ(before, std::byte{'x'});  // mapped and readable before the truncation
  EXPECT_EXIT(
      {
        ::signal(SIGBUS, SIG_DFL);  // a sanitizer's own handler would turn the signal into an exit
        if (::ftruncate(fd.get(), 0) != 0) ::_exit(3);  // the owner shrinks the file (here: the child)
        (void)*second_page;
        ::_exit(4);  // survived: no hazard
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

// ---- accepted by default -------------------------------------------------------------------------
TEST(ShrinkableImport, MemfdSealedAgainstShrinkingIsAcceptedByDefault) {
  for (unsigned seals : {unsigned{F_SEAL_SHRINK}, unsigned{F_SEAL_SHRINK | F_SEAL_GROW},
                         unsigned{F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL}}) {
    UniqueFd fd = memfd_of_size(4096, MFD_CLOEXEC | MFD_ALLOW_SEALING, seals);
    ASSERT_OK(TensorDyn::import_fd_dup(fd.get(), {4096}, DType::U8));
    ASSERT_OK(TensorDyn::adopt_fd(std::move(fd), {4096}, DType::U8));
  }
  // What allocate makes (memory Shm) is sealed, so its export imports with the default options.
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  ASSERT_OK(TensorDyn::adopt_fd(std::move(*fd), {4096}, DType::U8));
}

}  // namespace
