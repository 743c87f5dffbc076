// SPDX-License-Identifier: Apache-2.0
// DLPack exports of GL PBO tensors (dlpack.h preamble): the capsule keeps the PBO mapped, so other maps
// answer Busy until the deleter runs, from any thread. Real headless GL (label hardware).
#include <edgetensor/dlpack.h>
#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "support/test_support.h"

namespace et = edgetensor;
namespace dl = edgetensor::dlpack;

namespace {

TEST(GlDlpackHardware, ExportKeepsThePboMappedUntilTheDeleter) {
  ET_GL_CONTEXT_OR_SKIP(ctx, et::gl::ContextOptions{});
  et::AllocateOptions o;
  o.memory = et::MemoryKind::GlPbo;
  o.gl_context = ctx;
  auto t = et::TensorDyn::allocate({16, 16}, et::DType::U8, o);
  ASSERT_OK(t);
  auto e = dl::export_versioned(*t);
  ASSERT_OK(e);
  dl::ManagedTensorVersioned* x = *e;
  EXPECT_EQ(x->dl_tensor.device.device_type, dl::DeviceType::Cpu);
  std::memset(x->dl_tensor.data, 0x37, 256);  // a consumer writes through the capsule
  EXPECT_ERROR(t->map_read(), et::ErrorCode::Busy, "already mapped");
  EXPECT_ERROR(dl::export_legacy(*t), et::ErrorCode::Busy, "already mapped");
  et::BufferIdentity id = t->identity();
  *t = et::TensorDyn();  // the capsule alone keeps the PBO
  EXPECT_TRUE(id.alive());
  std::thread([x] { x->deleter(x); }).join();
  EXPECT_FALSE(id.alive()) << "the deleter released the map and the last storage reference";
}

TEST(GlDlpackHardware, BytesWrittenThroughTheCapsuleReachTheBuffer) {
  ET_GL_CONTEXT_OR_SKIP(ctx, et::gl::ContextOptions{});
  et::AllocateOptions o;
  o.memory = et::MemoryKind::GlPbo;
  o.gl_context = ctx;
  auto t = et::TensorDyn::allocate({64}, et::DType::U8, o);
  ASSERT_OK(t);
  auto e = dl::export_legacy(*t);
  ASSERT_OK(e);
  std::memset((*e)->dl_tensor.data, 0x5c, 64);
  (*e)->deleter(*e);
  auto r = t->map_read();
  ASSERT_OK(r);
  for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(static_cast<int>(r->bytes()[i]), 0x5c) << i;
}

}  // namespace
