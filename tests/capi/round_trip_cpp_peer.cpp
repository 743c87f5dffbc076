// SPDX-License-Identifier: Apache-2.0
// The C++ peer of capi_round_trip_test.c (ctest capi.round_trip_c_cpp_c), using the public C++ API only:
//   et_capi_round_trip_cpp_peer --receive-fd <a> --send-fd <b>
// Receives frames on fd a (channel::Receiver) until the end of stream. Each one (a Frame or a tensor) must hold
// round_trip_byte(sequence, o) at each byte o of each plane row (o counted from the sent image's or tensor's
// first byte); its copy, from a Pool of the same layout, shape and dtype, holds each byte + 1 and goes back on
// fd b (channel::Sender) with the same sequence, pts, duration and flags. Then end_stream() and drain().
// Exits 0, or prints the first difference or error to stderr and exits 1.
#include <edgetensor/edgetensor.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace et = edgetensor;
using namespace std::chrono_literals;

namespace {

constexpr auto kWait = 20s;

// Byte `o` of frame `seq`: capi_round_trip_test.c's round_trip_byte.
std::uint8_t round_trip_byte(std::uint64_t seq, std::uint64_t o) {
  return static_cast<std::uint8_t>((seq * 37u + o * 11u + 5u) & 0xffu);
}

int fail(std::string_view what, const et::Error& e) {
  std::fprintf(stderr, "et_capi_round_trip_cpp_peer: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               e.to_string().c_str());
  return 1;
}

// Checks `in`'s rows (dimension 0; the rest of each row contiguous) against frame `seq` from byte `first`, and
// writes each byte + 1 to the same place of `out`'s rows.
et::Result<void> copy_plus_one(const et::TensorDyn& in, const et::TensorDyn& out, std::uint64_t seq,
                               std::uint64_t first) {
  if (in.shape().empty() || in.shape()[0] == 0 || out.shape().size() != in.shape().size() ||
      out.packed_bytes() != in.packed_bytes())
    return et::fail(et::ErrorCode::InvalidArgument, "frame " + std::to_string(seq) + ": the copy's shape differs");
  const std::size_t rows = in.shape()[0], row_bytes = in.packed_bytes() / rows;
  const auto in_stride = static_cast<std::size_t>(in.strides()[0]);
  const auto out_stride = static_cast<std::size_t>(out.strides()[0]);
  ET_TRY_ASSIGN(auto src, in.map_read());
  ET_TRY_ASSIGN(auto dst, out.map_write());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < row_bytes; ++c) {
      const auto got = static_cast<std::uint8_t>(src.data()[r * in_stride + c]);
      const std::uint8_t want = round_trip_byte(seq, first + r * in_stride + c);
      if (got != want)
        return et::fail(et::ErrorCode::InvalidArgument, "frame " + std::to_string(seq) + ": byte " +
                                                            std::to_string(first + r * in_stride + c) + " is " +
                                                            std::to_string(got) + ", expected " + std::to_string(want));
      dst.data()[r * out_stride + c] = static_cast<std::byte>(got + 1);
    }
  }
  return {};
}

et::PoolOptions pool_options() {
  return {.name = "cpp-round-trip", .max_buffers = 2, .allocate = {.memory = et::MemoryKind::Shm}};
}

struct Peer {
  et::channel::Receiver receiver;
  et::channel::Sender sender;
  std::optional<et::Pool> images;   // made from the first image's layout
  std::optional<et::Pool> tensors;  // made from the first tensor's shape and dtype

  // The copy of one delivery, sent back.
  et::Result<void> answer(const et::channel::Delivery& d) {
    const et::channel::SendOptions o{.sequence = d.sequence, .pts_ns = d.pts_ns, .duration_ns = d.duration_ns,
                                     .flags = d.flags};
    if (d.frame.buffer_count() != 0) {
      const et::ImageLayout& layout = d.frame.layout();
      if (!images) {
        ET_TRY_ASSIGN(images, et::Pool::create_image(layout, pool_options()));
      }
      ET_TRY_ASSIGN(auto copy, sender.acquire(*images, kWait));
      const et::ImageLayout* copy_layout = copy.image_layout();
      if (copy_layout == nullptr || *copy_layout != layout)
        return et::fail(et::ErrorCode::FailedPrecondition,
                        "frame " + std::to_string(d.sequence) + ": the layout changed");
      for (std::size_t p = 0; p < layout.plane_count(); ++p) {
        ET_TRY_ASSIGN(auto in, d.frame.plane(p));
        ET_TRY_ASSIGN(auto out, copy.plane(p));
        ET_TRY(copy_plus_one(in, out, d.sequence, layout.planes[p].offset_bytes));
      }
      ET_TRY_ASSIGN(auto frame, et::Frame::from_tensor(copy));
      ET_TRY(sender.send_frame(frame, o));
    } else {
      if (!tensors) {
        ET_TRY_ASSIGN(tensors, et::Pool::create(d.tensor.shape(), d.tensor.dtype(), pool_options()));
      }
      ET_TRY_ASSIGN(auto copy, sender.acquire(*tensors, kWait));
      ET_TRY(copy_plus_one(d.tensor, copy, d.sequence, 0));
      ET_TRY(sender.send(copy, o));
    }
    return {};
  }
};

}  // namespace

int main(int argc, char** argv) {
  int receive_fd = -1, send_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--receive-fd") receive_fd = std::atoi(argv[i + 1]);
    else if (flag == "--send-fd") send_fd = std::atoi(argv[i + 1]);
  }
  if (receive_fd < 0 || send_fd < 0) {
    std::fprintf(stderr, "usage: %s --receive-fd <fd> --send-fd <fd>\n", argv[0]);
    return 2;
  }
  auto receiver = et::channel::Receiver::create(et::UniqueFd(receive_fd), {.name = "c-to-cpp"});
  et::UniqueFd send_socket(send_fd);
  if (!receiver) return fail("receiver", receiver.error());
  et::channel::SenderOptions so;
  so.name = "cpp-to-c";
  so.send_timeout = kWait;
  auto sender = et::channel::Sender::create(std::move(send_socket), so);
  if (!sender) return fail("sender", sender.error());
  Peer peer{std::move(*receiver), std::move(*sender), std::nullopt, std::nullopt};
  for (;;) {
    auto d = peer.receiver.receive(kWait);
    if (!d) return fail("receive", d.error());
    if (d->end_of_stream) break;
    if (auto answered = peer.answer(*d); !answered) return fail("answer", answered.error());
  }
  if (auto ended = peer.sender.end_stream(); !ended) return fail("end_stream", ended.error());
  if (auto drained = peer.sender.drain(kWait); !drained) return fail("drain", drained.error());
  return 0;
}
