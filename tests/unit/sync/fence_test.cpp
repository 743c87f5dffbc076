// SPDX-License-Identifier: Apache-2.0
// Fence, export_fence / import_fence and the DMA-BUF maps' bounded wait, through the syscall seam.
// This host has no sync_file source, so "sync_files" here are pipes: a pipe's read end is pollable
// (POLLIN once a byte is written: "signalled") and has an inode of its own, and the ioctl emulator
// answers SYNC_IOC_FILE_INFO, SYNC_IOC_MERGE and the DMA-BUF sync_file ioctls for the pipes it made.
// Poll is the only kernel call a pipe stands in for; the real ioctls run in the kernel lane
// (tests/hardware/fence_test.cpp).
#include <edgetensor/edgetensor.h>

#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/dmabuf/dmabuf.h"
#include "base/sys_testing.h"
#include "core/backend.h"
#include "core/fd_backing.h"
#include "support/test_support.h"
#include "sync/sync_uapi.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

using namespace std::chrono_literals;
using sync::Access;
using sync::Fence;

std::uint64_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

struct FakeFence {
  std::string driver, timeline;
};

// Fake sync_files (pipes) and fake DMA-BUFs (any fd the test registers), answered by the emulator.
class FakeSync : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = et_test::open_fd_count();
    sys::set_ioctl_emulator([this](int fd, unsigned long req, void* arg) { return emulate(fd, req, arg); });
    sys::set_fault_hook([this](const sys::CallInfo& c) { return on_call(c); });
  }
  void TearDown() override {
    sys::set_fault_hook({});
    sys::set_ioctl_emulator({});
    {
      std::lock_guard lock(mutex_);
      files_.clear();
      for (int w : writers_) ::close(w);
      writers_.clear();
    }
    EXPECT_EQ(et_test::open_fd_count(), fds_before_) << "fd leak";
  }

  struct SyncFile {
    std::string name;
    std::vector<FakeFence> fences;
    int writer = -1;  // write end: a byte signals it
  };

  // A new fake sync_file holding `fences`: the pipe's read end (CLOEXEC), owned by the caller.
  int make_sync_file(std::vector<FakeFence> fences, std::string name = "fake") {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return -1;
    std::lock_guard lock(mutex_);
    files_[inode_of(p[0])] = SyncFile{std::move(name), std::move(fences), p[1]};
    writers_.push_back(p[1]);
    return p[0];
  }
  Fence fake_fence(std::vector<FakeFence> fences = {{"vgem", "vgem_fence"}}) {
    auto f = Fence::adopt(UniqueFd(make_sync_file(std::move(fences))));
    EXPECT_TRUE(f.has_value());
    return f ? std::move(*f) : Fence();
  }
  void signal(int sync_fd) {
    std::lock_guard lock(mutex_);
    auto it = files_.find(inode_of(sync_fd));
    ASSERT_NE(it, files_.end());
    ASSERT_EQ(::write(it->second.writer, "x", 1), 1);
  }
  bool signalled(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

  // Fault hook: records polls and ioctls, injects what the test asks.
  int on_call(const sys::CallInfo& c) {
    std::lock_guard lock(mutex_);
    if (c.call == sys::Call::Poll) {
      const auto* p = static_cast<const pollfd*>(c.arg);
      polls_.push_back({c.fd, p->events, static_cast<int>(static_cast<long>(c.request))});
      if (poll_eintr_left_ > 0) {
        --poll_eintr_left_;
        if (poll_eintr_sleep_.count() > 0) std::this_thread::sleep_for(poll_eintr_sleep_);
        return EINTR;
      }
      return poll_errno_;
    }
    if (c.call == sys::Call::Ioctl) ioctl_requests_.push_back(c.request);
    return 0;
  }

  std::optional<int> emulate(int fd, unsigned long req, void* arg) {
    std::lock_guard lock(mutex_);
    if (req == SYNC_IOC_FILE_INFO || req == SYNC_IOC_MERGE) {
      auto it = files_.find(inode_of(fd));
      if (it == files_.end()) return std::nullopt;  // not ours: the kernel answers (ENOTTY)
      return req == SYNC_IOC_FILE_INFO ? file_info(fd, it->second, static_cast<sync_file_info*>(arg))
                                       : merge(it->second, static_cast<sync_merge_data*>(arg));
    }
    if (req == DMA_BUF_IOCTL_SYNC && dmabufs_.count(inode_of(fd))) return 0;
    if (req == DMA_BUF_IOCTL_EXPORT_SYNC_FILE || req == DMA_BUF_IOCTL_IMPORT_SYNC_FILE) {
      if (sync_file_errno_) {
        errno = sync_file_errno_;
        return -1;
      }
      if (!dmabufs_.count(inode_of(fd))) return std::nullopt;
      if (req == DMA_BUF_IOCTL_IMPORT_SYNC_FILE) {
        auto* a = static_cast<dma_buf_import_sync_file*>(arg);
        imports_.push_back({a->flags, a->fd});
        return 0;
      }
      auto* a = static_cast<dma_buf_export_sync_file*>(arg);
      exports_.push_back(a->flags);
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) return -1;
      files_[inode_of(p[0])] = SyncFile{"dma-buf", pending_on_dmabuf_, p[1]};
      writers_.push_back(p[1]);
      if (pending_on_dmabuf_.empty()) (void)::write(p[1], "x", 1);  // no fences: a signalled stub
      a->fd = p[0];
      return 0;
    }
    return std::nullopt;
  }

  int file_info(int fd, const SyncFile& f, sync_file_info* info) {
    file_info_calls_.push_back(info->num_fences);
    if (info->flags || info->pad) {
      errno = EINVAL;  // sync_file.h: flags and pad must be 0
      return -1;
    }
    const auto n = static_cast<__u32>(f.fences.size());
    std::snprintf(info->name, sizeof info->name, "%s", f.name.c_str());
    const bool done = signalled(fd);
    info->status = done ? 1 : 0;
    if (info->num_fences != 0) {  // the second call: the entries
      if (info->num_fences < n) {
        errno = EINVAL;
        return -1;
      }
      auto* out = reinterpret_cast<sync_fence_info*>(static_cast<std::uintptr_t>(info->sync_fence_info));
      for (__u32 i = 0; i < n; ++i) {
        out[i] = {};
        std::snprintf(out[i].driver_name, sizeof out[i].driver_name, "%s", f.fences[i].driver.c_str());
        std::snprintf(out[i].obj_name, sizeof out[i].obj_name, "%s", f.fences[i].timeline.c_str());
        out[i].status = done ? 1 : 0;
        out[i].timestamp_ns = done ? 1234 : 0;
      }
    }
    info->num_fences = n;
    return 0;
  }

  int merge(const SyncFile& first, sync_merge_data* m) {
    merges_.push_back(*m);
    if (m->flags || m->pad) {
      errno = EINVAL;
      return -1;
    }
    auto second = files_.find(inode_of(m->fd2));
    if (second == files_.end()) {
      errno = EINVAL;
      return -1;
    }
    std::vector<FakeFence> all = first.fences;
    all.insert(all.end(), second->second.fences.begin(), second->second.fences.end());
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return -1;
    files_[inode_of(p[0])] = SyncFile{m->name, std::move(all), p[1]};
    writers_.push_back(p[1]);
    m->fence = p[0];
    return 0;
  }

  // A DMA-BUF tensor over `fd` (owned), which the emulator treats as a DMA-BUF for the sync_file ioctls.
  Result<TensorDyn> dmabuf_tensor(UniqueFd fd, std::size_t bytes, std::string detail) {
    {
      std::lock_guard lock(mutex_);
      dmabufs_[inode_of(fd.get())] = true;
    }
    ET_TRY_ASSIGN(auto key, detail::object_key_of(fd.get(), "test fd"));
    auto backing = detail::make_dmabuf_backing(std::move(fd), bytes, false, key, std::move(detail));
    return detail::tensor_from_backing(std::move(backing), {bytes}, DType::U8, {});
  }
  Result<TensorDyn> memfd_dmabuf(std::size_t bytes = 4096) {
    UniqueFd m(::memfd_create("fake-dmabuf", MFD_CLOEXEC));
    if (!m || ::ftruncate(m.get(), static_cast<off_t>(bytes)) != 0) return fail(ErrorCode::Internal, "memfd");
    return dmabuf_tensor(std::move(m), bytes, "fake DMA-BUF");
  }

  struct PollRecord {
    int fd;
    short events;
    int timeout_ms;
  };
  std::vector<PollRecord> polls() {
    std::lock_guard lock(mutex_);
    return polls_;
  }
  std::size_t ioctl_count(unsigned long req) {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count(ioctl_requests_.begin(), ioctl_requests_.end(), req));
  }

  int fds_before_ = 0;
  std::mutex mutex_;
  std::map<std::uint64_t, SyncFile> files_;
  std::vector<int> writers_;
  std::map<std::uint64_t, bool> dmabufs_;
  std::vector<FakeFence> pending_on_dmabuf_;  // what an export from a fake DMA-BUF holds
  std::vector<PollRecord> polls_;
  std::vector<unsigned long> ioctl_requests_;
  std::vector<__u32> file_info_calls_;
  std::vector<sync_merge_data> merges_;
  std::vector<std::uint32_t> exports_;
  std::vector<std::pair<std::uint32_t, int>> imports_;
  int poll_eintr_left_ = 0;
  std::chrono::milliseconds poll_eintr_sleep_{0};
  int poll_errno_ = 0;
  int sync_file_errno_ = 0;
};

// ---- Fence ---------------------------------------------------------------------------------------

TEST_F(FakeSync, SignalledFenceHasNoFdAndMakesNoSystemCall) {
  Fence f;
  const auto calls = sys::total_calls();
  EXPECT_TRUE(f.is_signalled_without_fd());
  EXPECT_EQ(f.fd(), -1);
  ASSERT_OK(f.wait(0ms));
  ASSERT_OK(f.wait(-1ms));
  auto s = f.is_signalled();
  ASSERT_OK(s);
  EXPECT_TRUE(*s);
  auto st = f.status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 1);
  EXPECT_TRUE(st->fences.empty());
  EXPECT_EQ(st->to_string(), "signalled");
  auto d = f.dup();
  ASSERT_OK(d);
  EXPECT_TRUE(d->is_signalled_without_fd());
  auto m = Fence::merge(f, Fence());
  ASSERT_OK(m);
  EXPECT_TRUE(m->is_signalled_without_fd());
  EXPECT_EQ(f.release().get(), -1);
  EXPECT_EQ(sys::total_calls(), calls);
  auto minus_one = Fence::duplicate(-1);  // the wire convention: fence_fd -1 is signalled
  ASSERT_OK(minus_one);
  EXPECT_TRUE(minus_one->is_signalled_without_fd());
}

TEST_F(FakeSync, AdoptRefusesWhatIsNotASyncFileAndClosesIt) {
  EXPECT_ERROR(Fence::adopt(UniqueFd()), ErrorCode::InvalidArgument, "no fd (-1)");
  const int before = et_test::open_fd_count();
  int e = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(e, 0);
  auto f = Fence::adopt(UniqueFd(e));  // the host kernel answers SYNC_IOC_FILE_INFO on an eventfd
  EXPECT_ERROR(f, ErrorCode::InvalidArgument, "is not a sync_file");
  EXPECT_NE(f.error().message().find("fd " + std::to_string(e) + " (anon_inode:[eventfd])"), std::string::npos)
      << f.error().message();
  EXPECT_NE(f.error().message().find("ENOTTY"), std::string::npos) << f.error().message();
  EXPECT_EQ(f.error().sys_errno(), ENOTTY);
  EXPECT_EQ(et_test::open_fd_count(), before) << "the refused fd is closed";
  UniqueFd m(::memfd_create("not-a-fence", MFD_CLOEXEC));
  EXPECT_ERROR(Fence::duplicate(m.get()), ErrorCode::InvalidArgument, "memfd:not-a-fence");
  EXPECT_ERROR(Fence::duplicate(-2), ErrorCode::InvalidArgument, "not a valid fd");
}

TEST_F(FakeSync, AdoptAcceptsASyncFileWithOneInfoCall) {
  const int fd = make_sync_file({{"vgem", "vgem_fence"}});
  auto f = Fence::adopt(UniqueFd(fd));
  ASSERT_OK(f);
  EXPECT_EQ(f->fd(), fd);
  EXPECT_FALSE(f->is_signalled_without_fd());
  EXPECT_EQ(file_info_calls_, std::vector<__u32>{0}) << "num_fences 0: no entries asked for";
}

TEST_F(FakeSync, WaitTimesOutNamingTheFencesThenPassesOnceSignalled) {
  Fence f = fake_fence({{"vgem", "vgem_fence"}, {"i915", "ring0"}});
  const auto t0 = std::chrono::steady_clock::now();
  auto w = f.wait(60ms);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_ERROR(w, ErrorCode::Timeout, "did not signal within 0.06 s");
  EXPECT_EQ(w.error().sys_errno(), ETIMEDOUT);
  EXPECT_NE(w.error().message().find("2 of 2 fences pending: vgem/vgem_fence pending, i915/ring0 pending"),
            std::string::npos)
      << w.error().message();
  EXPECT_GE(waited, 60ms);
  EXPECT_ERROR(f.wait(0ms), ErrorCode::Busy, "the timeout is 0 (non-blocking)");
  EXPECT_EQ(f.wait(0ms).error().sys_errno(), EAGAIN);
  auto s = f.is_signalled();
  ASSERT_OK(s);
  EXPECT_FALSE(*s);
  for (const auto& p : polls()) {
    EXPECT_EQ(p.fd, f.fd());
    EXPECT_EQ(p.events, POLLIN);
  }
  signal(f.fd());
  ASSERT_OK(f.wait(1000ms));
  ASSERT_OK(f.wait(0ms));
  s = f.is_signalled();
  ASSERT_OK(s);
  EXPECT_TRUE(*s);
}

TEST_F(FakeSync, WaitForeverPollsWithoutTimeout) {
  Fence f = fake_fence();
  signal(f.fd());
  ASSERT_OK(f.wait(-1ms));
  ASSERT_OK(f.wait(std::chrono::milliseconds::max()));  // past the clock's range: no bound either
  auto p = polls();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].timeout_ms, -1);
  EXPECT_EQ(p[1].timeout_ms, -1);
}

TEST_F(FakeSync, WaitSurvivesEintrAndStillEndsAtItsDeadline) {
  Fence f = fake_fence();
  // Every poll is interrupted after 10 ms: the wait recomputes the time left and ends at its deadline.
  poll_eintr_left_ = 100000;
  poll_eintr_sleep_ = 10ms;
  const auto t0 = std::chrono::steady_clock::now();
  auto w = f.wait(100ms);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_ERROR(w, ErrorCode::Timeout, "did not signal within 0.1 s");
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 2000ms) << "an EINTR must not restart the full timeout";
  auto p = polls();
  ASSERT_GE(p.size(), 2u);  // at least one retry (a loaded host sleeps longer than asked)
  EXPECT_EQ(p.front().timeout_ms, 100);
  EXPECT_LT(p.back().timeout_ms, 100) << "the time left shrinks";
  // Interrupted polls on a signalled fence: the wait goes on and succeeds.
  poll_eintr_left_ = 3;
  poll_eintr_sleep_ = 0ms;
  signal(f.fd());
  const auto before = polls().size();
  ASSERT_OK(f.wait(1000ms));
  EXPECT_EQ(polls().size() - before, 4u);
}

TEST_F(FakeSync, PollFailureIsReturned) {
  Fence f = fake_fence();
  poll_errno_ = ENOMEM;
  auto w = f.wait(10ms);
  EXPECT_ERROR(w, ErrorCode::OutOfMemory, "Fence::wait: poll of fd");
  EXPECT_EQ(w.error().sys_errno(), ENOMEM);
}

TEST_F(FakeSync, StatusAsksForTheCountThenTheEntries) {
  Fence f = fake_fence({{"vgem", "vgem_fence"}, {"amdgpu", "gfx_0.0.0"}});
  file_info_calls_.clear();
  auto st = f.status();
  ASSERT_OK(st);
  EXPECT_EQ(file_info_calls_, (std::vector<__u32>{0, 2}));
  EXPECT_EQ(st->name, "fake");
  EXPECT_EQ(st->status, 0);
  ASSERT_EQ(st->fences.size(), 2u);
  EXPECT_EQ(st->fences[0].driver, "vgem");
  EXPECT_EQ(st->fences[0].timeline, "vgem_fence");
  EXPECT_EQ(st->fences[1].driver, "amdgpu");
  EXPECT_EQ(st->fences[1].timeline, "gfx_0.0.0");
  EXPECT_EQ(st->fences[1].status, 0);
  EXPECT_EQ(st->fences[1].timestamp_ns, 0u);
  signal(f.fd());
  st = f.status();
  ASSERT_OK(st);
  EXPECT_EQ(st->status, 1);
  EXPECT_EQ(st->fences[0].timestamp_ns, 1234u);
  EXPECT_EQ(st->to_string(), "0 of 2 fences pending: vgem/vgem_fence signalled, amdgpu/gfx_0.0.0 signalled");
  sync::FenceStatus err{"x", -EIO, {{"gpu", "ring", -EIO, 5}}};
  EXPECT_EQ(err.to_string(), "0 of 1 fence pending: gpu/ring signalled with error EIO");
}

TEST_F(FakeSync, StatusFailureIsReturned) {
  Fence f = fake_fence();
  sys::set_fault_hook(et_test::fail_nth(sys::Call::Ioctl, 2, EFAULT));  // the entries call
  auto st = f.status();
  EXPECT_ERROR(st, ErrorCode::Internal, "SYNC_IOC_FILE_INFO of 1 fences on sync_file fd");
}

TEST_F(FakeSync, MergeAsksTheKernelWithFlagsAndPadZero) {
  Fence a = fake_fence({{"vgem", "a"}});
  Fence b = fake_fence({{"vgem", "b"}});
  auto m = Fence::merge(a, b, "frame 7");
  ASSERT_OK(m);
  ASSERT_EQ(merges_.size(), 1u);
  EXPECT_STREQ(merges_[0].name, "frame 7");
  EXPECT_EQ(merges_[0].fd2, b.fd());
  EXPECT_EQ(merges_[0].flags, 0u);
  EXPECT_EQ(merges_[0].pad, 0u);
  EXPECT_NE(m->fd(), a.fd());
  EXPECT_NE(m->fd(), b.fd());
  auto st = m->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->name, "frame 7");
  ASSERT_EQ(st->fences.size(), 2u);
  EXPECT_EQ(st->fences[0].timeline, "a");
  EXPECT_EQ(st->fences[1].timeline, "b");
  // A long name is cut to the kernel's 31 bytes, never refused; a NUL byte is refused.
  ASSERT_OK(Fence::merge(a, b, std::string(100, 'n')));
  EXPECT_EQ(std::string(merges_.back().name), std::string(31, 'n'));
  EXPECT_ERROR(Fence::merge(a, b, std::string("a\0b", 3)), ErrorCode::InvalidArgument, "NUL");
  sys::set_fault_hook(et_test::fail_nth(sys::Call::Ioctl, 1, EMFILE));
  EXPECT_ERROR(Fence::merge(a, b), ErrorCode::Busy, "SYNC_IOC_MERGE of sync_files fd");
}

TEST_F(FakeSync, MergeWithASignalledFenceIsADupOfTheOther) {
  Fence a = fake_fence();
  auto left = Fence::merge(a, Fence());
  auto right = Fence::merge(Fence(), a);
  for (const Result<Fence>* m : {&left, &right}) {
    ASSERT_OK(*m);
    EXPECT_NE((*m)->fd(), a.fd());
    EXPECT_EQ(inode_of((*m)->fd()), inode_of(a.fd())) << "the same sync_file";
    EXPECT_NE(::fcntl((*m)->fd(), F_GETFD) & FD_CLOEXEC, 0);
  }
  EXPECT_TRUE(merges_.empty()) << "no SYNC_IOC_MERGE";
}

TEST_F(FakeSync, DupIsCloexecAndReleaseGivesTheFdUp) {
  Fence a = fake_fence();
  auto d = a.dup();
  ASSERT_OK(d);
  EXPECT_NE(d->fd(), a.fd());
  EXPECT_EQ(inode_of(d->fd()), inode_of(a.fd()));
  EXPECT_NE(::fcntl(d->fd(), F_GETFD) & FD_CLOEXEC, 0);
  const int fd = d->fd();
  UniqueFd owned = d->release();
  EXPECT_EQ(owned.get(), fd);
  EXPECT_TRUE(d->is_signalled_without_fd());
  sys::set_fault_hook(et_test::fail_nth(sys::Call::Dup, 1, EMFILE));
  EXPECT_ERROR(a.dup(), ErrorCode::Busy, "F_DUPFD_CLOEXEC");
}

// ---- export_fence / import_fence -----------------------------------------------------------------

TEST_F(FakeSync, ExportAndImportPassAccessFlags) {
  auto t = memfd_dmabuf();
  ASSERT_OK(t);
  pending_on_dmabuf_ = {{"vgem", "vgem_fence"}};
  auto r = sync::export_fence(*t, Access::Read);
  ASSERT_OK(r);
  auto w = sync::export_fence(*t, Access::Write);
  ASSERT_OK(w);
  EXPECT_EQ(exports_, (std::vector<std::uint32_t>{DMA_BUF_SYNC_READ, DMA_BUF_SYNC_WRITE}));
  auto st = r->status();
  ASSERT_OK(st);
  EXPECT_EQ(st->to_string(), "1 of 1 fence pending: vgem/vgem_fence pending");
  ASSERT_OK(sync::import_fence(*t, *r, Access::Read));
  ASSERT_OK(sync::import_fence(*t, *w, Access::Write));
  ASSERT_EQ(imports_.size(), 2u);
  EXPECT_EQ(imports_[0], std::make_pair(std::uint32_t{DMA_BUF_SYNC_READ}, r->fd()));
  EXPECT_EQ(imports_[1], std::make_pair(std::uint32_t{DMA_BUF_SYNC_WRITE}, w->fd()));
  // A signalled fence adds nothing: no ioctl.
  const auto before = ioctl_count(DMA_BUF_IOCTL_IMPORT_SYNC_FILE);
  ASSERT_OK(sync::import_fence(*t, Fence(), Access::Write));
  EXPECT_EQ(ioctl_count(DMA_BUF_IOCTL_IMPORT_SYNC_FILE), before);
  // The fd forms reach the same ioctls.
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  ASSERT_OK(sync::export_fence(fd->get(), Access::Read));
  ASSERT_OK(sync::import_fence(fd->get(), *r, Access::Read));
  EXPECT_EQ(exports_.size(), 3u);
  EXPECT_EQ(imports_.size(), 3u);
}

TEST_F(FakeSync, ExportWithoutFencesGivesASignalledSyncFile) {
  auto t = memfd_dmabuf();
  ASSERT_OK(t);
  auto f = sync::export_fence(*t, Access::Write);
  ASSERT_OK(f);
  EXPECT_FALSE(f->is_signalled_without_fd()) << "the kernel returns a sync_file, already signalled";
  ASSERT_OK(f->wait(0ms));
}

TEST_F(FakeSync, EnottyOnADmaBufIsUnsupportedNamingTheKernel) {
  auto t = memfd_dmabuf();
  ASSERT_OK(t);
  struct utsname u {};
  ASSERT_EQ(::uname(&u), 0);
  sync_file_errno_ = ENOTTY;  // a kernel before 6.0, or without CONFIG_SYNC_FILE
  auto e = sync::export_fence(*t, Access::Read);
  EXPECT_ERROR(e, ErrorCode::Unsupported, "DMA_BUF_IOCTL_EXPORT_SYNC_FILE READ on DMA-BUF fd");
  EXPECT_NE(e.error().message().find(std::string("this kernel (Linux ") + u.release + ")"), std::string::npos)
      << e.error().message();
  EXPECT_NE(e.error().message().find("needs Linux >= 6.0 built with CONFIG_SYNC_FILE"), std::string::npos);
  EXPECT_EQ(e.error().sys_errno(), ENOTTY);
  Fence f = fake_fence();
  auto i = sync::import_fence(*t, f, Access::Write);
  EXPECT_ERROR(i, ErrorCode::Unsupported, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE WRITE of sync_file fd");
  EXPECT_NE(i.error().message().find("CONFIG_SYNC_FILE"), std::string::npos);
  sync_file_errno_ = EINVAL;
  EXPECT_ERROR(sync::export_fence(*t, Access::Read), ErrorCode::InvalidArgument, "EXPORT_SYNC_FILE READ on fd");
}

TEST_F(FakeSync, EnottyOnAnotherFileSaysItIsNoDmaBuf) {
  UniqueFd m(::memfd_create("plain", MFD_CLOEXEC));
  auto e = sync::export_fence(m.get(), Access::Read);  // the host kernel answers ENOTTY
  EXPECT_ERROR(e, ErrorCode::InvalidArgument, "is not a DMA-BUF (tmpfs/memfd file, /memfd:plain");
  EXPECT_ERROR(sync::export_fence(-1, Access::Read), ErrorCode::InvalidArgument, "fd -1 is not a valid fd");
  Fence f = fake_fence();
  EXPECT_ERROR(sync::import_fence(m.get(), f, Access::Read), ErrorCode::InvalidArgument, "is not a DMA-BUF");
  EXPECT_ERROR(sync::import_fence(-1, f, Access::Read), ErrorCode::InvalidArgument, "fd -1 is not a valid fd");
}

TEST_F(FakeSync, TensorsWithoutADmaBufAreRefused) {
  auto h = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(h);
  EXPECT_ERROR(sync::export_fence(*h, Access::Read), ErrorCode::Unsupported, "export_fence: heap tensor");
  EXPECT_ERROR(sync::import_fence(*h, Fence(), Access::Read), ErrorCode::Unsupported, "fences attach to DMA-BUFs only");
  EXPECT_ERROR(sync::export_fence(TensorDyn(), Access::Read), ErrorCode::FailedPrecondition, "no storage");
}

// ---- The DMA-BUF maps' bounded wait ---------------------------------------------------------------

TEST_F(FakeSync, FirstMapOfABracketPollsWithItsDirectionAndTimeout) {
  auto t = memfd_dmabuf();
  ASSERT_OK(t);
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    auto w = t->map_write(MapOptions{250ms});  // joins the open bracket: no wait, no START
    ASSERT_OK(w);
  }
  {
    auto w = t->map_write(MapOptions{250ms});
    ASSERT_OK(w);
  }
  {
    auto rw = t->map_read_write(MapOptions{-1ms});
    ASSERT_OK(rw);
  }
  auto p = polls();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].events, POLLIN);
  EXPECT_LE(p[0].timeout_ms, static_cast<int>(kDefaultMapTimeout.count()));
  EXPECT_GT(p[0].timeout_ms, static_cast<int>(kDefaultMapTimeout.count()) - 100);
  EXPECT_EQ(p[1].events, POLLOUT);
  EXPECT_LE(p[1].timeout_ms, 250);
  EXPECT_GT(p[1].timeout_ms, 0);
  EXPECT_EQ(p[2].events, POLLOUT);
  EXPECT_EQ(p[2].timeout_ms, -1);
  EXPECT_EQ(p[0].fd, p[1].fd);
}

TEST_F(FakeSync, MapTimesOutNamingTheBufferAndItsPendingFences) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd writer(p[1]);
  // A pipe's read end stands in for a DMA-BUF with a pending writer: POLLIN once a byte is written,
  // POLLOUT never.
  auto t = dmabuf_tensor(UniqueFd(p[0]), 4096, "pipe standing in for a DMA-BUF");
  ASSERT_OK(t);
  pending_on_dmabuf_ = {{"vgem", "vgem_fence"}};
  const auto t0 = std::chrono::steady_clock::now();
  auto r = t->map_read(MapOptions{80ms});
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 80ms);
  EXPECT_ERROR(r, ErrorCode::Timeout, "read map of pipe standing in for a DMA-BUF (4096 B, fd ");
  EXPECT_EQ(r.error().sys_errno(), ETIMEDOUT);
  EXPECT_NE(r.error().message().find("the buffer's fences did not signal within 0.08 s (MapOptions::timeout)"),
            std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("1 of 1 fence pending: vgem/vgem_fence pending"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(exports_, std::vector<std::uint32_t>{DMA_BUF_SYNC_READ}) << "a read map waits for the writers";
  auto w = t->map_write(MapOptions{0ms});
  EXPECT_ERROR(w, ErrorCode::Busy, "write map of pipe");
  EXPECT_EQ(w.error().sys_errno(), EAGAIN);
  EXPECT_EQ(exports_.back(), std::uint32_t{DMA_BUF_SYNC_WRITE}) << "a write map waits for every user";
  EXPECT_EQ(ioctl_count(DMA_BUF_IOCTL_SYNC), 0u) << "no START after a timeout";
  // The fences could not be listed: the timeout still says so, with the reason.
  sync_file_errno_ = ENOTTY;
  auto r2 = t->map_read(MapOptions{10ms});
  EXPECT_ERROR(r2, ErrorCode::Timeout, "its fences could not be listed: Unsupported: DMA_BUF_IOCTL_EXPORT_SYNC_FILE");
  sync_file_errno_ = 0;
  // Signalled: the wait passes and the map goes on to mmap, which a pipe refuses.
  ASSERT_EQ(::write(writer.get(), "x", 1), 1);
  EXPECT_ERROR(t->map_read(MapOptions{1000ms}), ErrorCode::Unsupported, "is not CPU-mappable: mmap failed");
}

TEST_F(FakeSync, MapPollIsRetriedOnEintrAndItsFailureFailsTheMap) {
  auto t = memfd_dmabuf();
  ASSERT_OK(t);
  poll_eintr_left_ = 2;
  ASSERT_OK(t->map_read());
  EXPECT_EQ(polls().size(), 3u);
  poll_errno_ = ENOMEM;
  auto r = t->map_read();
  EXPECT_ERROR(r, ErrorCode::OutOfMemory, "fake DMA-BUF: poll of fd");
  poll_errno_ = 0;
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0) << "a failed wait opens no bracket";
  ASSERT_OK(t->map_read());
}

TEST_F(FakeSync, HeapAndShmMapsNeverPoll) {
  for (auto kind : {MemoryKind::Heap, MemoryKind::Shm}) {
    auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(kind));
    ASSERT_OK(t);
    ASSERT_OK(t->map_read(MapOptions{0ms}));
    ASSERT_OK(t->map_write());
  }
  EXPECT_TRUE(polls().empty());
}

}  // namespace
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
