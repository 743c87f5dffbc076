// SPDX-License-Identifier: Apache-2.0
// `edgetensor bench`: the frame channel rows (bench.h), a short version of edgetensor_bench's
// channel benchmarks (bench/channel_benchmark.cpp). Each case forks its peer before the channel
// exists. Handoff (two processes) is timed on CLOCK_MONOTONIC, receive + read on this thread's CPU
// time; each keeps its best of interleaved rounds. Names here differ from bench.cpp's: the CLI is
// built as one unity translation unit.
#include <edgetensor/edgetensor.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench.h"

namespace edgetensor_cli {
namespace channel_bench {

using namespace edgetensor;
using namespace std::chrono_literals;

struct FrameSize {
  const char* name;
  std::size_t width, height;
  std::size_t bytes() const { return width * height * 4; }
};
constexpr FrameSize kChannelSizes[] = {{"360p", 640, 360}, {"720p", 1280, 720}, {"1080p", 1920, 1080}, {"4K", 3840, 2160}};
constexpr int kChannelRounds = 3;
constexpr double kChannelRoundNs = 20e6;  // ~20 ms per round of each case
constexpr std::size_t kCopyChunk = 64 * 1024;
constexpr std::size_t kReadBuffers = 2;  // the receive + read pool, and the baseline's warm local buffers
// How long one step waits for the peer before the bench reports it as failed. Generous: only a peer that
// is gone or stuck should reach it. Under QEMU user mode on a loaded machine (the ARM lanes) a freshly
// forked peer took over 5 s to send its first frame (its code is translated on first use).
constexpr auto kPeerWait = std::chrono::seconds(30);

double clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// ns per call of `fn` on `clock` over a round of about `budget_ns` (at least 2 calls); negative when
// `fn` failed (it has said why in its own error string).
double per_call(const std::function<bool()>& fn, clockid_t clock, double budget_ns) {
  long n = 0;
  const double start = clock_ns(clock);
  double now = start;
  while (n < 2 || now - start < budget_ns) {
    if (!fn()) return -1;
    ++n;
    now = clock_ns(clock);
  }
  return (now - start) / static_cast<double>(n);
}

std::uint64_t sum_words(const std::byte* p, std::size_t n) {
  std::uint64_t s = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    s += w;
  }
  for (; i < n; ++i) s += static_cast<std::uint64_t>(p[i]);
  return s;
}

// A forked peer serving one end of a SOCK_SEQPACKET pair; killed and reaped when it goes.
class ForkedPeer {
 public:
  ForkedPeer() = default;
  ForkedPeer(const ForkedPeer&) = delete;
  ForkedPeer& operator=(const ForkedPeer&) = delete;
  ~ForkedPeer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // Runs `body(their end)` in a child; returns our end, or an invalid fd with `error` set.
  UniqueFd start(const std::function<int(UniqueFd)>& body, std::string& error) {
    auto sp = channel::socket_pair();
    if (!sp) {
      error = "socket pair: " + sp.error().to_string();
      return UniqueFd();
    }
    pid_ = ::fork();
    if (pid_ < 0) {
      error = std::string("fork: ") + std::strerror(errno);
      return UniqueFd();
    }
    if (pid_ == 0) {
      sp->first.reset();
      ::_exit(body(std::move(sp->second)));
    }
    return std::move(sp->first);
  }

 private:
  pid_t pid_ = -1;
};

PoolOptions shm_pool(std::size_t buffers) {
  PoolOptions o;
  o.name = "bench";
  o.min_buffers = buffers;
  o.max_buffers = buffers;
  o.allocate.memory = MemoryKind::Shm;
  return o;
}

BenchRow make_row(const FrameSize& f, const char* baseline, const char* measured, const char* clock, double base_ns,
                  double ns, double min_ratio) {
  BenchRow r;
  r.size = f.name;
  r.width = f.width;
  r.height = f.height;
  r.bytes = f.bytes();
  r.memory = "memfd";
  r.baseline = baseline;
  r.measured = measured;
  r.clock = clock;
  r.baseline_cpu_ns = base_ns;
  r.measured_cpu_ns = ns;
  r.ratio = base_ns / ns;
  r.min_ratio = min_ratio;
  r.met = min_ratio == 0 || r.ratio >= min_ratio;
  return r;
}

// A forked peer's body: receives and releases every frame at once, until the stream ends.
int drain_receiver(UniqueFd fd) {
  auto receiver = channel::Receiver::create(std::move(fd));
  if (!receiver) return 1;
  while (receiver->receive()) {
  }
  return 0;
}

// Handoff (send, receive, release) against the frame's bytes through the socket and a 1-byte reply.
// Returns why it failed, or an empty string.
std::string handoff_rows(const FrameSize& f, BenchReport& report) {
  const std::size_t bytes = f.bytes();
  std::string error;
  ForkedPeer copy_peer, channel_peer;
  UniqueFd copy_fd = copy_peer.start([bytes](UniqueFd fd) {
    std::vector<std::byte> into(bytes, std::byte{1});
    for (;;) {
      for (std::size_t got = 0; got < bytes;) {
        const ssize_t n = ::recv(fd.get(), into.data() + got, std::min(kCopyChunk, bytes - got), 0);
        if (n <= 0) return 0;
        got += static_cast<std::size_t>(n);
      }
      if (::send(fd.get(), "k", 1, MSG_NOSIGNAL) != 1) return 0;
    }
  }, error);
  UniqueFd channel_fd = channel_peer.start(drain_receiver, error);
  if (!copy_fd.is_valid() || !channel_fd.is_valid()) return "handoff peers: " + error;
  auto pool = Pool::create({f.height, f.width, 4}, DType::U8, shm_pool(1));
  if (!pool) return "handoff pool: " + pool.error().to_string();
  auto sender = channel::Sender::create(std::move(channel_fd));
  if (!sender) return "handoff sender: " + sender.error().to_string();
  std::vector<std::byte> frame(bytes, std::byte{0x5a});
  auto copy = [&]() -> bool {
    for (std::size_t sent = 0; sent < bytes;) {
      const ssize_t n = ::send(copy_fd.get(), frame.data() + sent, std::min(kCopyChunk, bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) {
        error = std::string("socket copy: send: ") + (n < 0 ? std::strerror(errno) : "peer gone");
        return false;
      }
      sent += static_cast<std::size_t>(n);
    }
    char ack;
    const ssize_t n = ::recv(copy_fd.get(), &ack, 1, 0);
    if (n != 1) error = std::string("socket copy: reply: ") + (n < 0 ? std::strerror(errno) : "peer gone");
    return n == 1;
  };
  auto handoff = [&]() -> bool {
    auto t = sender->acquire(*pool, kPeerWait);  // waits for the previous frame's release
    if (!t) {
      error = "handoff acquire: " + t.error().to_string();
      return false;
    }
    auto sent = sender->send(*t);
    if (!sent) error = "handoff send: " + sent.error().to_string();
    return sent.has_value();
  };
  double base = std::numeric_limits<double>::max(), mine = base;
  for (int round = 0; round < kChannelRounds; ++round) {
    const double b = per_call(copy, CLOCK_MONOTONIC, kChannelRoundNs);
    const double m = per_call(handoff, CLOCK_MONOTONIC, kChannelRoundNs);
    if (b < 0 || m < 0) return error;
    base = std::min(base, b);
    mine = std::min(mine, m);
  }
  const double target = std::strcmp(f.name, "4K") == 0 ? 100.0 : 0.0;
  report.rows.push_back(make_row(f, "socket copy of the bytes + reply", "channel handoff (send, receive, release)",
                                 "wall", base, mine, target));
  return {};
}

// Receive + read of every byte against reading a warm local buffer. Returns why it failed, or an empty
// string.
std::string receive_rows(const FrameSize& f, BenchReport& report) {
  std::string error;
  ForkedPeer peer;
  UniqueFd fd = peer.start([f](UniqueFd theirs) {
    auto pool = Pool::create({f.height, f.width, 4}, DType::U8, shm_pool(kReadBuffers));
    auto sender = channel::Sender::create(std::move(theirs));
    if (!pool || !sender) return 1;
    for (;;) {
      auto t = sender->acquire(*pool, kPeerWait);
      if (!t || !sender->send(*t)) return 0;
    }
  }, error);
  if (!fd.is_valid()) return "receive peer: " + error;
  auto receiver = channel::Receiver::create(std::move(fd));
  if (!receiver) return "receiver: " + receiver.error().to_string();
  volatile std::uint64_t sink = 0;
  auto take = [&]() -> bool {
    auto d = receiver->receive(kPeerWait);
    if (!d) {
      error = "receive: " + d.error().to_string();
      return false;
    }
    auto m = d->tensor.map_read();
    if (!m) {
      error = "receive map: " + m.error().to_string();
      return false;
    }
    sink = sink + sum_words(m->data(), m->extent_bytes());
    return true;
  };
  // As many warm local buffers as the pool has, read in turn: the same bytes in cache as the channel's,
  // and the same kind of pages (memfd, mapped and touched once). A malloc'd buffer may get transparent
  // huge pages where memfd gets none (shmem_enabled), which made this baseline jump between two levels
  // from one run to the next (1080p: 308 or 790 us) and the ratio with it.
  std::vector<TensorDyn> local;
  std::vector<ReadMap> local_maps;
  for (std::size_t k = 0; k < kReadBuffers; ++k) {
    auto t = TensorDyn::allocate({f.height, f.width, 4}, DType::U8, AllocateOptions{.memory = MemoryKind::Shm});
    if (!t) return "baseline buffer: " + t.error().to_string();
    {
      auto w = t->map_write();
      if (!w) return "baseline write map: " + w.error().to_string();
      std::memset(w->data(), 1, w->extent_bytes());
    }
    auto m = t->map_read();
    if (!m) return "baseline read map: " + m.error().to_string();
    local.push_back(std::move(*t));
    local_maps.push_back(std::move(*m));
  }
  std::size_t next = 0;
  auto warm = [&]() -> bool {
    const ReadMap& b = local_maps[next++ % kReadBuffers];
    sink = sink + sum_words(b.data(), b.extent_bytes());
    return true;
  };
  for (int i = 0; i < 4; ++i)  // every pool buffer announced, mapped and its pages seen once
    if (!take()) return error;
  double base = std::numeric_limits<double>::max(), mine = base;
  for (int round = 0; round < kChannelRounds; ++round) {
    const double b = per_call(warm, CLOCK_THREAD_CPUTIME_ID, kChannelRoundNs);
    const double m = per_call(take, CLOCK_THREAD_CPUTIME_ID, kChannelRoundNs);
    if (m < 0) return error;
    base = std::min(base, b);
    mine = std::min(mine, m);
  }
  // Issue 25: >= 0.9x at 1080p and 4K; 360p and 720p are reported (a fixed cost of 20 us is already 0.9x of
  // reading 360p).
  const double target = std::strcmp(f.name, "1080p") == 0 || std::strcmp(f.name, "4K") == 0 ? 0.9 : 0.0;
  report.rows.push_back(make_row(f, "read of warm local memfd buffers (2, in turn)", "channel receive + read of every byte",
                                 "thread cpu", base, mine, target));
  return {};
}

// The producer's cost per 1080p frame through a Publisher serving three receivers, against one (issue 25:
// at most 3.5x, so the ratio one/three is at least 0.29). Each receiver is a forked process that receives
// and releases at once; nothing is filled. Process CPU time of this process: the publisher's release
// thread is part of the producer's cost, the receivers' processes are not. Returns why it failed, or "".
std::string publisher_rows(BenchReport& report) {
  const FrameSize& f = kChannelSizes[2];
  constexpr std::size_t kReceivers = 3;
  std::string error;
  // Every receiver is forked before the first Publisher exists: each receiver it serves has a thread, and a
  // child forked while another thread of this process holds a lock (malloc's, the library's, ASan's
  // allocator's) would wait on it for ever (a receiver that never released: "4 frame buffers sent and not
  // released", seen once in CI's ASan lane).
  ForkedPeer peers[1 + kReceivers];
  UniqueFd peer_fds[1 + kReceivers];
  for (std::size_t i = 0; i < 1 + kReceivers; ++i) {
    peer_fds[i] = peers[i].start(drain_receiver, error);
    if (!peer_fds[i].is_valid()) return "publisher receiver: " + error;
  }
  std::size_t next_peer = 0;
  auto publisher_with = [&](std::size_t receivers) -> Result<channel::Publisher> {
    auto p = channel::Publisher::create({.name = "bench"});
    if (!p) return p;
    for (std::size_t i = 0; i < receivers; ++i) {
      auto id = p->add_receiver(std::move(peer_fds[next_peer++]));
      if (!id) return Unexpected(id.error());
    }
    return p;
  };
  auto one = publisher_with(1);
  if (!one) return "publisher (1 receiver): " + one.error().to_string();
  auto three = publisher_with(kReceivers);
  if (!three) return "publisher (3 receivers): " + three.error().to_string();
  auto pool = Pool::create({f.height, f.width, 4}, DType::U8, shm_pool(4));
  if (!pool) return "publisher pool: " + pool.error().to_string();
  auto publish = [&](channel::Publisher& p, std::size_t receivers) {
    return [&p, &pool, &error, receivers]() -> bool {
      auto t = p.acquire(*pool, kPeerWait);  // waits for a buffer every receiver has released
      if (!t) {
        error = "publisher acquire: " + t.error().to_string();
        return false;
      }
      auto sent = p.send(*t);
      if (!sent) error = "publisher send: " + sent.error().to_string();
      else if (sent->delivered != receivers)
        error = "publisher send: delivered to " + std::to_string(sent->delivered) + " of " + std::to_string(receivers);
      return sent && sent->delivered == receivers;
    };
  };
  const auto base_fn = publish(*one, 1), mine_fn = publish(*three, kReceivers);
  double base = std::numeric_limits<double>::max(), mine = base;
  for (int round = 0; round < kChannelRounds; ++round) {
    const double b = per_call(base_fn, CLOCK_PROCESS_CPUTIME_ID, kChannelRoundNs);
    const double m = per_call(mine_fn, CLOCK_PROCESS_CPUTIME_ID, kChannelRoundNs);
    if (b < 0 || m < 0) return error;
    base = std::min(base, b);
    mine = std::min(mine, m);
  }
  report.rows.push_back(make_row(f, "Publisher to 1 receiver (producer process cpu)",
                                 "Publisher to 3 receivers (producer process cpu)", "process cpu", base, mine,
                                 1.0 / 3.5));
  return {};
}

}  // namespace channel_bench

void run_channel_bench(BenchReport& report) {
  for (const auto& f : channel_bench::kChannelSizes) {
    std::string why = channel_bench::handoff_rows(f, report);
    if (why.empty()) why = channel_bench::receive_rows(f, report);
    if (!why.empty()) {
      report.error = std::string("frame channel benchmark at ") + f.name + " failed: " + why;
      return;
    }
  }
  if (std::string why = channel_bench::publisher_rows(report); !why.empty())
    report.error = "frame channel benchmark (Publisher) failed: " + why;
}

}  // namespace edgetensor_cli
