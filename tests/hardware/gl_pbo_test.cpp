// SPDX-License-Identifier: Apache-2.0
// Real GL: a headless EGL context (Mesa llvmpipe in CI) and real PBOs. Each test skips with the reason
// when no context can be created, unless GL is required (et_test::gl_required(): EDGETENSOR_REQUIRE_GL=1
// or a build with -DET_REQUIRE_GL=ON), where a missing GL fails.
#include <edgetensor/gl.h>
#include <edgetensor/pool.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include <GLES3/gl3.h>  // constants and PFN types only; functions come from Context::proc_address

#include "gl/gl_worker.h"  // live_gl_workers, retired_gl_workers
#include "probe/gl_checks.h"  // the GL check of probe() (edgetensor info)
#include "support/test_support.h"

namespace et = edgetensor;
namespace gl = edgetensor::gl;
using et::DType;
using et::ErrorCode;
using et::MemoryKind;
using et::TensorDyn;

namespace {

et::AllocateOptions pbo(const std::shared_ptr<gl::Context>& ctx) {
  et::AllocateOptions o;
  o.memory = MemoryKind::GlPbo;
  o.gl_context = ctx;
  return o;
}

std::byte pattern(std::size_t i, unsigned seed) { return static_cast<std::byte>((i * 131u + seed * 17u + 7u) & 0xffu); }

// Waits until every job posted before this call (e.g. fire-and-forget deletes) has run.
void flush(const gl::Context& ctx) { ASSERT_OK(ctx.run([]() -> et::Result<void> { return {}; })); }

}  // namespace

TEST(GlContextHardware, ReportsAHeadlessPlatformAndGles3) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  const auto& info = ctx->info();
  EXPECT_NE(info.platform, gl::Platform::Auto);
  EXPECT_FALSE(info.vendor.empty());
  EXPECT_FALSE(info.renderer.empty());
  EXPECT_EQ(info.version.rfind("OpenGL ES 3", 0), 0u) << info.version;
  EXPECT_FALSE(info.egl_version.empty());
  EXPECT_EQ(info.egl_library, "libEGL.so.1");
  std::cout << "[ GL info  ] " << info.platform_detail << " | " << info.vendor << " | " << info.renderer << " | "
            << info.version << " | EGL " << info.egl_version << " (" << info.egl_vendor << ")\n";
  EXPECT_FALSE(ctx->on_gl_thread());
  EXPECT_NE(ctx->proc_address("glBufferSubData"), nullptr);
  EXPECT_EQ(ctx->live_buffer_count(), 0u);
}

TEST(GlContextHardware, EachPlatformOnItsOwnGivesTheSameKindOfContextOrANamedError) {
  ET_GL_CONTEXT_OR_SKIP(any, gl::ContextOptions{});
  for (gl::Platform p : {gl::Platform::Device, gl::Platform::Surfaceless}) {
    gl::ContextOptions o;
    o.platform = p;
    auto ctx = gl::Context::create(o);
    if (!ctx) {
      EXPECT_EQ(ctx.error().code(), ErrorCode::Unavailable) << ctx.error().to_string();
      EXPECT_NE(ctx.error().message().find("GL unavailable: "), std::string::npos);
      std::cout << "[ GL info  ] " << gl::platform_name(p) << ": " << ctx.error().message() << "\n";
      continue;
    }
    EXPECT_EQ((*ctx)->info().platform, p);
    auto t = TensorDyn::allocate({256}, DType::U8, pbo(*ctx));
    ASSERT_OK(t);
    ASSERT_OK(t->map_write());
  }
  gl::ContextOptions o;
  o.device_index = 1000;
  EXPECT_ERROR(gl::Context::create(o), ErrorCode::OutOfRange, "device_index 1000 out of range");
}

TEST(GlContextHardware, SameResultWithDisplayUnsetAndPointingAtADeadXServer) {
  // :93 has no server at all (checked). :94 is a "dead" server: a socket that accepts connections (the
  // kernel completes them from the backlog) but never answers the X handshake, so an EGL that touched
  // X would hang there. Each ctest run of this test is a fresh process, so EGL is initialised here.
  ASSERT_NE(::access("/tmp/.X11-unix/X93", F_OK), 0) << "an X server on :93 exists; pick another number";
  et::UniqueFd dead(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(dead);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const char abstract_name[] = "\0/tmp/.X11-unix/X94";  // Xlib tries the abstract socket first
  std::memcpy(addr.sun_path, abstract_name, sizeof(abstract_name) - 1);
  ASSERT_EQ(::bind(dead.get(), reinterpret_cast<sockaddr*>(&addr),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + sizeof(abstract_name) - 1)), 0)
      << "abstract socket for :94 is taken: " << std::strerror(errno);
  ASSERT_EQ(::listen(dead.get(), 16), 0);
  std::vector<std::string> seen;
  for (const char* display : {static_cast<const char*>(nullptr), ":93", "unix:93.0", ":94"}) {
    et_test::ScopedEnv display_env("DISPLAY", display);
    et_test::ScopedEnv wayland_env("WAYLAND_DISPLAY", nullptr);
    [&] {
      auto ctx = gl::Context::create();
      if (!ctx) {
        if (et_test::gl_required()) FAIL() << ctx.error().to_string();
        seen.push_back("error: " + ctx.error().message());
        return;
      }
      auto t = TensorDyn::allocate({1024}, DType::U8, pbo(*ctx));
      ASSERT_OK(t);
      {
        auto w = t->map_write();
        ASSERT_OK(w);
        for (std::size_t i = 0; i < 1024; ++i) w->bytes()[i] = pattern(i, 3);
      }
      auto r = t->map_read();
      ASSERT_OK(r);
      for (std::size_t i = 0; i < 1024; ++i) ASSERT_EQ(r->bytes()[i], pattern(i, 3));
      seen.push_back((*ctx)->info().platform_detail + " | " + (*ctx)->info().renderer);
    }();
  }
  ASSERT_EQ(seen.size(), 4u);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_EQ(seen[0], seen[i]) << "DISPLAY variant " << i;
  if (seen[0].rfind("error: ", 0) == 0) GTEST_SKIP() << seen[0];
}

TEST(GlPboHardware, RoundTripsThroughMapsAndStartsAsZeros) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({64, 64, 4}, DType::F32, pbo(ctx));
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::GlPbo);
  EXPECT_NE(t->memory_detail().find("GL PBO"), std::string::npos) << t->memory_detail();
  EXPECT_EQ(t->buffer_bytes(), 64u * 64 * 4 * 4);
  EXPECT_EQ(ctx->live_buffer_count(), 1u);
  const std::size_t n = t->packed_bytes();
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    ASSERT_EQ(r->extent_bytes(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(r->bytes()[i], std::byte{0}) << "byte " << i;
  }
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    for (std::size_t i = 0; i < n; ++i) w->bytes()[i] = pattern(i, 1);
  }
  {
    auto rw = t->map_read_write();
    ASSERT_OK(rw);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(rw->bytes()[i], pattern(i, 1)) << "byte " << i;
      rw->bytes()[i] = pattern(i, 2);
    }
  }
  // A view maps only its extent but keeps the rest: write through a batch, then check everything.
  auto b = t->batch(10);
  ASSERT_OK(b);
  {
    auto w = b->map_write();
    ASSERT_OK(w);
    std::memset(w->data(), 0x5a, w->extent_bytes());
  }
  auto r = t->map_read();
  ASSERT_OK(r);
  const std::size_t row = 64 * 4 * 4;
  for (std::size_t i = 0; i < n; ++i) {
    std::byte want = (i >= 10 * row && i < 11 * row) ? std::byte{0x5a} : pattern(i, 2);
    ASSERT_EQ(r->bytes()[i], want) << "byte " << i;
  }
  auto typed = et::Tensor<float>::from(*t);
  ASSERT_OK(typed);
}

TEST(GlPboHardware, NewBuffersAreZeroEvenAfterDirtyOnesWereReleased) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  for (int round = 0; round < 20; ++round) {
    const std::size_t n = 300 * 1024 + static_cast<std::size_t>(round);  // not a multiple of the zero block
    {
      auto dirty = TensorDyn::allocate({n}, DType::U8, pbo(ctx));
      ASSERT_OK(dirty);
      auto w = dirty->map_write();
      ASSERT_OK(w);
      std::memset(w->data(), 0xab, n);
    }
    flush(*ctx);
    auto fresh = TensorDyn::allocate({n}, DType::U8, pbo(ctx));
    ASSERT_OK(fresh);
    auto r = fresh->map_read();
    ASSERT_OK(r);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(r->bytes()[i], std::byte{0}) << "round " << round << " byte " << i;
  }
}

TEST(GlPboHardware, ASecondConcurrentMapIsBusyAlreadyMapped) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({4096}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  auto first = t->map_read();
  ASSERT_OK(first);
  EXPECT_ERROR(t->map_read(), ErrorCode::Busy, "already mapped");
  EXPECT_ERROR(t->map_write(), ErrorCode::Busy, "already mapped");
  auto view = t->view(16, {16});
  ASSERT_OK(view);
  EXPECT_ERROR(view->map_read_write(), ErrorCode::Busy, "already mapped");
  first->unmap();
  ASSERT_OK(t->map_write());
}

TEST(GlPboHardware, NotShareableByFdAndHasAnIdentity) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({64}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  EXPECT_ERROR(t->export_fd(), ErrorCode::Unsupported, "not shareable by fd");
  auto id = t->identity();
  EXPECT_NE(id.id(), 0u);
  EXPECT_TRUE(id.alive());
  auto other = TensorDyn::allocate({64}, DType::U8, pbo(ctx));
  ASSERT_OK(other);
  EXPECT_NE(other->identity().id(), id.id());
  EXPECT_FALSE(t->same_buffer(*other));
  *t = TensorDyn{};
  EXPECT_FALSE(id.alive());
}

// A pool of PBOs: a CPU map and a gl::with_buffer job each keep the buffer out; once both are gone it
// comes back, and the next acquisition is the same GL buffer (no new glGenBuffers, no re-upload of zeros).
TEST(GlPboHardware, PoolReusesTheSameBufferOnceEveryHolderIsGone) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  et::PoolOptions o;
  o.name = "pbo";
  o.max_buffers = 1;
  o.allocate = pbo(ctx);
  auto pool = et::Pool::create({64, 64}, DType::U8, o);
  ASSERT_OK(pool);
  unsigned name = 0;
  et::BufferKey key;
  {
    auto t = pool->acquire(std::chrono::milliseconds(0));
    ASSERT_OK(t);
    key = t->buffer_key();
    ASSERT_OK(gl::with_buffer(*t, [&](const gl::GlBuffer& b) -> et::Result<void> {
      name = b.name;
      return {};
    }));
    auto w = t->map_write();
    ASSERT_OK(w);
    std::memset(w->data(), 0x3c, w->extent_bytes());
    *t = TensorDyn();
    EXPECT_ERROR(pool->try_acquire(), ErrorCode::Busy, "1 of max_buffers 1 in use");  // the map holds it
  }
  EXPECT_EQ(ctx->live_buffer_count(), 1u);
  auto again = pool->acquire(std::chrono::milliseconds(0));
  ASSERT_OK(again);
  EXPECT_EQ(again->buffer_key(), key);
  ASSERT_OK(gl::with_buffer(*again, [&](const gl::GlBuffer& b) -> et::Result<void> {
    EXPECT_EQ(b.name, name) << "the same GL buffer";
    return {};
  }));
  auto r = again->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes()[100], std::byte{0x3c}) << "not zeroed: zero_on_reuse is off";
  EXPECT_EQ(ctx->live_buffer_count(), 1u);
}

TEST(GlPboHardware, ZeroElementTensorMakesNoBuffer) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({0, 16}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  EXPECT_EQ(ctx->live_buffer_count(), 0u);
  auto m = t->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->extent_bytes(), 0u);
  EXPECT_ERROR(gl::with_buffer(*t, [](const gl::GlBuffer&) -> et::Result<void> { return {}; }),
               ErrorCode::InvalidArgument, "not a GL PBO");
}

// The zero-element rule (tensor.h) on a PBO: the kind asked for, nothing to export, and a zero-element
// view of a real PBO keeps its offset (what with_buffer hands to GL code) and exports nothing either.
TEST(GlPboHardware, ZeroElementTensorsFollowTheZeroElementRule) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({0, 16}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::GlPbo);
  EXPECT_ERROR(t->export_fd(), ErrorCode::FailedPrecondition, "tensor [0, 16] has zero elements: nothing to share");
  auto full = TensorDyn::allocate({256}, DType::U8, pbo(ctx));
  ASSERT_OK(full);
  auto v = full->view(64, {0});
  ASSERT_OK(v);
  EXPECT_EQ(v->offset_bytes(), 64u);
  EXPECT_ERROR(v->export_fd(), ErrorCode::FailedPrecondition, "tensor [0] has zero elements: nothing to share");
  EXPECT_ERROR(full->view(260, {0}), ErrorCode::OutOfRange, "the buffer has 256 B");
  std::size_t seen_offset = 1, seen_extent = 1;
  ASSERT_OK(gl::with_buffer(*v, [&](const gl::GlBuffer& b) -> et::Result<void> {
    seen_offset = b.offset_bytes;
    seen_extent = b.extent_bytes;
    return {};
  }));
  EXPECT_EQ(seen_offset, 64u);
  EXPECT_EQ(seen_extent, 0u);
}

TEST(GlRunHardware, RunsOnTheGlThreadReturnsErrorsAndRunsNestedWorkInline) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  std::thread::id gl_thread;
  ASSERT_OK(ctx->run([&]() -> et::Result<void> {
    EXPECT_TRUE(ctx->on_gl_thread());
    gl_thread = std::this_thread::get_id();
    // Nested work from the GL thread runs inline instead of deadlocking.
    return ctx->run([&]() -> et::Result<void> {
      EXPECT_EQ(std::this_thread::get_id(), gl_thread);
      return {};
    });
  }));
  EXPECT_NE(gl_thread, std::this_thread::get_id());
  EXPECT_ERROR(ctx->run([]() -> et::Result<void> { return et::fail(ErrorCode::OutOfRange, "user error 42"); }),
               ErrorCode::OutOfRange, "user error 42");
  EXPECT_ERROR(ctx->run([]() -> et::Result<void> { throw std::runtime_error("boom"); }), ErrorCode::Internal,
               "threw: boom");
  EXPECT_ERROR(ctx->run(nullptr), ErrorCode::InvalidArgument, "empty callable");
  int calls = 0;
  ASSERT_OK(ctx->run_void([&] { ++calls; }));
  EXPECT_EQ(calls, 1);
  // A map taken inside GL-thread work also runs inline.
  auto t = TensorDyn::allocate({32}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  ASSERT_OK(ctx->run([&]() -> et::Result<void> {
    ET_TRY_ASSIGN(auto w, t->map_write());
    w.bytes()[0] = std::byte{9};
    return {};
  }));
  auto r = t->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes()[0], std::byte{9});
}

TEST(GlRunHardware, TimeoutsCancelQueuedWorkAndAbandonRunningWork) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::thread blocker([&] {
    ASSERT_OK(ctx->run([&]() -> et::Result<void> {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return {};
    }));
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto ran = std::make_shared<std::atomic<bool>>(false);
  EXPECT_ERROR(ctx->run([ran]() -> et::Result<void> {
    *ran = true;
    return {};
  }, std::chrono::milliseconds(30)),
               ErrorCode::Busy, "did not start the work within 30 ms");
  release = true;
  blocker.join();
  flush(*ctx);
  EXPECT_FALSE(*ran) << "cancelled work must never run";
  auto finished = std::make_shared<std::atomic<bool>>(false);
  EXPECT_ERROR(ctx->run([finished]() -> et::Result<void> {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    *finished = true;
    return {};
  }, std::chrono::milliseconds(20)),
               ErrorCode::Busy, "did not finish the work within 20 ms");
  flush(*ctx);
  EXPECT_TRUE(*finished);
}

TEST(GlWithBufferHardware, UserGlCodeSeesTheBufferAndTheCpuSeesItsWork) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto bind = reinterpret_cast<PFNGLBINDBUFFERPROC>(ctx->proc_address("glBindBuffer"));
  auto sub = reinterpret_cast<PFNGLBUFFERSUBDATAPROC>(ctx->proc_address("glBufferSubData"));
  auto copy = reinterpret_cast<PFNGLCOPYBUFFERSUBDATAPROC>(ctx->proc_address("glCopyBufferSubData"));
  auto get_error = reinterpret_cast<PFNGLGETERRORPROC>(ctx->proc_address("glGetError"));
  ASSERT_TRUE(bind && sub && copy && get_error);
  auto a = TensorDyn::allocate({1024}, DType::U8, pbo(ctx));
  auto b = TensorDyn::allocate({1024}, DType::U8, pbo(ctx));
  ASSERT_OK(a);
  ASSERT_OK(b);
  std::vector<std::byte> src(1024);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = pattern(i, 5);
  // GL writes into A ...
  ASSERT_OK(gl::with_buffer(*a, [&](const gl::GlBuffer& buf) -> et::Result<void> {
    EXPECT_EQ(buf.buffer_bytes, 1024u);
    EXPECT_EQ(buf.offset_bytes, 0u);
    bind(GL_PIXEL_UNPACK_BUFFER, buf.name);
    sub(GL_PIXEL_UNPACK_BUFFER, 0, 1024, src.data());
    bind(GL_PIXEL_UNPACK_BUFFER, 0);
    if (GLenum e = get_error(); e != GL_NO_ERROR) return et::fail(ErrorCode::Internal, "glBufferSubData failed");
    return {};
  }));
  {
    auto r = a->map_read();
    ASSERT_OK(r);
    for (std::size_t i = 0; i < 1024; ++i) ASSERT_EQ(r->bytes()[i], src[i]);
  }
  // ... and copies A into B (nested with_buffer on the GL thread runs inline).
  ASSERT_OK(gl::with_buffer(*b, [&](const gl::GlBuffer& dst) -> et::Result<void> {
    return gl::with_buffer(*a, [&](const gl::GlBuffer& from) -> et::Result<void> {
      bind(GL_COPY_READ_BUFFER, from.name);
      bind(GL_COPY_WRITE_BUFFER, dst.name);
      copy(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, 1024);
      bind(GL_COPY_READ_BUFFER, 0);
      bind(GL_COPY_WRITE_BUFFER, 0);
      if (get_error() != GL_NO_ERROR) return et::fail(ErrorCode::Internal, "glCopyBufferSubData failed");
      return {};
    });
  }));
  {
    auto r = b->map_read();
    ASSERT_OK(r);
    for (std::size_t i = 0; i < 1024; ++i) ASSERT_EQ(r->bytes()[i], src[i]);
    // While CPU-mapped, GL use is refused (GLES forbids it).
    EXPECT_ERROR(gl::with_buffer(*b, [](const gl::GlBuffer&) -> et::Result<void> { return {}; }), ErrorCode::Busy,
                 "CPU-mapped");
  }
  // The view's offset and extent are passed along.
  auto v = b->view(256, {128});
  ASSERT_OK(v);
  ASSERT_OK(gl::with_buffer(*v, [&](const gl::GlBuffer& buf) -> et::Result<void> {
    EXPECT_EQ(buf.offset_bytes, 256u);
    EXPECT_EQ(buf.extent_bytes, 128u);
    return {};
  }));
}

// with_buffer hands user GL code the buffer's whole size.
TEST(GlWithBufferHardware, BufferBytesIsTheWholeBuffer) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({256}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  auto check = [](const gl::GlBuffer& buf) -> et::Result<void> {
    EXPECT_EQ(buf.buffer_bytes, 256u);
    EXPECT_EQ(buf.offset_bytes, 0u);
    EXPECT_EQ(buf.extent_bytes, 256u);
    return {};
  };
  ASSERT_OK(gl::with_buffer(*t, check));
}

TEST(GlPboHardware, EightThreadsMapTheirOwnPbosAndContendOnASharedOne) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  constexpr int kThreads = 8;
  constexpr int kCycles = 120;
  constexpr std::size_t kBytes = 8192;
  auto shared = TensorDyn::allocate({kBytes}, DType::U8, pbo(ctx));
  ASSERT_OK(shared);
  std::atomic<int> failures{0}, shared_ok{0}, shared_busy{0};
  std::vector<int> own_cycles(kThreads, 0);
  std::vector<std::string> errors(kThreads);
  auto worker = [&](int id) {
    auto mine = TensorDyn::allocate({kBytes}, DType::U8, pbo(ctx));
    if (!mine) {
      errors[id] = mine.error().to_string();
      ++failures;
      return;
    }
    for (int c = 0; c < kCycles; ++c) {
      const unsigned seed = static_cast<unsigned>(id * 1000 + c);
      {
        auto w = mine->map_write();
        if (!w) { errors[id] = w.error().to_string(); ++failures; return; }
        for (std::size_t i = 0; i < kBytes; ++i) w->bytes()[i] = pattern(i, seed);
      }
      {
        auto r = mine->map_read();
        if (!r) { errors[id] = r.error().to_string(); ++failures; return; }
        for (std::size_t i = 0; i < kBytes; ++i)
          if (r->bytes()[i] != pattern(i, seed)) { errors[id] = "own PBO corrupted"; ++failures; return; }
      }
      ++own_cycles[id];
      // Contend: every byte of the shared buffer holds one writer's stamp, never a mix.
      auto s = shared->map_read_write();
      if (!s) {
        if (s.error().code() == ErrorCode::Busy && s.error().message().find("already mapped") != std::string::npos) {
          ++shared_busy;
          continue;
        }
        errors[id] = s.error().to_string();
        ++failures;
        return;
      }
      const std::byte stamp = s->bytes()[0];
      for (std::size_t i = 1; i < kBytes; ++i)
        if (s->bytes()[i] != stamp) { errors[id] = "shared PBO torn"; ++failures; return; }
      std::memset(s->data(), id + 1, kBytes);
      ++shared_ok;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(errors[i], "") << "thread " << i;
  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < kThreads; ++i) EXPECT_GE(own_cycles[i], 100) << "thread " << i;
  EXPECT_GT(shared_ok.load(), 0);
  EXPECT_EQ(shared_ok.load() + shared_busy.load(), kThreads * kCycles);
  std::cout << "[ GL info  ] shared PBO: " << shared_ok.load() << " maps, " << shared_busy.load() << " Busy\n";
  flush(*ctx);
  EXPECT_EQ(ctx->live_buffer_count(), 1u);  // only `shared` is left
}

TEST(GlPboHardware, ContextDestroyedBeforeItsTensorsDisconnectsThem) {
  const int fds_before = et_test::open_fd_count();
  TensorDyn idle, mapped_tensor, view;
  et::WriteMap open_map;
  {
    ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
    auto a = TensorDyn::allocate({4096}, DType::U8, pbo(ctx));
    auto b = TensorDyn::allocate({4096}, DType::U8, pbo(ctx));
    ASSERT_OK(a);
    ASSERT_OK(b);
    idle = *a;
    mapped_tensor = *b;
    auto v = idle.view(64, {64});
    ASSERT_OK(v);
    view = *v;
    auto m = mapped_tensor.map_write();
    ASSERT_OK(m);
    open_map = std::move(*m);
    std::memset(open_map.data(), 0x11, 4096);
  }  // the last reference to the context goes here
  EXPECT_ERROR(idle.map_read(), ErrorCode::FailedPrecondition, "GL context gone");
  EXPECT_ERROR(view.map_write(), ErrorCode::FailedPrecondition, "GL context gone");
  EXPECT_ERROR(gl::with_buffer(idle, [](const gl::GlBuffer&) -> et::Result<void> { return {}; }),
               ErrorCode::FailedPrecondition, "GL context gone");
  EXPECT_NE(idle.memory_detail().find("disconnected"), std::string::npos) << idle.memory_detail();
  EXPECT_ERROR(idle.export_fd(), ErrorCode::Unsupported, "not shareable");
  // The map that was open at shutdown stays valid until it closes (its buffer is deleted then).
  for (std::size_t i = 0; i < 4096; ++i) ASSERT_EQ(open_map.data()[i], std::byte{0x11});
  std::memset(open_map.data(), 0x22, 4096);
  EXPECT_ERROR(mapped_tensor.map_read(), ErrorCode::Busy, "already mapped");
  open_map.unmap();
  EXPECT_ERROR(mapped_tensor.map_read(), ErrorCode::FailedPrecondition, "GL context gone");
  idle = TensorDyn{};  // releases are no-ops
  view = TensorDyn{};
  mapped_tensor = TensorDyn{};
  // The last holder of the worker joined its thread: EGL is torn down, the fds are gone already.
  EXPECT_EQ(et_test::open_fd_count(), fds_before);
  EXPECT_EQ(et::detail::live_gl_workers(), 0u);
}

TEST(GlPboHardware, ContextDestroyedWithoutOpenMapsReleasesEverythingAtOnce) {
  const int fds_before = et_test::open_fd_count();
  std::vector<TensorDyn> keep;
  {
    ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
    for (int i = 0; i < 16; ++i) {
      auto t = TensorDyn::allocate({1000}, DType::F32, pbo(ctx));
      ASSERT_OK(t);
      keep.push_back(*t);
    }
    EXPECT_EQ(ctx->live_buffer_count(), 16u);
  }
  EXPECT_EQ(et_test::open_fd_count(), fds_before);
  for (auto& t : keep) EXPECT_ERROR(t.map_read(), ErrorCode::FailedPrecondition, "GL context gone");
  keep.clear();
}

TEST(GlPboHardware, TwoContextsShareADisplayWithoutBreakingEachOther) {
  ET_GL_CONTEXT_OR_SKIP(first, gl::ContextOptions{});
  auto second = gl::Context::create();
  ASSERT_OK(second);
  auto t = TensorDyn::allocate({512}, DType::U8, pbo(*second));
  ASSERT_OK(t);
  first.reset();  // must not terminate the display under the second context
  auto u = TensorDyn::allocate({512}, DType::U8, pbo(*second));
  ASSERT_OK(u);
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    std::memset(w->data(), 0x77, 512);
  }
  auto r = t->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes()[511], std::byte{0x77});
}

TEST(GlPboHardware, ContextDroppedOnItsOwnThreadShutsDownWithoutDeadlock) {
  for (int i = 0; i < 10; ++i) {
    ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
    auto t = TensorDyn::allocate({64}, DType::U8, pbo(ctx));
    ASSERT_OK(t);
    auto weak = std::weak_ptr<gl::Context>(ctx);
    // The callable holds a reference; the test drops its own while it runs, so the last one may go on the
    // GL thread (callable destroyed there) or here, whichever finishes last.
    auto copy = ctx;
    std::thread dropper([&ctx] { ctx.reset(); });
    EXPECT_TRUE(copy->run([c = copy]() -> et::Result<void> { return {}; }).has_value());
    copy.reset();
    dropper.join();
    // The caller destroys the callable it waited for, so the last handle never goes on the GL thread.
    EXPECT_TRUE(weak.expired());
    EXPECT_EQ(et::detail::retired_gl_workers(), 0u);
    auto m = t->map_read();
    EXPECT_FALSE(m.has_value());
  }
}

// User code on the GL thread drops the last handle: that thread cannot join itself, so the worker is
// retired, and the next Context::create joins it once its thread has ended.
TEST(GlPboHardware, LastHandleDroppedInsideItsOwnJobIsRetiredThenJoinedByTheNextCreate) {
  ASSERT_EQ(et::detail::retired_gl_workers(), 0u);
  auto holder = std::make_shared<std::shared_ptr<gl::Context>>();
  {
    ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
    *holder = std::move(ctx);
  }
  const int threads = et_test::thread_count() - 1;  // after the driver's own lasting threads started
  const gl::Context& context = **holder;
  ASSERT_OK(context.run([holder]() -> et::Result<void> {
    holder->reset();  // ~Context on its own GL thread
    return {};
  }));
  EXPECT_EQ(et::detail::retired_gl_workers(), 1u);
  // Its loop ends after that job; then the thread is gone from the process (not yet joined).
  for (int i = 0; i < 10000 && et_test::thread_count() > threads; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(et_test::thread_count(), threads);
  auto next = gl::Context::create();
  ASSERT_OK(next);
  EXPECT_EQ(et::detail::retired_gl_workers(), 0u);
  EXPECT_EQ(et::detail::live_gl_workers(), 1u);  // only `next`'s
}

// A program that creates and drops contexts in a loop, then exits (tests/hardware/gl_exit_helper.cpp,
// run as a child): every thread is joined before the last handle's drop returns, and exit has nothing
// to wait for (there is no exit guard). The 10 s bound is a hang check, not a timing assertion.
TEST(GlExitHardware, CreateDropLoopJoinsEveryThreadAndExitDoesNotWait) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execl(ET_GL_EXIT_HELPER, ET_GL_EXIT_HELPER, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string said;
  char buf[256];
  ssize_t n = 0;
  auto loop_done = std::chrono::steady_clock::now();
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) {
    said.append(buf, static_cast<std::size_t>(n));
    loop_done = std::chrono::steady_clock::now();  // main is returning once the line is out
  }
  ::close(out[0]);
  const int status = et_test::wait_child_or_kill(pid, 10000);
  ASSERT_NE(status, -1) << "the helper hung at exit";
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - loop_done);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  if (WEXITSTATUS(status) == 77 && !et_test::gl_required()) GTEST_SKIP() << "no headless GL here";
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the helper's checks failed (its stderr above)";
  EXPECT_EQ(said, "loop done\n");
  std::cout << "[ GL info  ] helper exit after its loop: about " << ms.count() << " ms\n";
}

TEST(GlPboHardware, TenThousandCreateReleaseCyclesReturnBuffersAndFdsToBaseline) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  {
    // Warm up lazily created driver state before taking the baseline.
    auto t = TensorDyn::allocate({4096}, DType::U8, pbo(ctx));
    ASSERT_OK(t);
    ASSERT_OK(t->map_write());
  }
  flush(*ctx);
  const int fds = et_test::open_fd_count();
  const std::size_t buffers = ctx->live_buffer_count();
  ASSERT_EQ(buffers, 0u);
  for (int i = 0; i < 10000; ++i) {
    auto t = TensorDyn::allocate({static_cast<std::size_t>(256 + (i % 7) * 512)}, DType::U8, pbo(ctx));
    ASSERT_TRUE(t.has_value()) << "cycle " << i << ": " << t.error().to_string();
    if (i % 100 == 0) {
      auto w = t->map_write();
      ASSERT_OK(w);
      w->bytes()[0] = std::byte{1};
    }
  }
  flush(*ctx);
  EXPECT_EQ(ctx->live_buffer_count(), buffers);
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST(GlPboHardware, ForkedChildFailsFastAndNeverHangs) {
  ET_GL_CONTEXT_OR_SKIP(ctx, gl::ContextOptions{});
  auto t = TensorDyn::allocate({128}, DType::U8, pbo(ctx));
  ASSERT_OK(t);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(20);  // a hang kills the child with SIGALRM, which the parent reports
    int bad = 0;
    auto m = t->map_read();
    if (m || m.error().code() != ErrorCode::FailedPrecondition || m.error().message().find("fork()") == std::string::npos)
      bad |= 1;
    auto r = ctx->run([]() -> et::Result<void> { return {}; });
    if (r || r.error().code() != ErrorCode::FailedPrecondition) bad |= 2;
    auto a = TensorDyn::allocate({16}, DType::U8, pbo(ctx));
    if (a || a.error().code() != ErrorCode::FailedPrecondition) bad |= 4;
    if (gl::with_buffer(*t, [](const gl::GlBuffer&) -> et::Result<void> { return {}; })) bad |= 8;
    *t = TensorDyn{};  // releases in the child are no-ops
    ctx.reset();       // so is dropping the context
    ::_exit(bad);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed checks (bit mask): " << WEXITSTATUS(status);
  // The parent's context is untouched.
  auto w = t->map_write();
  ASSERT_OK(w);
}

// The GL section of probe() (src/probe/gl_checks.cpp, public API only).
TEST(GlProbeHardware, ReportsPlatformRendererAndARealRoundTrip) {
  auto p = edgetensor::detail::gl_check();
  if (!p.available) {
    if (et_test::gl_required()) FAIL() << p.reason;
    GTEST_SKIP() << p.reason;
  }
  EXPECT_TRUE(p.pbo_round_trip) << p.pbo_detail;
  EXPECT_FALSE(p.info.renderer.empty());
  std::cout << "[ GL probe ] " << p.info.platform_detail << " | " << p.info.renderer << " | " << p.info.version
            << " | PBO: " << p.pbo_detail << "\n";
}
