// SPDX-License-Identifier: Apache-2.0
// Timeouts and interruption of ipc::send / receive / send_frame / receive_frame (src/ipc/ipc_wait.cpp).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include "support/test_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct SeqPair {
  SeqPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    a = UniqueFd(sv[0]);
    b = UniqueFd(sv[1]);
  }
  UniqueFd a, b;
};

TensorDyn shm_tensor() {
  auto t = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm});
  EXPECT_TRUE(t.has_value());
  return t ? *t : TensorDyn();
}

// A handler that does nothing, installed without SA_RESTART: a signal makes poll(2) fail with EINTR.
class ScopedSigusr1 {
 public:
  ScopedSigusr1() {
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, &old_);
  }
  ~ScopedSigusr1() { ::sigaction(SIGUSR1, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

// Sends SIGUSR1 to `thread` every 20 ms until stopped.
class Pester {
 public:
  explicit Pester(pthread_t thread)
      : worker_([this, thread] {
          while (!stop_) {
            std::this_thread::sleep_for(20ms);
            ::pthread_kill(thread, SIGUSR1);
          }
        }) {}
  ~Pester() {
    stop_ = true;
    worker_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

TEST(IpcWait, AZeroTimeoutDoesNotWaitAndSaysSo) {
  SeqPair sp;
  const auto start = Clock::now();
  auto r = ipc::receive(sp.b.get(), {.timeout = 0ms});
  EXPECT_ERROR(r, ErrorCode::Busy, "is not ready and the timeout is 0 (non-blocking): no message arrived");
  EXPECT_EQ(r.error().sys_errno(), EAGAIN);
  auto f = ipc::receive_frame(sp.b.get(), {.timeout = 0ms});
  EXPECT_ERROR(f, ErrorCode::Busy, "ipc::receive_frame: socket fd");
  EXPECT_LT(Clock::now() - start, 1s);
}

TEST(IpcWait, APositiveTimeoutWaitsThatLongAndNamesIt) {
  SeqPair sp;
  const auto start = Clock::now();
  auto r = ipc::receive(sp.b.get(), {.timeout = 150ms});
  const auto waited = Clock::now() - start;
  EXPECT_ERROR(r, ErrorCode::Busy, "ipc::receive: timed out after 0.15 s on socket fd");
  EXPECT_EQ(r.error().sys_errno(), ETIMEDOUT);
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 5s);
}

TEST(IpcWait, AMessageWithinTheTimeoutArrives) {
  SeqPair sp;
  const TensorDyn t = shm_tensor();
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(ipc::send(sp.a.get(), t, {.timeout = 1000ms}).has_value());
  });
  auto r = ipc::receive(sp.b.get(), {.timeout = 5000ms});
  later.join();
  ASSERT_OK(r);
  EXPECT_TRUE(r->same_buffer(t));
}

TEST(IpcWait, ASendIntoAFullSocketTimesOutHavingSentNothing) {
  SeqPair sp;
  const int small = 4096;
  ASSERT_EQ(::setsockopt(sp.a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  const TensorDyn t = shm_tensor();
  std::size_t sent = 0;
  Result<void> r;
  while ((r = ipc::send(sp.a.get(), t, {.timeout = 0ms})) && sent < 100000) ++sent;
  EXPECT_ERROR(r, ErrorCode::Busy, "the timeout is 0 (non-blocking): no room in the socket");
  EXPECT_EQ(r.error().sys_errno(), EAGAIN);
  auto timed = ipc::send(sp.a.get(), t, {.timeout = 30ms});
  EXPECT_ERROR(timed, ErrorCode::Busy, "ipc::send: timed out after 0.03 s");
  EXPECT_EQ(timed.error().sys_errno(), ETIMEDOUT);
  std::size_t received = 0;
  while (ipc::receive(sp.b.get(), {.timeout = 0ms})) ++received;
  EXPECT_EQ(received, sent);  // the timed-out sends sent nothing
}

TEST(IpcWait, ASignalCallsTheCheckAndTheWaitGoesOnForTheTimeLeft) {
  ScopedSigusr1 handler;
  SeqPair sp;
  std::atomic<int> checks{0};
  ipc::ReceiveOptions o{.timeout = 300ms, .on_interrupt = [&]() -> Result<void> {
                          ++checks;
                          return {};
                        }};
  const auto start = Clock::now();
  Result<TensorDyn> r;
  {
    Pester pester(::pthread_self());
    r = ipc::receive(sp.b.get(), o);
  }
  const auto waited = Clock::now() - start;
  EXPECT_ERROR(r, ErrorCode::Busy, "timed out after 0.3 s");
  EXPECT_GE(checks.load(), 2);
  EXPECT_GE(waited, 300ms);  // the deadline holds across the interruptions
  EXPECT_LT(waited, 5s);
}

TEST(IpcWait, TheChecksErrorEndsTheWait) {
  ScopedSigusr1 handler;
  SeqPair sp;
  ipc::ReceiveOptions o{.timeout = ipc::kWaitForever, .on_interrupt = []() -> Result<void> {
                          return fail(ErrorCode::Internal, "stopped by the check");
                        }};
  Result<TensorDyn> r;
  {
    Pester pester(::pthread_self());
    r = ipc::receive(sp.b.get(), o);
  }
  EXPECT_ERROR(r, ErrorCode::Internal, "stopped by the check");
  // Without a check a signal only wakes the wait, which goes on.
  ipc::SendOptions so{.timeout = 100ms};
  Result<void> s;
  {
    const int small = 4096;
    ASSERT_EQ(::setsockopt(sp.a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    const TensorDyn t = shm_tensor();
    while ((s = ipc::send(sp.a.get(), t, {.timeout = 0ms}))) {
    }
    Pester pester(::pthread_self());
    s = ipc::send(sp.a.get(), t, so);
  }
  EXPECT_ERROR(s, ErrorCode::Busy, "timed out after 0.1 s");
}

TEST(IpcWait, RefusedSocketsAreRefusedBeforeAnyWait) {
  const auto start = Clock::now();
  EXPECT_ERROR(ipc::receive(-1, {.timeout = ipc::kWaitForever}), ErrorCode::InvalidArgument, "fd -1");
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  EXPECT_ERROR(ipc::receive(b.get()), ErrorCode::InvalidArgument, "SOCK_STREAM");
  EXPECT_ERROR(ipc::send(a.get(), shm_tensor()), ErrorCode::InvalidArgument, "SOCK_STREAM");
  EXPECT_LT(Clock::now() - start, 1s);
}

}  // namespace
