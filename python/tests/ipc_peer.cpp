// SPDX-License-Identifier: Apache-2.0
// The C++ process of the Python two-process tests (test_ipc.py): Python sends text commands and tensors
// or frames on one SOCK_SEQPACKET socket; this side consumes and produces with ipc::send/receive.
//
//   et_py_ipc_peer --socket-fd <fd>
// Commands (one message each; a reply is one text message starting "ok" or "FAIL"):
//   check-tensor             then a tensor (ipc::send): every element's bytes must be pattern A; they are
//                            overwritten with pattern B; reply "ok <dtype> [shape]"
//   check-frame              then a frame (ipc::send_frame): as check-tensor for every plane
//   produce-tensor <dtype> <dim>...   replies with a shm tensor filled with pattern A (no text reply)
//   produce-frame <format> <width> <height>   replies with a frame, every plane pattern A
//   exit                     reply "ok bye", exit 0
// Patterns, over the packed (C-order) byte index b of a tensor or plane: A = (13 b + 5) & 0xff,
// B = (29 b + 11) & 0xff. Public API only.
#include <edgetensor/edgetensor.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace et = edgetensor;

namespace {

std::byte pattern_a(std::size_t b) { return static_cast<std::byte>((13 * b + 5) & 0xff); }
std::byte pattern_b(std::size_t b) { return static_cast<std::byte>((29 * b + 11) & 0xff); }

// Calls fn(element base pointer offset in bytes, packed byte index of the element's first byte) for
// every element in C order.
template <class Fn>
void for_each_element(const et::TensorDyn& t, Fn&& fn) {
  std::array<std::size_t, et::kMaxRank> index{};
  std::size_t itemsize = t.element_size();
  for (std::size_t k = 0; k < t.element_count(); ++k) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < t.rank(); ++d) offset += index[d] * static_cast<std::size_t>(t.strides()[d]);
    fn(offset, k * itemsize);
    for (std::size_t d = t.rank(); d-- > 0;) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
}

std::string shape_text(const et::TensorDyn& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.rank(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return s + "]";
}

// Checks pattern A, then writes pattern B. Empty string when the bytes matched.
std::string check_and_rewrite(const et::TensorDyn& t) {
  std::size_t itemsize = t.element_size();
  {
    auto map = t.map_read();
    if (!map) return "map_read: " + map.error().to_string();
    std::string diff;
    for_each_element(t, [&](std::size_t offset, std::size_t b) {
      for (std::size_t j = 0; j < itemsize && diff.empty(); ++j)
        if (map->data()[offset + j] != pattern_a(b + j))
          diff = "byte " + std::to_string(b + j) + " is " + std::to_string(static_cast<int>(map->data()[offset + j])) +
                 ", expected " + std::to_string(static_cast<int>(pattern_a(b + j)));
    });
    if (!diff.empty()) return diff;
  }
  auto map = t.map_write();
  if (!map) return "map_write: " + map.error().to_string();
  for_each_element(t, [&](std::size_t offset, std::size_t b) {
    for (std::size_t j = 0; j < itemsize; ++j) map->data()[offset + j] = pattern_b(b + j);
  });
  return {};
}

std::string fill_a(const et::TensorDyn& t) {
  auto map = t.map_write();
  if (!map) return "map_write: " + map.error().to_string();
  for_each_element(t, [&](std::size_t offset, std::size_t b) {
    for (std::size_t j = 0; j < t.element_size(); ++j) map->data()[offset + j] = pattern_a(b + j);
  });
  return {};
}

bool reply(int fd, const std::string& text) {
  auto sent = et::ipc::send_fds(fd, std::as_bytes(std::span(text.data(), text.size())));
  if (!sent) std::fprintf(stderr, "et_py_ipc_peer: reply: %s\n", sent.error().to_string().c_str());
  return static_cast<bool>(sent);
}

std::string check_tensor(int fd) {
  auto t = et::ipc::receive(fd);
  if (!t) return "FAIL receive: " + t.error().to_string();
  std::string diff = check_and_rewrite(*t);
  if (!diff.empty()) return "FAIL " + diff;
  return "ok " + std::string(et::dtype_name(t->dtype())) + " " + shape_text(*t);
}

std::string check_frame(int fd) {
  auto f = et::ipc::receive_frame(fd);
  if (!f) return "FAIL receive_frame: " + f.error().to_string();
  for (std::size_t i = 0; i < f->plane_count(); ++i) {
    auto plane = f->plane(i);
    if (!plane) return "FAIL plane: " + plane.error().to_string();
    std::string diff = check_and_rewrite(*plane);
    if (!diff.empty()) return "FAIL plane " + std::to_string(i) + ": " + diff;
  }
  return "ok " + std::string(et::pixel_format_name(f->layout().format)) + " " + std::to_string(f->buffer_count()) +
         " buffer(s)";
}

std::string produce_tensor(int fd, std::istringstream& args) {
  std::string dtype_text;
  args >> dtype_text;
  auto dtype = et::dtype_from_name(dtype_text);
  if (!dtype) return "FAIL unknown dtype " + dtype_text;
  std::vector<std::size_t> shape;
  for (std::size_t d; args >> d;) shape.push_back(d);
  auto t = et::TensorDyn::allocate(shape, *dtype, {.memory = et::MemoryKind::Shm, .name = "from-cpp"});
  if (!t) return "FAIL allocate: " + t.error().to_string();
  if (auto diff = fill_a(*t); !diff.empty()) return "FAIL " + diff;
  if (auto sent = et::ipc::send(fd, *t); !sent) return "FAIL send: " + sent.error().to_string();
  return {};
}

std::string produce_frame(int fd, std::istringstream& args) {
  std::string format_text;
  std::uint32_t width = 0, height = 0;
  args >> format_text >> width >> height;
  auto format = et::pixel_format_from_name(format_text);
  if (!format) return "FAIL " + format.error().to_string();
  auto layout = et::ImageLayout::make(width, height, *format, {.row_bytes = 64});
  if (!layout) return "FAIL " + layout.error().to_string();
  auto frame = et::Frame::allocate(*layout, {.memory = et::MemoryKind::Shm});
  if (!frame) return "FAIL " + frame.error().to_string();
  for (std::size_t i = 0; i < frame->plane_count(); ++i) {
    auto plane = frame->plane(i);
    if (!plane) return "FAIL " + plane.error().to_string();
    if (auto diff = fill_a(*plane); !diff.empty()) return "FAIL " + diff;
  }
  if (auto sent = et::ipc::send_frame(fd, *frame); !sent) return "FAIL send_frame: " + sent.error().to_string();
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--socket-fd") {
    std::fprintf(stderr, "usage: %s --socket-fd <fd>\n", argv[0]);
    return 2;
  }
  int fd = std::atoi(argv[2]);
  std::array<std::byte, 512> buffer{};
  for (;;) {
    auto got = et::ipc::receive_fds(fd, buffer, 0);
    if (!got) {
      std::fprintf(stderr, "et_py_ipc_peer: command: %s\n", got.error().to_string().c_str());
      return 1;
    }
    std::istringstream command(std::string(reinterpret_cast<const char*>(buffer.data()), got->size_bytes));
    std::string verb;
    command >> verb;
    std::string answer;
    if (verb == "check-tensor") {
      answer = check_tensor(fd);
    } else if (verb == "check-frame") {
      answer = check_frame(fd);
    } else if (verb == "produce-tensor") {
      answer = produce_tensor(fd, command);
      if (answer.empty()) continue;
    } else if (verb == "produce-frame") {
      answer = produce_frame(fd, command);
      if (answer.empty()) continue;
    } else if (verb == "exit") {
      return reply(fd, "ok bye") ? 0 : 1;
    } else {
      answer = "FAIL unknown command '" + verb + "'";
    }
    if (!reply(fd, answer)) return 1;
  }
}
