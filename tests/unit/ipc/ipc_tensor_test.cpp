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

#include <cmath>
#include <cstring>
#include <limits>

#include "ipc/ipc_wire.h"
#include "support/test_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using et_test::open_fd_count;
using et_test::ipc_wire::Pair;
using et_test::ipc_wire::sealed_memfd;
using et_test::ipc_wire::send_bytes;
using et_test::ipc_wire::send_raw;
using et_test::ipc_wire::valid_header;

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
    // The view's 48 bytes as a 16-bit grey image 8 x 3 (rows 16 B apart), with colorimetry and quantization.
    ImageLayout layout{.format = PixelFormat::Y16, .width = 8, .height = 3, .planes = {{{0, 16}}}};
    ASSERT_OK(v->set_image_layout(layout));
    const Colorimetry colour{ColorPrimaries::Bt709, TransferFunction::Srgb, YcbcrMatrix::Identity, ColorRange::Full};
    v->set_colorimetry(colour);
    auto q = Quantization::per_tensor(0.25f, 7);
    ASSERT_OK(q);
    ASSERT_OK(v->set_quantization(*q));
    Pair p;
    ASSERT_OK(ipc::send(p.a.get(), *v));
    auto r = ipc::receive(p.b.get());
    ASSERT_OK(r);
    EXPECT_EQ(r->dtype(), DType::U16);
    EXPECT_EQ(std::vector<std::size_t>(r->shape().begin(), r->shape().end()), (std::vector<std::size_t>{8, 3}));
    EXPECT_EQ(std::vector<std::int64_t>(r->strides().begin(), r->strides().end()), (std::vector<std::int64_t>{6, 2}));
    EXPECT_EQ(r->offset_bytes(), v->offset_bytes());
    EXPECT_EQ(r->name(), "frame-0/batch-2");
    ASSERT_NE(r->image_layout(), nullptr);
    EXPECT_EQ(*r->image_layout(), layout);
    EXPECT_EQ(r->pixel_format(), PixelFormat::Y16);
    EXPECT_EQ(r->image_plane(), -1);
    EXPECT_EQ(r->colorimetry(), colour);
    EXPECT_EQ(r->quantization(), *q);
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

namespace {

// A message as a hostile or broken sender writes it: a header, a payload, and bytes added or cut.
struct Msg {
  detail::WireHeader h;
  std::vector<float> scales;
  std::vector<std::int32_t> zero_points;
  std::ptrdiff_t extra_bytes = 0;
};

// An NV12 64 x 32 layout (rows `stride` B apart, UV right after Y) in the header.
void nv12(Msg& m, std::uint64_t stride = 64) {
  m.h.pixel_format = static_cast<std::uint16_t>(PixelFormat::Nv12);
  m.h.plane_count = 2;
  m.h.image_width = 64;
  m.h.image_height = 32;
  m.h.planes[0][1] = stride;
  m.h.planes[1][0] = stride * 32;
  m.h.planes[1][1] = stride;
}

void per_axis(Msg& m, std::size_t channels) {
  m.h.quantization = static_cast<std::uint8_t>(QuantizationKind::PerAxis);
  m.h.quantization_channels = static_cast<std::uint32_t>(channels);
  m.scales.assign(channels, 0.5f);
  m.zero_points.assign(channels, 3);
}

// U8 [4, 1024] (strides 1024, 1): a shape with an axis of 4 channels.
void rows_of_1024(Msg& m) {
  m.h.rank = 2;
  m.h.shape[0] = 4;
  m.h.shape[1] = 1024;
  m.h.strides[0] = 1024;
  m.h.strides[1] = 1;
}

}  // namespace

TEST(IpcTensor, MalformedMessagesAreRefusedNamingTheFieldAndLeakNoFd) {
  struct Case {
    const char* what;
    void (*mutate)(Msg&);
    const char* needle;
    ErrorCode code = ErrorCode::InvalidArgument;
  };
  const Case cases[] = {
      // ---- prefix, sizes, the fields of version 1
      {"magic", [](Msg& m) { m.h.magic = 0xdeadbeef; }, "magic 0xdeadbeef"},
      {"byte order", [](Msg& m) { m.h.magic = __builtin_bswap32(detail::kWireMagic); },
       "the sender's byte order is the other one"},
      {"a frame message's magic", [](Msg& m) { m.h.magic = detail::kFrameWireMagic; },
       "a frame message arrived (magic 0x31465445, version 2): ipc::receive_frame reads it"},
      {"zero elements",
       [](Msg& m) {
         m.h.rank = 2;
         m.h.shape[0] = 0;
         m.h.shape[1] = 4096;
         m.h.strides[0] = 4096;
         m.h.strides[1] = 1;
       },
       "shape[0] = 0: shape [0, 4096] has zero elements"},
      {"version", [](Msg& m) { m.h.version = 7; }, "tensor message version 7; this receiver speaks version 2"},
      {"header_bytes", [](Msg& m) { m.h.header_bytes = 12; }, "header_bytes 12, expected 320"},
      {"short message", [](Msg& m) { m.extra_bytes = -20; }, "300 B received, a version-2 header has 320 B"},
      {"dtype", [](Msg& m) { m.h.dtype = 200; }, "dtype 200 is not a DType (0..11)"},
      {"rank", [](Msg& m) { m.h.rank = 9; }, "rank 9 exceeds the maximum rank 8"},
      {"memory", [](Msg& m) { m.h.memory = 1; }, "memory kind 1 (heap)"},
      {"fd_count", [](Msg& m) { m.h.fd_count = 3; }, "fd_count 3"},
      {"name", [](Msg& m) { std::memset(m.h.name, 'x', sizeof m.h.name); }, "not NUL-terminated"},
      {"stride", [](Msg& m) { m.h.strides[0] = -1; }, "stride -1 of dim 0 is negative"},
      {"shape too big", [](Msg& m) { m.h.shape[0] = 1 << 20; }, "needs 1048576 B", ErrorCode::OutOfRange},
      {"offset too big", [](Msg& m) { m.h.offset_bytes = 4096; }, "offset 4096 B", ErrorCode::OutOfRange},
      // ---- pixel format, image plane, layout fields
      {"pixel format", [](Msg& m) { m.h.pixel_format = 99; }, "pixel format 99 is not a PixelFormat (0..28)"},
      {"image_plane below -1", [](Msg& m) { m.h.image_plane = -2; }, "image_plane -2 is outside -1..3"},
      {"image_plane above 3", [](Msg& m) { m.h.image_plane = 4; }, "image_plane 4 is outside -1..3"},
      {"image_plane of no format", [](Msg& m) { m.h.image_plane = 0; },
       "image_plane 0 with pixel format 0 (unknown): a plane view names its format"},
      {"image_plane past the format's planes",
       [](Msg& m) {
         m.h.pixel_format = static_cast<std::uint16_t>(PixelFormat::Nv12);
         m.h.image_plane = 2;
       },
       "image_plane 2 of a nv12 image: it has 2 planes (0..1)"},
      {"width without a layout", [](Msg& m) { m.h.image_width = 640; },
       "image_width 640 with no layout (plane_count 0): must be 0"},
      {"height without a layout", [](Msg& m) { m.h.image_height = 480; },
       "image_height 480 with no layout (plane_count 0): must be 0"},
      {"modifier without a layout", [](Msg& m) { m.h.modifier = 5; },
       "modifier 5 with no layout (plane_count 0): must be 0"},
      {"plane fields without a layout", [](Msg& m) { m.h.planes[1][1] = 64; },
       "planes[1] = {offset 0, row stride 64} with no layout (plane_count 0): must be 0"},
      {"layout of no format",
       [](Msg& m) {
         nv12(m);
         m.h.pixel_format = 0;
       },
       "plane_count 2 with pixel format 0 (unknown): a layout needs a format"},
      {"plane_count of another format",
       [](Msg& m) {
         nv12(m);
         m.h.plane_count = 3;
       },
       "plane_count 3, a nv12 layout has 2"},
      {"image_plane with a layout",
       [](Msg& m) {
         nv12(m);
         m.h.image_plane = 1;
       },
       "image_plane 1 with a layout: a whole image has image_plane -1"},
      {"an unused plane's fields",
       [](Msg& m) {
         nv12(m);
         m.h.planes[2][0] = 5;
       },
       "planes[2] = {offset 5, row stride 0} past nv12's 2 planes: must be 0"},
      {"layout past the extent (set_image_layout)",
       [](Msg& m) {
         nv12(m);
         m.h.image_height = 48;
         m.h.planes[1][0] = 64 * 48;
       },
       "image layout: nv12 64x48 plane 1 (UV): ends at 4608 B", ErrorCode::OutOfRange},
      {"stride below the row bytes", [](Msg& m) { nv12(m, 10); }, "row stride 10 B is below the plane's row bytes 64 B"},
      {"overlapping planes",
       [](Msg& m) {
         nv12(m);
         m.h.planes[1][0] = 1024;
       },
       "overlap"},
      {"16-bit image at an odd offset (adversarial trial: was accepted, its planes unusable)",
       [](Msg& m) {
         m.h.offset_bytes = 1;
         m.h.shape[0] = 1024;
         m.h.pixel_format = static_cast<std::uint16_t>(PixelFormat::P010);
         m.h.plane_count = 2;
         m.h.image_width = 4;
         m.h.image_height = 4;
         m.h.planes[0][1] = 8;
         m.h.planes[1][0] = 32;
         m.h.planes[1][1] = 8;
       },
       "image layout: set_image_layout: p010 4x4 plane 0 (Y): the image starts at offset 1 B of its buffer, so the "
       "plane (at 0 B in the image) does not start on a multiple of its 2-byte samples"},
      {"zero width", [](Msg& m) {
         nv12(m);
         m.h.image_width = 0;
       },
       "width and height must be non-zero"},
      // ---- colorimetry
      {"primaries", [](Msg& m) { m.h.colorimetry[0] = 200; }, "colorimetry.primaries 200 is not a ColorPrimaries (0..8)"},
      {"transfer", [](Msg& m) { m.h.colorimetry[1] = 9; }, "colorimetry.transfer 9 is not a TransferFunction (0..8)"},
      {"matrix", [](Msg& m) { m.h.colorimetry[2] = 7; }, "colorimetry.matrix 7 is not a YcbcrMatrix (0..6)"},
      {"range", [](Msg& m) { m.h.colorimetry[3] = 3; }, "colorimetry.range 3 is not a ColorRange (0..2)"},
      // ---- quantization and its payload
      {"quantization kind", [](Msg& m) { m.h.quantization = 3; }, "quantization kind 3 is not a QuantizationKind"},
      {"none with a scale", [](Msg& m) { m.h.scale = 0.5f; },
       "scale 0.5 / zero_point 0 with quantization none: must be 0"},
      {"none with an axis", [](Msg& m) { m.h.quantization_axis = 1; },
       "quantization_axis 1 / quantization_channels 0 with quantization none: must be 0"},
      {"none with a payload", [](Msg& m) { m.extra_bytes = 8; },
       "328 B received: the 320 B header and a payload of 0 B (0 channels x 8 B) make 320 B"},
      {"per-tensor scale 0",
       [](Msg& m) {
         m.h.quantization = static_cast<std::uint8_t>(QuantizationKind::PerTensor);
         m.h.scale = 0.0f;
       },
       "quantization scale 0: must be finite and > 0"},
      {"per-tensor scale NaN",
       [](Msg& m) {
         m.h.quantization = static_cast<std::uint8_t>(QuantizationKind::PerTensor);
         m.h.scale = std::numeric_limits<float>::quiet_NaN();
       },
       "quantization scale nan: must be finite and > 0"},
      {"per-tensor with channels",
       [](Msg& m) {
         m.h.quantization = static_cast<std::uint8_t>(QuantizationKind::PerTensor);
         m.h.scale = 1.0f;
         m.h.quantization_channels = 3;
       },
       "quantization_axis 0 / quantization_channels 3 with quantization per-tensor: must be 0"},
      {"per-tensor zero point outside the dtype",
       [](Msg& m) {
         m.h.quantization = static_cast<std::uint8_t>(QuantizationKind::PerTensor);
         m.h.scale = 1.0f;
         m.h.zero_point = 300;
       },
       "quantization zero point = 300: outside u8's range [0, 255]"},
      {"quantized float dtype",
       [](Msg& m) {
         m.h.dtype = static_cast<std::uint8_t>(DType::F32);
         m.h.shape[0] = 1024;
         m.h.strides[0] = 4;
         m.h.quantization = static_cast<std::uint8_t>(QuantizationKind::PerTensor);
         m.h.scale = 1.0f;
       },
       "quantization dtype f32: must be one of u8, i8, u16, i16, u32, i32"},
      {"per-axis with no channels", [](Msg& m) { per_axis(m, 0); },
       "quantization_channels 0 of a per-axis quantization: must be 1..4096"},
      {"per-axis with too many channels",
       [](Msg& m) {
         per_axis(m, 0);
         m.h.quantization_channels = 5000;
       },
       "quantization_channels 5000 of a per-axis quantization: must be 1..4096"},
      {"per-axis with a per-tensor scale",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.h.scale = 0.5f;
       },
       "scale 0.5 / zero_point 0 with quantization per-axis: must be 0"},
      {"per-axis payload short",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.extra_bytes = -8;
       },
       "344 B received: the 320 B header and a payload of 32 B (4 channels x 8 B) make 352 B"},
      {"per-axis payload long",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.extra_bytes = 1;
       },
       "353 B received: the 320 B header and a payload of 32 B (4 channels x 8 B) make 352 B"},
      {"per-axis axis past the rank",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.h.quantization_axis = 2;
       },
       "per-axis quantization axis 2: must be below the tensor's rank 2"},
      {"per-axis axis past kMaxRank",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.h.quantization_axis = 70000;
       },
       "per-axis quantization axis 70000: must be below kMaxRank 8", ErrorCode::OutOfRange},
      {"per-axis channels not the axis's size",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 3);
       },
       "per-axis quantization with 3 channels on axis 0: must equal shape[0] = 4"},
      {"per-axis scale NaN",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.scales[1] = std::numeric_limits<float>::quiet_NaN();
       },
       "per-axis quantization scales[1] = nan: must be finite and > 0"},
      {"per-axis zero point outside the dtype",
       [](Msg& m) {
         rows_of_1024(m);
         per_axis(m, 4);
         m.zero_points[2] = -1;
       },
       "quantization zero_points[2] = -1: outside u8's range [0, 255]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const int fds = open_fd_count();
    {
      Pair p;
      auto memfd = sealed_memfd(4096);
      Msg m{valid_header(4096), {}, {}, 0};
      c.mutate(m);
      auto bytes = detail::encode_tensor_message(m.h, m.scales, m.zero_points);
      if (m.extra_bytes > 0) bytes.resize(bytes.size() + static_cast<std::size_t>(m.extra_bytes));
      if (m.extra_bytes < 0) bytes.resize(bytes.size() - static_cast<std::size_t>(-m.extra_bytes));
      send_bytes(p.a.get(), bytes, {memfd.get()});
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
    // Two fds: room is made for a frame message's four, so both arrive and are counted (then closed).
    if (ctrunc) {
      send_raw(p.a.get(), valid_header(4096), {memfd.get(), memfd.get()});
      auto two = ipc::receive(p.b.get());
      ASSERT_FALSE(two.has_value());
      EXPECT_EQ(two.error().code(), ErrorCode::InvalidArgument);
      EXPECT_TRUE(two.error().message().find("2 fds arrived, a tensor message carries exactly 1") != std::string::npos)
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
  // Twice the default limit (64 GiB; 1 GiB in 32-bit builds): made by hand (allocate refuses a memfd
  // larger than this machine's memory), imported as a 1-byte tensor over the whole buffer.
  const std::size_t limit = ipc::ReceiveOptions{}.max_buffer_bytes;
  UniqueFd memfd = sealed_memfd(2 * limit);
  auto one = TensorDyn::import_fd_dup(memfd.get(), {1}, DType::U8);
  ASSERT_OK(one);
  ASSERT_EQ(one->buffer_bytes(), 2 * limit);
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
    auto bytes = detail::encode_tensor_message(valid_header(4096));
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

