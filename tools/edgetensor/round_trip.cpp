// SPDX-License-Identifier: Apache-2.0
#include "round_trip.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "probe/pattern.h"
#include "text/format.h"
#include <nlohmann/json.hpp>

namespace edgetensor_cli {

using edgetensor::ErrorCode;
using edgetensor::fail;
using edgetensor::Result;
using edgetensor::TensorDyn;
using json = nlohmann::json;
namespace text = edgetensor::text;

namespace {

constexpr int kReplyTimeoutMs = 10000;
constexpr std::size_t kMaxMessage = 4096;

Result<void> send_json(int sock, const json& j, edgetensor::ArrayRef<int> fds = {}) {
  std::string s = j.dump();
  return edgetensor::ipc::send_fds(sock, std::as_bytes(std::span(s.data(), s.size())), fds);
}

Result<std::pair<json, std::vector<edgetensor::UniqueFd>>> receive_json(int sock, std::size_t max_fds) {
  std::vector<std::byte> buf(kMaxMessage);
  ET_TRY_ASSIGN(auto msg, edgetensor::ipc::receive_fds(sock, buf, max_fds));
  json j = json::parse(reinterpret_cast<const char*>(buf.data()),
                       reinterpret_cast<const char*>(buf.data()) + msg.size_bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail(ErrorCode::InvalidArgument, "malformed message (not a JSON object)");
  return std::make_pair(std::move(j), std::move(msg.fds));
}

Result<void> wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return fail(ErrorCode::Busy, text::format("peer did not answer within {} ms", timeout_ms));
  if (r < 0) return fail(edgetensor::Error::from_errno(errno, "poll"));
  return {};
}

}  // namespace

Result<std::string> cross_process_round_trip(const TensorDyn& t, const std::string& self_exe,
                                             const std::string& shm_name) {
  const std::uint32_t seed = static_cast<std::uint32_t>(::getpid()) & 0xffffu;
  ET_TRY(edgetensor::detail::write_probe_pattern(t, seed));

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(edgetensor::Error::from_errno(errno, "socketpair"));
  edgetensor::UniqueFd ours(sv[0]), theirs(sv[1]);

  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return fail(edgetensor::Error::from_errno(errno, "fork"));
  if (pid == 0) {
    // Child: the socket becomes fd 3 (dup2 clears CLOEXEC on it), then a fresh process image.
    if (::dup2(theirs.get(), 3) < 0) ::_exit(126);
    ::execl(self_exe.c_str(), "edgetensor", "peer", "--socket-fd", "3", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  theirs.reset();

  auto reap = [&](bool kill_it) {
    if (kill_it) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  };

  // A JSON message carries the pattern seed; the tensor follows with ipc::send (header + fd), or, for a
  // named POSIX shm object (which cannot be sealed, so ipc::send refuses it), the peer opens it by name.
  json req = {{"seed", seed}};
  if (shm_name.empty()) {
    req["op"] = "receive";
  } else {
    std::vector<std::uint64_t> shape(t.shape().begin(), t.shape().end());
    req.update({{"op", "open_shm"}, {"name", shm_name}, {"shape", shape},
                {"dtype", std::string(edgetensor::dtype_name(t.dtype()))}});
  }
  auto sent = send_json(ours.get(), req);
  if (sent && shm_name.empty()) sent = edgetensor::ipc::send(ours.get(), t);
  if (!sent) {
    reap(true);
    return fail(sent.error());
  }
  if (auto ready = wait_readable(ours.get(), kReplyTimeoutMs); !ready) {
    reap(true);
    return fail(ready.error());
  }
  auto reply = receive_json(ours.get(), 0);
  int status = reap(false);
  if (!reply) return fail(reply.error().code(), "peer reply: " + reply.error().message());
  const json& r = reply->first;
  if (!r.value("ok", false))
    return fail(ErrorCode::Internal, "peer: " + r.value("error", std::string("no error text")));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(ErrorCode::Internal, text::format("peer exited with status {:#x}", status));
  ET_TRY(edgetensor::detail::check_probe_pattern(t, seed + 1));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return text::format("pid {} imported {} B, verified, wrote reply; reply verified ({:.1f} ms)", pid,
                     t.extent_bytes(), ms);
}

int run_peer(int sock) {
  auto reply_error = [&](const std::string& text) {
    (void)send_json(sock, {{"ok", false}, {"error", text}});
    return 1;
  };
  auto msg = receive_json(sock, 0);
  if (!msg) return reply_error(msg.error().to_string());
  try {
    const json& req = msg->first;
    auto seed = req.at("seed").get<std::uint32_t>();
    Result<TensorDyn> t = fail(ErrorCode::InvalidArgument, "unknown op");
    if (req.at("op") == "receive") {
      t = edgetensor::ipc::receive(sock);
    } else if (req.at("op") == "open_shm") {
      auto dtype = edgetensor::dtype_from_name(req.at("dtype").get<std::string>());
      if (!dtype) return reply_error("unknown dtype");
      auto shape64 = req.at("shape").get<std::vector<std::uint64_t>>();
      std::vector<std::size_t> shape(shape64.begin(), shape64.end());
      // Our own parent made the object and is trusted not to truncate it (a named object cannot be sealed).
      t = edgetensor::shm::open(req.at("name").get<std::string>(), shape, *dtype, false,
                                edgetensor::ImportOptions{.allow_shrinkable = true});
    }
    if (!t) return reply_error(req.at("op").get<std::string>() + ": " + t.error().to_string());
    if (auto ok = edgetensor::detail::check_probe_pattern(*t, seed); !ok) return reply_error("verify: " + ok.error().to_string());
    if (auto ok = edgetensor::detail::write_probe_pattern(*t, seed + 1); !ok) return reply_error("reply write: " + ok.error().to_string());
    auto sent = send_json(sock, {{"ok", true}, {"memory", std::string(edgetensor::memory_kind_name(t->memory()))}});
    return sent ? 0 : 2;
  } catch (const std::exception& e) {
    return reply_error(std::string("malformed request: ") + e.what());
  }
}

}  // namespace edgetensor_cli
