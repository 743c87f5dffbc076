// SPDX-License-Identifier: Apache-2.0
// A Pool's buffer through ipc::send / ipc::send_frame (issue 25): refused by default, naming the frame
// channel, since the pool takes the buffer back after the call while the receiver still reads it; sent
// with SendOptions::allow_pooled, whose caller keeps a holder until its own receiver is done.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>

#include "support/test_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

namespace {

TEST(IpcPooled, APoolBufferIsRefusedByDefaultNamingTheChannel) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto pool = Pool::create({16, 16}, DType::U8, {.name = "cam", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  EXPECT_ERROR(ipc::send(sp->first.get(), *t), ErrorCode::FailedPrecondition, "buffer of pool 'cam'");
  EXPECT_ERROR(ipc::send(sp->first.get(), *t), ErrorCode::FailedPrecondition, "channel::Sender");
  EXPECT_ERROR(ipc::send(sp->first.get(), *t), ErrorCode::FailedPrecondition, "SendOptions::allow_pooled");
  auto view = t->reshape({256});  // a view of it is the pool's buffer too
  ASSERT_OK(view);
  EXPECT_ERROR(ipc::send(sp->first.get(), *view), ErrorCode::FailedPrecondition, "pool 'cam'");
  auto image_pool = Pool::create_image(*ImageLayout::make(16, 16, PixelFormat::Nv12),
                                       {.name = "nv12", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(image_pool);
  auto image = image_pool->acquire(0ms);
  ASSERT_OK(image);
  auto pooled_frame = Frame::from_tensor(*image);
  ASSERT_OK(pooled_frame);
  EXPECT_ERROR(ipc::send_frame(sp->first.get(), *pooled_frame), ErrorCode::FailedPrecondition, "pool 'nv12'");
  std::byte b[8];
  EXPECT_EQ(::recv(sp->second.get(), b, sizeof b, MSG_DONTWAIT), -1) << "nothing was sent";
  // A tensor that is not a pool's still travels.
  auto plain = TensorDyn::allocate({16, 16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(plain);
  ASSERT_OK(ipc::send(sp->first.get(), *plain));
  ASSERT_OK(ipc::receive(sp->second.get()));
}

TEST(IpcPooled, AllowPooledSendsAndTheCallerKeepsTheBuffer) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto pool = Pool::create({16, 16}, DType::U8, {.name = "own", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  {
    auto m = t->map_write();
    ASSERT_OK(m);
    std::memset(m->data(), 0x3C, m->extent_bytes());
  }
  ASSERT_OK(ipc::send(sp->first.get(), *t, {.allow_pooled = true}));
  auto r = ipc::receive(sp->second.get());
  ASSERT_OK(r);
  EXPECT_TRUE(r->same_buffer(*t));
  // The caller's protocol: it holds `t` until the receiver is done, so the pool cannot hand it out.
  EXPECT_ERROR(pool->try_acquire(), ErrorCode::Busy, "pool 'own'");
  auto m = r->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->data()[0], std::byte{0x3C});
  auto image_pool = Pool::create_image(*ImageLayout::make(16, 16, PixelFormat::Nv12),
                                       {.name = "nv12", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(image_pool);
  auto image = image_pool->acquire(0ms);
  ASSERT_OK(image);
  auto frame = Frame::from_tensor(*image);
  ASSERT_OK(frame);
  ASSERT_OK(ipc::send_frame(sp->first.get(), *frame, {.allow_pooled = true}));
  ASSERT_OK(ipc::receive_frame(sp->second.get()));
}

}  // namespace
