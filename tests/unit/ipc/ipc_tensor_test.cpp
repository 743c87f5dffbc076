// SPDX-License-Identifier: Apache-2.0
// ipc::send / ipc::receive (src/core/ipc_tensor.cpp) and the header codec (src/core/ipc_wire.h):
// round trips of tensors and views, and every malformed message refused with its field named.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
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
  Pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
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
    ASSERT_OK(v->set_image({PixelFormat::Rgb, 48, 0}));
    Pair p;
    ASSERT_OK(ipc::send(p.a.get(), *v));
    auto r = ipc::receive(p.b.get());
    ASSERT_OK(r);
    EXPECT_EQ(r->dtype(), DType::U16);
    EXPECT_EQ(std::vector<std::size_t>(r->shape().begin(), r->shape().end()), (std::vector<std::size_t>{8, 3}));
    EXPECT_EQ(std::vector<std::int64_t>(r->strides().begin(), r->strides().end()), (std::vector<std::int64_t>{6, 2}));
    EXPECT_EQ(r->offset_bytes(), v->offset_bytes());
    EXPECT_EQ(r->name(), "frame-0/batch-2");
    EXPECT_EQ(r->image(), (ImageMeta{PixelFormat::Rgb, 48, 0}));
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
  EXPECT_ERROR(ipc::send(p.a.get(), *empty), ErrorCode::FailedPrecondition, "empty tensor has no buffer");
  EXPECT_ERROR(ipc::send(p.a.get(), TensorDyn{}), ErrorCode::FailedPrecondition, "no storage");
  const std::string name = et_test::unique_shm_name("ipc");
  (void)shm::remove(name);
  auto named = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm, .shm_name = name});
  ASSERT_OK(named);
  EXPECT_ERROR(ipc::send(p.a.get(), *named), ErrorCode::Unsupported, "not sealed against shrinking");
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

TEST(IpcTensor, InvalidPixelFormatIsRefusedAtSetImage) {
  auto t = TensorDyn::allocate({8}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  EXPECT_ERROR(t->set_image({static_cast<PixelFormat>(200), 0, 0}), ErrorCode::InvalidArgument,
               "pixel format 200 is not a PixelFormat");
  EXPECT_ERROR(TensorDyn{}.set_image({}), ErrorCode::FailedPrecondition, "no storage");
}
