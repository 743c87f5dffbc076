// SPDX-License-Identifier: Apache-2.0
// The Storage seam (src/core/storage.h): CPU-access bracket, single-map backends, device-handle slot
// torn down before the Backing, process-unique ids. Uses a recording test Backing.
#include <gtest/gtest.h>

#include <edgetensor/log.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;
using namespace edgetensor::detail;

namespace {

struct Events {
  std::vector<std::string> log;
};

class RecordingBacking final : public Backing {
 public:
  RecordingBacking(Events* ev, bool single, bool ro = false) : ev_(ev), single_(single), ro_(ro) {}
  ~RecordingBacking() override { ev_->log.push_back("backing freed"); }
  MemoryKind kind() const noexcept override { return MemoryKind::DmaBuf; }
  std::string detail() const override { return "recording"; }
  std::size_t buffer_bytes() const noexcept override { return sizeof(buf_); }
  bool read_only() const noexcept override { return ro_; }
  bool single_map() const noexcept override { return single_; }
  Result<std::byte*> begin_cpu_access(MapMode mode) override {
    ev_->log.push_back("begin " + std::to_string(static_cast<unsigned>(mode)));
    if (fail_begin_) return fail(ErrorCode::Busy, "begin refused");
    return buf_;
  }
  void end_cpu_access(MapMode modes) noexcept override {
    ev_->log.push_back("end " + std::to_string(static_cast<unsigned>(modes)));
  }
  bool fail_begin_ = false;

 private:
  Events* ev_;
  bool single_;
  bool ro_;
  std::byte buf_[64]{};
};

class RecordingHandle final : public DeviceHandle {
 public:
  explicit RecordingHandle(Events* ev) : ev_(ev) {}
  ~RecordingHandle() override { ev_->log.push_back("device handle freed"); }

 private:
  Events* ev_;
};

TEST(Storage, OneBracketCoversAllOpenMapsWithTheUnionOfModes) {
  Events ev;
  Storage s(std::make_unique<RecordingBacking>(&ev, false));
  auto a = s.acquire_cpu(MapMode::Read);
  ASSERT_OK(a);
  auto b = s.acquire_cpu(MapMode::Write);
  ASSERT_OK(b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(s.open_map_count(), 2);
  s.release_cpu(MapMode::Read);
  EXPECT_EQ(ev.log, (std::vector<std::string>{"begin 1"}));  // no END while a map is open
  s.release_cpu(MapMode::Write);
  EXPECT_EQ(ev.log, (std::vector<std::string>{"begin 1", "end 3"}));
  EXPECT_EQ(s.open_map_count(), 0);
  // A new bracket starts with fresh modes.
  ASSERT_OK(s.acquire_cpu(MapMode::Read));
  s.release_cpu(MapMode::Read);
  EXPECT_EQ(ev.log, (std::vector<std::string>{"begin 1", "end 3", "begin 1", "end 1"}));
}

TEST(Storage, SingleMapBackendRefusesASecondMapWithBusy) {
  Events ev;
  Storage s(std::make_unique<RecordingBacking>(&ev, true));
  ASSERT_OK(s.acquire_cpu(MapMode::Write));
  EXPECT_ERROR(s.acquire_cpu(MapMode::Read), ErrorCode::Busy, "allows one CPU map at a time");
  EXPECT_EQ(s.open_map_count(), 1);
  s.release_cpu(MapMode::Write);
  ASSERT_OK(s.acquire_cpu(MapMode::Read));
  s.release_cpu(MapMode::Read);
}

TEST(Storage, ReadOnlyBackingRefusesWriteModesBeforeBegin) {
  Events ev;
  Storage s(std::make_unique<RecordingBacking>(&ev, false, /*ro=*/true));
  EXPECT_ERROR(s.acquire_cpu(MapMode::Write), ErrorCode::PermissionDenied, "is read-only");
  EXPECT_ERROR(s.acquire_cpu(MapMode::ReadWrite), ErrorCode::PermissionDenied, "is read-only");
  EXPECT_TRUE(ev.log.empty());
  ASSERT_OK(s.acquire_cpu(MapMode::Read));
  s.release_cpu(MapMode::Read);
}

TEST(Storage, FailedBeginLeavesNoMapOpen) {
  Events ev;
  auto backing = std::make_unique<RecordingBacking>(&ev, false);
  backing->fail_begin_ = true;
  Storage s(std::move(backing));
  EXPECT_ERROR(s.acquire_cpu(MapMode::Read), ErrorCode::Busy, "begin refused");
  EXPECT_EQ(s.open_map_count(), 0);
}

TEST(Storage, UnbalancedReleaseIsLoggedNotCrashed) {
  Events ev;
  et_test::ScopedLogCapture log;
  Storage s(std::make_unique<RecordingBacking>(&ev, false));
  s.release_cpu(MapMode::Read);
  EXPECT_EQ(s.open_map_count(), 0);
  EXPECT_TRUE(log.contains("error: release_cpu without an open map")) << ::testing::PrintToString(log.lines());
}

TEST(Storage, DeviceHandleIsMadeOnceAndFreedBeforeTheBacking) {
  Events ev;
  {
    Storage s(std::make_unique<RecordingBacking>(&ev, false));
    EXPECT_EQ(s.existing_device_handle(), nullptr);
    int made = 0;
    auto make = [&](Storage&) -> Result<std::unique_ptr<DeviceHandle>> {
      ++made;
      return std::unique_ptr<DeviceHandle>(std::make_unique<RecordingHandle>(&ev));
    };
    auto h1 = s.device_handle(make);
    ASSERT_OK(h1);
    auto h2 = s.device_handle(make);
    ASSERT_OK(h2);
    EXPECT_EQ(*h1, *h2);
    EXPECT_EQ(made, 1);
    EXPECT_EQ(s.existing_device_handle(), *h1);
  }
  EXPECT_EQ(ev.log, (std::vector<std::string>{"device handle freed", "backing freed"}));
}

// Device work kept by the storage (what a released CudaMap's event is): complete when the test says.
class RecordingFence final : public DeviceFence {
 public:
  RecordingFence(Events* ev, std::atomic<bool>* done, std::chrono::milliseconds bound)
      : ev_(ev), done_(done), bound_(bound) {}
  ~RecordingFence() override { ev_->log.push_back("fence freed"); }
  bool complete() noexcept override { return done_->load(); }
  std::chrono::milliseconds teardown_timeout() const noexcept override { return bound_; }

 private:
  Events* ev_;
  std::atomic<bool>* done_;
  std::chrono::milliseconds bound_;
};

auto make_recording_handle(Events* ev) {
  return [ev](Storage&) -> Result<std::unique_ptr<DeviceHandle>> {
    return std::unique_ptr<DeviceHandle>(std::make_unique<RecordingHandle>(ev));
  };
}

TEST(Storage, TeardownWaitsForKeptDeviceWorkThenFreesInOrder) {
  Events ev;
  std::atomic<bool> done{false};
  std::thread device;
  const auto start = std::chrono::steady_clock::now();
  {
    Storage s(std::make_unique<RecordingBacking>(&ev, false));
    ASSERT_OK(s.device_handle(make_recording_handle(&ev)));
    s.keep_fence(std::make_unique<RecordingFence>(&ev, &done, std::chrono::seconds(10)));
    device = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      ev.log.push_back("work done");  // before the store: the teardown reads the log after it
      done.store(true);
    });
  }
  device.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(60));
  EXPECT_EQ(ev.log, (std::vector<std::string>{"work done", "fence freed", "device handle freed", "backing freed"}));
}

// A negative bound, and one too large for the clock (milliseconds::max()), wait without a bound.
TEST(Storage, TeardownWithoutABoundWaitsUntilTheWorkCompletes) {
  for (auto bound : {std::chrono::milliseconds(-1), std::chrono::milliseconds::max()}) {
    SCOPED_TRACE(bound.count());
    Events ev;
    std::atomic<bool> done{false};
    std::thread device;
    {
      Storage s(std::make_unique<RecordingBacking>(&ev, false));
      s.keep_fence(std::make_unique<RecordingFence>(&ev, &done, bound));
      device = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
        ev.log.push_back("work done");
        done.store(true);
      });
    }
    device.join();
    EXPECT_EQ(ev.log, (std::vector<std::string>{"work done", "fence freed", "backing freed"}));
  }
}

TEST(Storage, TeardownPastTheBoundAbandonsTheMemoryWithAWarning) {
  std::vector<std::string> lines;
  auto previous = set_log_callback([&](LogLevel level, std::string_view line) {
    if (level == LogLevel::Warning) lines.emplace_back(line);
  });
  auto* ev = new Events;  // the abandoned backing and handle keep pointing at it: never freed
  std::atomic<bool> never{false};
  const std::size_t before = abandoned_storage_count();
  const auto start = std::chrono::steady_clock::now();
  {
    Storage s(std::make_unique<RecordingBacking>(ev, false));
    ASSERT_OK(s.device_handle(make_recording_handle(ev)));
    s.keep_fence(std::make_unique<RecordingFence>(ev, &never, std::chrono::milliseconds(40)));
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  set_log_callback(previous);
  EXPECT_GE(waited, std::chrono::milliseconds(40));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(ev->log, (std::vector<std::string>{"fence freed"})) << "the handle and the backing must not be freed";
  EXPECT_EQ(abandoned_storage_count(), before + 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("of dmabuf memory (recording, 64 B): device work recorded on it (1 pending) is still running after "
                          "the teardown bound of 40 ms"),
            std::string::npos)
      << lines[0];
}

TEST(Storage, TeardownWithABoundOfZeroDoesNotWait) {
  auto* ev = new Events;  // abandoned: never freed
  std::atomic<bool> never{false};
  const auto start = std::chrono::steady_clock::now();
  {
    Storage s(std::make_unique<RecordingBacking>(ev, false));
    s.keep_fence(std::make_unique<RecordingFence>(ev, &never, std::chrono::milliseconds(0)));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_EQ(ev->log, (std::vector<std::string>{"fence freed"}));
}

TEST(Storage, KeepFenceDropsTheCompletedOnes) {
  Events ev;
  std::atomic<bool> done{true};
  std::atomic<bool> pending{false};
  Storage s(std::make_unique<RecordingBacking>(&ev, false));
  s.keep_fence(std::make_unique<RecordingFence>(&ev, &done, std::chrono::milliseconds(0)));
  s.keep_fence(std::make_unique<RecordingFence>(&ev, &pending, std::chrono::milliseconds(0)));
  EXPECT_EQ(ev.log, (std::vector<std::string>{"fence freed"})) << "the complete one went at the second keep";
  EXPECT_FALSE(s.device_work_complete());
  pending.store(true);
}

TEST(Storage, FailedDeviceHandleCanBeRetried) {
  Events ev;
  Storage s(std::make_unique<RecordingBacking>(&ev, false));
  auto failing = [](Storage&) -> Result<std::unique_ptr<DeviceHandle>> {
    return fail(ErrorCode::Unavailable, "no CUDA");
  };
  EXPECT_ERROR(s.device_handle(failing), ErrorCode::Unavailable, "no CUDA");
  EXPECT_EQ(s.existing_device_handle(), nullptr);
}

TEST(Storage, IdsAreUniqueAndNonZero) {
  Events ev;
  std::set<std::uint64_t> ids;
  for (int i = 0; i < 100; ++i) {
    Storage s(std::make_unique<RecordingBacking>(&ev, false));
    EXPECT_NE(s.id(), 0u);
    ids.insert(s.id());
  }
  EXPECT_EQ(ids.size(), 100u);
}

TEST(Storage, DefaultBackingExportIsUnsupported) {
  Events ev;
  Storage s(std::make_unique<RecordingBacking>(&ev, false));
  EXPECT_ERROR(s.backing().export_fd(), ErrorCode::Unsupported, "dmabuf tensor is not shareable by fd (recording)");
}

}  // namespace
