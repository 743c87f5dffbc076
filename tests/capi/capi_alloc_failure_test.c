/* SPDX-License-Identifier: Apache-2.0 */
/* An allocation that fails inside the library (std::bad_alloc, from fail_allocation.cpp's operator new)
 * comes back to C as ET_OUT_OF_MEMORY, with nothing unwound into C and nothing leaked: each call below is
 * made with its 1st, 2nd, ... allocation failing until it runs to the end without one. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <errno.h>
#include <unistd.h>

void et_test_fail_allocation(long nth);
int et_test_failure_pending(void);

static const uint64_t kShape[2] = {4, 8};

/* Calls `call` with allocation n failing, n = 0, 1, ... until one runs without a failure. Each failing
 * run must give ET_OUT_OF_MEMORY and NULL, keep errno, and free what it made; returns the runs made. */
#define EACH_ALLOCATION_FAILS(out, call, release)                                                     \
  do {                                                                                                \
    long n = 0;                                                                                       \
    for (;; ++n) {                                                                                    \
      out = NULL;                                                                                     \
      errno = EDOM;                                                                                   \
      et_test_fail_allocation(n);                                                                     \
      const et_status s = (call);                                                                     \
      const int pending = et_test_failure_pending();                                                  \
      et_test_fail_allocation(-1);                                                                    \
      CHECK(errno == EDOM);                                                                           \
      if (pending) {                                                                                  \
        CHECK_OK(s);                                                                                  \
        release(out);                                                                                 \
        break;                                                                                        \
      }                                                                                               \
      if (s != ET_OUT_OF_MEMORY) {                                                                    \
        fprintf(stderr, "allocation %ld failing: %s gave %s (%s)\n", n, #call, et_status_name(s),     \
                et_last_error_message());                                                             \
        return 1;                                                                                     \
      }                                                                                               \
      CHECK(out == NULL);                                                                             \
      CHECK(strncmp(et_last_error_message(), "OutOfMemory", 11) == 0);                                \
    }                                                                                                 \
    printf("  %s: %ld allocations, each failure OutOfMemory\n", #call, n);                            \
    CHECK(n > 0);                                                                                     \
  } while (0)

static int case_allocate(void) {
  et_tensor* t = NULL;
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM, .name = "a name longer than the SSO"};
  EACH_ALLOCATION_FAILS(t, et_tensor_allocate(2, kShape, ET_DTYPE_U8, &o, &t), et_tensor_release);
  et_allocate_options heap = {.struct_size = sizeof heap, .memory = ET_MEMORY_HEAP};
  EACH_ALLOCATION_FAILS(t, et_tensor_allocate(2, kShape, ET_DTYPE_U8, &heap, &t), et_tensor_release);
  return 0;
}

static int case_views_maps_and_import(void) {
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(2, kShape, ET_DTYPE_U8, &o, &t));
  et_tensor* v = NULL;
  const uint64_t flat[1] = {32};
  EACH_ALLOCATION_FAILS(v, et_tensor_slice(t, 1, 2, 6, &v), et_tensor_release);
  EACH_ALLOCATION_FAILS(v, et_tensor_reshape(t, 1, flat, &v), et_tensor_release);
  et_map* m = NULL;
  const void* data = NULL;
  size_t size = 0;
  EACH_ALLOCATION_FAILS(m, et_tensor_map_read(t, &m, &data, &size), et_map_release);
  int32_t fd = -1;
  CHECK_OK(et_tensor_export_fd(t, &fd));
  et_import_options io = {.struct_size = sizeof io, .name = "imported, with a long name to allocate"};
  EACH_ALLOCATION_FAILS(v, et_tensor_import_dup(fd, 2, kShape, ET_DTYPE_U8, &io, &v), et_tensor_release);
  close(fd);
  et_buffer_desc d = {.struct_size = sizeof d};
  et_descriptor* h = NULL;
  EACH_ALLOCATION_FAILS(h, et_tensor_describe(t, ET_MAP_READ, &d, &h), et_descriptor_release);
  const float scales[4] = {1, 2, 3, 4};
  const int32_t zeros[4] = {0, 0, 0, 0};
  et_quantization q = {.struct_size = sizeof q, .kind = ET_QUANTIZATION_PER_AXIS, .channel_count = 4, .scales = scales,
                       .zero_points = zeros};
  EACH_ALLOCATION_FAILS(v, et_tensor_with_quantization(t, &q, &v), et_tensor_release);
  et_colorimetry c = {.struct_size = sizeof c, .range = ET_COLOR_RANGE_FULL};
  EACH_ALLOCATION_FAILS(v, et_tensor_with_colorimetry(t, &c, &v), et_tensor_release);
  et_tensor_release(t);
  return 0;
}

/* Enough of DLPack 1.1's DLManagedTensorVersioned for a producer in C (the header only declares it). */
struct DLManagedTensorVersioned {
  struct { uint32_t major, minor; } version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  struct {
    void* data;
    struct { int32_t device_type, device_id; } device;
    int32_t ndim;
    struct { uint8_t code, bits; uint16_t lanes; } dtype;
    int64_t* shape;
    int64_t* strides;
    uint64_t byte_offset;
  } dl_tensor;
};
static int g_deleted;
static void count_deleter(struct DLManagedTensorVersioned* self) {
  (void)self;
  ++g_deleted;
}
/* Ends an export made by the library: adopted back and released (no allocation fails by then). */
static void drop_export(struct DLManagedTensorVersioned* m) {
  et_tensor* t = NULL;
  if (m != NULL && et_dlpack_adopt_versioned(m, NULL, &t) == ET_OK) et_tensor_release(t);
}

static int case_fences_pools_dlpack(void) {
  et_fence* f = NULL;
  EACH_ALLOCATION_FAILS(f, et_fence_create_signalled(&f), et_fence_release);
  et_fence* g = NULL;
  CHECK_OK(et_fence_create_signalled(&g));
  EACH_ALLOCATION_FAILS(f, et_fence_merge(g, g, "merged", &f), et_fence_release);
  et_fence_release(g);
  et_pool* pool = NULL;
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM};
  et_pool_options po = {.struct_size = sizeof po, .min_buffers = 1, .max_buffers = 2, .name = "a pool name longer than SSO",
                        .allocate = &shm};
  EACH_ALLOCATION_FAILS(pool, et_pool_create(2, kShape, ET_DTYPE_U8, &po, &pool), et_pool_release);
  CHECK_OK(et_pool_create(2, kShape, ET_DTYPE_U8, &po, &pool));
  et_tensor* t = NULL;
  EACH_ALLOCATION_FAILS(t, et_pool_acquire(pool, 0, &t), et_tensor_release);
  et_pool_stats st = {.struct_size = sizeof st};
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.in_use == 0); /* every failed acquire gave its buffer back */
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  struct DLManagedTensorVersioned* m = NULL;
  EACH_ALLOCATION_FAILS(m, et_dlpack_export_versioned(t, NULL, &m), drop_export);
  et_tensor_release(t);
  et_pool_release(pool);
  /* Adopt: under every failing allocation the producer's deleter runs exactly once. */
  static float values[4] = {1, 2, 3, 4};
  static int64_t shape[1] = {4};
  long n = 0;
  for (;; ++n) {
    struct DLManagedTensorVersioned p;
    memset(&p, 0, sizeof p);
    p.version.major = 1;
    p.deleter = count_deleter;
    p.dl_tensor.data = values;
    p.dl_tensor.device.device_type = 1;
    p.dl_tensor.ndim = 1;
    p.dl_tensor.dtype.code = 2;
    p.dl_tensor.dtype.bits = 32;
    p.dl_tensor.dtype.lanes = 1;
    p.dl_tensor.shape = shape;
    et_dlpack_adopt_options o = {.struct_size = sizeof o, .name = "adopted, with a name longer than SSO"};
    g_deleted = 0;
    t = NULL;
    et_test_fail_allocation(n);
    const et_status s = et_dlpack_adopt_versioned(&p, &o, &t);
    const int pending = et_test_failure_pending();
    et_test_fail_allocation(-1);
    if (pending) {
      CHECK_OK(s);
      CHECK(g_deleted == 0);
      et_tensor_release(t);
      CHECK(g_deleted == 1);
      break;
    }
    CHECK_STATUS(ET_OUT_OF_MEMORY, s);
    CHECK(t == NULL && g_deleted == 1);
  }
  printf("  et_dlpack_adopt_versioned: %ld allocations, each failure OutOfMemory, deleter run once\n", n);
  CHECK(n > 0);
  return 0;
}

static int case_image_pools(void) {
  et_pool* pool = NULL;
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM};
  et_image_options rows = {.struct_size = sizeof rows, .row_alignment_bytes = 64};
  et_pool_options po = {.struct_size = sizeof po, .min_buffers = 1, .max_buffers = 2,
                        .name = "an image pool name longer than SSO", .allocate = &shm};
  EACH_ALLOCATION_FAILS(pool, et_pool_create_image(16, 8, ET_PIXEL_FORMAT_NV12, &rows, &po, &pool), et_pool_release);
  CHECK_OK(et_pool_create_image(16, 8, ET_PIXEL_FORMAT_NV12, &rows, &po, &pool));
  et_tensor* t = NULL;
  EACH_ALLOCATION_FAILS(t, et_pool_acquire(pool, 0, &t), et_tensor_release);
  et_pool_stats st = {.struct_size = sizeof st};
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.in_use == 0); /* every failed acquire gave its buffer back */
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  et_image_layout layout = {.struct_size = sizeof layout};
  CHECK_OK(et_tensor_get_image_layout(t, &layout));
  et_tensor_release(t);
  et_pool_release(pool);
  EACH_ALLOCATION_FAILS(pool, et_pool_create_image_layout(&layout, &po, &pool), et_pool_release);
  return 0;
}

/* A receiver on one end of a new socket pair; the other end is closed again. (Not a sender: its reader
 * thread would take its share of the armed failures, which count allocations on every thread.) */
static et_status receiver_on_a_pair(et_channel_receiver** out) {
  int32_t fds[2] = {-1, -1};
  et_status s = et_channel_socket_pair(fds);
  if (s != ET_OK) return s;
  s = et_channel_receiver_create_adopt(fds[0], NULL, out);
  close(fds[1]);
  return s;
}

static int case_frames_and_channel(void) {
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM};
  et_tensor* image = NULL;
  CHECK_OK(et_tensor_allocate_image(8, 4, ET_PIXEL_FORMAT_NV12, NULL, &o, &image));
  et_frame* f = NULL;
  EACH_ALLOCATION_FAILS(f, et_frame_from_tensor(image, &f), et_frame_release);
  int32_t fd = -1;
  CHECK_OK(et_tensor_export_fd(image, &fd));
  et_image_layout layout = {.struct_size = sizeof layout};
  CHECK_OK(et_tensor_get_image_layout(image, &layout));
  const int32_t fds[2] = {fd, fd};
  EACH_ALLOCATION_FAILS(f, et_frame_import_planes_dup(fds, 2, &layout, NULL, &f), et_frame_release);
  close(fd);
  et_tensor_release(image);
  et_channel_receiver* r = NULL;
  EACH_ALLOCATION_FAILS(r, receiver_on_a_pair(&r), et_channel_receiver_release);
  et_channel_publisher* p = NULL;
  et_channel_publisher_options po = {.struct_size = sizeof po, .name = "a publisher name longer than the SSO"};
  EACH_ALLOCATION_FAILS(p, et_channel_publisher_create(&po, &p), et_channel_publisher_release);
  return 0;
}

static const struct test_case kCases[] = {
    {"fences_pools_dlpack", case_fences_pools_dlpack},
    {"allocate", case_allocate},
    {"views_maps_and_import", case_views_maps_and_import},
    {"frames_and_channel", case_frames_and_channel},
    {"image_pools", case_image_pools},
};

int main(int argc, char** argv) {
  et_tensor* t = NULL;
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM};
  if (et_tensor_allocate(2, kShape, ET_DTYPE_U8, &o, &t) == ET_OK) et_tensor_release(t);
  return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
