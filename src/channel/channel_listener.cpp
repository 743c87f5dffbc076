// SPDX-License-Identifier: Apache-2.0
// Named sockets of the frame channel (channel.h: Listener, connect): bind with a file mode, a stale
// socket file replaced, peers checked against an allow rule by SO_PEERCRED. docs/CHANNEL.md, "Named sockets".
#include <edgetensor/channel.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>

#include "text/format.h"

#include "base/log_internal.h"
#include "channel/channel_socket.h"
#include "ipc/ipc_wait.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace channel {
namespace {

struct Address {
  sockaddr_un addr{};
  socklen_t len = 0;
  bool abstract = false;
};

// sun_path holds a file path and its NUL, or '\0' and an abstract name (unix(7)).
Result<Address> make_address(const std::string& path, std::string_view who) {
  constexpr std::size_t room = sizeof(sockaddr_un::sun_path);
  if (path.empty() || path == "@")
    return fail(ErrorCode::InvalidArgument, text::format("{}: the socket path is empty", who));
  if (path.find('\0') != std::string::npos)
    return fail(ErrorCode::InvalidArgument, text::format("{}: the socket path has a NUL byte at {}", who, path.find('\0')));
  Address a;
  a.addr.sun_family = AF_UNIX;
  a.abstract = path[0] == '@';
  if (a.abstract) {
    const std::size_t n = path.size() - 1;
    if (n > room - 1)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: abstract socket name '{}' is {} B; sun_path holds at most {} B after its leading NUL",
                               who, path, n, room - 1));
    std::memcpy(a.addr.sun_path + 1, path.data() + 1, n);
    a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  } else {
    if (path.size() > room - 1)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: socket path '{}' is {} B; sun_path holds at most {} B and a NUL", who, path,
                               path.size(), room - 1));
    std::memcpy(a.addr.sun_path, path.data(), path.size());
    a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  }
  return a;
}

Result<UniqueFd> seqpacket_socket(std::string_view who, int flags = 0) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0);
  if (fd < 0) return fail(Error::from_errno(errno, text::format("{}: socket(AF_UNIX, SOCK_SEQPACKET)", who)));
  return UniqueFd(fd);
}

// ECONNREFUSED from a connect to a socket file: nobody accepts on it (its listener is gone).
bool nobody_listens(const Address& a) {
  auto probe = seqpacket_socket("probe");
  if (!probe) return false;
  return ::connect(probe->get(), reinterpret_cast<const sockaddr*>(&a.addr), a.len) != 0 && errno == ECONNREFUSED;
}

bool allowed(const AllowRule& rule, const ucred& c) {
  if (rule.same_uid && c.uid == ::geteuid()) return true;
  return std::find(rule.uids.begin(), rule.uids.end(), c.uid) != rule.uids.end() ||
         std::find(rule.gids.begin(), rule.gids.end(), c.gid) != rule.gids.end();
}

}  // namespace

struct Listener::State {
  UniqueFd socket;
  std::string path;
  ListenOptions options;
  dev_t dev = 0;  // the socket file bound (unlinked at the end only if the path still names it)
  ino_t ino = 0;
  bool abstract = false;
  mutable std::mutex mutex;  // accept serialised; guards stats
  ListenerStats stats;

  ~State() {
    struct stat st{};
    if (!abstract && ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino &&
        ::unlink(path.c_str()) != 0)
      edgetensor::detail::log(LogLevel::Warning, "channel::Listener: unlink('{}') failed: {}", path,
                              edgetensor::errno_name(errno));
  }
};

Result<Listener> Listener::create(const std::string& path, const ListenOptions& options) {
  const std::string who = text::format("channel::Listener '{}'", path);
  if ((options.mode & ~0777u) != 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: mode 0{:o} has bits past 0777", who, options.mode));
  constexpr int kMaxBacklog = 1 << 12;  // Linux's default net.core.somaxconn: the kernel caps larger ones
  if (options.backlog < 1 || options.backlog > kMaxBacklog)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: backlog {} is outside 1..{}", who, options.backlog, kMaxBacklog));
  ET_TRY_ASSIGN(const Address a, make_address(path, who));
  ET_TRY_ASSIGN(UniqueFd fd, seqpacket_socket(who, SOCK_NONBLOCK));  // accept4 never blocks: accept polls
  auto bind_it = [&] { return ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0 ? 0 : errno; };
  int e = bind_it();
  if (e == EADDRINUSE && a.abstract)
    return fail(Error(ErrorCode::AlreadyExists, text::format("{}: the abstract name is in use by a live socket", who), e));
  if (e == EADDRINUSE) {
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode))
      return fail(Error(ErrorCode::AlreadyExists,
                        text::format("{}: the path exists and is not a socket (mode 0{:o}); left untouched", who,
                                     st.st_mode), e));
    if (!nobody_listens(a))
      return fail(Error(ErrorCode::AlreadyExists,
                        text::format("{}: a live listener has the path (a connect reached it); not replaced", who), e));
    // Stale: its listener died. Unlink only a socket; a second creator racing us fails its bind below.
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && ::unlink(path.c_str()) != 0 && errno != ENOENT)
      return fail(Error::from_errno(errno, text::format("{}: unlink of the stale socket file", who)));
    e = bind_it();
    if (e == EADDRINUSE)
      return fail(Error(ErrorCode::AlreadyExists,
                        text::format("{}: another listener bound the path while the stale file was replaced", who), e));
  }
  if (e != 0) return fail(Error::from_errno(e, text::format("{}: bind", who)));
  auto state = std::make_unique<State>();
  state->path = path;
  state->options = options;
  state->abstract = a.abstract;
  if (!a.abstract) {
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0) {
      state->dev = st.st_dev;
      state->ino = st.st_ino;
    }
    // Before listen(): until then a connect is refused, so no peer gets in under the umask's mode.
    if (::chmod(path.c_str(), options.mode) != 0)
      return fail(Error::from_errno(errno, text::format("{}: chmod 0{:o}", who, options.mode)));
  }
  state->socket = std::move(fd);
  if (::listen(state->socket.get(), options.backlog) != 0)
    return fail(Error::from_errno(errno, text::format("{}: listen", who)));
  return Listener(std::move(state));
}

Listener::Listener(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Listener::Listener(Listener&& other) noexcept = default;
Listener& Listener::operator=(Listener&& other) noexcept = default;
Listener::~Listener() = default;

int Listener::fd() const noexcept { return state_ ? state_->socket.get() : -1; }

const std::string& Listener::path() const noexcept {
  static const std::string none;
  return state_ ? state_->path : none;
}

ListenerStats Listener::stats() const {
  if (!state_) return {};
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

Result<UniqueFd> Listener::accept(std::chrono::milliseconds timeout) {
  if (!state_) return fail(ErrorCode::FailedPrecondition, "channel::Listener: moved-from");
  State& s = *state_;
  const std::string_view who = s.path;
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("channel::Listener '{}': accept timeout {} ms is negative", who, timeout.count()));
  std::lock_guard lock(s.mutex);
  const edgetensor::detail::Wait wait{edgetensor::detail::deadline_after(timeout), timeout, nullptr};
  for (;;) {
    const int c = ::accept4(s.socket.get(), nullptr, nullptr, SOCK_CLOEXEC);  // blocking, as socket_pair()'s
    if (c < 0) {
      if (errno == ECONNABORTED || errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return fail(Error::from_errno(errno, text::format("channel::Listener '{}': accept4", who)));
      pollfd p{s.socket.get(), POLLIN, 0};
      ET_TRY_ASSIGN(const int n, edgetensor::detail::poll_until(std::span(&p, 1), wait, "channel::Listener"));
      if (n == 0)
        return fail(Error(ErrorCode::Busy,
                          text::format("channel::Listener '{}': no allowed peer connected within {} ms", who,
                                       timeout.count()), timeout.count() == 0 ? EAGAIN : ETIMEDOUT));
      continue;
    }
    UniqueFd peer(c);
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
      return fail(Error::from_errno(errno, text::format("channel::Listener '{}': getsockopt(SO_PEERCRED)", who)));
    if (!allowed(s.options.allow, cred)) {
      ++s.stats.refused;
      s.stats.last_refused = PeerCredentials{cred.pid, cred.uid, cred.gid};
      edgetensor::detail::log(LogLevel::Warning,
                              "channel::Listener '{}': refused a peer (pid {}, uid {}, gid {}): not allowed by the "
                              "rule (same uid {}: {}, uids listed {}, gids listed {}); closed",
                              who, cred.pid, cred.uid, cred.gid, ::geteuid(), s.options.allow.same_uid,
                              s.options.allow.uids.size(), s.options.allow.gids.size());
      edgetensor::detail::send_refusal(
          c, edgetensor::detail::RefuseReason::NotAllowed,
          text::format("uid {} (gid {}) is not allowed to connect to '{}': it accepts {}the uids and primary gids "
                       "it lists (edgetensorsink allow-uids, allow-gids; ListenOptions::allow)",
                       cred.uid, cred.gid, who,
                       s.options.allow.same_uid ? text::format("its owner's uid {} and ", ::geteuid()) : std::string()));
      continue;  // closed by `peer`
    }
    // A peer that left before we took it (e.g. another Listener::create probing for a stale file).
    // Hung up with nothing queued: a peek reads the end (0). One that sent its hello first stays.
    pollfd p{c, POLLIN | POLLRDHUP, 0};
    std::byte b{};
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP)) != 0 &&
        ::recv(c, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
      ++s.stats.gone;
      continue;
    }
    ++s.stats.accepted;
    return peer;
  }
}

Result<UniqueFd> connect(const std::string& path, std::chrono::milliseconds timeout) {
  const std::string who = text::format("channel::connect '{}'", path);
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: timeout {} ms is negative", who, timeout.count()));
  ET_TRY_ASSIGN(const Address a, make_address(path, who));
  ET_TRY_ASSIGN(UniqueFd fd, seqpacket_socket(who));
  // A full accept queue makes connect wait up to SO_SNDTIMEO (AF_UNIX), then EAGAIN; 0 there waits forever.
  const auto ms = std::min<std::chrono::milliseconds::rep>(std::max<std::chrono::milliseconds::rep>(timeout.count(), 1),
                                                           std::chrono::milliseconds::rep{1} << 40);
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
  if (timeout != std::chrono::milliseconds::max() &&
      ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
    return fail(Error::from_errno(errno, text::format("{}: setsockopt(SO_SNDTIMEO)", who)));
  int r;
  do {
    r = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.addr), a.len);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int e = errno;
    struct stat st{};
    if ((e == ECONNREFUSED || e == ENOTSOCK) && !a.abstract && ::stat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode))
      return fail(Error(ErrorCode::FailedPrecondition,
                        text::format("{}: the path exists and is not a socket (mode 0{:o}): no listener's", who,
                                     static_cast<unsigned>(st.st_mode)),
                        e));
    if (e == ECONNREFUSED)
      return fail(Error(ErrorCode::Unavailable,
                        text::format("{}: nobody listens there (ECONNREFUSED: a stale socket file, or a listener that "
                                     "has not started)", who), e));
    if (e == EACCES && !a.abstract && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      return fail(Error::from_errno(
          e, text::format("{}: connect: the socket file's mode 0{:o} (owner uid {}, gid {}) does not let uid {} (gid {}) "
                          "write to it, which connect needs (the producer's edgetensorsink socket-mode, "
                          "ListenOptions::mode; the directory needs search permission too)",
                          who, static_cast<unsigned>(st.st_mode & 07777), st.st_uid, st.st_gid, ::geteuid(), ::getegid())));
    if (e == EAGAIN)  // the errno of every wait that ran out (accept, receive): ETIMEDOUT, EAGAIN for 0
      return fail(Error(ErrorCode::Busy,
                        text::format("{}: the listener's accept queue stayed full for {} ms", who, timeout.count()),
                        timeout.count() == 0 ? EAGAIN : ETIMEDOUT));
    return fail(Error::from_errno(e, text::format("{}: connect", who)));
  }
  timeval zero{};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &zero, sizeof zero);  // send_within polls; no timeout left behind
  return fd;
}

}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
