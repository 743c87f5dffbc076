// SPDX-License-Identifier: Apache-2.0
// Named sockets of the frame channel (issue 25): the socket file's mode, peers checked by SO_PEERCRED
// against the allow rule (a refused peer run under another uid by fork + setresuid when root), a stale
// socket file replaced, a live one and a non-socket path left alone, long paths, abstract names, the
// accept timeout and its pollable fd, connect to a full queue, and no fd left behind.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "channel/channel_wire.h"
#include "support/test_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kNobody = 65534;

// A fresh path per test, removed at the end whatever is there.
struct TempPath {
  std::string path;
  explicit TempPath(const char* tag) {
    path = "/tmp/et-listen-" + std::to_string(::getpid()) + "-" + tag;
    ::unlink(path.c_str());
  }
  ~TempPath() { ::unlink(path.c_str()); }
};

std::uint32_t file_mode(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return 0xFFFFFFFF;
  return st.st_mode;
}

// Binds `path` and closes the socket without unlinking: the file a dead producer leaves.
void leave_stale_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ::close(fd);
  ASSERT_TRUE(S_ISSOCK(file_mode(path)));
}

// Forks a child that drops to uid/gid nobody and connects to `path`; it exits 0 when the parent closes
// its end with nothing sent, 6 when it sent a refuse naming uid 65534 first (a refused peer), 3 when the
// connect failed, 4 when the connection was kept open for 5 s, 5 for anything else.
pid_t connect_as_nobody(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::setresgid(kNobody, kNobody, kNobody) != 0 || ::setresuid(kNobody, kNobody, kNobody) != 0) ::_exit(2);
  auto fd = channel::connect(path, 1000ms);
  if (!fd) ::_exit(3);
  bool refused = false;
  for (;;) {
    pollfd p{fd->get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) ::_exit(4);
    std::byte b[512];
    const ssize_t n = ::recv(fd->get(), b, sizeof b, 0);
    if (n == 0) ::_exit(refused ? 6 : 0);
    if (n < 0 || refused) ::_exit(5);
    auto r = detail::decode_refuse(std::span<const std::byte>(b, static_cast<std::size_t>(n)));
    if (!r || r->reason != static_cast<std::uint32_t>(detail::RefuseReason::NotAllowed) ||
        r->text.find("uid 65534 (gid 65534) is not allowed to connect to '" + path + "'") != 0)
      ::_exit(5);
    refused = true;
  }
}

int wait_exit(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ChannelListener, SocketFileModeIsTheOption) {
  TempPath p("mode");
  {
    auto l = channel::Listener::create(p.path);
    ASSERT_OK(l);
    EXPECT_TRUE(S_ISSOCK(file_mode(p.path)));
    EXPECT_EQ(file_mode(p.path) & 07777, 0600u) << "default: owner only";
  }
  EXPECT_EQ(file_mode(p.path), 0xFFFFFFFF) << "the Listener unlinks its own file";
  auto l = channel::Listener::create(p.path, {.mode = 0660});
  ASSERT_OK(l);
  EXPECT_EQ(file_mode(p.path) & 07777, 0660u);
  auto bad = channel::Listener::create(p.path + "x", {.mode = 01777});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(bad.error().message().find("01777"), std::string::npos) << bad.error().message();
  auto backlog = channel::Listener::create(p.path + "x", {.backlog = 0});
  ASSERT_FALSE(backlog);
  EXPECT_NE(backlog.error().message().find("backlog 0 is outside 1..4096"), std::string::npos);
}

TEST(ChannelListener, AcceptedPeerCarriesAChannel) {
  TempPath p("chan");
  auto l = channel::Listener::create(p.path);
  ASSERT_OK(l);
  auto c = channel::connect(p.path);
  ASSERT_OK(c);
  pollfd pf{l->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pf, 1, 1000), 1) << "the listening fd polls readable with a peer waiting";
  auto a = l->accept(0ms);
  ASSERT_OK(a);
  auto sender = channel::Sender::create(std::move(*a), {.name = "named"});
  auto receiver = channel::Receiver::create(std::move(*c), {.name = "named"});
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  auto t = TensorDyn::allocate({64}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  ASSERT_OK(sender->send(*t));
  auto d = receiver->receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->tensor.shape()[0], 64u);
  EXPECT_EQ(l->stats().accepted, 1u);
}

TEST(ChannelListener, AcceptTimesOutWithBusy) {
  TempPath p("timeout");
  auto l = channel::Listener::create(p.path);
  ASSERT_OK(l);
  const auto start = std::chrono::steady_clock::now();
  auto a = l->accept(60ms);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code(), ErrorCode::Busy);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 60ms);
  auto now = l->accept(0ms);
  ASSERT_FALSE(now);
  EXPECT_EQ(now.error().code(), ErrorCode::Busy);
  auto negative = l->accept(-1ms);
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().code(), ErrorCode::InvalidArgument);
}

// A full accept queue: connect waits its timeout, then Busy with the errno of every wait that ran out
// (ETIMEDOUT; EAGAIN for 0), as accept and receive say it; Python makes that edgetensor.TimeoutError.
TEST(ChannelListener, ConnectToAFullQueueTimesOutWithBusyEtimedout) {
  TempPath p("full");
  auto l = channel::Listener::create(p.path, {.backlog = 1});
  ASSERT_OK(l);
  std::vector<UniqueFd> queued;
  Result<UniqueFd> c = fail(ErrorCode::Internal, "not tried");
  for (int i = 0; i < 8; ++i) {  // Linux queues backlog + 1 peers on an AF_UNIX listener
    const auto start = std::chrono::steady_clock::now();
    c = channel::connect(p.path, 60ms);
    if (!c) {
      EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
      break;
    }
    queued.push_back(std::move(*c));
  }
  ASSERT_FALSE(c) << "8 peers queued on a listener of backlog 1";
  EXPECT_EQ(c.error().code(), ErrorCode::Busy);
  EXPECT_EQ(c.error().sys_errno(), ETIMEDOUT);
  EXPECT_NE(c.error().message().find("accept queue stayed full for 60 ms"), std::string::npos) << c.error().message();
  auto now = channel::connect(p.path, 0ms);
  ASSERT_FALSE(now);
  EXPECT_EQ(now.error().code(), ErrorCode::Busy);
  EXPECT_EQ(now.error().sys_errno(), EAGAIN);
}

TEST(ChannelListener, PeerOfAnotherUidIsRefusedClosedLoggedAndCounted) {
  if (::geteuid() != 0) GTEST_SKIP() << "running a peer under another uid needs root (setresuid)";
  TempPath p("refuse");
  std::mutex m;
  std::vector<std::string> logged;
  auto old = set_log_callback([&](LogLevel level, std::string_view line) {
    std::lock_guard lock(m);
    if (level == LogLevel::Warning) logged.emplace_back(line);
  });
  {
    // 0666: the file lets nobody connect; only the credentials check refuses it.
    auto l = channel::Listener::create(p.path, {.mode = 0666});
    ASSERT_OK(l);
    const pid_t child = connect_as_nobody(p.path);
    ASSERT_GT(child, 0);
    // accept keeps waiting past a refused peer: Busy at each timeout, until the child has connected.
    for (int i = 0; i < 100 && l->stats().refused == 0; ++i) {
      auto a = l->accept(30ms);
      ASSERT_FALSE(a) << "a peer of uid 65534 was accepted";
      EXPECT_EQ(a.error().code(), ErrorCode::Busy);
    }
    EXPECT_EQ(wait_exit(child), 6) << "the refused peer was told why (a refuse naming its uid), then closed";
    const auto s = l->stats();
    EXPECT_EQ(s.refused, 1u);
    EXPECT_EQ(s.accepted, 0u);
    ASSERT_TRUE(s.last_refused.has_value());
    EXPECT_EQ(s.last_refused->uid, kNobody);
    EXPECT_EQ(s.last_refused->gid, kNobody);
    EXPECT_EQ(s.last_refused->pid, child);
  }
  set_log_callback(old);
  std::lock_guard lock(m);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("uid 65534"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find(p.path), std::string::npos) << logged[0];
}

TEST(ChannelListener, UidOnTheAllowListIsAccepted) {
  if (::geteuid() != 0) GTEST_SKIP() << "running a peer under another uid needs root (setresuid)";
  TempPath p("allow");
  auto l = channel::Listener::create(p.path, {.mode = 0666, .allow = {.same_uid = false, .uids = {kNobody}}});
  ASSERT_OK(l);
  const pid_t child = connect_as_nobody(p.path);
  ASSERT_GT(child, 0);
  auto a = l->accept(1500ms);
  ASSERT_OK(a);
  a->reset();  // the child sees the end and exits 0
  EXPECT_EQ(wait_exit(child), 0);
  EXPECT_EQ(l->stats().accepted, 1u);
  // And by group: this process (uid 0) is refused by a rule of gid 65534 alone.
  auto g = channel::Listener::create(p.path + "g", {.allow = {.same_uid = false, .gids = {kNobody}}});
  ASSERT_OK(g);
  auto c = channel::connect(p.path + "g");
  ASSERT_OK(c);
  EXPECT_FALSE(g->accept(50ms));
  EXPECT_EQ(g->stats().refused, 1u);
}

TEST(ChannelListener, StaleSocketFileIsReplaced) {
  TempPath p("stale");
  leave_stale_socket(p.path);
  auto before = channel::connect(p.path, 100ms);
  ASSERT_FALSE(before);
  EXPECT_EQ(before.error().code(), ErrorCode::Unavailable) << before.error().to_string();
  auto l = channel::Listener::create(p.path);
  ASSERT_OK(l);
  auto c = channel::connect(p.path);
  ASSERT_OK(c);
  ASSERT_OK(l->accept(1s));
}

TEST(ChannelListener, LiveSocketIsRefusedNamingThePath) {
  TempPath p("live");
  auto live = channel::Listener::create(p.path);
  ASSERT_OK(live);
  auto second = channel::Listener::create(p.path);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), ErrorCode::AlreadyExists);
  EXPECT_NE(second.error().message().find(p.path), std::string::npos) << second.error().message();
  // The live one keeps its file and its peers; the probe's connection is skipped, not handed out.
  EXPECT_TRUE(S_ISSOCK(file_mode(p.path)));
  EXPECT_FALSE(live->accept(20ms));
  EXPECT_EQ(live->stats().gone, 1u);
  auto c = channel::connect(p.path);
  ASSERT_OK(c);
  ASSERT_OK(live->accept(1s));
}

TEST(ChannelListener, PathThatIsNotASocketIsNeverUnlinked) {
  TempPath p("file");
  { std::ofstream(p.path) << "keep me"; }
  auto l = channel::Listener::create(p.path);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code(), ErrorCode::AlreadyExists);
  EXPECT_NE(l.error().message().find("not a socket"), std::string::npos) << l.error().message();
  std::string content;
  std::getline(std::ifstream(p.path), content);
  EXPECT_EQ(content, "keep me");
  TempPath d("dir");
  ASSERT_EQ(::mkdir(d.path.c_str(), 0700), 0);
  auto ld = channel::Listener::create(d.path);
  ASSERT_FALSE(ld);
  EXPECT_TRUE(S_ISDIR(file_mode(d.path)));
  ::rmdir(d.path.c_str());
}

// connect() to a path that is no socket says so (the listener's words), not "nobody listens there".
TEST(ChannelListener, ConnectToAPathThatIsNotASocketSaysSo) {
  TempPath p("plain");
  { std::ofstream(p.path) << "x"; }
  auto c = channel::connect(p.path, 100ms);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::FailedPrecondition) << c.error().to_string();
  EXPECT_NE(c.error().message().find("is not a socket (mode 0100"), std::string::npos) << c.error().message();
  TempPath d("adir");
  ASSERT_EQ(::mkdir(d.path.c_str(), 0700), 0);
  auto cd = channel::connect(d.path, 100ms);
  ASSERT_FALSE(cd);
  EXPECT_NE(cd.error().message().find("is not a socket (mode 040"), std::string::npos) << cd.error().message();
  ::rmdir(d.path.c_str());
}

TEST(ChannelListener, PathLongerThanSunPathIsRefusedNamingLengths) {
  const std::string longest(sizeof(sockaddr_un::sun_path), 'a');  // no room for the NUL
  auto l = channel::Listener::create("/tmp/" + longest);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code(), ErrorCode::InvalidArgument);
  const std::string len = std::to_string(longest.size() + 5);
  const std::string limit = std::to_string(sizeof(sockaddr_un::sun_path) - 1);
  EXPECT_NE(l.error().message().find(len + " B"), std::string::npos) << l.error().message();
  EXPECT_NE(l.error().message().find("at most " + limit), std::string::npos) << l.error().message();
  auto c = channel::connect("/tmp/" + longest);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::InvalidArgument);
  auto abstract = channel::Listener::create("@" + longest);
  ASSERT_FALSE(abstract);
  EXPECT_EQ(abstract.error().code(), ErrorCode::InvalidArgument);
  for (const std::string& bad : {std::string(), std::string("@"), std::string("/tmp/a\0b", 8)}) {
    auto e = channel::Listener::create(bad);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code(), ErrorCode::InvalidArgument);
  }
  auto missing = channel::connect("/tmp/et-listen-no-such-socket");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::NotFound);
}

TEST(ChannelListener, AbstractNameHasNoFileAndIsExclusive) {
  const std::string name = "@et-listen-" + std::to_string(::getpid());
  auto l = channel::Listener::create(name);
  ASSERT_OK(l);
  auto again = channel::Listener::create(name);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::AlreadyExists);
  auto c = channel::connect(name);
  ASSERT_OK(c);
  ASSERT_OK(l->accept(1s));
  l = channel::Listener::create(name + "-2");  // the first one goes: its name is free again
  ASSERT_OK(l);
  ASSERT_OK(channel::Listener::create(name));
}

TEST(ChannelListener, NoFdLeftBehind) {
  TempPath p("fds");
  leave_stale_socket(p.path);
  const int before = et_test::open_fd_count();
  {
    auto l = channel::Listener::create(p.path);  // replaces the stale file: a probe socket
    ASSERT_OK(l);
    EXPECT_FALSE(channel::Listener::create(p.path));  // live: another probe
    EXPECT_FALSE(l->accept(0ms));                     // the probe's connection, skipped
    for (int i = 0; i < 3; ++i) {
      auto c = channel::connect(p.path);
      ASSERT_OK(c);
      ASSERT_OK(l->accept(1s));
    }
    EXPECT_FALSE(l->accept(10ms));
  }
  EXPECT_FALSE(channel::connect(p.path));
  EXPECT_EQ(et_test::open_fd_count(), before);
}

}  // namespace
