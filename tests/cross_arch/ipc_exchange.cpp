// SPDX-License-Identifier: Apache-2.0
// Two processes, possibly of two architectures, exchange tensors with ipc::send/receive and check every
// header field (dtype, shape, strides, offset, name, memory kind, buffer size; image layout, pixel format
// and plane, colorimetry, quantization) and every byte of each view; then one two-buffer Frame with
// ipc::send_frame/receive_frame (layout, colorimetry, plane -> buffer map, each plane's bytes). The receiving side execs the sending side (--peer), so under QEMU user mode an
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
#include <optional>
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

// The metadata a case attaches to its view.
struct Meta {
  std::optional<ImageLayout> layout;  // attached to the view
  int plane = -1;                     // >= 0: plane(plane) of that image is sent instead
  Colorimetry colorimetry;
  QuantizationKind quantization = QuantizationKind::None;
  std::size_t axis = 0;
  std::vector<float> scales;          // PerTensor: one
  std::vector<std::int32_t> zero_points;
};

// One case: a buffer of `alloc_shape` elements filled with a pattern, and the view of it that is sent.
struct Case {
  const char* what;
  DType dtype;
  std::vector<std::size_t> alloc_shape;
  std::size_t view_offset_bytes;
  std::vector<std::size_t> view_shape;
  std::vector<std::int64_t> view_strides;  // bytes; empty = C-contiguous
  std::string name;
  Meta meta;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"f32 [2,3,4] contiguous", DType::F32, {2, 3, 4}, 0, {2, 3, 4}, {}, "cube", {}},
      {"u8 rows 5..8 of [16,33] (offset 165 B), per-tensor quantization", DType::U8, {16, 33}, 5 * 33, {4, 33}, {},
       "rows", Meta{.quantization = QuantizationKind::PerTensor, .scales = {0.0078125f}, .zero_points = {128}}},
      {"i64 [3,5] transposed view of [5,3]", DType::I64, {5, 3}, 0, {3, 5}, {8, 24}, "transposed", {}},
      {"nv12 640x480 image with colorimetry", DType::U8, {720, 640}, 0, {720, 640}, {}, "camera-\xc3\xa9/frame",
       Meta{.layout = ImageLayout::make(640, 480, PixelFormat::Nv12).value(),
            .colorimetry = {ColorPrimaries::Smpte170M, TransferFunction::Bt709, YcbcrMatrix::Bt601,
                            ColorRange::Limited}}},
      {"uv plane of nv12 62x30 with 64-byte rows at offset 64 B", DType::U8, {3008}, 64, {2880}, {}, "uv",
       Meta{.layout = ImageLayout::make(62, 30, PixelFormat::Nv12, {.row_bytes = 64}).value(), .plane = 1,
            .colorimetry = {ColorPrimaries::Bt709, TransferFunction::Srgb, YcbcrMatrix::Bt709, ColorRange::Full}}},
      {"u16 last element of 3 MiB, 80-byte name cut to 63", DType::U16, {1572864}, 2 * 1572863, {1}, {},
       std::string(80, 'n'), {}},
      {"f64 rank 8", DType::F64, {1, 2, 1, 2, 1, 2, 1, 3}, 0, {1, 2, 1, 2, 1, 2, 1, 3}, {}, "rank8", {}},
      {"u32 every 3rd of 300 (stride 12 B, offset 8 B)", DType::U32, {300}, 8, {99}, {12}, "strided", {}},
      {"i8 [4,3] per-axis quantization on axis 1", DType::I8, {4, 3}, 0, {4, 3}, {}, "per-axis",
       Meta{.quantization = QuantizationKind::PerAxis, .axis = 1, .scales = {0.5f, 0.25f, 1.0f / 3.0f},
            .zero_points = {-128, 0, 127}}},
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
  view.set_colorimetry(c.meta.colorimetry);
  if (c.meta.layout) ET_TRY(view.set_image_layout(*c.meta.layout));
  if (c.meta.plane >= 0) {
    ET_TRY_ASSIGN(view, view.plane(static_cast<std::size_t>(c.meta.plane)));
  }
  if (c.meta.quantization == QuantizationKind::PerTensor) {
    ET_TRY_ASSIGN(auto q, Quantization::per_tensor(c.meta.scales.at(0), c.meta.zero_points.at(0)));
    ET_TRY(view.set_quantization(q));
  } else if (c.meta.quantization == QuantizationKind::PerAxis) {
    ET_TRY_ASSIGN(auto q, Quantization::per_axis(c.meta.axis, c.meta.scales, c.meta.zero_points));
    ET_TRY(view.set_quantization(q));
  }
  return view;
}

template <class T>
std::string join(std::span<const T> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Every field of a layout, and of a colorimetry and a quantization, as text (for exact comparison: the
// floats are sent as bits and must arrive as the same bits, so %a).
std::string text(const ImageLayout* l) {
  if (l == nullptr) return "none";
  std::string s = std::string(pixel_format_name(l->format)) + " " + std::to_string(l->width) + "x" +
                  std::to_string(l->height) + " modifier " + std::to_string(l->modifier);
  for (const PlaneLayout& p : l->planes)
    s += " {" + std::to_string(p.offset_bytes) + "," + std::to_string(p.row_stride_bytes) + "}";
  return s;
}
std::string text(const Colorimetry& c) {
  return std::string(color_primaries_name(c.primaries)) + "/" + std::string(transfer_function_name(c.transfer)) + "/" +
         std::string(ycbcr_matrix_name(c.matrix)) + "/" + std::string(color_range_name(c.range));
}
std::string text(const Quantization& q) {
  std::string s = std::to_string(static_cast<int>(q.kind())) + " axis " + std::to_string(q.axis()) + " scales";
  char f[32];
  for (float v : q.scales()) {
    std::snprintf(f, sizeof f, " %a", static_cast<double>(v));
    s += f;
  }
  s += " zero points";
  for (std::int32_t v : q.zero_points()) s += " " + std::to_string(v);
  return s;
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
  field("layout", text(got.image_layout()), text(want.image_layout()));
  field("pixel format", std::string(pixel_format_name(got.pixel_format())),
        std::string(pixel_format_name(want.pixel_format())));
  field("image plane", std::to_string(got.image_plane()), std::to_string(want.image_plane()));
  field("colorimetry", text(got.colorimetry()), text(want.colorimetry()));
  field("quantization", text(got.quantization()), text(want.quantization()));
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

// The frame: NV12 62x30 in two buffers (V4L2 NV12M style), rows 64 B apart, Y at the start of one
// buffer and UV 128 B into the other, each filled with its own pattern.
constexpr const char* kFrameWhat = "nv12 62x30 frame in two buffers (UV 128 B in), colorimetry";
Result<Frame> make_frame() {
  const std::size_t case_index = cases().size();
  ET_TRY_ASSIGN(auto y, TensorDyn::allocate({64 * 30}, DType::U8, {.memory = MemoryKind::Shm}));
  ET_TRY_ASSIGN(auto uv, TensorDyn::allocate({128 + 64 * 15}, DType::U8, {.memory = MemoryKind::Shm}));
  for (std::size_t b = 0; b < 2; ++b) {
    ET_TRY_ASSIGN(auto map, (b == 0 ? y : uv).map_write());
    for (std::size_t i = 0; i < map.bytes().size(); ++i) map.bytes()[i] = pattern(case_index + b, i);
  }
  ET_TRY_ASSIGN(auto y_fd, y.export_fd());
  ET_TRY_ASSIGN(auto uv_fd, uv.export_fd());
  const int fds[] = {y_fd.get(), uv_fd.get()};
  ET_TRY_ASSIGN(auto layout, ImageLayout::make(62, 30, PixelFormat::Nv12, {.row_bytes = 64}));
  layout.planes[1].offset_bytes = 128;
  ET_TRY_ASSIGN(auto frame, Frame::import_planes_dup(fds, layout));
  frame.set_colorimetry({ColorPrimaries::Bt2020, TransferFunction::AribStdB67, YcbcrMatrix::Bt2020, ColorRange::Limited});
  return frame;
}

std::string compare_frame(const Frame& got, const Frame& want) {
  std::string diff;
  auto field = [&](const std::string& name, const std::string& g, const std::string& w) {
    if (g != w) diff += std::string(diff.empty() ? "" : "; ") + name + " " + g + " != " + w;
  };
  field("layout", text(&got.layout()), text(&want.layout()));
  field("colorimetry", text(got.colorimetry()), text(want.colorimetry()));
  field("buffers", std::to_string(got.buffer_count()), std::to_string(want.buffer_count()));
  if (!diff.empty()) return diff;
  for (std::size_t i = 0; i < want.plane_count(); ++i)
    field("plane_buffer " + std::to_string(i), std::to_string(got.plane_buffer(i)), std::to_string(want.plane_buffer(i)));
  for (std::size_t b = 0; b < want.buffer_count(); ++b) {
    auto g = got.buffer(b);
    auto w = want.buffer(b);
    if (!g || !w) return "buffer: " + (!g ? g.error().to_string() : w.error().to_string());
    field("buffer " + std::to_string(b) + " bytes", std::to_string(g->buffer_bytes()), std::to_string(w->buffer_bytes()));
    field("buffer " + std::to_string(b) + " memory", std::string(memory_kind_name(g->memory())), "shm");
  }
  if (!diff.empty()) return diff;
  auto g = got.map_read();
  auto w = want.map_read();
  if (!g || !w) return "map_read: " + (!g ? g.error().to_string() : w.error().to_string());
  for (std::size_t i = 0; i < want.plane_count(); ++i) {
    auto gb = g->plane_bytes(i);
    auto wb = w->plane_bytes(i);
    if (gb.size() != wb.size())
      return "plane " + std::to_string(i) + ": " + std::to_string(gb.size()) + " B != " + std::to_string(wb.size()) + " B";
    for (std::size_t k = 0; k < gb.size(); ++k)
      if (gb[k] != wb[k])
        return "plane " + std::to_string(i) + " byte " + std::to_string(k) + ": " +
               std::to_string(static_cast<int>(gb[k])) + " != " + std::to_string(static_cast<int>(wb[k]));
  }
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
  auto frame = make_frame();
  auto sent = frame ? ipc::send_frame(fd, *frame) : Result<void>(fail(frame.error()));
  if (!sent) {
    std::printf("FAIL %s send_frame to %s (%s): %s\n", kArch, peer_role, kFrameWhat, sent.error().to_string().c_str());
    ++failed;
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
  auto got = ipc::receive_frame(fd);
  auto want = make_frame();
  std::string diff = !got ? got.error().to_string() : !want ? want.error().to_string() : compare_frame(*got, *want);
  std::printf("%s %s received from %s, frame (%s)%s%s\n", diff.empty() ? "ok  " : "FAIL", kArch, peer_role, kFrameWhat,
              diff.empty() ? "" : ": ", diff.c_str());
  if (!diff.empty()) ++failed;
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
  std::printf("ipc_exchange: %s receiver with %s: %zu tensor cases and 1 frame each way, %s\n", kArch, peer,
              cases().size(),
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
