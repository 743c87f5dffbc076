// SPDX-License-Identifier: Apache-2.0
// edgetensor.Pool (edgetensor/pool.h): same-layout buffers reused. A buffer goes back to its pool when
// its last holder is gone; from Python the holders are the Tensor objects, their views, Maps, DLPack
// capsules and the numpy/torch arrays made from them, all of which hold the C++ storage.
#include "bindings.h"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>

namespace etpy {
namespace {

et::PoolOptions pool_options(std::string name, std::size_t min_buffers, std::size_t max_buffers,
                             const py::handle& memory, std::string dma_heap,
                             std::shared_ptr<et::gl::Context> gl_context, bool zero_on_reuse) {
  et::PoolOptions o;
  o.name = std::move(name);
  o.min_buffers = min_buffers;
  o.max_buffers = max_buffers;
  o.allocate.memory = to_memory_kind(memory);
  o.allocate.dma_heap = std::move(dma_heap);
  o.allocate.gl_context = std::move(gl_context);
  o.zero_on_reuse = zero_on_reuse;
  o.on_wait = run_signal_handlers;  // acquire() waits with the GIL released: Ctrl-C ends the wait
  return o;
}

const char* kCreateArgsDoc =
    " name: names the pool in errors and stats and every tensor it gives (and so each memfd and DMA-BUF). "
    "min_buffers are allocated now; more on demand, never more than max_buffers at once (free plus in use); "
    "the pool never shrinks. memory, dma_heap, gl_context: as allocate() (no shm_name: a named object is made "
    "once). zero_on_reuse: zero a reused buffer through a write map before handing it out (a new one reads "
    "as zeros anyway). Errors: InvalidArgumentError (max_buffers 0, min_buffers > max_buffers, a NUL in the "
    "name, zero elements), then allocate's for the first buffers. Releases the GIL while allocating.";

}  // namespace

void bind_pool(py::module_& m) {
  py::class_<et::PoolStats>(m, "PoolStats", "A snapshot of a pool's counters (taken under one lock).")
      .def_readonly("allocated", &et::PoolStats::allocated, "Buffers that exist now: free + in_use.")
      .def_readonly("free", &et::PoolStats::free, "Back in the pool (including those waiting for device work).")
      .def_readonly("device_pending", &et::PoolStats::device_pending,
                    "Of free: buffers whose recorded CUDA work had not completed when last asked.")
      .def_readonly("in_use", &et::PoolStats::in_use, "Handed out and not back yet (a holder is alive).")
      .def_readonly("peak_in_use", &et::PoolStats::peak_in_use, "The most buffers in use at once since create.")
      .def_readonly("acquired", &et::PoolStats::acquired, "Successful acquisitions.")
      .def_readonly("waits", &et::PoolStats::waits, "Acquisitions that found no buffer at first and waited.")
      .def_readonly("timeouts", &et::PoolStats::timeouts,
                    "Acquisitions that failed: timed out (TimeoutError), or none free at once (BusyError).")
      .def("__repr__", [](const et::PoolStats& s) {
        return "PoolStats(allocated=" + std::to_string(s.allocated) + ", free=" + std::to_string(s.free) +
               ", in_use=" + std::to_string(s.in_use) + ", peak_in_use=" + std::to_string(s.peak_in_use) +
               ", acquired=" + std::to_string(s.acquired) + ", waits=" + std::to_string(s.waits) +
               ", timeouts=" + std::to_string(s.timeouts) + ")";
      });

  py::class_<et::Pool>(
      m, "Pool",
      "A bounded pool of same-layout buffers, allocated once and handed out again and again, so a steady state "
      "pays for the data only (no allocation, page fault, fd or mmap per frame). Make one with Pool.create or "
      "Pool.create_image. A buffer goes back to the pool when its last holder is gone: the tensor acquire() "
      "gave, its views, its Maps (also one closed while a numpy array of it lives), DLPack capsules and the "
      "numpy and torch arrays made from it; nothing is returned by hand (del them, or let them go out of "
      "scope). A reused buffer keeps its memory, its mapping and its buffer_key(); its bytes are what the last "
      "holder left unless zero_on_reuse. Buffers out when the pool is collected stay valid and free their "
      "memory with their last holder. Threads: acquire, try_acquire and stats from any threads at once; a "
      "buffer may come back from any thread.")
      .def_static(
          "create",
          [](const py::handle& shape, const py::handle& dtype, std::string name, std::size_t min_buffers,
             std::size_t max_buffers, const py::handle& memory, std::string dma_heap,
             std::shared_ptr<et::gl::Context> gl_context, bool zero_on_reuse) {
            auto s = to_shape(shape);
            auto d = to_dtype(dtype);
            auto o = pool_options(std::move(name), min_buffers, max_buffers, memory, std::move(dma_heap),
                                  std::move(gl_context), zero_on_reuse);
            return released([&] { return et::Pool::create(s, d, o); });
          },
          py::arg("shape"), py::arg("dtype"), py::kw_only(), py::arg("name") = "", py::arg("min_buffers") = 0,
          py::arg("max_buffers") = 4, py::arg("memory") = "auto", py::arg("dma_heap") = "",
          py::arg("gl_context") = py::none(), py::arg("zero_on_reuse") = false,
          (std::string("A pool of C-contiguous tensors of `shape` (elements) and `dtype` (as allocate()).") +
           kCreateArgsDoc)
              .c_str())
      .def_static(
          "create_image",
          [](const et::ImageLayout& layout, std::string name, std::size_t min_buffers, std::size_t max_buffers,
             const py::handle& memory, std::string dma_heap, std::shared_ptr<et::gl::Context> gl_context,
             bool zero_on_reuse) {
            auto o = pool_options(std::move(name), min_buffers, max_buffers, memory, std::move(dma_heap),
                                  std::move(gl_context), zero_on_reuse);
            return released([&] { return et::Pool::create_image(layout, o); });
          },
          py::arg("layout"), py::kw_only(), py::arg("name") = "", py::arg("min_buffers") = 0,
          py::arg("max_buffers") = 4, py::arg("memory") = "auto", py::arg("dma_heap") = "",
          py::arg("gl_context") = py::none(), py::arg("zero_on_reuse") = false,
          (std::string("A pool of single-buffer images of `layout` (ImageLayout.make(width, height, format, ...) "
                       "gives one; each tensor a uint8 [layout.min_buffer_bytes()] with the layout attached, as "
                       "allocate_image(layout)); the layout's errors are prefixed with the pool's name.") +
           kCreateArgsDoc)
              .c_str())
      .def(
          "acquire",
          [](et::Pool& p, const py::object& timeout) {
            const auto ms = to_timeout_ms(timeout);
            const auto t = ms ? *ms : std::chrono::milliseconds::max();  // None: no limit (pool.h)
            return released([&] { return p.acquire(t); });
          },
          py::arg("timeout") = py::none(),
          "A buffer: a free one (the one returned last first), else a new one while fewer than max_buffers "
          "exist, else the first to come back within `timeout` seconds (0: do not wait; None: no limit). Waits "
          "with the GIL released, so other threads can drop the holders that return a buffer; Ctrl-C raises "
          "KeyboardInterrupt within 50 ms. TimeoutError (edgetensor's, a built-in "
          "TimeoutError) when none comes back in time, BusyError (a BlockingIOError) for a timeout of 0, each "
          "naming the pool, max_buffers and the wait; a new buffer's allocation error.")
      .def(
          "try_acquire", [](et::Pool& p) { return released([&] { return p.try_acquire(); }); },
          "acquire() without waiting: a free or new buffer, or BusyError at once.")
      .def("stats", &et::Pool::stats, "The counters now (a PoolStats).")
      .def_property_readonly("name", &et::Pool::name)
      .def_property_readonly("max_buffers", &et::Pool::max_buffers)
      .def_property_readonly("packed_bytes", &et::Pool::packed_bytes,
                             "nbytes of every tensor acquire() gives (its buffer may be larger: a DMA-BUF is "
                             "page-rounded).")
      .def("__repr__", [](const et::Pool& p) {
        const auto s = p.stats();
        return "<edgetensor.Pool '" + p.name() + "' " + std::to_string(s.in_use) + " in use, " +
               std::to_string(s.free) + " free, max_buffers " + std::to_string(p.max_buffers()) + ">";
      });
}

}  // namespace etpy
