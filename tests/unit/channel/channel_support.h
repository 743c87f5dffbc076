// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the frame channel's tests (tests/unit/channel): a Sender and a Receiver on a socket
// pair, a small pool of shared-memory buffers, and a byte pattern that says which frame a buffer holds.
// One definition here, not one per file: the unit binary compiles its files in unity batches
// (ET_TEST_UNITY_BUILD, tests/CMakeLists.txt), where file-local helpers of the same name collide.
#pragma once

#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace et_test::channel_support {

using namespace edgetensor;

struct Ends {
  channel::Sender sender;
  channel::Receiver receiver;
};

// A connected Sender (options `so`) and Receiver (options `ro`) on a fresh socket pair; nullopt (with a
// failed expectation naming the error) when either cannot be made.
inline std::optional<Ends> make_ends(channel::SenderOptions so = {}, channel::ReceiverOptions ro = {}) {
  auto sp = channel::socket_pair();
  EXPECT_TRUE(sp.has_value());
  if (!sp) return std::nullopt;
  auto s = channel::Sender::create(std::move(sp->first), so);
  auto r = channel::Receiver::create(std::move(sp->second), ro);
  EXPECT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_TRUE(r.has_value()) << r.error().to_string();
  if (!s || !r) return std::nullopt;
  return Ends{std::move(*s), std::move(*r)};
}

// A pool of `buffers` U8 tensors of `shape` (elements) in shared memory, named `name`.
inline Result<Pool> shm_pool(const char* name, std::size_t buffers, std::vector<std::size_t> shape = {16, 16}) {
  return Pool::create(shape, DType::U8,
                      {.name = name, .max_buffers = buffers, .allocate = {.memory = MemoryKind::Shm}});
}

// Writes `sequence` into the first 8 bytes and `sequence & 0xff` into every other byte; false when the
// tensor cannot be mapped or holds fewer than 8 bytes.
inline bool stamp(const TensorDyn& t, std::uint64_t sequence) {
  auto m = t.map_write();
  if (!m || m->extent_bytes() < sizeof sequence) return false;
  std::memset(m->data(), static_cast<int>(sequence & 0xff), m->extent_bytes());
  std::memcpy(m->data(), &sequence, sizeof sequence);
  return true;
}

// Whether every byte still says `sequence` (stamp's pattern).
inline bool stamped(const TensorDyn& t, std::uint64_t sequence) {
  auto m = t.map_read();
  if (!m || m->extent_bytes() < sizeof sequence) return false;
  std::uint64_t first = 0;
  std::memcpy(&first, m->data(), sizeof first);
  if (first != sequence) return false;
  for (std::size_t i = sizeof first; i < m->extent_bytes(); ++i)
    if (m->data()[i] != static_cast<std::byte>(sequence & 0xff)) return false;
  return true;
}

}  // namespace et_test::channel_support
