// SPDX-License-Identifier: Apache-2.0
// Two processes, possibly of two architectures, exchange tensors with ipc::send/receive and check every
// header field (dtype, shape, strides, offset, name, image metadata, memory kind, buffer size) and every
// byte of each view. The receiving side execs the sending side (--peer), so under QEMU user mode an
// armhf receiver starts an arm64 sender through the kernel's binfmt_misc entry. Each side then plays
// the other role once: the receiver sends every case back and the sender checks them, so one run tests
// send and receive on both architectures.
//
//   edgetensor_ipc_exchange receive --peer <edgetensor_ipc_exchange of any architecture>
//   edgetensor_ipc_exchange send --socket-fd <fd>     (internal: the exec'd side)
//
// Exit 0 when every case matched in both directions. Public API only.
#include <edgetensor/edgetensor.h>
#include <edgetensor/ipc.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace edgetensor;

namespace {

#if defined(__aarch64__)
constexpr const char* kArch = "arm64";
#elif defined(__arm__)
constexpr const char* kArch = "armhf";
#elif defined(__x86_64__)
constexpr const char* kArch = "x86_64";
#else
constexpr const char* kArch = "other";
#endif

// One case: a buffer of `alloc_shape` elements filled with a pattern, and the view of it that is sent.
struct Case {
  const char* what;
  DType dtype;
  std::vector<std::size_t> alloc_shape;
  std::size_t view_offset_bytes;
  std::vector<std::size_t> view_shape;
  std::vector<std::int64_t> view_strides;  // bytes; empty = C-contiguous
  std::string name;
  // TODO(issue 12, IPC v2): image layout, colorimetry, quantization per case.
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"f32 [2,3,4] contiguous", DType::F32, {2, 3, 4}, 0, {2, 3, 4}, {}, "cube"},
      {"u8 rows 5..8 of [16,33] (offset 165 B)", DType::U8, {16, 33}, 5 * 33, {4, 33}, {}, "rows"},
      {"i64 [3,5] transposed view of [5,3]", DType::I64, {5, 3}, 0, {3, 5}, {8, 24}, "transposed"},
      {"nv12 640x480 image", DType::U8, {720, 640}, 0, {720, 640}, {}, "camera-\xc3\xa9/frame"},
      {"u16 last element of 3 MiB, 80-byte name cut to 63", DType::U16, {1572864}, 2 * 1572863, {1}, {},
       std::string(80, 'n')},
      {"f64 rank 8", DType::F64, {1, 2, 1, 2, 1, 2, 1, 3}, 0, {1, 2, 1, 2, 1, 2, 1, 3}, {}, "rank8"},
      {"u32 every 3rd of 300 (stride 12 B, offset 8 B)", DType::U32, {300}, 8, {99}, {12}, "strided"},
  };
  return all;
}

// The pattern depends on the case and the byte's index in the buffer, so a wrong offset or stride
// shows as wrong bytes.
std::byte pattern(std::size_t case_index, std::size_t i) {
  return static_cast<std::byte>((i * 131u + case_index * 17u + (i >> 8) * 7u) & 0xffu);
}

Result<TensorDyn> make(std::size_t index) {
  const Case& c = cases().at(index);
  ET_TRY_ASSIGN(auto whole, TensorDyn::allocate(c.alloc_shape, c.dtype, {.memory = MemoryKind::Shm, .name = c.name}));
  {
    ET_TRY_ASSIGN(auto map, whole.map_write());
    auto bytes = map.bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern(index, i);
  }
  ET_TRY_ASSIGN(auto view, whole.view(c.view_offset_bytes, c.view_shape, c.view_strides));
  view.set_name(c.name);
  return view;
}

template <class T>
std::string join(std::span<const T> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Compares a received tensor with the sender's, rebuilt here. Returns "" or what differs.
std::string compare(const TensorDyn& got, const TensorDyn& want) {
  std::string diff;
  auto field = [&](const char* name, const std::string& g, const std::string& w) {
    if (g != w) diff += std::string(diff.empty() ? "" : "; ") + name + " " + g + " != " + w;
  };
  field("dtype", std::string(dtype_name(got.dtype())), std::string(dtype_name(want.dtype())));
  field("shape", join(got.shape()), join(want.shape()));
  field("strides", join(got.strides()), join(want.strides()));
  field("offset", std::to_string(got.offset_bytes()), std::to_string(want.offset_bytes()));
  field("extent", std::to_string(got.extent_bytes()), std::to_string(want.extent_bytes()));
  field("buffer", std::to_string(got.buffer_bytes()), std::to_string(want.buffer_bytes()));
  field("name", got.name(), want.name().substr(0, ipc::kMaxWireNameBytes));
  field("memory", std::string(memory_kind_name(got.memory())), "shm");
  if (!diff.empty()) return diff;
  auto g = got.map_read();
  auto w = want.map_read();
  if (!g || !w) return "map_read: " + (!g ? g.error().to_string() : w.error().to_string());
  auto gb = g->bytes();
  auto wb = w->bytes();
  if (gb.size() != wb.size()) return "map extents differ";
  for (std::size_t i = 0; i < gb.size(); ++i)
    if (gb[i] != wb[i])
      return "byte " + std::to_string(i) + " of the extent: " + std::to_string(static_cast<int>(gb[i])) +
             " != " + std::to_string(static_cast<int>(wb[i]));
  return {};
}

// Sends every case on `fd`. Returns the number of failures.
int send_all(int fd, const char* peer_role) {
  int failed = 0;
  for (std::size_t i = 0; i < cases().size(); ++i) {
    auto t = make(i);
    auto sent = t ? ipc::send(fd, *t) : Result<void>(fail(t.error()));
    if (!sent) {
      std::printf("FAIL %s send to %s, case %zu (%s): %s\n", kArch, peer_role, i, cases()[i].what,
                  sent.error().to_string().c_str());
      ++failed;
    }
  }
  return failed;
}

// Receives every case from `fd` and checks it. Returns the number of failures.
int receive_all(int fd, const char* peer_role) {
  int failed = 0;
  for (std::size_t i = 0; i < cases().size(); ++i) {
    auto got = ipc::receive(fd);
    auto want = make(i);
    std::string diff = !got ? got.error().to_string() : !want ? want.error().to_string() : compare(*got, *want);
    std::printf("%s %s received from %s, case %zu (%s)%s%s\n", diff.empty() ? "ok  " : "FAIL", kArch, peer_role, i,
                cases()[i].what, diff.empty() ? "" : ": ", diff.c_str());
    if (!diff.empty()) ++failed;
  }
  return failed;
}

int run_send(int fd) {
  int failed = send_all(fd, "receiver");
  failed += receive_all(fd, "receiver");
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

int run_receive(const char* peer) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    std::perror("socketpair");
    return 2;
  }
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    return 2;
  }
  if (pid == 0) {
    int child = ::dup(sv[1]);  // without CLOEXEC: the peer inherits it
    std::string fd = std::to_string(child);
    ::execl(peer, peer, "send", "--socket-fd", fd.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "exec %s: %s\n", peer, std::strerror(errno));
    ::_exit(127);
  }
  ::close(sv[1]);
  int failed = receive_all(sv[0], "sender");
  failed += send_all(sv[0], "sender");
  ::close(sv[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("FAIL the sender (%s) ended with status %d\n", peer, status);
    ++failed;
  }
  std::printf("ipc_exchange: %s receiver with %s: %zu cases each way, %s\n", kArch, peer, cases().size(),
              failed == 0 ? "all matched" : "MISMATCHES");
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  ::alarm(120);  // a side that stops early must not leave the other blocked forever (SIGALRM ends it)
  std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "receive" && argc == 4 && std::string_view(argv[2]) == "--peer") return run_receive(argv[3]);
  if (mode == "send" && argc == 4 && std::string_view(argv[2]) == "--socket-fd") return run_send(std::atoi(argv[3]));
  std::fprintf(stderr, "usage: %s receive --peer <binary> | send --socket-fd <fd>\n", argv[0]);
  return 2;
}
