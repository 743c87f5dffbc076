// SPDX-License-Identifier: Apache-2.0
// Child program of GlExitHardware (gl_pbo_test.cpp): creates and drops 20 GL contexts in the ways a
// program does (plain, with a CPU map still open at the drop, with the last handle inside a run()
// callable while another thread drops its own), checks after each that every GL thread is already
// joined, prints "loop done" and returns from main. Exit status: 0 ok, 1 a check failed (named on
// stderr), 77 no headless GL here.
#include <edgetensor/gl.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <thread>

#include "gl/gl_worker.h"
#include "support/test_support.h"

namespace et = edgetensor;
namespace gl = edgetensor::gl;

namespace {

et::AllocateOptions pbo(const std::shared_ptr<gl::Context>& ctx) {
  et::AllocateOptions o;
  o.memory = et::MemoryKind::GlPbo;
  o.gl_context = ctx;
  return o;
}

#ifndef ET_THREAD_COUNT_UNRELIABLE
// Whether this process's thread count comes back to `threads` within 2 s.
bool settles_to(int threads) {
  for (int i = 0; i < 2000; ++i) {
    if (et_test::thread_count() == threads) return true;
    ::usleep(1000);
  }
  return false;
}
#endif

int fail(int round, const char* what) {
  std::fprintf(stderr, "round %d: %s\n", round, what);
  return 1;
}

}  // namespace

int main() {
  {
    // Warm up driver state that lives for the process before taking the baseline.
    auto first = gl::Context::create();
    if (!first) {
      std::fprintf(stderr, "no headless GL: %s\n", first.error().to_string().c_str());
      return 77;
    }
    auto t = et::TensorDyn::allocate({4096}, et::DType::U8, pbo(*first));
    if (!t || !t->map_write()) return fail(-1, "warm-up PBO failed");
  }
  const int threads = et_test::thread_count();
  for (int round = 0; round < 20; ++round) {
    auto created = gl::Context::create();
    if (!created) return fail(round, created.error().to_string().c_str());
    std::shared_ptr<gl::Context> ctx = std::move(*created);
    auto t = et::TensorDyn::allocate({4096}, et::DType::U8, pbo(ctx));
    if (!t) return fail(round, t.error().to_string().c_str());
    switch (round % 3) {
      case 0: {  // the context goes while a map is open: the last tensor's holder joins the thread
        auto m = t->map_write();
        if (!m) return fail(round, m.error().to_string().c_str());
        ctx.reset();
        std::memset(m->data(), 0x5a, 4096);
        m->unmap();
        *t = et::TensorDyn{};
        break;
      }
      case 1: {  // the last handle is in a run() callable while another thread drops the other one
        auto copy = ctx;
        std::thread dropper([&ctx] { ctx.reset(); });
        auto r = copy->run([c = copy]() -> et::Result<void> { return {}; });
        copy.reset();
        dropper.join();
        if (!r) return fail(round, r.error().to_string().c_str());
        *t = et::TensorDyn{};
        break;
      }
      default:
        *t = et::TensorDyn{};
        ctx.reset();
    }
    // Every handle is gone: the thread was joined by whoever dropped the last one, before it returned.
    // A joined thread can stay listed in /proc/self/task for a moment (the kernel wakes pthread_join
    // before it reaps the task), so the count may take a moment to come down; 2 s bounds a real leak.
    // A worker is freed only after its thread is joined: these two say the join happened.
    if (et::detail::live_gl_workers() != 0) return fail(round, "a GL worker is still alive");
    if (et::detail::retired_gl_workers() != 0) return fail(round, "a GL worker was retired instead of joined");
#ifndef ET_THREAD_COUNT_UNRELIABLE
    if (!settles_to(threads)) return fail(round, "a GL thread is still running");
#else
    (void)threads;
#endif
  }
  std::printf("loop done\n");
  std::fflush(stdout);
  return 0;
}
