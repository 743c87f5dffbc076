// SPDX-License-Identifier: Apache-2.0
// Shared-memory backend (src/backends/shm/): memfd sealed SHRINK|GROW|SEAL, CLOEXEC export, read-only
// imports, named POSIX shm (O_EXCL, open with size check, remove, posix_fallocate), nothing left in
// /dev/shm (even after SIGKILL), fault injection through the syscall seam.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;
using et_test::open_fd_count;
using et_test::proc_fd_path;
using et_test::unique_shm_name;

namespace {

AllocateOptions shm(std::string name = {}) {
  AllocateOptions o;
  o.memory = MemoryKind::Shm;
  o.shm_name = std::move(name);
  return o;
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

// Named POSIX shm objects can never be sealed: opening one needs the explicit trust of allow_shrinkable
// (the refusal itself: ShrinkableImport.NamedShmIsRefusedByShmOpenNamingTheObject).
const ImportOptions kTrusted{.allow_shrinkable = true};

bool dev_shm_has(const std::string& name) {
  struct stat st {};
  return ::stat(("/dev/shm" + name).c_str(), &st) == 0;
}

// Permissions of the /proc/self/maps line that contains `addr` (e.g. "r--s"), "" if none.
std::string mapping_perms(const void* addr) {
  std::ifstream f("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  for (std::string line; std::getline(f, line);) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) return perms;
  }
  return "";
}

void write_pattern(const TensorDyn& t, unsigned seed) {
  auto m = t.map_write();
  ASSERT_OK(m);
  for (std::size_t i = 0; i < m->extent_bytes(); ++i) m->bytes()[i] = static_cast<std::byte>(i * 13 + seed);
}

bool has_pattern(const TensorDyn& t, unsigned seed) {
  auto m = t.map_read();
  if (!m) return false;
  for (std::size_t i = 0; i < m->extent_bytes(); ++i)
    if (m->bytes()[i] != static_cast<std::byte>(i * 13 + seed)) return false;
  return true;
}

// ---- memfd ---------------------------------------------------------------------------------------

// A memfd is sparse: 1 PiB "allocates" and fails only at a map (issue 25's trial). Past RAM + swap it is
// refused at allocate, naming the size and the machine's memory.
TEST(Shm, AMemfdLargerThanTheMachinesMemoryIsRefusedAtAllocate) {
  if (sizeof(std::size_t) < 8) GTEST_SKIP() << "a 32-bit size_t cannot name 1 PiB";
  const auto pib = static_cast<std::size_t>(std::uint64_t{1} << 50);
  EXPECT_ERROR(TensorDyn::allocate({pib}, DType::U8, et_test::mem(MemoryKind::Shm)), ErrorCode::OutOfMemory,
               "memfd of 1125899906842624 B is larger than this machine's memory");
  auto small = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
  EXPECT_TRUE(small.has_value()) << "an ordinary size still allocates";
}
TEST(Shm, MemfdIsSealedAgainstShrinkGrowAndFurtherSeals) {
  auto t = TensorDyn::allocate({4096}, DType::U8, shm());
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::Shm);
  EXPECT_EQ(t->memory_detail(), "memfd");
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  int seals = ::fcntl(fd->get(), F_GET_SEALS);
  ASSERT_GE(seals, 0);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
  EXPECT_EQ(seals & F_SEAL_SEAL, F_SEAL_SEAL) << "a consumer could add F_SEAL_WRITE and lock the owner out";
  EXPECT_EQ(seals & F_SEAL_WRITE, 0);
  EXPECT_NE(::ftruncate(fd->get(), 100), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(fd->get(), 8192), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd->get(), &st), 0);
  EXPECT_EQ(st.st_size, 4096);
}

// A receiver of the fd must not lock the sender out of its own buffer: with F_SEAL_SEAL it cannot add
// F_SEAL_FUTURE_WRITE, nor F_SEAL_WRITE before the sender's first (lazy) map (fcntl(2): EPERM).
TEST(Shm, AReceiverCannotSealTheSenderOutOfItsOwnMemfd) {
  auto t = TensorDyn::allocate({4096}, DType::U8, shm());
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  auto peer = TensorDyn::import_fd_dup(fd->get(), {4096}, DType::U8);  // as a receiver would hold it
  ASSERT_OK(peer);
  for (int seal : {F_SEAL_FUTURE_WRITE, F_SEAL_WRITE}) {
    SCOPED_TRACE(seal == F_SEAL_WRITE ? "F_SEAL_WRITE" : "F_SEAL_FUTURE_WRITE");
    errno = 0;
    EXPECT_EQ(::fcntl(fd->get(), F_ADD_SEALS, seal), -1);
    EXPECT_EQ(errno, EPERM);
  }
  EXPECT_EQ(::fcntl(fd->get(), F_GET_SEALS) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE), 0);
  // The sender's first maps (made lazily, after the attempts) still work, and it is still writable.
  EXPECT_FALSE(t->read_only());
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    w->bytes()[7] = std::byte{0x5a};
  }
  auto r = t->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes()[7], std::byte{0x5a});
  auto seen = peer->map_read();
  ASSERT_OK(seen);
  EXPECT_EQ(seen->bytes()[7], std::byte{0x5a});
  EXPECT_FALSE(peer->read_only());
}

TEST(Shm, ExportIsANewCloexecFdOwnedByTheCaller) {
  const int base = open_fd_count();
  {
    auto t = TensorDyn::allocate({4096}, DType::U8, shm());
    ASSERT_OK(t);
    auto a = t->export_fd();
    auto b = t->export_fd();
    ASSERT_OK(a);
    ASSERT_OK(b);
    EXPECT_NE(a->get(), b->get());
    EXPECT_TRUE(::fcntl(a->get(), F_GETFD) & FD_CLOEXEC);
    EXPECT_TRUE(::fcntl(b->get(), F_GETFD) & FD_CLOEXEC);
    // The fd outlives the tensor: the memory stays reachable through it.
    write_pattern(*t, 3);
    UniqueFd keep = std::move(*a);
    t = TensorDyn();
    auto again = TensorDyn::adopt_fd(std::move(keep), {4096}, DType::U8);
    ASSERT_OK(again);
    EXPECT_TRUE(has_pattern(*again, 3));
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Shm, MemfdNameIsVisibleInProc) {
  AllocateOptions o = shm();
  o.name = "camera0";
  auto t = TensorDyn::allocate({64}, DType::U8, o);
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  const std::string link = et_test::fd_link(fd->get());
  EXPECT_NE(link.find("memfd:edgetensor:camera0"), std::string::npos) << link;
}

TEST(Shm, ExportImportRoundTripSharesTheBytes) {
  auto t = TensorDyn::allocate({3, 100}, DType::F32, shm());
  ASSERT_OK(t);
  write_pattern(*t, 7);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  // Import the second row as a view, as a receiver given offset/shape/strides would.
  ImportOptions o;
  o.offset_bytes = 400;
  auto row = TensorDyn::import_fd_dup(fd->get(), {100}, DType::F32, o);
  ASSERT_OK(row);
  EXPECT_EQ(row->memory(), MemoryKind::Shm);
  EXPECT_EQ(row->memory_detail(), "imported tmpfs/memfd file");
  EXPECT_EQ(row->buffer_bytes(), 1200u);
  auto expect = t->batch(1);
  ASSERT_OK(expect);
  auto a = row->map_read();
  auto b = expect->map_read();
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_EQ(a->extent_bytes(), b->extent_bytes());
  EXPECT_EQ(std::memcmp(a->data(), b->data(), a->extent_bytes()), 0);
  EXPECT_TRUE(row->same_buffer(*t));
}

// ---- read-only imports ---------------------------------------------------------------------------
void expect_read_only_import(int fd, const char* what) {
  SCOPED_TRACE(what);
  const int base = open_fd_count();
  {
    auto t = TensorDyn::import_fd_dup(fd, {4096}, DType::U8);
    ASSERT_OK(t);
    EXPECT_TRUE(t->read_only());
    EXPECT_ERROR(t->map_write(), ErrorCode::PermissionDenied, "is read-only");
    EXPECT_ERROR(t->map_read_write(), ErrorCode::PermissionDenied, "is read-only");
    auto v = t->view(64, {64});
    ASSERT_OK(v);
    EXPECT_ERROR(v->map_write(), ErrorCode::PermissionDenied, "is read-only");
    auto m = t->map_read();
    ASSERT_OK(m);
    EXPECT_EQ(m->bytes()[5], std::byte{'!'});
    EXPECT_EQ(mapping_perms(m->data()), "r--s") << "a read-only storage must be mapped PROT_READ";
    // Export of a read-only storage works (the dup keeps the access mode).
    auto e = t->export_fd();
    ASSERT_OK(e);
  }
  EXPECT_EQ(open_fd_count(), base);
}

// A memfd holding "hello!", sealed against shrinking as a careful sender's is (so it imports by default).
UniqueFd memfd_with_text() {
  UniqueFd fd(::memfd_create("et-ro", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::ftruncate(fd.get(), 4096), 0);
  EXPECT_EQ(::pwrite(fd.get(), "hello!", 6, 0), 6);
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  return fd;
}

TEST(Shm, ImportOfAnFdOpenedReadOnlyMapsReadOnly) {
  UniqueFd rw = memfd_with_text();
  UniqueFd ro(::open(proc_fd_path(rw.get()).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(ro.is_valid()) << std::strerror(errno);
  expect_read_only_import(ro.get(), "O_RDONLY reopen");
  // The read-write fd of the same memfd imports writable.
  auto t = TensorDyn::import_fd_dup(rw.get(), {4096}, DType::U8);
  ASSERT_OK(t);
  EXPECT_FALSE(t->read_only());
  ASSERT_OK(t->map_write());
}

TEST(Shm, ImportOfAWriteOnlyOrOPathFdIsRefusedNamingTheAccessMode) {
  UniqueFd rw = memfd_with_text();
  const std::string path = proc_fd_path(rw.get());
  UniqueFd wo(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(wo.is_valid()) << std::strerror(errno);
  UniqueFd op(::open(path.c_str(), O_PATH | O_CLOEXEC));
  ASSERT_TRUE(op.is_valid()) << std::strerror(errno);
  const int base = open_fd_count();
  // A shared mapping needs read access: refused at import, not at the first map.
  EXPECT_ERROR(TensorDyn::import_fd_dup(wo.get(), {4096}, DType::U8), ErrorCode::InvalidArgument, "write-only (O_WRONLY)");
  EXPECT_ERROR(TensorDyn::import_fd_dup(op.get(), {4096}, DType::U8), ErrorCode::InvalidArgument, "O_PATH");
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Shm, ImportOfAWriteSealedMemfdMapsReadOnly) {
  for (int seal : {F_SEAL_WRITE, F_SEAL_FUTURE_WRITE}) {
    UniqueFd fd = memfd_with_text();
    ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seal), 0) << std::strerror(errno);
    expect_read_only_import(fd.get(), seal == F_SEAL_WRITE ? "F_SEAL_WRITE" : "F_SEAL_FUTURE_WRITE");
  }
}

TEST(Shm, ReadOnlyNamedShmOpenRefusesWriteMaps) {
  const std::string name = unique_shm_name("ro");
  {
    auto t = TensorDyn::allocate({4096}, DType::U8, shm(name));
    ASSERT_OK(t);
    auto m = t->map_write();
    ASSERT_OK(m);
    std::memcpy(m->data(), "hello!", 6);
  }
  {
    auto t = edgetensor::shm::open(name, {4096}, DType::U8, /*read_only=*/true, kTrusted);
    ASSERT_OK(t);
    EXPECT_TRUE(t->read_only());
    EXPECT_ERROR(t->map_write(), ErrorCode::PermissionDenied, "is read-only");
    auto m = t->map_read();
    ASSERT_OK(m);
    EXPECT_EQ(m->bytes()[5], std::byte{'!'});
    EXPECT_EQ(mapping_perms(m->data()), "r--s");
  }
  ASSERT_OK(edgetensor::shm::remove(name));
}

// ---- named POSIX shm -----------------------------------------------------------------------------
TEST(Shm, NamedShmCreateOpenRemove) {
  const int base = open_fd_count();
  const std::string name = unique_shm_name("named");
  {
    auto t = TensorDyn::allocate({64, 64}, DType::U16, shm(name));
    ASSERT_OK(t);
    EXPECT_EQ(t->memory(), MemoryKind::Shm);
    EXPECT_EQ(t->memory_detail(), "posix shm " + name);
    EXPECT_TRUE(dev_shm_has(name));
    write_pattern(*t, 11);
    // O_EXCL: a second create of the same name fails; it never attaches to the existing object.
    auto again = TensorDyn::allocate({64, 64}, DType::U16, shm(name));
    EXPECT_ERROR(again, ErrorCode::AlreadyExists, "POSIX shm name '" + name + "' exists");
    EXPECT_EQ(again.error().sys_errno(), EEXIST);
    // Open by name sees the same bytes; the size is validated against the shape.
    auto opened = edgetensor::shm::open(name, {64, 64}, DType::U16, false, kTrusted);
    ASSERT_OK(opened);
    EXPECT_FALSE(opened->read_only());
    EXPECT_TRUE(has_pattern(*opened, 11));
    EXPECT_TRUE(opened->same_buffer(*t));
    EXPECT_FALSE(opened->identity() == t->identity());
    EXPECT_ERROR(edgetensor::shm::open(name, {64, 65}, DType::U16, false, kTrusted), ErrorCode::OutOfRange,
                 "needs 8320 B (offset 0 B + extent 8320 B) but the buffer has 8192 B");
    // Pages were reserved at creation: the object's blocks cover its size.
    auto fd = t->export_fd();
    ASSERT_OK(fd);
    struct stat st {};
    ASSERT_EQ(::fstat(fd->get(), &st), 0);
    EXPECT_GE(static_cast<long long>(st.st_blocks) * 512, 8192LL) << "posix_fallocate did not reserve the pages";
    // Remove: the name goes, live mappings stay valid.
    ASSERT_OK(edgetensor::shm::remove(name));
    EXPECT_FALSE(dev_shm_has(name));
    EXPECT_TRUE(has_pattern(*t, 11));
    EXPECT_ERROR(edgetensor::shm::remove(name), ErrorCode::NotFound, "POSIX shm '" + name + "' does not exist");
    EXPECT_ERROR(edgetensor::shm::open(name, {1}, DType::U8, false, kTrusted), ErrorCode::NotFound, "does not exist");
    // Missing is NotFound with or without allow_shrinkable: the name is opened before the seal rule applies.
    EXPECT_ERROR(edgetensor::shm::open(name, {1}, DType::U8), ErrorCode::NotFound, "does not exist");
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Shm, InvalidShmNamesAreRefused) {
  const std::string too_long = "/" + std::string(300, 'x');
  for (const std::string& bad : {std::string("cam0"), std::string("/"), std::string("/a/b"), std::string(""), std::string("/."), std::string("/.."), too_long}) {
    SCOPED_TRACE(bad);
    if (!bad.empty()) {
      EXPECT_ERROR(TensorDyn::allocate({16}, DType::U8, shm(bad)), ErrorCode::InvalidArgument, "is invalid");
    }
    EXPECT_ERROR(edgetensor::shm::open(bad, {16}, DType::U8), ErrorCode::InvalidArgument, "is invalid");
    EXPECT_ERROR(edgetensor::shm::remove(bad), ErrorCode::InvalidArgument, "is invalid");
  }
}

// A NUL byte would end the name early for shm_open/shm_unlink (another object, or "/a/b" passing the
// one-slash rule): refused naming the argument and the byte, also where the rest would be invalid.
TEST(Shm, NulBytesInShmNamesAreRefusedNamingTheArgumentAndByte) {
  for (const std::string& bad : {std::string("/cam\0", 5), std::string("/cam\0/x", 7)}) {
    SCOPED_TRACE(bad.size());
    EXPECT_ERROR(TensorDyn::allocate({16}, DType::U8, shm(bad)), ErrorCode::InvalidArgument,
                 "AllocateOptions::shm_name has a NUL byte at byte 4 of " + std::to_string(bad.size()) +
                     " (counting from 0): a C string ends there, so the system call would see only \"/cam\"");
    EXPECT_ERROR(edgetensor::shm::open(bad, {16}, DType::U8), ErrorCode::InvalidArgument,
                 "shm::open: shm_name has a NUL byte at byte 4");
    EXPECT_ERROR(edgetensor::shm::remove(bad), ErrorCode::InvalidArgument,
                 "shm::remove: shm_name has a NUL byte at byte 4");
  }
  // The tensor name becomes the memfd's name (memfd_create): the same rule, for every memory kind.
  for (MemoryKind kind : {MemoryKind::Shm, MemoryKind::Heap, MemoryKind::Auto}) {
    AllocateOptions o;
    o.memory = kind;
    o.name = std::string("cam\0one", 7);
    EXPECT_ERROR(TensorDyn::allocate({16}, DType::U8, o), ErrorCode::InvalidArgument,
                 "AllocateOptions::name has a NUL byte at byte 3 of 7");
    EXPECT_ERROR(TensorDyn::allocate({0}, DType::U8, o), ErrorCode::InvalidArgument, "AllocateOptions::name");
  }
}

TEST(Shm, FailedFallocateUnlinksTheName) {
  const int base = open_fd_count();
  const std::string name = unique_shm_name("falloc");
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::PosixFallocate, 1, ENOSPC));
    auto r = TensorDyn::allocate({1 << 20}, DType::U8, shm(name));
    EXPECT_ERROR(r, ErrorCode::OutOfMemory, "reserving 1048576 B for shm '" + name + "' (posix_fallocate)");
    EXPECT_NE(r.error().message().find("/dev/shm has"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("ENOSPC"), std::string::npos) << r.error().message();
  }
  EXPECT_FALSE(dev_shm_has(name)) << "a failed creation left its name in /dev/shm";
  EXPECT_EQ(open_fd_count(), base);
  // Same for a failed ftruncate.
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Ftruncate, 1, EFBIG));
    EXPECT_ERROR(TensorDyn::allocate({1 << 20}, DType::U8, shm(name)), ErrorCode::OutOfRange, "ftruncate of shm");
  }
  EXPECT_FALSE(dev_shm_has(name));
  EXPECT_EQ(open_fd_count(), base);
  // The name is free again afterwards.
  auto ok = TensorDyn::allocate({16}, DType::U8, shm(name));
  ASSERT_OK(ok);
  ASSERT_OK(edgetensor::shm::remove(name));
}

// ---- /dev/shm stays clean ------------------------------------------------------------------------
// Other processes on the machine (parallel ctest, other programs) may add /dev/shm entries at any time,
// so these checks run in a child with a private, empty /dev/shm (a mount namespace; needs root or
// CAP_SYS_ADMIN). Where that is not allowed they fall back to the shared /dev/shm's entry count.

// Runs `body` in a forked child; returns its exit status, or -1 when no private /dev/shm could be made.
int run_with_private_dev_shm(int (*body)()) {
  pid_t pid = ::fork();
  if (pid < 0) return -2;
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(77);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(77);
    if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m") != 0) ::_exit(77);
    ::_exit(body());
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -3;
  return WEXITSTATUS(status) == 77 ? -1 : WEXITSTATUS(status);
}

// Exit codes: 0 ok; 1..9 setup failures; 10 entries appeared while alive; 11 entries after SIGKILL.
int sigkilled_child_leaves_nothing() {
  const int entries = et_test::dev_shm_entry_count();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return 1;
  pid_t pid = ::fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    ::close(p[0]);
    std::vector<TensorDyn> keep;
    for (int i = 0; i < 8; ++i) {
      AllocateOptions o;
      o.memory = i % 2 ? MemoryKind::Shm : MemoryKind::Auto;
      auto t = TensorDyn::allocate({1 << 20}, DType::U8, o);
      if (!t) ::_exit(1);
      auto m = t->map_write();
      if (!m) ::_exit(2);
      std::memset(m->data(), 0x77, m->extent_bytes());
      auto fd = t->export_fd();  // an exported fd, too
      if (t->memory() != MemoryKind::Heap && !fd) ::_exit(3);
      keep.push_back(*t);
    }
    char ok = 'k';
    if (::write(p[1], &ok, 1) != 1) ::_exit(4);
    for (;;) ::pause();
  }
  ::close(p[1]);
  char c = 0;
  if (::read(p[0], &c, 1) != 1) return 5;  // the child failed to allocate
  ::close(p[0]);
  const int alive = et_test::dev_shm_entry_count();
  ::kill(pid, SIGKILL);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) return 6;
  if (alive != entries) return 10;
  if (et_test::dev_shm_entry_count() != entries) return 11;
  return 0;
}

int anonymous_tensors_leave_nothing() {
  const int entries = et_test::dev_shm_entry_count();
  std::vector<TensorDyn> keep;
  for (int i = 0; i < 10; ++i) {
    AllocateOptions o;
    o.memory = MemoryKind::Shm;
    auto t = TensorDyn::allocate({1 << 16}, DType::U8, o);
    auto a = TensorDyn::allocate({1 << 16}, DType::U8);
    if (!t || !a) return 1;
    keep.push_back(*t);
    keep.push_back(*a);
  }
  if (et_test::dev_shm_entry_count() != entries) return 10;
  keep.clear();
  return et_test::dev_shm_entry_count() == entries ? 0 : 11;
}

TEST(Shm, AnonymousTensorsLeaveNothingInDevShm) {
  int rc = run_with_private_dev_shm(anonymous_tensors_leave_nothing);
  if (rc == -1) {
    std::printf("note: no private /dev/shm (needs CAP_SYS_ADMIN); checking the shared one\n");
    rc = anonymous_tensors_leave_nothing();
  }
  EXPECT_EQ(rc, 0) << "10: entries appeared while the tensors lived; 11: after they were released";
}

TEST(Shm, NothingInDevShmAfterAChildThatCreatedTensorsIsSigkilled) {
  int rc = run_with_private_dev_shm(sigkilled_child_leaves_nothing);
  if (rc == -1) {
    std::printf("note: no private /dev/shm (needs CAP_SYS_ADMIN); checking the shared one\n");
    rc = sigkilled_child_leaves_nothing();
  }
  EXPECT_EQ(rc, 0) << "5: the child could not allocate; 10: entries appeared while it lived; 11: after SIGKILL";
}

// ---- fault injection -----------------------------------------------------------------------------
TEST(Shm, FailuresDuringAllocationGiveTheRightCodeAndLeakNothing) {
  struct Case {
    sys::Call call;
    int err;
    ErrorCode code;
    const char* needle;
  };
  const Case cases[] = {
      {sys::Call::MemfdCreate, ENOMEM, ErrorCode::OutOfMemory, "memfd_create"},
      {sys::Call::MemfdCreate, EMFILE, ErrorCode::Busy, "EMFILE"},
      {sys::Call::Ftruncate, ENOSPC, ErrorCode::OutOfMemory, "ftruncate of memfd to 4096 B"},
      {sys::Call::Fcntl, EPERM, ErrorCode::PermissionDenied, "F_SEAL_SHRINK|F_SEAL_GROW"},
      {sys::Call::Fstat, EIO, ErrorCode::Internal, "fstat of new shm fd"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(sys::call_name(c.call));
    const int base = open_fd_count();
    const int maps = et_test::mapping_count();
    et_test::ScopedFaultHook hook(et_test::fail_nth(c.call, 1, c.err));
    auto r = TensorDyn::allocate({4096}, DType::U8, shm());
    EXPECT_ERROR(r, c.code, c.needle);
    EXPECT_EQ(r.error().sys_errno(), c.err);
    EXPECT_EQ(open_fd_count(), base);
    if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps);
  }
  }
}

TEST(Shm, MmapFailureOnTheFirstMapIsReportedAndTheNextMapWorks) {
  auto t = TensorDyn::allocate({4096}, DType::U8, shm());
  ASSERT_OK(t);
  const int maps = et_test::mapping_count();
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Mmap, 1, ENOMEM));
    EXPECT_ERROR(t->map_read(), ErrorCode::OutOfMemory, "mmap of memfd (4096 B)");
  }
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
  if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps);
  }
  auto m = t->map_write();
  ASSERT_OK(m);
  m->bytes()[4095] = std::byte{1};
}

TEST(Shm, EmfileOnDupGivesBusyAndLeaksNothing) {
  auto t = TensorDyn::allocate({4096}, DType::U8, shm());
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  const int base = open_fd_count();
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Dup, 1, EMFILE));
    EXPECT_ERROR(t->export_fd(), ErrorCode::Busy, "EMFILE");
  }
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Dup, 1, EMFILE));
    EXPECT_ERROR(TensorDyn::import_fd_dup(fd->get(), {4096}, DType::U8), ErrorCode::Busy, "EMFILE");
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Shm, CloseFailureWhenTheLastHolderGoesIsLogged) {
  et_test::ScopedLogCapture log;
  int leaked_fd = -1;
  {
    auto t = TensorDyn::allocate({4096}, DType::U8, shm());
    ASSERT_OK(t);
    ASSERT_OK(t->map_read());  // makes the persistent mapping
    leaked_fd = detail::storage_of(*t)->backing().fd();
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Close, 1, EIO));
    t = TensorDyn();
  }
  EXPECT_TRUE(log.contains("warning: close(fd " + std::to_string(leaked_fd) + ") failed")) << ::testing::PrintToString(log.lines());
  // The injected failure kept the real fd open; close it here.
  EXPECT_TRUE(is_open(leaked_fd));
  ::close(leaked_fd);
}

}  // namespace
