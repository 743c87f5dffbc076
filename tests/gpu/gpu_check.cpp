// SPDX-License-Identifier: Apache-2.0
// Lane 4: the real-GPU check (run by tests/gpu/run.sh). Every CUDA path of the library on real
// hardware: availability and versions, device name and memory, H2D/D2H/D2D copies compared byte for
// byte, streams, host registration of a heap and a shm tensor with a copy through the device pointer,
// external-memory import of an opaque fd exported by CUDA itself (cuMemCreate +
// cuMemExportToShareableHandle, POSIX fd) through our low-level API, the CUDA-GL path on the NVIDIA
// EGL device (a pattern written by CUDA into a PBO through cuda::map read back through a CPU map, and
// the reverse; map+unmap per frame timed), and a timing table.
// Without a usable GPU every GPU step prints SKIP with the reason; the script decides whether a skip
// is allowed (it is not when a GPU is visible).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <edgetensor/edgetensor.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/loader_report.h"  // src/cuda: the loader's findings
#include "probe/gl_checks.h"  // src/probe: the CUDA-GL round trip of probe() (edgetensor info)

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;

namespace {
int g_fail = 0, g_skip = 0, g_pass = 0;
void pass(const char* step, const std::string& what = "") { ++g_pass; std::printf("PASS %-34s %s\n", step, what.c_str()); }
void fail(const char* step, const std::string& why) { ++g_fail; std::printf("FAIL %-34s %s\n", step, why.c_str()); }
void skip(const char* step, const std::string& why) { ++g_skip; std::printf("SKIP %-34s %s\n", step, why.c_str()); }

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
  return v;
}
edgetensor::AllocateOptions mem(MemoryKind k) {
  edgetensor::AllocateOptions o;
  o.memory = k;
  return o;
}

void check_copies() {
  const std::size_t n = 8 << 20;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) return fail("copies", "cudaMalloc failed");
  auto src = pattern(n, 1);
  std::vector<unsigned char> dst(n);
  bool ok = cuda::copy_host_to_device(a, src.data(), n) && cuda::copy_device_to_device(b, a, n) &&
            cuda::copy_device_to_host(dst.data(), b, n);
  if (ok && dst == src) pass("copies H2D/D2D/D2H (8 MiB)", "byte-identical");
  else fail("copies H2D/D2D/D2H (8 MiB)", ok ? "bytes differ" : "a copy failed");
  auto s = cuda::Stream::create();
  if (!s) { fail("stream", s.error().to_string()); cudaFree(a); cudaFree(b); return; }
  auto src2 = pattern(n, 2);
  std::fill(dst.begin(), dst.end(), 0);
  ok = cuda::copy_host_to_device_async(a, src2.data(), n, *s) && cuda::copy_device_to_device_async(b, a, n, *s) &&
       cuda::copy_device_to_host_async(dst.data(), b, n, *s) && s->synchronize();
  if (ok && dst == src2) pass("stream async copies", "byte-identical");
  else fail("stream async copies", ok ? "bytes differ" : "an async copy failed");
  cudaFree(a);
  cudaFree(b);
}

void check_host_registration(MemoryKind kind, const char* step) {
  const std::size_t n = 4 << 20;
  auto t = TensorDyn::allocate({n}, DType::U8, mem(kind));
  if (!t) return fail(step, t.error().to_string());
  auto m = cuda::map(*t);
  if (!m) return fail(step, m.error().to_string());
  void* d = nullptr;
  if (cudaMalloc(&d, n) != cudaSuccess) return fail(step, "cudaMalloc failed");
  auto src = pattern(n, 3);
  auto s = cuda::Stream::create();
  bool ok = s && cuda::copy_host_to_device(d, src.data(), n) &&
            cuda::copy_device_to_device_async(m->device_ptr(), d, n, *s) && m->record(*s) && m->wait();
  cudaFree(d);
  if (!ok) return fail(step, "device copy into the mapped tensor failed");
  auto r = t->map_read();
  if (r && std::memcmp(r->data(), src.data(), n) == 0)
    pass(step, std::string(cuda::cuda_path_name(m->path())) + ", device writes seen by the CPU map");
  else fail(step, "CPU map does not show the device's writes");
}

void check_external_memory() {
  const char* step = "external memory (opaque fd)";
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail(step, std::string("libcuda.so.1: ") + dlerror());
  auto get = [&](const char* n) { return dlsym(lib, n); };
  auto cuMemGetAllocationGranularity_ = reinterpret_cast<decltype(&cuMemGetAllocationGranularity)>(get("cuMemGetAllocationGranularity"));
  auto cuMemCreate_ = reinterpret_cast<decltype(&cuMemCreate)>(get("cuMemCreate"));
  auto cuMemExport_ = reinterpret_cast<decltype(&cuMemExportToShareableHandle)>(get("cuMemExportToShareableHandle"));
  auto cuMemAddressReserve_ = reinterpret_cast<decltype(&cuMemAddressReserve)>(get("cuMemAddressReserve"));
  auto cuMemMap_ = reinterpret_cast<decltype(&cuMemMap)>(get("cuMemMap"));
  auto cuMemSetAccess_ = reinterpret_cast<decltype(&cuMemSetAccess)>(get("cuMemSetAccess"));
  auto cuMemUnmap_ = reinterpret_cast<decltype(&cuMemUnmap)>(get("cuMemUnmap"));
  auto cuMemAddressFree_ = reinterpret_cast<decltype(&cuMemAddressFree)>(get("cuMemAddressFree"));
  auto cuMemRelease_ = reinterpret_cast<decltype(&cuMemRelease)>(get("cuMemRelease"));
  if (!cuMemCreate_ || !cuMemExport_ || !cuMemMap_) return fail(step, "driver VMM symbols missing");
  cudaFree(nullptr);  // the primary context is current from here on
  int dev = 0;
  cudaGetDevice(&dev);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  cuMemGetAllocationGranularity_(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const size_t n = ((16u << 20) + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h = 0;
  if (cuMemCreate_(&h, n, &prop, 0) != CUDA_SUCCESS) return fail(step, "cuMemCreate failed");
  int fd = -1;
  if (cuMemExport_(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS || fd < 0) {
    cuMemRelease_(h);
    return fail(step, "cuMemExportToShareableHandle failed");
  }
  CUdeviceptr va = 0;
  cuMemAddressReserve_(&va, n, 0, 0, 0);
  cuMemMap_(va, n, 0, h, 0);
  CUmemAccessDesc acc{};
  acc.location = prop.location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  cuMemSetAccess_(va, n, &acc, 1);
  cuda::ExternalMemoryOptions o;
  o.buffer_bytes = n;
  {
  auto ext = cuda::ExternalMemory::import_fd_dup(fd, cuda::ExternalMemoryHandleType::OpaqueFd, o);
  if (!ext) {
    fail(step, ext.error().to_string());
  } else {
    auto a = pattern(n, 4), b = pattern(n, 5);
    std::vector<unsigned char> back(n);
    bool ok1 = cuda::copy_host_to_device(reinterpret_cast<void*>(va), a.data(), n) &&
               cuda::copy_device_to_host(back.data(), ext->device_ptr(), n) && back == a;
    bool ok2 = cuda::copy_host_to_device(ext->device_ptr(), b.data(), n) &&
               cuda::copy_device_to_host(back.data(), reinterpret_cast<void*>(va), n) && back == b;
    if (ok1 && ok2) pass(step, "written through one mapping, read through the other, both ways");
    else fail(step, "contents differ between the two mappings");
    const bool fd_open = fcntl(fd, F_GETFD) >= 0;
    if (!fd_open) fail("external memory fd ownership", "our import closed the caller's fd");
  }
  }  // the import is torn down here (cudaFree, cudaDestroyExternalMemory) before the allocation goes
  close(fd);
  cuMemUnmap_(va, n);
  cuMemAddressFree_(va, n);
  cuMemRelease_(h);
}

// A GL context on the NVIDIA EGL device: the Auto order tries hardware devices first; otherwise each
// device index in turn.
std::shared_ptr<edgetensor::gl::Context> nvidia_gl_context(std::string& why) {
  namespace gl = edgetensor::gl;
  auto is_nvidia = [](const gl::ContextInfo& i) {
    return i.vendor.find("NVIDIA") != std::string::npos || i.renderer.find("NVIDIA") != std::string::npos;
  };
  auto first = gl::Context::create();
  if (!first) {
    why = first.error().to_string();
    return nullptr;
  }
  if (is_nvidia((*first)->info())) return *first;
  why = "first context: " + (*first)->info().renderer;
  const int count = (*first)->info().device_count;
  first->reset();
  for (int i = 0; i < count; ++i) {
    gl::ContextOptions o;
    o.platform = gl::Platform::Device;
    o.device_index = i;
    auto c = gl::Context::create(o);
    if (c && is_nvidia((*c)->info())) return *c;
    why += "; device " + std::to_string(i) + ": " + (c ? (*c)->info().renderer : c.error().to_string());
  }
  return nullptr;
}

void check_cuda_gl() {
  const char* step = "cuda-gl";
  std::string why;
  auto ctx = nvidia_gl_context(why);
  if (!ctx) return fail(step, "no GL context on an NVIDIA EGL device: " + why);
  std::printf("     GL: %s, %s\n", ctx->info().platform_detail.c_str(), ctx->info().renderer.c_str());
  const std::size_t n = 4 << 20;
  edgetensor::AllocateOptions o;
  o.memory = MemoryKind::GlPbo;
  o.gl_context = ctx;
  auto t = TensorDyn::allocate({n / 4}, DType::F32, o);
  if (!t) return fail(step, "PBO allocation: " + t.error().to_string());
  // CUDA writes (device-to-device from a cudaMalloc'ed pattern), the CPU reads.
  auto a = pattern(n, 6);
  void* d = nullptr;
  if (cudaMalloc(&d, n) != cudaSuccess) return fail(step, "cudaMalloc failed");
  bool ok = static_cast<bool>(cuda::copy_host_to_device(d, a.data(), n));
  {
    auto m = cuda::map(*t);
    if (!m) {
      cudaFree(d);
      return fail(step, "cuda::map: " + m.error().to_string());
    }
    ok = ok && cuda::copy_device_to_device(m->device_ptr(), d, n) && m->wait();
  }  // released: unmapped on the GL thread before the CPU map below
  {
    auto r = t->map_read();
    if (ok && r && std::memcmp(r->data(), a.data(), n) == 0) pass("cuda-gl CUDA write -> CPU read", "4 MiB PBO");
    else fail("cuda-gl CUDA write -> CPU read", !ok ? "a CUDA copy failed" : r ? "bytes differ" : r.error().to_string());
  }
  // The CPU writes, CUDA reads.
  auto b = pattern(n, 7);
  {
    auto w = t->map_write();
    if (!w) { cudaFree(d); return fail(step, "CPU write map: " + w.error().to_string()); }
    std::memcpy(w->data(), b.data(), n);
  }
  std::vector<unsigned char> back(n);
  {
    auto m = cuda::map(*t);
    ok = m && cuda::copy_device_to_host(back.data(), m->device_ptr(), n);
    if (ok && back == b) pass("cuda-gl CPU write -> CUDA read", "4 MiB PBO");
    else fail("cuda-gl CPU write -> CUDA read", !m ? m.error().to_string() : ok ? "bytes differ" : "copy failed");
    // While CUDA has it mapped, a CPU map must be refused.
    auto busy = t->map_read();
    if (busy) fail("cuda-gl busy while mapped", "a CPU map succeeded while CUDA had the PBO mapped");
    else pass("cuda-gl busy while mapped", busy.error().message());
  }
  cudaFree(d);
  // map + unmap per frame (unmap() posts the unmap; the next map waits for it on the GL thread).
  const int frames = 300;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) {
    auto m = cuda::map(*t);
    if (!m) return fail("cuda-gl timing", m.error().to_string());
  }
  (void)ctx->run([]() -> edgetensor::Result<void> { return {}; });  // the last unmap has run
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / frames;
  std::printf("  %-38s %8.1f us per frame (mean of %d)\n", "cuda::map + unmap of a 4 MiB PBO", us, frames);
  pass("cuda-gl timing");
  auto rt = edgetensor::detail::cuda_gl_round_trip(ctx);
  if (rt.ok) pass("cuda-gl round trip (info)", rt.detail);
  else fail("cuda-gl round trip (info)", rt.detail);
}

void timing_table() {
  const std::size_t n = 64 << 20;
  const int iters = 20;
  auto t = TensorDyn::allocate({n}, DType::U8, mem(MemoryKind::Heap));
  void* d = nullptr;
  if (!t || cudaMalloc(&d, n) != cudaSuccess) return fail("timing", "allocation failed");
  std::vector<unsigned char> host(n);
  auto time_it = [&](auto&& fn) {
    fn();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) fn();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
  };
  double raw = time_it([&] { cudaMemcpy(host.data(), d, n, cudaMemcpyDeviceToHost); });
  double api = time_it([&] { (void)cuda::copy_device_to_host(host.data(), d, n); });
  double tensor = time_it([&] { (void)cuda::copy_from_device(d, n, *t); });
  std::printf("\nD2H timing, 64 MiB pageable, mean of %d (same run):\n", iters);
  std::printf("  %-38s %8.3f ms  %6.2f GB/s\n", "raw cudaMemcpy", raw, n / raw / 1e6);
  std::printf("  %-38s %8.3f ms  %6.2f GB/s\n", "cuda::copy_device_to_host", api, n / api / 1e6);
  std::printf("  %-38s %8.3f ms  %6.2f GB/s\n\n", "cuda::copy_from_device (heap tensor)", tensor, n / tensor / 1e6);
  cudaFree(d);
  pass("timing table");
}
}  // namespace

int main() {
  const cuda::RuntimeReport st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  std::printf("report: %s\n", st.summary().c_str());
  std::printf("runtime %s (%d), driver %s (%d), devices %d, gl_interop %d, driver entry points %d\n",
              cuda::version_string(st.runtime_version).c_str(), st.runtime_version,
              cuda::version_string(st.driver_version).c_str(), st.driver_version, st.device_count, loader.gl_interop,
              loader.driver_entry_points);
  // Host-side preparation runs everywhere: tensors of both kinds exist and map.
  for (MemoryKind k : {MemoryKind::Heap, MemoryKind::Shm}) {
    auto t = TensorDyn::allocate({4096}, DType::U8, mem(k));
    if (t && t->map_write()) pass(k == MemoryKind::Heap ? "host prep: heap tensor" : "host prep: shm tensor");
    else fail("host prep", "tensor allocation failed");
  }
  const char* gpu_steps[] = {"device info", "copies", "stream", "host registration heap", "host registration shm",
                             "external memory (opaque fd)", "cuda-gl", "timing table"};
  if (!st.available) {
    for (const char* s : gpu_steps) skip(s, "no usable GPU: " + st.error);
  } else {
    for (const auto& d : st.devices)
      pass("device info", "#" + std::to_string(d.ordinal) + " " + d.name + ", " +
                              std::to_string(d.total_memory_bytes >> 20) + " MiB, sm_" +
                              std::to_string(d.compute_capability_major) + std::to_string(d.compute_capability_minor));
    check_copies();
    check_host_registration(MemoryKind::Heap, "host registration heap");
    check_host_registration(MemoryKind::Shm, "host registration shm");
    check_external_memory();
    check_cuda_gl();
    timing_table();
  }
  std::printf("gpu_check: %d passed, %d failed, %d skipped\n", g_pass, g_fail, g_skip);
  return g_fail ? 1 : (g_skip ? 77 : 0);
}
