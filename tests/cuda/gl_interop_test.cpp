// SPDX-License-Identifier: Apache-2.0
// CUDA-GL interop: cuda::map of GL PBO tensors, on a real headless EGL context (Mesa llvmpipe
// here) with the CUDA test-double runtime (libet_fake_cudart.so) or the installed runtime.
//   CudaGlFake*          lane cuda.gl.fake.: exact call sequence and thread of every CUDA-GL call
//   CudaGlFakeNoInterop* lane cuda.gl.fakenointerop.: a runtime without the GL-interop symbols
//   CudaGlReal*          lane cuda.gl.real.: the installed runtime (no driver here): fast failure
// Without a headless GL context the tests skip naming why (fail when GL is required: support/env.h).
#include <sys/syscall.h>
#include <unistd.h>

#include <edgetensor/cuda.h>
#include <edgetensor/gl.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_support.h"
#include "probe/gl_checks.h"  // the CUDA-GL round trip of probe() (edgetensor info)

namespace et_cuda_test {
namespace {

using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::Result;
using edgetensor::TensorDyn;
namespace cuda = edgetensor::cuda;
namespace gl = edgetensor::gl;

TensorDyn pbo_tensor(const std::shared_ptr<gl::Context>& ctx, std::size_t floats = 4096) {
  edgetensor::AllocateOptions o;
  o.memory = MemoryKind::GlPbo;
  o.gl_context = ctx;
  auto t = TensorDyn::allocate({floats}, DType::F32, o);
  EXPECT_TRUE(t) << t.error().to_string();
  return t ? *t : TensorDyn{};
}

int gl_thread_id(const gl::Context& ctx) {
  int tid = 0;
  auto r = ctx.run([&tid]() -> Result<void> {
    tid = static_cast<int>(syscall(SYS_gettid));
    return {};
  });
  EXPECT_TRUE(r) << r.error().to_string();
  return tid;
}

// Waits until the GL thread has run everything posted so far (unmaps and deletes are fire-and-forget).
void flush(const gl::Context& ctx) {
  auto r = ctx.run([]() -> Result<void> { return {}; });
  ASSERT_TRUE(r) << r.error().to_string();
}

unsigned buffer_name(const TensorDyn& t) {
  unsigned name = 0;
  auto r = gl::with_buffer(t, [&name](const gl::GlBuffer& b) -> Result<void> {
    name = b.name;
    return {};
  });
  EXPECT_TRUE(r) << r.error().to_string();
  return name;
}

bool is_gl_interop(const std::string& n) { return n.rfind("cudaGraphics", 0) == 0 || n.rfind("cudaGL", 0) == 0; }

class CudaGlFake : public FakeLaneTest {
 protected:
  void TearDown() override {
    if (!IsSkipped() && fake_.ok()) {
      EXPECT_EQ(fake_.live("gl_resource"), 0) << "a GL buffer was left registered";
      EXPECT_EQ(fake_.live("gl_mapped"), 0) << "a GL buffer was left mapped";
    }
    FakeLaneTest::TearDown();
  }
  /// The CUDA-GL calls since the last reset, in order.
  std::vector<const EtFakeCall*> gl_calls() const {
    std::vector<const EtFakeCall*> out;
    for (int i = 0; i < fake_.call_count(); ++i)
      if (is_gl_interop(fake_.call(i)->name)) out.push_back(fake_.call(i));
    return out;
  }
  std::vector<std::string> gl_names() const {
    std::vector<std::string> out;
    for (auto* c : gl_calls()) out.emplace_back(c->name);
    return out;
  }
  /// Every CUDA-GL call ran on `tid` with a GL context current.
  void expect_on_gl_thread(int tid) const {
    for (auto* c : gl_calls()) {
      EXPECT_EQ(c->tid, tid) << c->name << " ran off the GL worker thread";
      EXPECT_EQ(c->gl_current, 1) << c->name << " ran without a current GL context";
    }
  }
};

TEST_F(CudaGlFake, RegistersOnceMapsAndUnmapsPerCudaMapAllOnTheGlThread) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  ASSERT_TRUE(loader_.gl_interop);
  const int gl_tid = gl_thread_id(*ctx);
  ASSERT_NE(gl_tid, static_cast<int>(syscall(SYS_gettid)));
  {
    TensorDyn t = pbo_tensor(ctx);
    const unsigned name = buffer_name(t);
    fake_.reset();
    for (int i = 0; i < 3; ++i) {
      auto m = cuda::map(t);
      ASSERT_TRUE(m) << m.error().to_string();
      EXPECT_NE(m->device_ptr(), nullptr);
      EXPECT_EQ(m->extent_bytes(), t.extent_bytes());
      EXPECT_EQ(m->path(), cuda::CudaPath::GlBuffer);
      EXPECT_EQ(m->device(), 0);
    }
    flush(*ctx);
    const std::vector<std::string> want = {
        "cudaGLGetDevices",
        "cudaGraphicsGLRegisterBuffer",
        "cudaGraphicsMapResources", "cudaGraphicsResourceGetMappedPointer", "cudaGraphicsUnmapResources",
        "cudaGraphicsMapResources", "cudaGraphicsResourceGetMappedPointer", "cudaGraphicsUnmapResources",
        "cudaGraphicsMapResources", "cudaGraphicsResourceGetMappedPointer", "cudaGraphicsUnmapResources"};
    EXPECT_EQ(gl_names(), want);
    const EtFakeCall* reg = fake_.last("cudaGraphicsGLRegisterBuffer");
    ASSERT_NE(reg, nullptr);
    EXPECT_EQ(reg->args[0], name) << "registered another buffer";
    EXPECT_EQ(reg->args[1], 0u) << "register flags must be none";
    EXPECT_EQ(reg->gl_buffer_alive, 1);
    const EtFakeCall* dev = fake_.last("cudaGLGetDevices");
    EXPECT_EQ(dev->args[1], 1u) << "cudaGLDeviceListAll";
    for (auto* c : gl_calls())
      if (std::string(c->name) == "cudaGraphicsMapResources" || std::string(c->name) == "cudaGraphicsUnmapResources") {
        EXPECT_EQ(c->args[2], 0u) << "default stream expected";
      }
    expect_on_gl_thread(gl_tid);
    EXPECT_EQ(fake_.live("gl_resource"), 1) << "the registration is cached until the buffer goes";
    EXPECT_EQ(fake_.live("gl_mapped"), 0);
    fake_.reset();
  }
  flush(*ctx);  // the tensor's release posted the delete
  EXPECT_EQ(gl_names(), std::vector<std::string>{"cudaGraphicsUnregisterResource"});
  const EtFakeCall* unreg = fake_.last("cudaGraphicsUnregisterResource");
  ASSERT_NE(unreg, nullptr);
  EXPECT_EQ(unreg->gl_buffer_alive, 1) << "unregistered after glDeleteBuffers";
  expect_on_gl_thread(gl_tid);
  EXPECT_EQ(ctx->live_buffer_count(), 0u);
}

TEST_F(CudaGlFake, MapsAndUnmapsOnTheCallersStreamAndKeepsTheViewOffset) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx, 4096);
  auto second = t.view(1024 * sizeof(float), {std::size_t{1024}}, {});
  ASSERT_TRUE(second) << second.error().to_string();
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream) << stream.error().to_string();
  fake_.reset();
  cuda::MapOptions o;
  o.stream = &*stream;
  auto m = cuda::map(*second, o);
  ASSERT_TRUE(m) << m.error().to_string();
  const EtFakeCall* ptr = fake_.last("cudaGraphicsResourceGetMappedPointer");
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m->device_ptr()), ptr->args[1] + 1024 * sizeof(float));
  EXPECT_EQ(m->extent_bytes(), 1024 * sizeof(float));
  m->unmap();
  m->unmap();  // idempotent
  flush(*ctx);
  const auto* map = fake_.last("cudaGraphicsMapResources");
  const auto* unmap = fake_.last("cudaGraphicsUnmapResources");
  ASSERT_NE(map, nullptr);
  ASSERT_NE(unmap, nullptr);
  EXPECT_EQ(map->args[2], reinterpret_cast<std::uintptr_t>(stream->native_handle()));
  EXPECT_EQ(unmap->args[2], reinterpret_cast<std::uintptr_t>(stream->native_handle()));
  EXPECT_EQ(fake_.count("cudaGraphicsUnmapResources"), 1);
  // A moved-from stream is refused before anything is mapped.
  cuda::Stream moved = std::move(*stream);
  auto bad = cuda::map(t, o);
  EXPECT_ERROR(bad, ErrorCode::InvalidArgument, "moved-from Stream");
  EXPECT_EQ(fake_.count("cudaGraphicsMapResources"), 1);
}

TEST_F(CudaGlFake, CpuMapsAndUserGlWorkAreRefusedWhileCudaMapped) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  auto m = cuda::map(t);
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_ERROR(t.map_write(), ErrorCode::Busy, "mapped by CUDA");
  EXPECT_ERROR(t.map_read(), ErrorCode::Busy, "release the CudaMap first");
  bool ran = false;
  EXPECT_ERROR(gl::with_buffer(t, [&ran](const gl::GlBuffer&) -> Result<void> {
                 ran = true;
                 return {};
               }),
               ErrorCode::Busy, "mapped by CUDA");
  EXPECT_FALSE(ran);
  EXPECT_ERROR(cuda::map(t), ErrorCode::Busy, "another CudaMap of it is open");
  m->unmap();
  // FIFO on the GL thread: the unmap posted by unmap() runs before this map.
  auto w = t.map_write();
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(fake_.violations(), 0);
}

TEST_F(CudaGlFake, CudaMapIsRefusedWhileACpuMapIsOpen) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  fake_.reset();
  {
    auto r = t.map_read();
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_ERROR(cuda::map(t), ErrorCode::Busy, "CPU-mapped");  // before registering
  }
  EXPECT_EQ(fake_.count("cudaGraphicsGLRegisterBuffer"), 0);
  auto m = cuda::map(t);  // registers now
  ASSERT_TRUE(m) << m.error().to_string();
  m->unmap();
  {
    auto r = t.map_read();
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_ERROR(cuda::map(t), ErrorCode::Busy, "CPU-mapped");  // registered, not mapped again
  }
  flush(*ctx);
  EXPECT_EQ(fake_.count("cudaGraphicsGLRegisterBuffer"), 1);
  EXPECT_EQ(fake_.count("cudaGraphicsMapResources"), 1);
  EXPECT_EQ(fake_.count("cudaGraphicsUnmapResources"), 1);
}

TEST_F(CudaGlFake, ContextShutdownUnregistersFirstThenTheTensorIsDisconnected) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  const int gl_tid = gl_thread_id(*ctx);
  TensorDyn t = pbo_tensor(ctx);
  {
    auto m = cuda::map(t);
    ASSERT_TRUE(m) << m.error().to_string();
  }
  flush(*ctx);  // the release posts its unmap to the GL thread without waiting: let it run first
  EXPECT_EQ(gl_names(), (std::vector<std::string>{"cudaGLGetDevices", "cudaGraphicsGLRegisterBuffer", "cudaGraphicsMapResources",
                                                  "cudaGraphicsResourceGetMappedPointer", "cudaGraphicsUnmapResources"}));
  fake_.reset();
  ctx.reset();  // the context goes first; the tensor lives on
  EXPECT_EQ(gl_names(), (std::vector<std::string>{"cudaGraphicsUnregisterResource"}));
  const EtFakeCall* unreg = fake_.last("cudaGraphicsUnregisterResource");
  ASSERT_NE(unreg, nullptr);
  EXPECT_EQ(unreg->gl_buffer_alive, 1) << "unregistered after the buffer was deleted";
  expect_on_gl_thread(gl_tid);
  EXPECT_EQ(fake_.live("gl_resource"), 0);
  fake_.reset();
  EXPECT_ERROR(cuda::map(t), ErrorCode::FailedPrecondition, "GL context gone");
  t = TensorDyn{};  // release of a disconnected PBO: no CUDA call
  EXPECT_EQ(fake_.call_count(), fake_.count("cudaGetDevice")) << "only the device lookup of cuda::map";
  EXPECT_EQ(gl_names(), std::vector<std::string>{});
}

TEST_F(CudaGlFake, ContextShutdownWhileCudaMappedUnmapsAndUnregistersOnce) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  const int gl_tid = gl_thread_id(*ctx);
  TensorDyn t = pbo_tensor(ctx);
  auto m = cuda::map(t);
  ASSERT_TRUE(m) << m.error().to_string();
  et_test::ScopedLogCapture capture;
  fake_.reset();
  ctx.reset();
  EXPECT_EQ(gl_names(), (std::vector<std::string>{"cudaGraphicsUnmapResources", "cudaGraphicsUnregisterResource"}));
  expect_on_gl_thread(gl_tid);
  EXPECT_TRUE(capture.contains("CudaMap of it is open")) << "the shutdown must say that an open CudaMap lost its pointer";
  m->unmap();  // no second unmap
  t = TensorDyn{};
  EXPECT_EQ(fake_.count("cudaGraphicsUnmapResources"), 1);
  EXPECT_EQ(fake_.count("cudaGraphicsUnregisterResource"), 1);
}

TEST_F(CudaGlFake, MapOfAPboWhoseContextIsGoneFailsWithThatReason) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  ctx.reset();
  fake_.reset();
  EXPECT_ERROR(cuda::map(t), ErrorCode::FailedPrecondition, "GL context gone");
  EXPECT_EQ(gl_names(), std::vector<std::string>{});
}

TEST_F(CudaGlFake, FailedRegisterIsRetriedAndLeavesNothing) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  fake_.fail("cudaGraphicsGLRegisterBuffer", 1, 2 /* cudaErrorMemoryAllocation */);
  EXPECT_ERROR(cuda::map(t), ErrorCode::OutOfMemory, "cudaGraphicsGLRegisterBuffer(GL buffer");
  EXPECT_EQ(fake_.live("gl_resource"), 0);
  auto w = t.map_write();  // nothing is attached: the PBO is not busy
  ASSERT_TRUE(w) << w.error().to_string();
  w->unmap();
  auto m = cuda::map(t);
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(fake_.count("cudaGraphicsGLRegisterBuffer"), 2);
}

TEST_F(CudaGlFake, FailedMapOrPointerLeavesThePboUsable) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  fake_.fail("cudaGraphicsMapResources", 1, 999);
  EXPECT_ERROR(cuda::map(t), ErrorCode::Internal, "cudaGraphicsMapResources(GL buffer");
  EXPECT_EQ(fake_.count("cudaGraphicsUnmapResources"), 0) << "nothing was mapped";
  fake_.fail("cudaGraphicsResourceGetMappedPointer", 1, 999);
  EXPECT_ERROR(cuda::map(t), ErrorCode::Internal, "cudaGraphicsResourceGetMappedPointer");
  EXPECT_EQ(fake_.count("cudaGraphicsUnmapResources"), 1) << "the map made before the failure is undone";
  EXPECT_EQ(fake_.live("gl_mapped"), 0);
  {
    auto r = t.map_read();
    ASSERT_TRUE(r) << r.error().to_string();
  }
  auto m = cuda::map(t);
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(fake_.count("cudaGraphicsGLRegisterBuffer"), 1);
}

TEST_F(CudaGlFake, RoundTripReportsThatTheFakePointerDoesNotAliasTheBuffer) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  auto r = edgetensor::detail::cuda_gl_round_trip(ctx);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("CUDA read of a CPU-written PBO differs at byte"), std::string::npos) << r.detail;
  flush(*ctx);  // the round trip's PBO is deleted on the GL thread
  EXPECT_EQ(ctx->live_buffer_count(), 0u);
}

// Lanes that change what the fake says about the GL context's devices (read at each call) or the device
// count (read once by report(): set before it).
class CudaGlFakeDevices : public CudaGlFake {
 protected:
  void set(const char* gl_devices, const char* devices) {
    gl_devices_.emplace("ET_FAKE_CUDART_GL_DEVICES", gl_devices);
    devices_.emplace("ET_FAKE_CUDART_DEVICES", devices);
  }
  void TearDown() override {
    gl_devices_.reset();
    CudaGlFake::TearDown();
  }
  std::optional<et_test::ScopedEnv> gl_devices_, devices_;
};

class CudaGlFakeTwoGpus : public CudaGlFakeDevices {
 protected:
  void SetUp() override {
    set("1", "2");  // the EGL context runs on CUDA device 1 of 2
    CudaGlFakeDevices::SetUp();
  }
};

TEST_F(CudaGlFakeTwoGpus, ContextOnAnotherCudaDeviceIsAClearErrorBeforeAnyRegistration) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  ASSERT_EQ(report_.device_count, 2);
  TensorDyn t = pbo_tensor(ctx);
  cuda::MapOptions d0;
  d0.device = 0;
  EXPECT_ERROR(cuda::map(t, d0), ErrorCode::FailedPrecondition,
               "runs on CUDA device(s) [1], not on the requested CUDA device 0");
  EXPECT_EQ(fake_.count("cudaGraphicsGLRegisterBuffer"), 0);
  cuda::MapOptions d1;
  d1.device = 1;
  auto m = cuda::map(t, d1);
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->device(), 1);
  m->unmap();
  // The registration is bound to device 1 now.
  EXPECT_ERROR(cuda::map(t, d0), ErrorCode::FailedPrecondition, "bound to CUDA device 1");
}

class CudaGlFakeNotCuda : public CudaGlFakeDevices {
 protected:
  void SetUp() override {
    set("none", "1");  // e.g. a context on llvmpipe or another vendor's GPU
    CudaGlFakeDevices::SetUp();
  }
};

TEST_F(CudaGlFakeNotCuda, ContextOnNoCudaDeviceIsUnsupportedNamingTheRenderer) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  auto m = cuda::map(t);
  EXPECT_ERROR(m, ErrorCode::Unsupported, "is not on a CUDA device");
  if (!m) {
    EXPECT_NE(m.error().message().find(ctx->info().renderer), std::string::npos) << m.error().message();
  }
  EXPECT_EQ(fake_.count("cudaGraphicsGLRegisterBuffer"), 0);
  auto r = t.map_write();  // the PBO is unaffected
  EXPECT_TRUE(r) << r.error().to_string();
}

class CudaGlFakeNoInterop : public CudaGlFake {
 protected:
  const char* expected_path() const override {
#ifdef ET_FAKE_CUDART_NOGL_PATH
    return ET_FAKE_CUDART_NOGL_PATH;
#else
    return "";
#endif
  }
};

TEST_F(CudaGlFakeNoInterop, RuntimeWithoutGlInteropSymbolsIsUnsupportedNamingThem) {
  ET_GL_CONTEXT_OR_SKIP(ctx);
  EXPECT_FALSE(loader_.gl_interop) << "reported as a capability, not an error";
  EXPECT_TRUE(report_.error.empty()) << report_.error;
  bool listed = false;
  for (const auto& m : loader_.missing_optional_symbols) listed |= m == "cudaGraphicsGLRegisterBuffer";
  EXPECT_TRUE(listed);
  TensorDyn t = pbo_tensor(ctx);
  EXPECT_ERROR(cuda::map(t), ErrorCode::Unsupported, "lacks the GL-interop symbols (cudaGraphicsGLRegisterBuffer");
  auto r = t.map_read();
  EXPECT_TRUE(r) << r.error().to_string();
}

// The installed runtime as the loader finds it (here: libcudart.so.13 without a driver).
TEST(CudaGlRealRuntime, WithoutADriverMapFailsFastWithTheReasonAndThePboStaysUsable) {
  const auto s = cuda::report();
  if (s.available) GTEST_SKIP() << "CUDA is usable here (" << s.summary() << "); tests/gpu/run.sh covers it";
  ET_GL_CONTEXT_OR_SKIP(ctx);
  TensorDyn t = pbo_tensor(ctx);
  auto m = cuda::map(t);
  EXPECT_ERROR(m, ErrorCode::Unavailable, "cuda::map: CUDA unavailable: ");
  if (!m && !s.error.empty()) {
    EXPECT_NE(m.error().message().find(s.error), std::string::npos) << "the status reason must be named";
  }
  auto w = t.map_write();
  EXPECT_TRUE(w) << w.error().to_string();
  w->unmap();
  auto rt = edgetensor::detail::cuda_gl_round_trip(ctx);
  EXPECT_FALSE(rt.ok);
  EXPECT_EQ(rt.detail.rfind("CUDA unavailable: ", 0), 0u) << rt.detail;
  EXPECT_EQ(ctx->live_buffer_count(), 1u) << "the round trip allocated nothing";
}

}  // namespace
}  // namespace et_cuda_test
