/* SPDX-License-Identifier: Apache-2.0 */
/* GL contexts and PBO tensors through the C API, in C (-std=c11 -Wall -Wextra -Wpedantic -Werror). Cases
 * named gl_options_* need no GL (labels unit and capi); the others need a headless EGL context (labels capi
 * and hardware, as the C++ GL lane) and skip with the reason (exit 77) where none can be made, unless
 * EDGETENSOR_REQUIRE_GL=1 (CI, ET_REQUIRE_GL=ON), which makes that a failure. Each case must leave the
 * process's fd count as it found it. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int gl_required(void) {
#ifdef ET_TEST_REQUIRE_GL
  return 1;
#else
  const char* v = getenv("EDGETENSOR_REQUIRE_GL");
  return v != NULL && strcmp(v, "1") == 0;
#endif
}

/* A context with default options into *out: 0; or CASE_SKIPPED naming why (1 where GL is required). */
static int context_or_skip(et_gl_context** out) {
  const et_status s = et_gl_context_create(NULL, out);
  if (s == ET_OK) return 0;
  if (gl_required()) {
    fprintf(stderr, "GL is required (EDGETENSOR_REQUIRE_GL=1 or ET_REQUIRE_GL=ON) but %s\n", et_last_error_message());
    return 1;
  }
  printf("skipped: no headless GL here: %s\n", et_last_error_message());
  return CASE_SKIPPED;
}
#define CONTEXT_OR_SKIP(var)                 \
  et_gl_context* var = NULL;                 \
  do {                                       \
    const int rc_ = context_or_skip(&var);   \
    if (rc_ != 0) return rc_;                \
  } while (0)

/* A PBO tensor of `rank` dims on `ctx`. */
static et_status pbo(et_gl_context* ctx, uint32_t rank, const uint64_t* shape, int32_t dtype, et_tensor** out) {
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_GL_PBO, .gl_context = ctx};
  return et_tensor_allocate(rank, shape, dtype, &o, out);
}

/* The context's live GL buffers, after a round trip through its GL thread (a map of `probe`): jobs run in
 * order, so every deletion posted before it has run. */
static int live_buffers(et_gl_context* ctx, et_tensor* probe, uint64_t* out) {
  et_map* m = NULL;
  const void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(probe, &m, &data, &size));
  et_map_release(m);
  et_gl_context_info info = {.struct_size = sizeof info};
  CHECK_OK(et_gl_context_get_info(ctx, &info));
  *out = info.live_buffer_count;
  return 0;
}

/* ---- without GL: names and option checks ------------------------------------------------------------ */

static int case_gl_options_bad_input(void) {
  CHECK(strcmp(et_gl_platform_name(ET_GL_PLATFORM_AUTO), "auto") == 0);
  CHECK(strcmp(et_gl_platform_name(ET_GL_PLATFORM_DEVICE), "device") == 0);
  CHECK(strcmp(et_gl_platform_name(ET_GL_PLATFORM_SURFACELESS), "surfaceless") == 0);
  CHECK(strcmp(et_gl_platform_name(3), "unknown") == 0 && strcmp(et_gl_platform_name(-1), "unknown") == 0);
  CHECK(strcmp(et_memory_kind_name(ET_MEMORY_GL_PBO), "gl_pbo") == 0);
  CHECK(et_gl_context_retain(NULL) == NULL);
  et_gl_context_release(NULL);

  et_gl_context* ctx = (et_gl_context*)&ctx;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(NULL, NULL));
  CHECK_MESSAGE("et_gl_context_create: out is NULL");
  /* Each bad field is refused before EGL is touched, naming the field; *out is NULL after a failure. */
  et_gl_context_options o = {.struct_size = sizeof o, .platform = 3};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK(ctx == NULL);
  CHECK_MESSAGE("et_gl_context_options.platform 3");
  o.platform = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  o.platform = ET_GL_PLATFORM_AUTO;
  o.use_device_index = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("use_device_index 2");
  o.use_device_index = 1;
  o.device_index = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("device_index -1 is negative");
  o.device_index = 0;
  o.platform = ET_GL_PLATFORM_SURFACELESS;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("needs the device platform");
  o = (et_gl_context_options){.struct_size = sizeof o, .use_timeout = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("use_timeout 2");
  o.use_timeout = 1;
  o.timeout_ns = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("timeout_ns 0 must be greater than 0");
  o.timeout_ns = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  o = (et_gl_context_options){.struct_size = sizeof o, .reserved = 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("reserved");
  /* struct_size: below the first version, above 4096, and a newer caller's non-zero tail. */
  o = (et_gl_context_options){.struct_size = 4};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("et_gl_context_options");
  o.struct_size = 5000;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&o, &ctx));
  struct {
    et_gl_context_options o;
    uint64_t newer;
  } grown = {.o = {.struct_size = sizeof grown}, .newer = 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_create(&grown.o, &ctx));
  CHECK_MESSAGE("offset 40");
  CHECK(ctx == NULL);
  /* An EGL library that does not exist: ET_UNAVAILABLE naming it (no GL needed to see that). */
  o = (et_gl_context_options){.struct_size = sizeof o, .egl_library = "/nonexistent/libEGL-capi.so.1"};
  CHECK_STATUS(ET_UNAVAILABLE, et_gl_context_create(&o, &ctx));
  CHECK_MESSAGE("/nonexistent/libEGL-capi.so.1");
  CHECK(ctx == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_get_info(NULL, NULL));

  /* Allocation: GL memory needs a context, and promises no alignment; zero-element tensors too. */
  const uint64_t shape[2] = {2, 3};
  et_tensor* t = (et_tensor*)&t;
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_GL_PBO};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, shape, ET_DTYPE_U8, &a, &t));
  CHECK(t == NULL);
  CHECK_MESSAGE("et_allocate_options.gl_context is NULL with memory ET_MEMORY_GL_PBO");
  const uint64_t empty[2] = {0, 3};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, empty, ET_DTYPE_U8, &a, &t));
  /* A 0.1 caller's struct (up to dma_heap) reads gl_context as NULL. */
  a.struct_size = ET_ALLOCATE_OPTIONS_SIZE_VER0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, shape, ET_DTYPE_U8, &a, &t));
  CHECK_MESSAGE("gl_context is NULL");
  /* A newer caller's struct with a non-zero byte past gl_context's pad. */
  struct {
    et_allocate_options a;
    uint64_t newer;
  } grown_a = {.a = {.struct_size = sizeof grown_a, .memory = ET_MEMORY_HEAP}, .newer = 7};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, shape, ET_DTYPE_U8, &grown_a.a, &t));
  CHECK_MESSAGE("offset 48");
  grown_a.newer = 0;
  CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_U8, &grown_a.a, &t));
  et_tensor_release(t);
  /* The same through a pool's allocate options. */
  et_allocate_options gl_none = {.struct_size = sizeof gl_none, .memory = ET_MEMORY_GL_PBO};
  et_pool_options po = {.struct_size = sizeof po, .allocate = &gl_none};
  et_pool* pool = (et_pool*)&pool;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &po, &pool));
  CHECK(pool == NULL);
  CHECK_MESSAGE("gl_context is NULL");
  return 0;
}

/* ---- with GL ---------------------------------------------------------------------------------------- */

static int case_gl_context_info(void) {
  CONTEXT_OR_SKIP(ctx);
  et_gl_context_info info = {.struct_size = sizeof info};
  CHECK_OK(et_gl_context_get_info(ctx, &info));
  CHECK(info.platform == ET_GL_PLATFORM_DEVICE || info.platform == ET_GL_PLATFORM_SURFACELESS);
  CHECK(info.platform == ET_GL_PLATFORM_DEVICE ? info.device_index >= 0 && info.device_index < info.device_count
                                               : info.device_index == -1);
  CHECK(info.timeout_ns == ET_GL_DEFAULT_TIMEOUT_NS && info.live_buffer_count == 0);
  CHECK(info.renderer != NULL && info.renderer[0] != '\0' && strstr(info.version, "OpenGL ES") == info.version);
  CHECK(info.platform_detail[0] != '\0' && info.egl_library[0] != '\0' && info.egl_vendor[0] != '\0');
  CHECK(info.device_file != NULL && info.egl_version[0] != '\0' && info.vendor[0] != '\0');
  printf("  %s: %s, %s (%s)\n", et_gl_platform_name(info.platform), info.platform_detail, info.renderer, info.version);
  /* A newer caller's larger struct: what this library knows, then zeros up to its struct_size. */
  struct large_info {
    et_gl_context_info head;
    uint8_t newer[8];
    uint8_t canary;
  } large;
  memset(&large, 0xab, sizeof large);
  large.head.struct_size = (uint32_t)offsetof(struct large_info, canary);
  CHECK_OK(et_gl_context_get_info(ctx, &large.head));
  CHECK(large.head.platform == info.platform && large.head.timeout_ns == info.timeout_ns);
  CHECK(large.newer[0] == 0 && large.newer[7] == 0 && large.canary == 0xab);
  info.struct_size = ET_GL_CONTEXT_INFO_SIZE_VER0 - 8;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_get_info(ctx, &info));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_gl_context_get_info(ctx, NULL));
  /* A device index past the devices EGL reports (device platform only), and a timeout of the caller's. */
  if (info.platform == ET_GL_PLATFORM_DEVICE) {
    et_gl_context_options o = {.struct_size = sizeof o, .use_device_index = 1, .device_index = 1000};
    et_gl_context* none = (et_gl_context*)&none;
    CHECK_STATUS(ET_OUT_OF_RANGE, et_gl_context_create(&o, &none));
    CHECK(none == NULL);
    CHECK_MESSAGE("device_index 1000 out of range");
  }
  et_gl_context_options timed = {.struct_size = sizeof timed, .use_timeout = 1, .timeout_ns = INT64_C(2500000001)};
  et_gl_context* second = NULL;
  CHECK_OK(et_gl_context_create(&timed, &second));
  et_gl_context_info second_info = {.struct_size = sizeof second_info};
  CHECK_OK(et_gl_context_get_info(second, &second_info));
  CHECK(second_info.timeout_ns == INT64_C(2501000000)); /* rounded up to a whole millisecond */
  CHECK(et_gl_context_retain(second) == second);
  et_gl_context_release(second);
  et_gl_context_release(second);
  et_gl_context_release(ctx);
  return 0;
}

static int case_gl_pbo_round_trip(void) {
  CONTEXT_OR_SKIP(ctx);
  const uint64_t shape[2] = {4, 256};
  et_tensor* t = NULL;
  CHECK_OK(pbo(ctx, 2, shape, ET_DTYPE_U8, &t));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(info.memory == ET_MEMORY_GL_PBO && info.buffer_bytes == 1024 && info.extent_bytes == 1024);
  CHECK(info.identity != 0 && info.buffer_key != 0 && info.read_only == 0);
  /* Zeros at first; a write map's bytes read back through a new read map. */
  et_map* m = NULL;
  const void* cdata = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(t, &m, &cdata, &size));
  CHECK(size == 1024);
  for (size_t i = 0; i < size; ++i) CHECK(((const uint8_t*)cdata)[i] == 0);
  et_map_release(m);
  CHECK_OK(et_tensor_map_write(t, &m, &data, &size));
  for (size_t i = 0; i < size; ++i) ((uint8_t*)data)[i] = (uint8_t)(i * 3 + 1);
  /* One CPU map per buffer: a second, of the tensor or a view of it, is ET_BUSY. */
  et_map* second = (et_map*)&second;
  CHECK_STATUS(ET_BUSY, et_tensor_map_read(t, &second, &cdata, &size));
  CHECK_MESSAGE("already mapped");
  CHECK(second == NULL);
  et_tensor* row = NULL;
  CHECK_OK(et_tensor_batch(t, 2, &row));
  CHECK_STATUS(ET_BUSY, et_tensor_map_read_write(row, &second, &data, &size));
  et_map_release(m);
  /* Views read what the write map left: batch, slice, a strided view, reshape. */
  CHECK_OK(et_tensor_map_read(row, &m, &cdata, &size));
  CHECK(size == 256 && ((const uint8_t*)cdata)[0] == (uint8_t)(512 * 3 + 1));
  et_map_release(m);
  et_tensor* cols = NULL;
  CHECK_OK(et_tensor_slice(t, 1, 10, 12, &cols)); /* [4, 2], rows 256 B apart */
  CHECK_OK(et_tensor_get_info(cols, &info));
  CHECK(info.shape[0] == 4 && info.shape[1] == 2 && info.offset_bytes == 10 && info.contiguous == 0);
  CHECK_OK(et_tensor_map_read(cols, &m, &cdata, &size));
  CHECK(size == 3 * 256 + 2);
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 2; ++c) CHECK(((const uint8_t*)cdata)[r * 256 + c] == (uint8_t)((r * 256 + 10 + c) * 3 + 1));
  et_map_release(m);
  const uint64_t every_other[1] = {4};
  const int64_t stride[1] = {2};
  et_tensor* strided = NULL;
  CHECK_OK(et_tensor_view(t, 100, 1, every_other, stride, &strided));
  CHECK_OK(et_tensor_map_read(strided, &m, &cdata, &size));
  CHECK(size == 7 && ((const uint8_t*)cdata)[6] == (uint8_t)(106 * 3 + 1));
  et_map_release(m);
  const uint64_t flat[1] = {1024};
  et_tensor* reshaped = NULL;
  CHECK_OK(et_tensor_reshape(t, 1, flat, &reshaped));
  /* A write through a view lands in the buffer: read back through the whole tensor. */
  CHECK_OK(et_tensor_map(reshaped, ET_MAP_READ_WRITE, NULL, &m, &data, &size));
  CHECK(size == 1024 && ((uint8_t*)data)[1023] == (uint8_t)(1023 * 3 + 1));
  ((uint8_t*)data)[1023] = 0x5a;
  et_map_release(m);
  CHECK_OK(et_tensor_map_read(t, &m, &cdata, &size));
  CHECK(((const uint8_t*)cdata)[1023] == 0x5a);
  et_map_release(m);
  /* A view shares the buffer and its identity. */
  et_tensor_info view_info = {.struct_size = sizeof view_info};
  CHECK_OK(et_tensor_get_info(reshaped, &view_info));
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(view_info.identity == info.identity && view_info.buffer_key == info.buffer_key);
  CHECK(view_info.memory == ET_MEMORY_GL_PBO);
  /* Releases: the buffer goes with its last holder (the views hold it too). */
  et_tensor_release(t);
  et_tensor_release(row);
  et_tensor_release(cols);
  et_tensor_release(strided);
  uint64_t live = 0;
  CHECK(live_buffers(ctx, reshaped, &live) == 0);
  CHECK(live == 1);
  et_tensor* other = NULL;
  CHECK_OK(pbo(ctx, 1, flat, ET_DTYPE_U8, &other));
  et_tensor_release(reshaped);
  CHECK(live_buffers(ctx, other, &live) == 0);
  CHECK(live == 1); /* `other` alone */
  et_tensor_release(other);
  et_gl_context_release(ctx);
  return 0;
}

/* What C does where C++ refuses a PBO: export (ET_UNSUPPORTED), ipc, descriptors (fd -1, a held map). */
static int case_gl_pbo_export_and_describe(void) {
  CONTEXT_OR_SKIP(ctx);
  const uint64_t shape[2] = {8, 16};
  et_tensor* t = NULL;
  CHECK_OK(pbo(ctx, 2, shape, ET_DTYPE_U16, &t));
  int32_t fd = 5;
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_export_fd(t, &fd));
  CHECK(fd == -1);
  CHECK_MESSAGE("not shareable by fd");
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  CHECK_STATUS(ET_UNSUPPORTED, et_ipc_send_tensor(sv[0], t, NULL));
  close(sv[0]);
  close(sv[1]);
  /* Without a map: fd -1, no address. */
  et_buffer_desc d = {.struct_size = sizeof d};
  et_descriptor* h = NULL;
  CHECK_OK(et_tensor_describe(t, 0, &d, &h));
  CHECK(d.plane_count == 1 && d.planes[0].fd == -1 && d.planes[0].size_bytes == 256 && d.data == NULL);
  CHECK(d.planes[0].row_stride_bytes == 32 && d.buffer_bytes == 256 && d.mapped_bytes == 0);
  et_descriptor_release(h);
  /* With a write map: the address is held mapped, so other maps are ET_BUSY until the descriptor goes. */
  CHECK_OK(et_tensor_describe(t, ET_MAP_WRITE, &d, &h));
  CHECK(d.data != NULL && d.mapped_bytes == 256 && d.planes[0].fd == -1);
  ((uint16_t*)d.data)[127] = 0xbeef;
  et_map* m = NULL;
  const void* cdata = NULL;
  size_t size = 0;
  CHECK_STATUS(ET_BUSY, et_tensor_map_read(t, &m, &cdata, &size));
  et_descriptor_release(h);
  CHECK_OK(et_tensor_map_read(t, &m, &cdata, &size));
  CHECK(((const uint16_t*)cdata)[127] == 0xbeef);
  et_map_release(m);
  /* A GL image: one buffer, its planes described with fd -1. */
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_GL_PBO, .gl_context = ctx};
  et_tensor* image = NULL;
  CHECK_OK(et_tensor_allocate_image(64, 32, ET_PIXEL_FORMAT_NV12, NULL, &o, &image));
  CHECK_OK(et_tensor_describe(image, 0, &d, &h));
  CHECK(d.plane_count == 2 && d.planes[0].fd == -1 && d.planes[1].fd == -1 && d.planes[1].offset_bytes == 64 * 32);
  et_descriptor_release(h);
  et_tensor* chroma = NULL;
  CHECK_OK(et_tensor_plane(image, 1, &chroma));
  void* data = NULL;
  CHECK_OK(et_tensor_map_write(chroma, &m, &data, &size));
  CHECK(size == 64 * 16);
  et_map_release(m);
  et_tensor_release(chroma);
  et_tensor_release(image);
  /* Alignment: none promised for a PBO. */
  o.alignment_bytes = 64;
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_allocate(2, shape, ET_DTYPE_U8, &o, &image));
  CHECK_MESSAGE("no alignment promised");
  o.alignment_bytes = 1;
  CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_U8, &o, &image));
  et_tensor_release(image);
  /* A context with another kind is ignored, as C++ ignores AllocateOptions::gl_context there. */
  o = (et_allocate_options){.struct_size = sizeof o, .memory = ET_MEMORY_HEAP, .gl_context = ctx};
  et_tensor* heap = NULL;
  CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_U8, &o, &heap));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(heap, &info));
  CHECK(info.memory == ET_MEMORY_HEAP);
  et_tensor_release(heap);
  et_tensor_release(t);
  et_gl_context_release(ctx);
  return 0;
}

/* A GL pool reuses its buffers and keeps its context alive after the caller's last reference. */
static int case_gl_pool(void) {
  CONTEXT_OR_SKIP(ctx);
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_GL_PBO, .gl_context = ctx};
  et_pool_options po = {.struct_size = sizeof po, .max_buffers = 1, .name = "capi-gl", .allocate = &a};
  const uint64_t shape[1] = {4096};
  et_pool* pool = NULL;
  CHECK_OK(et_pool_create(1, shape, ET_DTYPE_U8, &po, &pool));
  et_gl_context_release(ctx); /* the pool holds the context now */
  et_tensor* t = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(info.memory == ET_MEMORY_GL_PBO);
  const uint64_t key = info.buffer_key;
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(t, &m, &data, &size));
  memset(data, 0x42, size);
  et_tensor* none = (et_tensor*)&none;
  CHECK_STATUS(ET_BUSY, et_pool_acquire(pool, 0, &none)); /* the map holds the buffer */
  CHECK(none == NULL);
  et_map_release(m);
  et_tensor_release(t);
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(info.buffer_key == key);
  const void* cdata = NULL;
  CHECK_OK(et_tensor_map_read(t, &m, &cdata, &size));
  CHECK(((const uint8_t*)cdata)[4095] == 0x42); /* the same memory, as the last holder left it */
  et_map_release(m);
  et_tensor_release(t);
  et_pool_release(pool);
  return 0;
}

/* The context's last release disconnects unmapped PBOs; a PBO mapped then stays valid until its map goes. */
static int case_gl_context_released_first(void) {
  CONTEXT_OR_SKIP(ctx);
  const uint64_t shape[1] = {4096};
  et_tensor* idle = NULL;
  et_tensor* mapped = NULL;
  CHECK_OK(pbo(ctx, 1, shape, ET_DTYPE_U8, &idle));
  CHECK_OK(pbo(ctx, 1, shape, ET_DTYPE_U8, &mapped));
  const uint64_t part[1] = {64};
  et_tensor* view = NULL;
  CHECK_OK(et_tensor_view(idle, 64, 1, part, NULL, &view));
  et_map* open_map = NULL;
  void* open_data = NULL;
  size_t open_size = 0;
  CHECK_OK(et_tensor_map_write(mapped, &open_map, &open_data, &open_size));
  memset(open_data, 0x11, open_size);
  et_gl_context_release(ctx); /* its last reference */
  et_map* m = (et_map*)&m;
  const void* cdata = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_map_read(idle, &m, &cdata, &size));
  CHECK_MESSAGE("GL context gone");
  CHECK(m == NULL);
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_map_write(view, &m, &data, &size));
  CHECK_MESSAGE("GL context gone");
  int32_t fd = 0;
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_export_fd(idle, &fd));
  CHECK(fd == -1);
  /* The map open at the release stays valid until it goes: its bytes are there and writable. */
  CHECK(open_size == 4096);
  for (size_t i = 0; i < open_size; ++i) CHECK(((const uint8_t*)open_data)[i] == 0x11);
  memset(open_data, 0x22, open_size);
  CHECK_STATUS(ET_BUSY, et_tensor_map_read(mapped, &m, &cdata, &size));
  CHECK_MESSAGE("already mapped");
  et_map_release(open_map);
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_map_read(mapped, &m, &cdata, &size));
  CHECK_MESSAGE("GL context gone");
  /* Releases of disconnected tensors free the handles; the last one joins the GL thread (fds: the runner). */
  et_tensor_release(view);
  et_tensor_release(idle);
  et_tensor_release(mapped);
  return 0;
}

int main(int argc, char** argv) {
  /* The EGL display is opened once per process and never terminated (docs/ARCHITECTURE.md, "GL"): a context
   * made and dropped before the cases, so that each case's fd count sees only what it opens itself. */
  et_gl_context* warm = NULL;
  if (et_gl_context_create(NULL, &warm) == ET_OK) et_gl_context_release(warm);
  static const struct test_case kCases[] = {
    {"gl_options_bad_input", case_gl_options_bad_input},
    {"gl_context_info", case_gl_context_info},
    {"gl_pbo_round_trip", case_gl_pbo_round_trip},
    {"gl_pbo_export_and_describe", case_gl_pbo_export_and_describe},
    {"gl_pool", case_gl_pool},
    {"gl_context_released_first", case_gl_context_released_first},
  };
  return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
