// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/seed-*): messages the real
// senders put on a socket (ipc::send, ipc::send_frame, channel::Sender), captured on the other end
// with their fds and written in the fuzz input format (fuzz_input.h), plus a few channel sequences
// built with the channel's own encoders. Run: et_fuzz_make_corpus <dir> (tests/fuzz/README.md).
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "channel/channel_wire.h"
#include "fuzz_input.h"
#include "ipc/ipc_codec.h"

using namespace edgetensor;
using et_fuzz::FdKind;
using et_fuzz::FdSpec;
using et_fuzz::Input;
using et_fuzz::Message;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "et_fuzz_make_corpus: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T must(Result<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().to_string());
  return std::move(*r);
}
void must(Result<void> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().to_string());
}

FdSpec spec_of(int fd) {
  struct stat st {};
  FdSpec f;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (::fstat(fd, &st) != 0 || seals < 0) {
    f.kind = FdKind::DevNull;
    return f;
  }
  f.kind = (seals & F_SEAL_WRITE) ? FdKind::ReadOnlyMemfd : (seals & F_SEAL_SHRINK) ? FdKind::SealedMemfd
                                                                                     : FdKind::UnsealedMemfd;
  f.size_units = static_cast<std::uint16_t>((static_cast<std::size_t>(st.st_size) + et_fuzz::kFdSizeUnit - 1) /
                                            et_fuzz::kFdSizeUnit);
  return f;
}

// Every message waiting on `fd`, with its fds as specs.
std::vector<Message> drain(int fd) {
  std::vector<Message> out;
  std::vector<std::byte> buf(64 * 1024);
  for (;;) {
    auto r = ipc::receive_fds(fd, buf, 8);
    if (!r) break;
    Message m;
    m.bytes.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(r->size_bytes));
    for (const UniqueFd& f : r->fds) m.fds.push_back(spec_of(f.get()));
    out.push_back(std::move(m));
    int pending = 0;
    if (::recv(fd, &pending, 1, MSG_PEEK | MSG_DONTWAIT) < 0) break;  // nothing more waiting
  }
  return out;
}

struct Pair {
  Pair() {
    auto p = must(channel::socket_pair(), "socket_pair");
    a = std::move(p.first);
    b = std::move(p.second);
  }
  UniqueFd a, b;
};

void write(const std::filesystem::path& dir, const std::string& name, const Input& in) {
  std::filesystem::create_directories(dir);
  const auto bytes = et_fuzz::serialize(in);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
}

Input captured(const std::vector<Message>& messages, bool close_sender = false) {
  Input in;
  in.close_sender = close_sender;
  in.messages = messages;
  return in;
}

TensorDyn shm(std::vector<std::size_t> shape, DType dtype = DType::U8) {
  AllocateOptions o;
  o.memory = MemoryKind::Shm;
  o.name = "seed";
  return must(TensorDyn::allocate(shape, dtype, o), "allocate");
}

TensorDyn nv12_image() {
  AllocateOptions o;
  o.memory = MemoryKind::Shm;
  auto t = must(TensorDyn::allocate_image(64u, 32u, PixelFormat::Nv12, {}, o), "allocate_image");
  t.set_colorimetry({ColorPrimaries::Bt709, TransferFunction::Bt709, YcbcrMatrix::Bt709, ColorRange::Limited});
  return t;
}

Frame two_buffer_frame() {
  auto layout = must(ImageLayout::make(64, 32, PixelFormat::Nv12), "layout");
  layout.planes[1].offset_bytes = 0;
  auto y = shm({layout.planes[0].row_stride_bytes * 32});
  auto uv = shm({layout.planes[1].row_stride_bytes * 16});
  auto fy = must(y.export_fd(), "export");
  auto fuv = must(uv.export_fd(), "export");
  const int fds[] = {fy.get(), fuv.get()};
  return must(Frame::import_planes_dup(fds, layout), "import_planes_dup");
}

TensorDyn quantized() {
  auto t = shm({2, 3}, DType::I8);
  must(t.set_quantization(must(Quantization::per_axis(1, std::vector<float>{0.5f, 0.25f, 2.0f},
                                                      std::vector<std::int32_t>{1, -2, 3}),
                               "per_axis")),
       "set_quantization");
  return t;
}

void ipc_seeds(const std::filesystem::path& dir) {
  auto one = [&](const std::string& name, auto send, bool close = false) {
    Pair p;
    send(p.a.get());
    write(dir, name, captured(drain(p.b.get()), close));
  };
  const auto image = nv12_image();
  one("seed-u8", [&](int fd) { must(ipc::send(fd, shm({64})), "send"); });
  one("seed-nv12-image", [&](int fd) { must(ipc::send(fd, image), "send"); });
  one("seed-plane-view", [&](int fd) { must(ipc::send(fd, must(image.plane(1), "plane")), "send"); });
  one("seed-per-axis", [&](int fd) { must(ipc::send(fd, quantized()), "send"); });
  one("seed-strided", [&](int fd) { must(ipc::send(fd, must(shm({4, 6}, DType::U16).slice(1, 2, 5), "slice")), "send"); });
  one("seed-scalar", [&](int fd) { must(ipc::send(fd, shm({}, DType::F32)), "send"); });
  one("seed-frame-message", [&](int fd) { must(ipc::send_frame(fd, two_buffer_frame()), "send_frame"); });
  one("seed-two-then-close", [&](int fd) {
    must(ipc::send(fd, shm({16})), "send");
    must(ipc::send(fd, image), "send");
  }, true);
}

void frame_seeds(const std::filesystem::path& dir) {
  auto one = [&](const std::string& name, auto send) {
    Pair p;
    send(p.a.get());
    write(dir, name, captured(drain(p.b.get())));
  };
  one("seed-two-buffers", [&](int fd) { must(ipc::send_frame(fd, two_buffer_frame()), "send_frame"); });
  one("seed-one-buffer", [&](int fd) {
    must(ipc::send_frame(fd, must(Frame::from_tensor(nv12_image()), "from_tensor")), "send_frame");
  });
  one("seed-i420", [&](int fd) {
    AllocateOptions o;
    o.memory = MemoryKind::Shm;
    auto t = must(TensorDyn::allocate_image(48u, 16u, PixelFormat::I420, {}, o), "allocate_image");
    must(ipc::send_frame(fd, must(Frame::from_tensor(t), "from_tensor")), "send_frame");
  });
  one("seed-tensor-message", [&](int fd) { must(ipc::send(fd, shm({64})), "send"); });
}

void channel_seeds(const std::filesystem::path& dir) {
  auto session = [&](const std::string& name, auto send, bool close = false) {
    Pair p;
    {
      auto sender = must(channel::Sender::create(std::move(p.a), {.name = "seed", .max_buffers = 4}), "Sender");
      send(sender);
    }  // the sender's end shuts down here: drain() reads what was sent before it
    write(dir, name, captured(drain(p.b.get()), close));
  };
  PoolOptions po;
  po.name = "seed";
  po.max_buffers = 2;
  po.allocate.memory = MemoryKind::Shm;
  session("seed-pool-tensors", [&](channel::Sender& s) {
    auto pool = must(Pool::create({8, 8, 4}, DType::U8, po), "pool");
    for (int i = 0; i < 2; ++i) must(s.send(must(pool.acquire(std::chrono::milliseconds(0)), "acquire")), "send");
  });
  session("seed-image-and-frame", [&](channel::Sender& s) {
    must(s.send(nv12_image(), {.sequence = 5, .timestamp_ns = 1000}), "send");
    must(s.send_frame(two_buffer_frame()), "send_frame");
    must(s.send(quantized()), "send");
  });
  session("seed-same-buffer-twice", [&](channel::Sender& s) {
    const auto t = shm({128});
    must(s.send(t), "send");
    must(s.send(must(t.slice(0, 64, 128), "slice")), "send");
  }, true);
  // Retire, then a new buffer: built with the channel's encoders (a capture cannot show a retire
  // without a release coming back).
  Input in;
  const std::uint32_t one[] = {1};
  const std::uint32_t two[] = {2};
  auto header = edgetensor::detail::encode_tensor(shm({4096}));
  in.messages.push_back({{{FdKind::SealedMemfd, 4096 / 64}}, edgetensor::detail::encode_announce(1, MemoryKind::Shm, 4096)});
  in.messages.push_back({{}, edgetensor::detail::encode_retire(one)});
  in.messages.push_back({{{FdKind::SealedMemfd, 4096 / 64}}, edgetensor::detail::encode_announce(2, MemoryKind::Shm, 4096)});
  in.messages.push_back({{}, edgetensor::detail::encode_frame(edgetensor::detail::ChannelMessage::TensorFrame, 0, 0, two, header)});
  write(dir, "seed-retire-then-announce", in);
  // A refuse after the sender's hello (a listener that will not serve this receiver): its reason and text.
  Input refuse;
  refuse.messages.push_back({{}, edgetensor::detail::encode_hello(edgetensor::detail::ChannelRole::Sender, 32)});
  refuse.messages.push_back({{}, edgetensor::detail::encode_refuse(edgetensor::detail::RefuseReason::NotAllowed,
                                                                   "uid 1000 (gid 1000) is not allowed to connect")});
  write(dir, "seed-refuse", refuse);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) die("usage: et_fuzz_make_corpus <corpus dir>");
  const std::filesystem::path root = argv[1];
  ipc_seeds(root / "ipc_receive");
  frame_seeds(root / "ipc_receive_frame");
  channel_seeds(root / "channel_receiver");
  std::printf("seed corpus written under %s\n", root.c_str());
  return 0;
}
