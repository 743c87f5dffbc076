// SPDX-License-Identifier: Apache-2.0
// ipc::send / ipc::receive (src/ipc/ipc_tensor.cpp) and the header codec (src/ipc/ipc_wire.h):
// round trips of tensors and views, and every malformed message refused with its field named.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "ipc/ipc_wire.h"
#include "support/test_support.h"

using namespace edgetensor;
using et_test::open_fd_count;

namespace {

struct Pair {
  explicit Pair(int type = SOCK_SEQPACKET) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
    a = UniqueFd(sv[0]);
    b = UniqueFd(sv[1]);
  }
  UniqueFd a, b;
};

detail::WireHeader valid_header(std::size_t bytes) {
  detail::WireHeader h;
  h.version = ipc::kTensorMessageVersion;
  h.header_bytes = detail::kWireHeaderBytes;
  h.dtype = static_cast<std::uint8_t>(DType::U8);
  h.rank = 1;
  h.memory = static_cast<std::uint8_t>(MemoryKind::Shm);
  h.shape[0] = bytes;
  h.strides[0] = 1;
  return h;
}

UniqueFd sealed_memfd(std::size_t size, unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW) {
  UniqueFd fd(::memfd_create("et-ipc-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  if (seals) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seals), 0);
  }
  return fd;
}

// Sends a raw header (and fds) as a hostile or broken sender would.
void send_raw(int sock, const detail::WireHeader& h, std::initializer_list<int> fds, std::size_t size = 0) {
  auto bytes = detail::encode_header(h);
  std::span<const std::byte> span(bytes.data(), size ? size : bytes.size());
  ASSERT_OK(ipc::send_fds(sock, span, fds));
}

}  // namespace

TEST(IpcTensor, ShmTensorRoundTripsWithViewImageAndName) {
  const int fds = open_fd_count();
  {
    auto t = TensorDyn::allocate({4, 8, 3}, DType::U16, {.memory = MemoryKind::Shm, .name = "frame-0"});
    ASSERT_OK(t);
    {
      auto m = t->map_write();
      ASSERT_OK(m);
      for (std::size_t i = 0; i < m->extent_bytes(); ++i) m->bytes()[i] = std::byte(i & 0xff);
    }
    auto v = t->batch(2);
    ASSERT_OK(v);
    v->set_name("frame-0/batch-2");
    // TODO(issue 12, IPC v2): attach an image layout, colorimetry and quantization here.
    Pair p;
    ASSERT_OK(ipc::send(p.a.get(), *v));
    auto r = ipc::receive(p.b.get());
    ASSERT_OK(r);
    EXPECT_EQ(r->dtype(), DType::U16);
    EXPECT_EQ(std::vector<std::size_t>(r->shape().begin(), r->shape().end()), (std::vector<std::size_t>{8, 3}));
    EXPECT_EQ(std::vector<std::int64_t>(r->strides().begin(), r->strides().end()), (std::vector<std::int64_t>{6, 2}));
    EXPECT_EQ(r->offset_bytes(), v->offset_bytes());
    EXPECT_EQ(r->name(), "frame-0/batch-2");
    EXPECT_EQ(r->memory(), MemoryKind::Shm);
    EXPECT_TRUE(r->same_buffer(*t));
    EXPECT_NE(r->identity().id(), t->identity().id());
    // The receiver sees the sender's bytes at the view's offset, and its writes come back.
    auto rm = r->map_read_write();
    ASSERT_OK(rm);
    EXPECT_EQ(rm->bytes()[0], std::byte(v->offset_bytes() & 0xff));
    rm->bytes()[0] = std::byte{0xEE};
    rm->unmap();
    auto vm = v->map_read();
    ASSERT_OK(vm);
    EXPECT_EQ(vm->bytes()[0], std::byte{0xEE});
  }
  EXPECT_EQ(open_fd_count(), fds);
}

TEST(IpcTensor, AcrossAForkedProcess) {
  auto t = TensorDyn::allocate({1024}, DType::U32, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  Pair p;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = ipc::receive(p.b.get());
    if (!r) ::_exit(2);
    auto m = r->map_write();
    if (!m) ::_exit(3);
    std::memset(m->data(), 0x5A, m->extent_bytes());
    ::_exit(0);
  }
  ASSERT_OK(ipc::send(p.a.get(), *t));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto m = t->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->bytes()[0], std::byte{0x5A});
  EXPECT_EQ(m->bytes()[4095], std::byte{0x5A});
}

TEST(IpcTensor, SendRefusesWhatAReceiverCouldNotTrust) {
  Pair p;
  auto heap = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Heap});
  ASSERT_OK(heap);
  EXPECT_ERROR(ipc::send(p.a.get(), *heap), ErrorCode::Unsupported, "heap tensors");
  auto empty = TensorDyn::allocate({0, 4}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(empty);
  EXPECT_ERROR(ipc::send(p.a.get(), TensorDyn{}), ErrorCode::FailedPrecondition, "no storage");
  const std::string name = et_test::unique_shm_name("ipc");
  (void)shm::remove(name);
  auto named = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm, .shm_name = name});
  ASSERT_OK(named);
  EXPECT_ERROR(ipc::send(p.a.get(), *named), ErrorCode::Unsupported, "not sealed against shrinking");
  EXPECT_ERROR(ipc::send(p.a.get(), *named), ErrorCode::Unsupported,
               "a named POSIX shm object or tmpfs file cannot be sealed: copy it into a tensor allocated");
  ASSERT_OK(shm::remove(name));
}

TEST(IpcTensor, MalformedMessagesAreRefusedNamingTheFieldAndLeakNoFd) {
  struct Case {
    const char* what;
    void (*mutate)(detail::WireHeader&);
    const char* needle;
    ErrorCode code = ErrorCode::InvalidArgument;
  };
  const Case cases[] = {
      {"magic", [](detail::WireHeader& h) { h.magic = 0xdeadbeef; }, "magic 0xdeadbeef"},
      {"byte order", [](detail::WireHeader& h) { h.magic = __builtin_bswap32(detail::kWireMagic); },
       "the sender's byte order is the other one"},
      {"zero elements",
       [](detail::WireHeader& h) {
         h.rank = 2;
         h.shape[0] = 0;
         h.shape[1] = 4096;
         h.strides[0] = 4096;
         h.strides[1] = 1;
       },
       "shape[0] = 0: shape [0, 4096] has zero elements"},
      {"version", [](detail::WireHeader& h) { h.version = 7; }, "version 7, this receiver speaks version 1"},
      {"header_bytes", [](detail::WireHeader& h) { h.header_bytes = 12; }, "header_bytes 12"},
      {"dtype", [](detail::WireHeader& h) { h.dtype = 200; }, "dtype 200 is not a DType (0..11)"},
      {"rank", [](detail::WireHeader& h) { h.rank = 9; }, "rank 9 exceeds the maximum rank 8"},
      {"memory", [](detail::WireHeader& h) { h.memory = 1; }, "memory kind 1 (heap)"},
      {"pixel", [](detail::WireHeader& h) { h.pixel_format = 99; }, "pixel format 99"},
      {"fd_count", [](detail::WireHeader& h) { h.fd_count = 3; }, "fd_count 3"},
      {"name", [](detail::WireHeader& h) { std::memset(h.name, 'x', sizeof h.name); }, "not NUL-terminated"},
      {"stride", [](detail::WireHeader& h) { h.strides[0] = -1; }, "stride -1 of dim 0 is negative"},
      {"shape too big", [](detail::WireHeader& h) { h.shape[0] = 1 << 20; }, "needs 1048576 B", ErrorCode::OutOfRange},
      {"offset too big", [](detail::WireHeader& h) { h.offset_bytes = 4096; }, "offset 4096 B", ErrorCode::OutOfRange},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const int fds = open_fd_count();
    {
      Pair p;
      auto memfd = sealed_memfd(4096);
      auto h = valid_header(4096);
      c.mutate(h);
      send_raw(p.a.get(), h, {memfd.get()});
      EXPECT_ERROR(ipc::receive(p.b.get()), c.code, c.needle);
    }
    EXPECT_EQ(open_fd_count(), fds);
  }
}

TEST(IpcTensor, WrongSizesFdCountsAndFdKindsAreRefused) {
  // Probed first: where recvmsg drops fds silently (QEMU user mode) the dropped ones stay open.
  const bool ctrunc = et_test::recvmsg_reports_ctrunc();
  const int fds = open_fd_count();
  {
    Pair p;
    auto memfd = sealed_memfd(4096);
    send_raw(p.a.get(), valid_header(4096), {memfd.get()}, 10);  // short message
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument, "10 B received");
    send_raw(p.a.get(), valid_header(4096), {});  // no fd
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument, "0 fds arrived");
    // Two fds: room is made for one, where two fit (LP64) or the kernel truncates (MSG_CTRUNC, 32-bit).
    if (ctrunc) {
      send_raw(p.a.get(), valid_header(4096), {memfd.get(), memfd.get()});
      auto two = ipc::receive(p.b.get());
      ASSERT_FALSE(two.has_value());
      EXPECT_EQ(two.error().code(), ErrorCode::OutOfRange);
      EXPECT_TRUE(two.error().message().find("more than the 1 allowed") != std::string::npos ||
                  two.error().message().find("MSG_CTRUNC") != std::string::npos)
          << two.error().message();
    }
    auto unsealed = sealed_memfd(4096, 0);
    send_raw(p.a.get(), valid_header(4096), {unsealed.get()});
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument, "not sealed against shrinking");
    int pipefd[2];
    ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
    UniqueFd r(pipefd[0]), w(pipefd[1]);
    send_raw(p.a.get(), valid_header(4096), {r.get()});
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument, "pipe");
    auto h = valid_header(4096);
    h.memory = static_cast<std::uint8_t>(MemoryKind::DmaBuf);
    send_raw(p.a.get(), h, {memfd.get()});
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument, "says dmabuf but the fd is tmpfs/memfd");
    p.a.reset();
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::Unavailable, "peer closed");
  }
  EXPECT_EQ(open_fd_count(), fds);
}

TEST(IpcTensor, LongNamesAreCutAtAUtf8Boundary) {
  std::string name(62, 'a');
  name += "\xc3\xa9\xc3\xa9";  // "éé": the 63-byte cut falls inside the first é
  auto t = TensorDyn::allocate({8}, DType::U8, {.memory = MemoryKind::Shm, .name = name});
  ASSERT_OK(t);
  Pair p;
  ASSERT_OK(ipc::send(p.a.get(), *t));
  auto r = ipc::receive(p.b.get());
  ASSERT_OK(r);
  EXPECT_EQ(r->name(), std::string(62, 'a'));
}

TEST(IpcTensor, BuffersOverTheReceiversLimitAreRefused) {
  // A huge sparse memfd with a 1-byte view would otherwise be mapped whole by the receiver.
  // Twice the default limit (64 GiB; 1 GiB in 32-bit builds).
  const std::size_t limit = ipc::ReceiveOptions{}.max_buffer_bytes;
  auto big = TensorDyn::allocate({2 * limit}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(big);
  auto one = big->view(0, {1});
  ASSERT_OK(one);
  const int fds = open_fd_count();
  {
    Pair p;
    ASSERT_OK(ipc::send(p.a.get(), *one));
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::OutOfRange,
                 "exceeds the receiver's limit of " + std::to_string(limit) + " B");
    auto small = TensorDyn::allocate({4096}, DType::U8, {.memory = MemoryKind::Shm});
    ASSERT_OK(small);
    ASSERT_OK(ipc::send(p.a.get(), *small));
    EXPECT_ERROR(ipc::receive(p.b.get(), {.max_buffer_bytes = 1024}), ErrorCode::OutOfRange, "limit of 1024 B");
  }
  EXPECT_EQ(open_fd_count(), fds);
}

// ---- The zero-element rule: nothing to share, the same answer on every backend ---------------------

TEST(IpcTensor, ZeroElementTensorsAreRefusedOnEveryBackend) {
  Pair p;
  const char* needle = "tensor [0, 3] has zero elements: nothing to share";
  for (MemoryKind kind : {MemoryKind::Heap, MemoryKind::Shm}) {
    SCOPED_TRACE(memory_kind_name(kind));
    auto empty = TensorDyn::allocate({0, 3}, DType::U8, et_test::mem(kind));
    ASSERT_OK(empty);
    EXPECT_ERROR(ipc::send(p.a.get(), *empty), ErrorCode::FailedPrecondition, needle);
  }
  // A zero-element view of a non-empty shm tensor: refused too, never its whole buffer.
  auto full = TensorDyn::allocate({4, 3}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(full);
  auto view = full->view(3, {0, 3});
  ASSERT_OK(view);
  EXPECT_ERROR(ipc::send(p.a.get(), *view), ErrorCode::FailedPrecondition, needle);
  std::byte probe{};
  EXPECT_EQ(::recv(p.b.get(), &probe, 1, MSG_DONTWAIT | MSG_PEEK), -1) << "nothing may have been sent";
  EXPECT_EQ(errno, EAGAIN);
}

// ---- Socket types: message-preserving only (docs/WIRE.md) ------------------------------------------

TEST(IpcTensor, RoundTripsOverSockDgram) {
  Pair p(SOCK_DGRAM);
  auto t = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  ASSERT_OK(ipc::send(p.a.get(), *t));
  auto r = ipc::receive(p.b.get());
  ASSERT_OK(r);
  EXPECT_TRUE(r->same_buffer(*t));
}

int queued_bytes(int sock) {
  int n = -1;
  EXPECT_EQ(::ioctl(sock, FIONREAD, &n), 0);
  return n;
}

// fds travel only over AF_UNIX: an AF_INET datagram socket (not connected, loopback only) is refused by
// send and receive up front, naming the family (before: send failed late with Internal/EDESTADDRREQ,
// receive blocked forever).
TEST(IpcTensor, NonUnixSocketsAreRefusedNamingTheFamily) {
  UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(udp.is_valid());
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  EXPECT_ERROR(ipc::send(udp.get(), *t), ErrorCode::InvalidArgument, "not AF_UNIX");
  EXPECT_ERROR(ipc::receive(udp.get()), ErrorCode::InvalidArgument, "not AF_UNIX");
}

TEST(IpcTensor, StreamSocketsAreRefusedBeforeAByteMoves) {
  const int fds = open_fd_count();
  {
    Pair p(SOCK_STREAM);
    auto t = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm});
    ASSERT_OK(t);
    const std::string fd_a = std::to_string(p.a.get());
    EXPECT_ERROR(ipc::send(p.a.get(), *t), ErrorCode::InvalidArgument, "socket fd " + fd_a + " is SOCK_STREAM");
    EXPECT_EQ(queued_bytes(p.b.get()), 0) << "nothing was written";

    // A header in two pieces, the fd with the first, as another writer (or an interrupted one) sends it.
    auto memfd = sealed_memfd(4096);
    auto bytes = detail::encode_header(valid_header(4096));
    ASSERT_OK(ipc::send_fds(p.a.get(), std::span<const std::byte>(bytes.data(), 100), {memfd.get()}));
    ASSERT_EQ(::write(p.a.get(), bytes.data() + 100, bytes.size() - 100), static_cast<ssize_t>(bytes.size() - 100));
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument,
                 "is SOCK_STREAM; a tensor message needs a socket that keeps message boundaries: AF_UNIX "
                 "SOCK_SEQPACKET or SOCK_DGRAM");
    EXPECT_EQ(queued_bytes(p.b.get()), static_cast<int>(detail::kWireHeaderBytes))
        << "the refusal read nothing: the stream is still in step for the caller";
  }
  EXPECT_EQ(open_fd_count(), fds) << "the fd in flight went with the socket";
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  UniqueFd r(pipefd[0]), w(pipefd[1]);
  EXPECT_ERROR(ipc::receive(r.get()), ErrorCode::InvalidArgument, "ENOTSOCK");
}

// ---- Forwarding shared memory made elsewhere: advice that fits what it is ---------------------------

// A tensor over an unsealed memfd made elsewhere: the importer trusts its maker (allow_shrinkable).
Result<TensorDyn> import_unsealed(int fd) {
  return TensorDyn::import_fd_dup(fd, {4096}, DType::U8, ImportOptions{.allow_shrinkable = true});
}

TEST(IpcTensor, UnsealedMemfdsAreRefusedWithAdviceThatFits) {
  Pair p;
  // Made with MFD_ALLOW_SEALING and not sealed yet: seal it, then it travels.
  auto sealable = sealed_memfd(4096, 0);
  auto t = import_unsealed(sealable.get());
  ASSERT_OK(t);
  EXPECT_ERROR(ipc::send(p.a.get(), *t), ErrorCode::Unsupported,
               "allows sealing: seal it with fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)");
  ASSERT_EQ(::fcntl(sealable.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  ASSERT_OK(ipc::send(p.a.get(), *t));
  ASSERT_OK(ipc::receive(p.b.get()));

  // Made without MFD_ALLOW_SEALING: it starts with F_SEAL_SEAL and can never be sealed.
  UniqueFd plain(::memfd_create("et-ipc-plain", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(plain.get(), 4096), 0);
  auto u = import_unsealed(plain.get());
  ASSERT_OK(u);
  EXPECT_ERROR(ipc::send(p.a.get(), *u), ErrorCode::Unsupported,
               "memfd made without MFD_ALLOW_SEALING (or sealed with F_SEAL_SEAL) can never be sealed: copy it into "
               "a tensor allocated");
}

