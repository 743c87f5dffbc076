// SPDX-License-Identifier: Apache-2.0
// GL context logic that needs no GL: device order, option validation, platform names, and the
// failure paths of a machine without EGL. Real GL: tests/hardware/gl_pbo_test.cpp.
#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include "config.h"
#include "support/test_support.h"

// The internal helpers exist only when the GL backend is built.
#if ET_HAVE_EGL
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "gl/egl_display.h"
#include "gl/gl_worker.h"
#endif

namespace et = edgetensor;
using et::ErrorCode;
using et::MemoryKind;

using et_test::mem;

#if ET_HAVE_EGL
TEST(GlDeviceOrder, HardwareBeforeSoftwareEachInEnumerationOrder) {
  EXPECT_EQ(et::detail::device_try_order({}), std::vector<int>{});
  EXPECT_EQ(et::detail::device_try_order({true}), std::vector<int>{0});
  EXPECT_EQ(et::detail::device_try_order({true, false, true, false}), (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(et::detail::device_try_order({false, false}), (std::vector<int>{0, 1}));
}

TEST(GlContextOptions, InvalidOptionsAreNamed) {
  et::gl::ContextOptions o;
  o.timeout = std::chrono::milliseconds(0);
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "timeout 0 ms");
  o = {};
  o.device_index = -2;
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "device_index -2");
  o = {};
  o.platform = et::gl::Platform::Surfaceless;
  o.device_index = 0;
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "needs the device platform");
  o = {};
  o.platform = static_cast<et::gl::Platform>(7);
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "invalid platform 7");
  o = {};
  o.egl_library = std::string("libEGL.so.1\0.bak", 16);  // dlopen would load libEGL.so.1
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument,
               "gl::ContextOptions::egl_library has a NUL byte at byte 11 of 16");
}

TEST(GlContext, MissingEglLibraryIsUnavailableWithTheDlopenReason) {
  const int fds = et_test::open_fd_count();
  et::gl::ContextOptions o;
  o.egl_library = "libedgetensor-no-such-egl.so.1";
  auto ctx = et::gl::Context::create(o);
  EXPECT_ERROR(ctx, ErrorCode::Unavailable, "GL unavailable: dlopen(\"libedgetensor-no-such-egl.so.1\") failed");
  // The other backends are untouched by a missing GL.
  auto t = et::TensorDyn::allocate({16}, et::DType::U8, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST(GlContext, ANonEglLibraryIsUnavailableNamingTheMissingSymbol) {
  et::gl::ContextOptions o;
  o.egl_library = "libc.so.6";
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::Unavailable, "has no symbol eglGetProcAddress");
}

// ---- EGL initialisation that hangs in the driver: the one detached thread ---------------------------
#ifdef ET_FAKE_EGL_HANG_PATH
namespace {
// The controls of tests/support/fake_egl/fake_egl_hang.cpp, from the copy the library loaded.
struct FakeEglHang {
  void* handle = ::dlopen(ET_FAKE_EGL_HANG_PATH, RTLD_NOW | RTLD_NOLOAD);
  int (*entered)() = reinterpret_cast<int (*)()>(handle ? ::dlsym(handle, "et_fake_egl_initialize_entered") : nullptr);
  int (*returned)() = reinterpret_cast<int (*)()>(handle ? ::dlsym(handle, "et_fake_egl_initialize_returned") : nullptr);
  void (*release)() = reinterpret_cast<void (*)()>(handle ? ::dlsym(handle, "et_fake_egl_release") : nullptr);
  void (*hold)() = reinterpret_cast<void (*)()>(handle ? ::dlsym(handle, "et_fake_egl_hold") : nullptr);
  ~FakeEglHang() {
    if (handle) ::dlclose(handle);
  }
};

et::gl::ContextOptions hanging_egl() {
  et::gl::ContextOptions o;
  o.egl_library = ET_FAKE_EGL_HANG_PATH;
  o.platform = et::gl::Platform::Surfaceless;
  o.timeout = std::chrono::milliseconds(100);
  return o;
}

// The fake's counters so far (0 before it is loaded); makes it hang again if an earlier test released it.
int entered_so_far() {
  FakeEglHang fake;
  if (!fake.handle) return 0;
  fake.hold();
  return fake.entered();
}

// Polls `done` for up to 10 s: a hang check, not a timing assertion.
template <class F>
bool eventually(F done) {
  for (int i = 0; i < 10000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}
}  // namespace

TEST(GlInitHang, TheAbandonedThreadOwnsItsWorkerAndFreesItOnceEglReturns) {
  const int threads = et_test::thread_count();
  const std::size_t workers = et::detail::live_gl_workers();
  const int before = entered_so_far();
  EXPECT_ERROR(et::gl::Context::create(hanging_egl()), ErrorCode::Busy,
               "EGL initialisation did not finish within 100 ms");
  FakeEglHang fake;
  ASSERT_TRUE(fake.handle && fake.entered && fake.returned && fake.release && fake.hold) << ::dlerror();
  ASSERT_TRUE(eventually([&] { return fake.entered() == before + 1; }));
  // Detached, still inside eglInitialize: its worker is alive and owned by that thread alone.
  EXPECT_EQ(fake.returned(), before);
  EXPECT_EQ(et::detail::live_gl_workers(), workers + 1);
  EXPECT_EQ(et_test::thread_count(), threads + 1);
  EXPECT_EQ(et::detail::retired_gl_workers(), 0u);
  fake.release();
  // Once EGL returns, the thread tears down what it made, deletes its worker and ends.
  EXPECT_TRUE(eventually([&] { return et::detail::live_gl_workers() == workers && et_test::thread_count() == threads; }));
  EXPECT_EQ(fake.returned(), before + 1);
  EXPECT_EQ(et::detail::live_gl_workers(), workers);
  EXPECT_EQ(et_test::thread_count(), threads);
}

TEST(GlInitHang, ExitDoesNotWaitForAThreadHungInEglInitialize) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int before = entered_so_far();
    auto ctx = et::gl::Context::create(hanging_egl());
    if (ctx || ctx.error().code() != ErrorCode::Busy) ::_exit(2);
    FakeEglHang fake;
    if (!fake.entered || !eventually([&] { return fake.entered() == before + 1; })) ::_exit(3);
    std::exit(0);  // static destructors and atexit handlers run with the thread still in eglInitialize
  }
  // Nothing at exit waits for that thread (there is no exit guard); 10 s is a hang bound only.
  const int status = et_test::wait_child_or_kill(pid, 10000);
  ASSERT_NE(status, -1) << "the child hung at exit behind the hung EGL initialisation";
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
#endif  // ET_FAKE_EGL_HANG_PATH
#else
TEST(GlNotBuilt, EveryEntryAnswersUnavailable) {
  EXPECT_ERROR(et::gl::Context::create(), ErrorCode::Unavailable, "GL backend was not built");
  EXPECT_FALSE(et::backend_status(MemoryKind::GlPbo).built);
}
#endif

TEST(GlPlatformName, NamesEveryPlatform) {
  EXPECT_EQ(et::gl::platform_name(et::gl::Platform::Auto), "auto");
  EXPECT_EQ(et::gl::platform_name(et::gl::Platform::Device), "device");
  EXPECT_EQ(et::gl::platform_name(et::gl::Platform::Surfaceless), "surfaceless");
}
