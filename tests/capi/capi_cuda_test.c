/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA through the C API, tested in C (-std=c11 -Wall -Wextra -Wpedantic -Werror). The loader reads
 * EDGETENSOR_CUDART once per process, so each case is a ctest of its own (capi.<case>) in the lane its
 * prefix names (tests/capi/CMakeLists.txt), as tests/cuda's lanes:
 *   cuda_real_*      the runtime the loader finds (here libcudart.so.13 without a driver: a clean "unavailable";
 *                    with a GPU, tests/gpu/run.sh: a round trip through the device pointer on the GPU)
 *   cuda_noruntime_* EDGETENSOR_CUDART names a missing file
 *   cuda_fake_*      libet_fake_cudart.so, the test double (host memory standing in for the device, every call
 *                    recorded: tests/support/fake_cudart/fake_cudart_control.h)
 * Each case must leave the process's fd count as it found it. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CUDA Runtime API values used through dlsym (driver_types.h): cudaMemcpyKind, cudaError_t. */
enum { kCudaMemcpyHostToDevice = 1, kCudaMemcpyDeviceToHost = 2, kCudaErrorMemoryAllocation = 2 };
typedef int (*memcpy_async_fn)(void* dst, const void* src, size_t bytes, int kind, void* stream);
typedef int (*memcpy_fn)(void* dst, const void* src, size_t bytes, int kind);

/* A function of an already loaded library (RTLD_NOLOAD: never loads one), or NULL. dlsym gives an object
 * pointer; memcpy turns it into a function pointer without the cast ISO C leaves undefined. */
static void load_function(const char* file, const char* name, void* out_fn, size_t fn_size) {
  void* lib = dlopen(file, RTLD_NOW | RTLD_NOLOAD);
  void* p = lib != NULL ? dlsym(lib, name) : NULL;
  if (lib != NULL) dlclose(lib); /* drops the reference RTLD_NOLOAD added; the library stays loaded */
  memset(out_fn, 0, fn_size);
  if (p != NULL) memcpy(out_fn, &p, fn_size);
}

static int report_of_process(et_cuda_report* r) {
  memset(r, 0, sizeof *r);
  r->struct_size = sizeof *r;
  return et_cuda_get_report(r);
}

static uint8_t pattern(size_t i) { return (uint8_t)((i * 13u + 7u) & 0xffu); }

/* Writes pattern() into the map's device memory on `stream` (cudaMemcpyAsync of `runtime_file`), records the
 * work on the map, waits, then checks the bytes through a CPU map of `tensor`. */
static int write_through_device(const char* runtime_file, const et_tensor* tensor, et_cuda_map* map, void* device_ptr,
                                size_t size, const et_cuda_stream* stream) {
  memcpy_async_fn copy_async;
  load_function(runtime_file, "cudaMemcpyAsync", &copy_async, sizeof copy_async);
  CHECK(copy_async != NULL);
  void* native = NULL;
  CHECK_OK(et_cuda_stream_get_native_handle(stream, &native));
  CHECK(native != NULL);
  uint8_t* src = malloc(size);
  CHECK(src != NULL);
  for (size_t i = 0; i < size; ++i) src[i] = pattern(i);
  const int rc = copy_async(device_ptr, src, size, kCudaMemcpyHostToDevice, native);
  if (rc != 0) free(src);
  CHECK(rc == 0);
  et_status s = et_cuda_map_record(map, stream, NULL);
  if (s == ET_OK) s = et_cuda_map_wait(map); /* the host buffer stays valid until the copy is done */
  free(src);
  CHECK_OK(s);
  et_map* cpu = NULL;
  const void* data = NULL;
  size_t cpu_size = 0;
  CHECK_OK(et_tensor_map_read(tensor, &cpu, &data, &cpu_size));
  int same = cpu_size == size;
  for (size_t i = 0; same && i < size; ++i) same = ((const uint8_t*)data)[i] == pattern(i);
  et_map_release(cpu);
  CHECK(same);
  return 0;
}

/* On a GPU (a driver answers): map a heap and a shm tensor, write through the device pointer on a stream,
 * read the bytes back from the device (cudaMemcpy) and on the CPU. */
static int real_gpu_round_trip(const et_cuda_report* r) {
  CHECK(r->available == 1);
  CHECK(r->device_count >= 1);
  CHECK(et_cuda_available() == 1);
  const int32_t kinds[] = {ET_MEMORY_HEAP, ET_MEMORY_SHM};
  for (size_t k = 0; k < 2; ++k) {
    const uint64_t shape[] = {64, 64};
    et_allocate_options o = {.struct_size = sizeof o, .memory = kinds[k]};
    et_tensor* t = NULL;
    CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_U8, &o, &t));
    et_cuda_stream* stream = NULL;
    et_cuda_map* map = NULL;
    void* device_ptr = NULL;
    size_t size = 0;
    CHECK_OK(et_cuda_stream_create(&stream));
    CHECK_OK(et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size));
    CHECK(device_ptr != NULL && size == 64u * 64u);
    et_cuda_map_info info = {.struct_size = sizeof info};
    CHECK_OK(et_cuda_map_get_info(map, &info));
    CHECK(info.path == ET_CUDA_PATH_HOST_REGISTERED && info.device_ptr == device_ptr && info.extent_bytes == size);
    if (write_through_device(r->runtime_file, t, map, device_ptr, size, stream) != 0) return 1;
    memcpy_fn copy;
    load_function(r->runtime_file, "cudaMemcpy", &copy, sizeof copy);
    CHECK(copy != NULL);
    uint8_t back[64];
    CHECK(copy(back, (const uint8_t*)device_ptr + 100, sizeof back, kCudaMemcpyDeviceToHost) == 0);
    for (size_t i = 0; i < sizeof back; ++i) CHECK(back[i] == pattern(100 + i));
    et_cuda_map_release(map);
    et_cuda_stream_release(stream);
    et_tensor_release(t);
    printf("GPU round trip through the C API: %s tensor, %zu B at device address %p\n", et_memory_kind_name(kinds[k]),
           size, device_ptr);
  }
  return 0;
}

/* The runtime as the loader finds it. Without one installed: skipped. With a runtime but no driver (this CI
 * machine): unavailable with the runtime's own reason, and every entry point fails fast and cleanly. */
static int case_cuda_real_runtime(void) {
  et_cuda_report r;
  CHECK_OK(report_of_process(&r));
  if (r.runtime_file[0] == '\0') {
    printf("skipped: no CUDA runtime is installed here: %s\n", r.error);
    return CASE_SKIPPED;
  }
  printf("report: %s\n", r.summary);
  if (r.driver_version != 0) return real_gpu_round_trip(&r);
  CHECK(r.available == 0 && et_cuda_available() == 0);
  CHECK(r.runtime_file[0] == '/' && strstr(r.runtime_file, "libcudart.so.") != NULL);
  CHECK(r.runtime_version >= 11000);
  CHECK(r.device_count == 0 && r.forked_child == 0);
  CHECK(strstr(r.error, "cudaErrorInsufficientDriver (35)") != NULL);
  CHECK(strcmp(r.unavailable_paths, "") == 0);
  CHECK(strstr(r.summary, "driver none") != NULL && strstr(r.summary, r.runtime_file) != NULL);
  uint32_t count = 99;
  CHECK_OK(et_cuda_get_devices(NULL, 0, &count));
  CHECK(count == 0);

  const uint64_t shape[] = {64};
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_HEAP};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &o, &t));
  et_cuda_map* map = (et_cuda_map*)&o; /* set to NULL on failure */
  void* device_ptr = NULL;
  size_t size = 0;
  errno = EDOM;
  CHECK_STATUS(ET_UNAVAILABLE, et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size));
  CHECK(errno == EDOM);
  CHECK_MESSAGE("cudaErrorInsufficientDriver (35)");
  CHECK(map == NULL && device_ptr == NULL && size == 0);
  et_cuda_stream* stream = (et_cuda_stream*)&o;
  CHECK_STATUS(ET_UNAVAILABLE, et_cuda_stream_create(&stream));
  CHECK_MESSAGE("cudaErrorInsufficientDriver (35)");
  CHECK(stream == NULL);
  et_tensor_release(t);
  /* The same texts on a second call: the report is computed once per process. */
  et_cuda_report again;
  CHECK_OK(report_of_process(&again));
  CHECK(again.error == r.error && again.summary == r.summary);
  return 0;
}

static int case_cuda_noruntime_report(void) {
  const char* path = getenv("EDGETENSOR_CUDART");
  CHECK(path != NULL && strcmp(path, "/nonexistent/libcudart.so.13") == 0);
  et_cuda_report r;
  CHECK_OK(report_of_process(&r));
  CHECK(r.available == 0 && et_cuda_available() == 0);
  CHECK(r.runtime_version == 0 && r.driver_version == 0 && r.device_count == 0 && r.forked_child == 0);
  CHECK(strcmp(r.runtime_file, "") == 0 && strcmp(r.unavailable_paths, "") == 0);
  /* A 32-bit process loads no runtime at all (CUDA supports 64-bit targets only); else dlopen names the file. */
  const char* reason = sizeof(void*) == 4 ? "no CUDA runtime for a 32-bit process" : "cannot open shared object file";
  CHECK(strstr(r.error, reason) != NULL);
  CHECK(sizeof(void*) == 4 || strstr(r.error, path) != NULL);
  CHECK(strncmp(r.summary, "CUDA unavailable: ", 18) == 0);
  uint32_t count = 99;
  et_cuda_device_info info = {.struct_size = sizeof info};
  CHECK_OK(et_cuda_get_devices(&info, 1, &count));
  CHECK(count == 0);

  const uint64_t shape[] = {16};
  const int32_t kinds[] = {ET_MEMORY_HEAP, ET_MEMORY_SHM};
  for (size_t k = 0; k < 2; ++k) {
    et_allocate_options o = {.struct_size = sizeof o, .memory = kinds[k]};
    et_tensor* t = NULL;
    CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &o, &t));
    et_cuda_map* map = NULL;
    void* device_ptr = NULL;
    size_t size = 0;
    CHECK_STATUS(ET_UNAVAILABLE, et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size));
    CHECK_MESSAGE(sizeof(void*) == 4 ? reason : path);
    CHECK(map == NULL);
    /* The CPU side keeps working. */
    et_map* cpu = NULL;
    void* data = NULL;
    CHECK_OK(et_tensor_map_write(t, &cpu, &data, &size));
    CHECK(size == 16);
    et_map_release(cpu);
    et_tensor_release(t);
  }
  et_cuda_stream* stream = NULL;
  CHECK_STATUS(ET_UNAVAILABLE, et_cuda_stream_create(&stream));
  CHECK_MESSAGE(reason);
  CHECK(stream == NULL);
  return 0;
}

/* Arguments are checked before CUDA is asked: these hold without a runtime. */
static int case_cuda_noruntime_bad_input(void) {
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_get_report(NULL));
  CHECK_MESSAGE("et_cuda_get_report: report is NULL");
  et_cuda_report r = {.struct_size = 0};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_get_report(&r));
  CHECK_MESSAGE("et_cuda_report");
  r.struct_size = 4097;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_get_report(&r));
  CHECK_MESSAGE("4097");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_get_devices(NULL, 0, NULL));
  CHECK_MESSAGE("out_count is NULL");
  uint32_t count = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_get_devices(NULL, 2, &count));
  CHECK_MESSAGE("infos (capacity 2) is NULL");
  et_cuda_device_info small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_get_devices(&small, 1, &count));
  CHECK_MESSAGE("et_cuda_device_info");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_stream_create(NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_stream_synchronize(NULL));
  void* native = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_stream_get_native_handle(NULL, &native));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_record(NULL, NULL, NULL));
  CHECK_MESSAGE("et_cuda_map_record: map is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_wait(NULL));
  et_cuda_map_info info = {.struct_size = sizeof info};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_get_info(NULL, &info));
  et_cuda_stream_release(NULL);
  et_cuda_map_release(NULL);
  CHECK(et_cuda_stream_retain(NULL) == NULL && et_cuda_map_retain(NULL) == NULL);

  const uint64_t shape[] = {16};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, NULL, &t));
  et_cuda_map* map = (et_cuda_map*)t;
  void* device_ptr = NULL;
  size_t size = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, NULL, NULL, &device_ptr, &size));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(NULL, NULL, &map, &device_ptr, &size));
  CHECK_MESSAGE("et_tensor_cuda_map: tensor is NULL");
  CHECK(map == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, NULL, &map, NULL, &size));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, NULL, &map, &device_ptr, NULL));
  et_cuda_map_options o = {.struct_size = 4};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &o, &map, &device_ptr, &size));
  CHECK_MESSAGE("et_cuda_map_options");
  o.struct_size = 4097;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &o, &map, &device_ptr, &size));
  struct {
    et_cuda_map_options o;
    uint64_t newer;
  } newer = {.o = {.struct_size = sizeof newer}, .newer = 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &newer.o, &map, &device_ptr, &size));
  CHECK_MESSAGE("offset");
  o = (et_cuda_map_options){.struct_size = sizeof o, .use_device = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &o, &map, &device_ptr, &size));
  CHECK_MESSAGE("use_device 2 is not 0 or 1");
  o = (et_cuda_map_options){.struct_size = sizeof o, .use_device = 1, .device = -3};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &o, &map, &device_ptr, &size));
  CHECK_MESSAGE("device -3 is negative");
  o = (et_cuda_map_options){.struct_size = sizeof o, .reserved = 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &o, &map, &device_ptr, &size));
  CHECK_MESSAGE("reserved");
  CHECK(map == NULL);
  et_tensor_release(t);
  CHECK(strcmp(et_cuda_path_name(ET_CUDA_PATH_HOST_REGISTERED), "host-registered") == 0);
  CHECK(strcmp(et_cuda_path_name(ET_CUDA_PATH_EXTERNAL_OPAQUE_FD), "external-opaque-fd") == 0);
  CHECK(strcmp(et_cuda_path_name(ET_CUDA_PATH_EXTERNAL_DMABUF), "external-dmabuf") == 0);
  CHECK(strcmp(et_cuda_path_name(ET_CUDA_PATH_GL_BUFFER), "gl-buffer") == 0);
  CHECK(strcmp(et_cuda_path_name(-1), "unknown") == 0 && strcmp(et_cuda_path_name(4), "unknown") == 0);
  return 0;
}

/* ---- The test double ---- */
typedef void (*fake_void_fn)(void);
typedef int (*fake_count_fn)(const char* name);
typedef void (*fake_fail_fn)(const char* name, int nth, int error);
typedef void (*fake_hold_fn)(int hold);
typedef struct {
  fake_void_fn reset, complete_events;
  fake_count_fn count, live;
  fake_fail_fn fail;
  fake_hold_fn hold_events;
  int (*violations)(void);
  int (*pending_events)(void);
} fake_control;

/* The double's control functions (it must be loaded: et_cuda_available() first). */
static int load_fake(fake_control* f) {
  const char* file = getenv("EDGETENSOR_CUDART");
  CHECK(file != NULL && strstr(file, "et_fake_cudart") != NULL);
  CHECK(et_cuda_available() == 1);
  load_function(file, "et_fake_cudart_reset", &f->reset, sizeof f->reset);
  load_function(file, "et_fake_cudart_complete_events", &f->complete_events, sizeof f->complete_events);
  load_function(file, "et_fake_cudart_count", &f->count, sizeof f->count);
  load_function(file, "et_fake_cudart_live", &f->live, sizeof f->live);
  load_function(file, "et_fake_cudart_fail", &f->fail, sizeof f->fail);
  load_function(file, "et_fake_cudart_hold_events", &f->hold_events, sizeof f->hold_events);
  load_function(file, "et_fake_cudart_violations", &f->violations, sizeof f->violations);
  load_function(file, "et_fake_cudart_pending_events", &f->pending_events, sizeof f->pending_events);
  CHECK(f->reset && f->complete_events && f->count && f->live && f->fail && f->hold_events && f->violations &&
        f->pending_events);
  f->reset();
  return 0;
}

static int case_cuda_fake_report(void) {
  /* Two devices: the double reads ET_FAKE_CUDART_DEVICES at each call, the report is made at the first. */
  CHECK(setenv("ET_FAKE_CUDART_DEVICES", "2", 1) == 0);
  et_cuda_report r;
  CHECK_OK(report_of_process(&r));
  CHECK(r.available == 1 && et_cuda_available() == 1);
  CHECK(strcmp(r.runtime_file, getenv("EDGETENSOR_CUDART")) == 0);
  CHECK(r.runtime_version == 13000 && r.driver_version == 13000 && r.device_count == 2 && r.forked_child == 0);
  CHECK(strcmp(r.error, "") == 0 && strcmp(r.unavailable_paths, "") == 0);
  CHECK(strstr(r.summary, ": available") != NULL);
  /* An older caller's smaller struct is refused below the first version; a newer one's tail is zeroed. */
  struct {
    et_cuda_report r;
    uint64_t newer;
  } newer = {.r = {.struct_size = sizeof newer}, .newer = UINT64_MAX};
  CHECK_OK(et_cuda_get_report(&newer.r));
  CHECK(newer.r.struct_size == sizeof newer && newer.newer == 0 && newer.r.device_count == 2);
  CHECK(newer.r.summary == r.summary);

  uint32_t count = 0;
  CHECK_OK(et_cuda_get_devices(NULL, 0, &count));
  CHECK(count == 2);
  /* A newer caller's larger elements: the library steps by its struct_size and zeroes each tail. */
  struct device_newer {
    et_cuda_device_info info;
    uint64_t newer;
  } devices[3];
  memset(devices, 0xab, sizeof devices);
  devices[0].info.struct_size = sizeof devices[0];
  CHECK_OK(et_cuda_get_devices(&devices[0].info, 3, &count));
  CHECK(count == 2);
  for (int i = 0; i < 2; ++i) {
    const et_cuda_device_info* d = &devices[i].info;
    CHECK(d->struct_size == sizeof devices[0] && devices[i].newer == 0);
    CHECK(d->ordinal == i);
    CHECK(strstr(d->name, "test double") != NULL);
    CHECK(d->total_memory_bytes == UINT64_C(8) << 30);
    CHECK(d->compute_capability_major == 8 && d->compute_capability_minor == 7);
    CHECK(d->integrated <= 1 && d->can_map_host_memory <= 1);
  }
  CHECK(devices[2].info.struct_size == 0xabababab); /* past the count: untouched */
  /* Capacity 1 of 2: one filled, the count says 2. */
  et_cuda_device_info one = {.struct_size = sizeof one};
  CHECK_OK(et_cuda_get_devices(&one, 1, &count));
  CHECK(count == 2 && one.ordinal == 0);
  return 0;
}

/* Heap and shm tensors mapped, written through the device pointer on a stream, recorded, waited for, read back
 * on the CPU; views map at their offset; every CUDA object is gone after the last release. */
static int case_cuda_fake_map_heap_shm(void) {
  fake_control f;
  if (load_fake(&f) != 0) return 1;
  const char* file = getenv("EDGETENSOR_CUDART");
  const int32_t kinds[] = {ET_MEMORY_HEAP, ET_MEMORY_SHM};
  for (size_t k = 0; k < 2; ++k) {
    const uint64_t shape[] = {16, 16};
    et_allocate_options ao = {.struct_size = sizeof ao, .memory = kinds[k]};
    et_tensor* t = NULL;
    CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_U8, &ao, &t));
    et_cuda_stream* stream = NULL;
    CHECK_OK(et_cuda_stream_create(&stream));
    CHECK(f.live("stream") == 1);
    et_cuda_map* map = NULL;
    void* device_ptr = NULL;
    size_t size = 0;
    et_cuda_map_options mo = {.struct_size = sizeof mo, .use_device = 1, .device = 0};
    CHECK_OK(et_tensor_cuda_map(t, &mo, &map, &device_ptr, &size));
    CHECK(device_ptr != NULL && size == 256);
    CHECK(f.live("host_register") == 1);
    /* A map holds its options' stream until its last release. */
    et_cuda_stream* held = NULL;
    CHECK_OK(et_cuda_stream_create(&held));
    et_cuda_map_options so = {.struct_size = sizeof so, .stream = held};
    et_cuda_map* held_map = NULL;
    void* held_ptr = NULL;
    size_t held_size = 0;
    CHECK_OK(et_tensor_cuda_map(t, &so, &held_map, &held_ptr, &held_size));
    CHECK(held_ptr == device_ptr && held_size == size);
    et_cuda_stream_release(held);
    CHECK(f.live("stream") == 2);
    et_cuda_map_release(held_map);
    CHECK(f.live("stream") == 1);
    et_cuda_map_info info;
    memset(&info, 0xab, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(et_cuda_map_get_info(map, &info));
    CHECK(info.path == ET_CUDA_PATH_HOST_REGISTERED && info.device == 0 && info.reserved == 0);
    CHECK(info.extent_bytes == 256 && info.device_ptr == device_ptr);

    if (write_through_device(file, t, map, device_ptr, size, stream) != 0) return 1;
    CHECK(f.count("cudaEventRecord") == 1 && f.count("cudaEventSynchronize") == 1);
    CHECK(f.live("event") == 1);

    /* A row view maps at its offset, through the same registration. */
    et_tensor* row = NULL;
    CHECK_OK(et_tensor_batch(t, 3, &row));
    et_cuda_map* row_map = NULL;
    void* row_ptr = NULL;
    size_t row_size = 0;
    CHECK_OK(et_tensor_cuda_map(row, NULL, &row_map, &row_ptr, &row_size));
    CHECK(row_ptr == (uint8_t*)device_ptr + 48 && row_size == 16);
    CHECK(f.live("host_register") == 1 && f.count("cudaHostRegister") == 1);
    /* Without a record, wait is cudaDeviceSynchronize. */
    CHECK_OK(et_cuda_map_wait(row_map));
    CHECK(f.count("cudaDeviceSynchronize") == 1);
    et_cuda_map_release(row_map);
    et_tensor_release(row);

    /* A second reference; the map lives until the last release, and outlives the tensor handle. */
    CHECK(et_cuda_map_retain(map) == map);
    et_cuda_map_release(map);
    et_tensor_release(t);
    CHECK(f.live("host_register") == 1);
    CHECK_OK(et_cuda_map_wait(map));
    et_cuda_map_release(map);
    CHECK(f.live("host_register") == 0 && f.live("event") == 0);

    CHECK(et_cuda_stream_retain(stream) == stream);
    et_cuda_stream_release(stream);
    errno = EDOM;
    CHECK_OK(et_cuda_stream_synchronize(stream));
    CHECK(errno == EDOM);
    et_cuda_stream_release(stream);
    CHECK(f.live("stream") == 0);
    f.reset();
  }
  CHECK(f.violations() == 0);
  return 0;
}

/* Record options, and what a release does with recorded work: a pool buffer comes back only once it is done. */
static int case_cuda_fake_record_and_pool(void) {
  fake_control f;
  if (load_fake(&f) != 0) return 1;
  const uint64_t shape[] = {32};
  et_allocate_options ao = {.struct_size = sizeof ao, .memory = ET_MEMORY_HEAP};
  et_pool_options po = {.struct_size = sizeof po, .min_buffers = 1, .max_buffers = 1, .allocate = &ao};
  et_pool* pool = NULL;
  CHECK_OK(et_pool_create(1, shape, ET_DTYPE_U8, &po, &pool));
  et_cuda_stream* stream = NULL;
  CHECK_OK(et_cuda_stream_create(&stream));
  et_tensor* t = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  et_cuda_map* map = NULL;
  void* device_ptr = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size));

  et_cuda_record_options ro = {.struct_size = sizeof ro, .use_teardown_timeout = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_record(map, stream, &ro));
  CHECK_MESSAGE("use_teardown_timeout 2 is not 0 or 1");
  ro.struct_size = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_record(map, stream, &ro));
  CHECK_MESSAGE("et_cuda_record_options");
  struct {
    et_cuda_record_options o;
    uint32_t newer;
    uint32_t pad;
  } newer = {.o = {.struct_size = sizeof newer}, .newer = 5};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_record(map, stream, &newer.o));
  CHECK_MESSAGE("offset 16");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_record(map, NULL, NULL));
  CHECK_MESSAGE("et_cuda_map_record: stream is NULL");
  CHECK(f.count("cudaEventRecord") == 0);
  /* Each bound is accepted: 1 ns (1 ms), none, no bound, the default. */
  const int64_t bounds[] = {1, 0, -1};
  for (size_t i = 0; i < 3; ++i) {
    ro = (et_cuda_record_options){.struct_size = sizeof ro, .use_teardown_timeout = 1, .teardown_timeout_ns = bounds[i]};
    CHECK_OK(et_cuda_map_record(map, stream, &ro));
  }
  newer.newer = 0;
  CHECK_OK(et_cuda_map_record(map, stream, &newer.o));
  CHECK(f.count("cudaEventRecord") == 4 && f.live("event") == 1);

  /* Work still queued at the release: the pool holds the buffer back until the event completes. */
  f.hold_events(1);
  CHECK_OK(et_cuda_map_record(map, stream, NULL));
  CHECK(f.pending_events() == 1);
  et_cuda_map_release(map);
  et_tensor_release(t);
  et_pool_stats stats = {.struct_size = sizeof stats};
  CHECK_OK(et_pool_get_stats(pool, &stats));
  CHECK(stats.free == 1 && stats.device_pending == 1);
  CHECK_STATUS(ET_BUSY, et_pool_acquire(pool, 0, &t));
  CHECK(t == NULL);
  f.complete_events();
  f.hold_events(0);
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  et_tensor_release(t);
  et_pool_release(pool);
  CHECK(f.live("host_register") == 0 && f.live("event") == 0);

  /* The record's bound is the one the last holder waits (30 ms here, not the default 5 s) for work that never
   * completes; past it the memory is leaked with a warning, never unregistered under the work. */
  et_tensor* heap = NULL;
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &ao, &heap));
  CHECK_OK(et_tensor_cuda_map(heap, NULL, &map, &device_ptr, &size));
  f.hold_events(1);
  ro = (et_cuda_record_options){.struct_size = sizeof ro, .use_teardown_timeout = 1, .teardown_timeout_ns = 30000000};
  CHECK_OK(et_cuda_map_record(map, stream, &ro));
  f.reset();
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  et_cuda_map_release(map);
  et_tensor_release(heap);
  clock_gettime(CLOCK_MONOTONIC, &end);
  const double waited_ms = (double)(end.tv_sec - start.tv_sec) * 1e3 + (double)(end.tv_nsec - start.tv_nsec) / 1e6;
  printf("the last release waited %.1f ms for the bound of 30 ms\n", waited_ms);
  CHECK(waited_ms >= 30.0 && waited_ms < 2000.0);
  CHECK(f.count("cudaHostUnregister") == 0 && f.live("host_register") == 1);
  f.complete_events();
  f.hold_events(0);
  et_cuda_stream_release(stream);
  CHECK(f.live("stream") == 0);
  CHECK(f.violations() == 0);
  return 0;
}

/* Failures with a runtime: CUDA errors keep their name, zero bytes, a device that does not exist, injected
 * failures; nothing is left behind. */
static int case_cuda_fake_bad_input(void) {
  fake_control f;
  if (load_fake(&f) != 0) return 1;
  /* A stream from nothing: cudaStreamCreateWithFlags fails. */
  f.fail("cudaStreamCreateWithFlags", 1, kCudaErrorMemoryAllocation);
  et_cuda_stream* stream = (et_cuda_stream*)&f;
  errno = EDOM;
  CHECK_STATUS(ET_OUT_OF_MEMORY, et_cuda_stream_create(&stream));
  CHECK(errno == EDOM);
  CHECK_MESSAGE("cudaStreamCreateWithFlags");
  CHECK_MESSAGE("cudaErrorMemoryAllocation (2)");
  CHECK(stream == NULL && f.live("stream") == 0);
  CHECK_OK(et_cuda_stream_create(&stream));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_stream_get_native_handle(stream, NULL));
  CHECK_MESSAGE("out_native_handle is NULL");

  const uint64_t shape[] = {8};
  et_allocate_options ao = {.struct_size = sizeof ao, .memory = ET_MEMORY_HEAP};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &ao, &t));
  et_cuda_map* map = NULL;
  void* device_ptr = NULL;
  size_t size = 0;
  et_cuda_map_options mo = {.struct_size = sizeof mo, .use_device = 1, .device = 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_cuda_map(t, &mo, &map, &device_ptr, &size));
  CHECK_MESSAGE("CUDA device 1 does not exist (1 device(s))");
  CHECK(map == NULL);
  f.fail("cudaHostRegister", 1, kCudaErrorMemoryAllocation);
  CHECK_STATUS(ET_OUT_OF_MEMORY, et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size));
  CHECK_MESSAGE("cudaHostRegister");
  CHECK(map == NULL && f.live("host_register") == 0);
  const uint64_t empty_shape[] = {0};
  et_tensor* empty = NULL;
  CHECK_OK(et_tensor_allocate(1, empty_shape, ET_DTYPE_U8, &ao, &empty));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_cuda_map(empty, NULL, &map, &device_ptr, &size));
  CHECK(map == NULL);
  et_tensor_release(empty);

  CHECK_OK(et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size));
  et_cuda_map_info small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_get_info(map, &small));
  CHECK_MESSAGE("et_cuda_map_info");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_get_info(map, NULL));
  f.fail("cudaEventRecord", 1, 400); /* cudaErrorInvalidResourceHandle */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_cuda_map_record(map, stream, NULL));
  CHECK_MESSAGE("cudaEventRecord");
  CHECK_OK(et_cuda_map_record(map, stream, NULL));
  et_cuda_map_release(map);
  et_tensor_release(t);
  et_cuda_stream_release(stream);
  CHECK(f.live("stream") == 0 && f.live("host_register") == 0 && f.live("event") == 0);
  CHECK(f.violations() == 0);
  return 0;
}

/* In a fork() child of the process that loaded CUDA: the report says so and every call refuses. */
static int case_cuda_fake_fork_child(void) {
  fake_control f;
  if (load_fake(&f) != 0) return 1;
  const uint64_t shape[] = {8};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, NULL, &t));
  fflush(NULL);
  const pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    et_cuda_report r;
    int rc = report_of_process(&r) != ET_OK ? 10 : 0;
    if (rc == 0 && !(r.available == 0 && r.forked_child == 1 && strstr(r.error, "fork") != NULL)) rc = 11;
    if (rc == 0 && et_cuda_available() != 0) rc = 12;
    et_cuda_map* map = NULL;
    void* device_ptr = NULL;
    size_t size = 0;
    if (rc == 0 && et_tensor_cuda_map(t, NULL, &map, &device_ptr, &size) != ET_FAILED_PRECONDITION) rc = 13;
    if (rc == 0 && strstr(et_last_error_message(), "fork") == NULL) rc = 14;
    et_cuda_stream* stream = NULL;
    if (rc == 0 && et_cuda_stream_create(&stream) != ET_FAILED_PRECONDITION) rc = 15;
    _exit(rc);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "child: status %d (exit code: the first check that failed)\n", status);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  et_cuda_report r;
  CHECK_OK(report_of_process(&r));
  CHECK(r.available == 1 && r.forked_child == 0);
  et_tensor_release(t);
  return 0;
}

static const struct test_case kCases[] = {
    {"cuda_real_runtime", case_cuda_real_runtime},
    {"cuda_noruntime_report", case_cuda_noruntime_report},
    {"cuda_noruntime_bad_input", case_cuda_noruntime_bad_input},
    {"cuda_fake_report", case_cuda_fake_report},
    {"cuda_fake_map_heap_shm", case_cuda_fake_map_heap_shm},
    {"cuda_fake_record_and_pool", case_cuda_fake_record_and_pool},
    {"cuda_fake_bad_input", case_cuda_fake_bad_input},
    {"cuda_fake_fork_child", case_cuda_fake_fork_child},
};

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <case>: each case needs its lane's environment (tests/capi/CMakeLists.txt)\n", argv[0]);
    return 2;
  }
  return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
