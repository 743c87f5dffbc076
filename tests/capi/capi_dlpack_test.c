/* SPDX-License-Identifier: Apache-2.0 */
/* DLPack 1.x through the C API (C11): export, adopt, the deleter's ownership on every path, each refusal
 * named, and a round trip C -> C++ -> C (dlpack_cpp_peer.cpp). The C header only declares
 * DLManagedTensorVersioned; this file completes it as a C consumer including dlpack.h 1.x would. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <stdint.h>
#include <unistd.h>

/* DLPack 1.1's structs (dlmc/dlpack include/dlpack/dlpack.h), written from the spec's field list. */
typedef struct { int32_t device_type; int32_t device_id; } test_dl_device;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } test_dl_data_type;
typedef struct {
  void* data;
  test_dl_device device;
  int32_t ndim;
  test_dl_data_type dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} test_dl_tensor;
struct DLManagedTensorVersioned {
  struct { uint32_t major, minor; } version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  test_dl_tensor dl_tensor;
};
#define TEST_DL_CPU 1
#define TEST_DL_CUDA 2
#define TEST_DL_FLAG_READ_ONLY 1u

int et_test_cpp_dlpack_round_trip(struct DLManagedTensorVersioned* in, struct DLManagedTensorVersioned** out);

/* ---- a producer written in C: a static array and a counting deleter ------------------------------- */
static int g_deleted;
static void count_deleter(struct DLManagedTensorVersioned* self) {
  (void)self;
  ++g_deleted;
}
static float g_values[6] = {1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f};
static int64_t g_shape[2] = {2, 3};
static int64_t g_strides[2] = {3, 1};

/* A fresh C-produced tensor over g_values: f32 [2, 3]. */
static struct DLManagedTensorVersioned c_produced(void) {
  struct DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = 1;
  m.version.minor = 1;
  m.deleter = count_deleter;
  m.dl_tensor.data = g_values;
  m.dl_tensor.device.device_type = TEST_DL_CPU;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype.code = 2; /* kDLFloat */
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = g_shape;
  m.dl_tensor.strides = g_strides;
  return m;
}

/* A shm tensor [4, 8] u8 whose byte i is i. */
static et_tensor* counting_shm(void) {
  const uint64_t shape[2] = {4, 8};
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM};
  et_tensor* t = NULL;
  if (et_tensor_allocate(2, shape, ET_DTYPE_U8, &o, &t) != ET_OK) return NULL;
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  if (et_tensor_map_write(t, &m, &data, &size) != ET_OK) return NULL;
  for (size_t i = 0; i < size; ++i) ((uint8_t*)data)[i] = (uint8_t)i;
  et_map_release(m);
  return t;
}

static int case_export(void) {
  et_tensor* t = counting_shm();
  CHECK(t != NULL);
  et_tensor* v = NULL;
  CHECK_OK(et_tensor_slice(t, 1, 2, 6, &v)); /* [4, 4] from column 2: strides 8, 1 */
  struct DLManagedTensorVersioned* m = NULL;
  CHECK_OK(et_dlpack_export_versioned(v, NULL, &m));
  et_tensor_release(v);
  et_tensor_release(t); /* the export keeps the memory */
  CHECK(m != NULL && m->version.major == 1 && m->version.minor >= 1 && m->deleter != NULL);
  CHECK(m->flags == 0 && m->dl_tensor.device.device_type == TEST_DL_CPU && m->dl_tensor.device.device_id == 0);
  CHECK(m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 4 && m->dl_tensor.shape[1] == 4);
  CHECK(m->dl_tensor.strides[0] == 8 && m->dl_tensor.strides[1] == 1 && m->dl_tensor.byte_offset == 0);
  CHECK(m->dl_tensor.dtype.code == 1 && m->dl_tensor.dtype.bits == 8 && m->dl_tensor.dtype.lanes == 1);
  const uint8_t* bytes = m->dl_tensor.data;
  CHECK(bytes[0] == 2 && bytes[8] == 10 && bytes[8 * 3 + 3] == 8 * 3 + 5);
  m->deleter(m); /* the caller's: once */
  /* Read-only: the flag, and an adopt of it gives read-only storage. */
  t = counting_shm();
  CHECK(t != NULL);
  et_dlpack_export_options ro = {.struct_size = sizeof ro, .flags = ET_DLPACK_READ_ONLY};
  CHECK_OK(et_dlpack_export_versioned(t, &ro, &m));
  CHECK((m->flags & TEST_DL_FLAG_READ_ONLY) != 0);
  et_tensor* back = NULL;
  CHECK_OK(et_dlpack_adopt_versioned(m, NULL, &back));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(back, &info));
  CHECK(info.read_only == 1 && info.memory == ET_MEMORY_FOREIGN);
  et_map* map = (et_map*)&map;
  void* data = NULL;
  size_t size = 0;
  CHECK_STATUS(ET_PERMISSION_DENIED, et_tensor_map_write(back, &map, &data, &size));
  CHECK(map == NULL);
  et_tensor_release(back); /* runs the export's deleter */
  et_tensor_release(t);
  /* Bad input. */
  t = counting_shm();
  CHECK(t != NULL);
  m = (struct DLManagedTensorVersioned*)&m;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_export_versioned(NULL, NULL, &m));
  CHECK(m == NULL);
  CHECK_MESSAGE("et_dlpack_export_versioned: tensor is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_export_versioned(t, NULL, NULL));
  CHECK_MESSAGE("out is NULL");
  et_dlpack_export_options bad = {.struct_size = sizeof bad, .flags = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_export_versioned(t, &bad, &m));
  CHECK_MESSAGE("et_dlpack_export_options.flags 2 has bits other than ET_DLPACK_READ_ONLY");
  bad.struct_size = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_export_versioned(t, &bad, &m));
  CHECK_MESSAGE("et_dlpack_export_options.struct_size 4 is below the first version's 8 bytes");
  bad.struct_size = 4100;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_export_versioned(t, &bad, &m));
  CHECK_MESSAGE("struct_size 4100 is above 4096");
  struct { et_dlpack_export_options known; uint64_t newer; } newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.newer = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_export_versioned(t, &newer.known, &m));
  CHECK_MESSAGE("byte at offset 8 is 0x01");
  et_tensor_release(t);
  return 0;
}

static int case_adopt_c_producer(void) {
  g_deleted = 0;
  struct DLManagedTensorVersioned m = c_produced();
  et_dlpack_adopt_options o = {.struct_size = sizeof o, .name = "from C"};
  et_tensor* t = NULL;
  CHECK_OK(et_dlpack_adopt_versioned(&m, &o, &t));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(info.memory == ET_MEMORY_FOREIGN && info.dtype == ET_DTYPE_F32 && info.rank == 2);
  CHECK(info.shape[0] == 2 && info.shape[1] == 3 && info.strides_bytes[0] == 12 && info.strides_bytes[1] == 4);
  CHECK(info.read_only == 0);
  et_tensor* row = NULL;
  CHECK_OK(et_tensor_batch(t, 1, &row));
  et_tensor_release(t);
  CHECK(g_deleted == 0); /* a view still holds it */
  et_map* map = NULL;
  const void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(row, &map, &data, &size));
  CHECK(size == 12 && ((const float*)data)[0] == 4.5f);
  et_map_release(map);
  et_tensor_release(row);
  CHECK(g_deleted == 1); /* once, at the last release */
  /* Not exportable by fd (foreign memory). */
  m = c_produced();
  CHECK_OK(et_dlpack_adopt_versioned(&m, NULL, &t));
  int32_t fd = 5;
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_export_fd(t, &fd));
  CHECK(fd == -1);
  et_tensor_release(t);
  CHECK(g_deleted == 2);
  return 0;
}

/* Each refusal: the named status and text, NULL out, and the producer's deleter run exactly once. */
#define ADOPT_REFUSED(expected, text, managed, options)                                               \
  do {                                                                                                \
    g_deleted = 0;                                                                                    \
    et_tensor* t_ = (et_tensor*)&t_;                                                                  \
    CHECK_STATUS(expected, et_dlpack_adopt_versioned(managed, options, &t_));                          \
    CHECK(t_ == NULL);                                                                                \
    CHECK_MESSAGE(text);                                                                              \
    CHECK(g_deleted == 1);                                                                            \
  } while (0)

static int case_adopt_bad_input(void) {
  et_tensor* t = (et_tensor*)&t;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_adopt_versioned(NULL, NULL, &t));
  CHECK(t == NULL);
  CHECK_MESSAGE("et_dlpack_adopt_versioned: managed is NULL");
  /* A NULL out or bad options still end the producer's tensor (the library owns it from the call on). */
  struct DLManagedTensorVersioned m = c_produced();
  g_deleted = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_dlpack_adopt_versioned(&m, NULL, NULL));
  CHECK_MESSAGE("out is NULL");
  CHECK(g_deleted == 1);
  m = c_produced();
  et_dlpack_adopt_options o = {.struct_size = 2};
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "et_dlpack_adopt_options.struct_size 2 is below the first version's 16 bytes",
                &m, &o);
  m = c_produced();
  o.struct_size = 9999;
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "struct_size 9999 is above 4096", &m, &o);
  m = c_produced();
  o.struct_size = sizeof o;
  o.reserved = 4;
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "et_dlpack_adopt_options.reserved is 4, not 0", &m, &o);
  struct { et_dlpack_adopt_options known; uint64_t newer; } newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.newer = UINT64_C(1) << 8;
  m = c_produced();
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "byte at offset 17 is 0x01", &m, &newer.known);
  /* The tensor itself: version, device, rank, dtype, strides, sizes. */
  m = c_produced();
  m.version.major = 2;
  ADOPT_REFUSED(ET_UNSUPPORTED, "has major 2; this library reads major 1", &m, NULL);
  m = c_produced();
  m.dl_tensor.device.device_type = TEST_DL_CUDA;
  ADOPT_REFUSED(ET_UNSUPPORTED, "kDLCUDA", &m, NULL);
  m = c_produced();
  m.dl_tensor.ndim = 9;
  ADOPT_REFUSED(ET_OUT_OF_RANGE, "ndim 9 exceeds the maximum rank 8", &m, NULL);
  m = c_produced();
  m.dl_tensor.ndim = -1;
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "ndim -1 is negative", &m, NULL);
  m = c_produced();
  m.dl_tensor.dtype.code = 6; /* kDLBool */
  m.dl_tensor.dtype.bits = 8;
  ADOPT_REFUSED(ET_UNSUPPORTED, "dtype code 6 (kDLBool) with 8 bits has no edgetensor dtype", &m, NULL);
  m = c_produced();
  m.dl_tensor.dtype.lanes = 4;
  ADOPT_REFUSED(ET_UNSUPPORTED, "has 4 lanes; only lanes 1", &m, NULL);
  int64_t negative[2] = {3, -1};
  m = c_produced();
  m.dl_tensor.strides = negative;
  ADOPT_REFUSED(ET_UNSUPPORTED, "stride -1 of dimension 1 is negative", &m, NULL);
  int64_t huge[2] = {INT64_C(1) << 62, 1 << 20};
  m = c_produced();
  m.dl_tensor.shape = huge;
  m.dl_tensor.strides = NULL;
  ADOPT_REFUSED(ET_OUT_OF_RANGE, "dlpack import", &m, NULL);
  m = c_produced();
  m.dl_tensor.byte_offset = 2; /* a float at an odd address */
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "is not aligned to the element size 4 B", &m, NULL);
  m = c_produced();
  m.dl_tensor.data = NULL;
  ADOPT_REFUSED(ET_INVALID_ARGUMENT, "data is null with 6 elements", &m, NULL);
  /* A producer with no deleter: nothing to call, nothing called. */
  m = c_produced();
  m.deleter = NULL;
  m.version.major = 0;
  g_deleted = 0;
  CHECK_STATUS(ET_UNSUPPORTED, et_dlpack_adopt_versioned(&m, NULL, &t));
  CHECK(g_deleted == 0);
  return 0;
}

static int case_round_trip_c_cpp_c(void) {
  et_tensor* t = counting_shm();
  CHECK(t != NULL);
  et_tensor* v = NULL;
  CHECK_OK(et_tensor_batch(t, 2, &v)); /* row 2: bytes 16..23 */
  struct DLManagedTensorVersioned* from_c = NULL;
  CHECK_OK(et_dlpack_export_versioned(v, NULL, &from_c));
  struct DLManagedTensorVersioned* from_cpp = NULL;
  CHECK(et_test_cpp_dlpack_round_trip(from_c, &from_cpp) == 16); /* C++ reads what C wrote */
  CHECK(from_cpp != NULL && from_cpp->dl_tensor.ndim == 1 && from_cpp->dl_tensor.shape[0] == 8);
  et_tensor* back = NULL;
  CHECK_OK(et_dlpack_adopt_versioned(from_cpp, NULL, &back));
  /* The same bytes: a write through the original shows through the round trip. */
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(v, &m, &data, &size));
  ((uint8_t*)data)[1] = 200;
  et_map_release(m);
  const void* cdata = NULL;
  CHECK_OK(et_tensor_map_read(back, &m, &cdata, &size));
  CHECK(size == 8 && ((const uint8_t*)cdata)[0] == 16 && ((const uint8_t*)cdata)[1] == 200);
  et_map_release(m);
  et_tensor_info a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
  CHECK_OK(et_tensor_get_info(v, &a));
  CHECK_OK(et_tensor_get_info(back, &b));
  CHECK(b.memory == ET_MEMORY_FOREIGN && b.identity != a.identity && b.shape[0] == 8);
  /* Released in any order: the shm buffer (and its fd) goes with the last of the chain (fd count checked). */
  et_tensor_release(t);
  et_tensor_release(v);
  et_tensor_release(back);
  return 0;
}

static const struct test_case kCases[] = {
    {"dlpack_export", case_export},
    {"dlpack_adopt_c_producer", case_adopt_c_producer},
    {"dlpack_adopt_bad_input", case_adopt_bad_input},
    {"dlpack_round_trip_c_cpp_c", case_round_trip_c_cpp_c},
};

int main(int argc, char** argv) {
  et_tensor* t = counting_shm(); /* the library's first shm allocation, before the fd counts start */
  et_tensor_release(t);
  return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
