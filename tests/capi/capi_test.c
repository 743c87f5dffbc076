/* SPDX-License-Identifier: Apache-2.0 */
/* The C API, tested in C (-std=c11 -Wall -Wextra -Wpedantic -Werror): every entry point with good input
 * and bad (NULL handles and pointers, struct sizes, non-zero unknown tails, bad fds); each case is a
 * ctest of its own (capi.<case>) and must leave the process's fd count as it found it. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static const uint64_t kShape23[2] = {2, 3};

/* A shm tensor [rows, cols] u8 whose byte i is (i * 7 + seed) & 0xff. */
static et_tensor* filled_shm(uint64_t rows, uint64_t cols, int seed) {
  const uint64_t shape[2] = {rows, cols};
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM};
  et_tensor* t = NULL;
  if (et_tensor_allocate(2, shape, ET_DTYPE_U8, &o, &t) != ET_OK) return NULL;
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  if (et_tensor_map_write(t, &m, &data, &size) != ET_OK) {
    et_tensor_release(t);
    return NULL;
  }
  for (size_t i = 0; i < size; ++i) ((uint8_t*)data)[i] = (uint8_t)((i * 7 + (size_t)seed) & 0xff);
  et_map_release(m);
  return t;
}

/* Whether `fd` is open in this process (an fd closed by the library reads EBADF). */
static int fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

/* A sealed (F_SEAL_SHRINK) memfd of `size` bytes, or -1. */
static int sealed_memfd(size_t size, unsigned seals) {
  int fd = memfd_create("capi-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, (long)size) != 0 || (seals != 0 && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* ---- names, last error, errno ------------------------------------------------------------------ */

static int case_names(void) {
  CHECK(strcmp(et_status_name(ET_OK), "OK") == 0);
  CHECK(strcmp(et_status_name(ET_INVALID_ARGUMENT), "InvalidArgument") == 0);
  CHECK(strcmp(et_status_name(ET_OUT_OF_MEMORY), "OutOfMemory") == 0);
  CHECK(strcmp(et_status_name(ET_INTERNAL), "Internal") == 0);
  CHECK(strcmp(et_status_name(ET_TIMEOUT), "Timeout") == 0);
  CHECK(strcmp(et_status_name(99), "Unknown") == 0);
  CHECK(strcmp(et_status_name(-1), "Unknown") == 0);
  CHECK(et_dtype_size(ET_DTYPE_U8) == 1 && et_dtype_size(ET_DTYPE_BF16) == 2 && et_dtype_size(ET_DTYPE_F64) == 8);
  CHECK(et_dtype_size(12) == 0 && et_dtype_size(-1) == 0);
  CHECK(strcmp(et_dtype_name(ET_DTYPE_F32), "f32") == 0 && strcmp(et_dtype_name(12), "invalid") == 0);
  CHECK(strcmp(et_memory_kind_name(ET_MEMORY_DMABUF), "dmabuf") == 0);
  CHECK(strcmp(et_memory_kind_name(ET_MEMORY_GL_PBO), "gl_pbo") == 0);
  CHECK(strcmp(et_memory_kind_name(6), "unknown") == 0 && strcmp(et_memory_kind_name(-1), "unknown") == 0);
  CHECK(strlen(et_version()) >= 5);
  return 0;
}

static int case_errno_kept_and_last_error(void) {
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  close(pipe_fds[1]);
  const int closed = pipe_fds[1];
  et_tensor* t = (et_tensor*)&t; /* set to NULL by the failing call */
  errno = EDOM;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(closed, 2, kShape23, ET_DTYPE_U8, NULL, &t));
  CHECK(errno == EDOM);            /* errno as it was on entry */
  CHECK(t == NULL);
  CHECK(et_last_error_code() == ET_INVALID_ARGUMENT);
  CHECK(et_last_error_errno() == EBADF); /* the failure's own errno */
  CHECK(strncmp(et_last_error_message(), "InvalidArgument: ", 17) == 0);
  /* A pipe is no tensor memory: refused, named. */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(pipe_fds[0], 2, kShape23, ET_DTYPE_U8, NULL, &t));
  CHECK_MESSAGE("pipe");
  close(pipe_fds[0]);
  /* Success keeps errno and the last error. */
  errno = ERANGE;
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, NULL, &t));
  CHECK(errno == ERANGE);
  CHECK(et_last_error_code() == ET_INVALID_ARGUMENT);
  CHECK_MESSAGE("pipe");
  et_tensor_release(t);
  CHECK(errno == ERANGE); /* the release of the last reference keeps it too */
  return 0;
}

static void* fail_in_thread(void* arg) {
  et_tensor* t = NULL;
  (void)arg;
  return (void*)(intptr_t)et_tensor_allocate(2, kShape23, 99, NULL, &t);
}

static int case_last_error_is_per_thread(void) {
  et_tensor* t = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(9, kShape23, ET_DTYPE_U8, NULL, &t));
  CHECK_MESSAGE("rank 9");
  pthread_t thread;
  void* result = NULL;
  CHECK(pthread_create(&thread, NULL, fail_in_thread, NULL) == 0);
  CHECK(pthread_join(thread, &result) == 0);
  CHECK((et_status)(intptr_t)result == ET_INVALID_ARGUMENT);
  CHECK_MESSAGE("rank 9"); /* the other thread's failure ("dtype 99") is its own */
  return 0;
}

/* ---- allocate ------------------------------------------------------------------------------------ */

static int case_allocate_every_memory_kind(void) {
  const int32_t kinds[] = {ET_MEMORY_AUTO, ET_MEMORY_HEAP, ET_MEMORY_SHM, ET_MEMORY_DMABUF};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
    et_allocate_options o = {.struct_size = sizeof o, .memory = kinds[k], .name = "capi"};
    et_tensor* t = NULL;
    const et_status s = et_tensor_allocate(2, kShape23, ET_DTYPE_U16, &o, &t);
    if (kinds[k] == ET_MEMORY_DMABUF && s != ET_OK) {
      /* No dma-heap here (the kernel lane tests it): the reason is named, and nothing is left behind. */
      CHECK(s == ET_UNAVAILABLE || s == ET_PERMISSION_DENIED || s == ET_NOT_FOUND);
      CHECK(t == NULL);
      printf("  dmabuf: %s\n", et_last_error_message());
      continue;
    }
    CHECK_OK(s);
    et_tensor_info info = {.struct_size = sizeof info};
    CHECK_OK(et_tensor_get_info(t, &info));
    CHECK(kinds[k] == ET_MEMORY_AUTO ? info.memory != ET_MEMORY_AUTO : info.memory == kinds[k]);
    CHECK(info.dtype == ET_DTYPE_U16 && info.rank == 2 && info.shape[0] == 2 && info.shape[1] == 3);
    CHECK(info.shape[2] == 0 && info.strides_bytes[0] == 6 && info.strides_bytes[1] == 2);
    CHECK(info.element_count == 6 && info.packed_bytes == 12 && info.extent_bytes == 12);
    CHECK(info.buffer_bytes >= 12 && info.offset_bytes == 0 && info.contiguous == 1 && info.read_only == 0);
    CHECK(info.identity != 0 && info.buffer_key != 0);
    const void* data = NULL;
    size_t size = 0;
    et_map* m = NULL;
    CHECK_OK(et_tensor_map_read(t, &m, &data, &size));
    CHECK(size == 12 && ((const uint8_t*)data)[11] == 0); /* reads as zeros */
    et_map_release(m);
    et_tensor_release(t);
  }
  et_tensor* t = (et_tensor*)&t;
  et_allocate_options gl = {.struct_size = sizeof gl, .memory = ET_MEMORY_GL_PBO};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &gl, &t));
  CHECK(t == NULL);
  CHECK_MESSAGE("gl_context");
  et_allocate_options foreign = {.struct_size = sizeof foreign, .memory = ET_MEMORY_FOREIGN};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &foreign, &t));
  return 0;
}

static int case_allocate_options(void) {
  /* A named POSIX shm object, then the same name again: AlreadyExists. */
  char name[64];
  snprintf(name, sizeof name, "/et-capi-test-%d", (int)getpid());
  et_allocate_options o = {.struct_size = sizeof o, .memory = ET_MEMORY_SHM, .shm_name = name};
  et_tensor* a = NULL;
  et_tensor* b = (et_tensor*)&b;
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &o, &a));
  CHECK_STATUS(ET_ALREADY_EXISTS, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &o, &b));
  CHECK(b == NULL);
  et_tensor_release(a);
  CHECK(shm_unlink(name) == 0);
  /* shm_name without ET_MEMORY_SHM */
  o.memory = ET_MEMORY_HEAP;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &o, &b));
  CHECK_MESSAGE("needs memory Shm");
  /* Alignment of the first element: up to ET_MAX_ALIGNMENT for every kind, checked through a map. */
  const int32_t kinds[] = {ET_MEMORY_HEAP, ET_MEMORY_SHM};
  for (size_t k = 0; k < 2; ++k) {
    et_allocate_options aligned = {.struct_size = sizeof aligned, .memory = kinds[k], .alignment_bytes = ET_MAX_ALIGNMENT};
    CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &aligned, &a));
    et_map* m = NULL;
    void* data = NULL;
    size_t size = 0;
    CHECK_OK(et_tensor_map_write(a, &m, &data, &size));
    CHECK((uintptr_t)data % ET_MAX_ALIGNMENT == 0);
    et_map_release(m);
    et_tensor_release(a);
  }
  et_allocate_options bad = {.struct_size = sizeof bad, .alignment_bytes = 48};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &bad, &b));
  CHECK_MESSAGE("power of two");
  bad.alignment_bytes = 2 * ET_MAX_ALIGNMENT;
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &bad, &b));
  bad.alignment_bytes = 0;
  bad.memory = 6;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &bad, &b));
  CHECK_MESSAGE("memory 6");
  bad.memory = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &bad, &b));
  CHECK(b == NULL);
  return 0;
}

static int case_allocate_bad_input(void) {
  et_tensor* t = (et_tensor*)&t;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, NULL, NULL));
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, NULL, ET_DTYPE_U8, NULL, &t));
  CHECK(t == NULL);
  CHECK_MESSAGE("shape");
  const uint64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(9, nine, ET_DTYPE_U8, NULL, &t));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, 12, NULL, &t));
  CHECK_MESSAGE("dtype 12");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, -1, NULL, &t));
  const uint64_t huge[2] = {UINT64_C(1) << 62, 16};
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_allocate(2, huge, ET_DTYPE_U8, NULL, &t));
  CHECK(t == NULL);
  /* Rank 0 (a scalar) needs no shape. */
  CHECK_OK(et_tensor_allocate(0, NULL, ET_DTYPE_F32, NULL, &t));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(info.rank == 0 && info.element_count == 1 && info.packed_bytes == 4);
  et_tensor_release(t);
  return 0;
}

/* ---- the struct_size rule, for every option and output struct ---------------------------------------- */

/* A caller's struct followed by 8 bytes a newer header would have. */
#define NEWER(T) struct { T known; uint64_t newer; }

static int case_struct_size_rule(void) {
  et_tensor* t = (et_tensor*)&t;
  /* et_allocate_options: too small, absurd, larger with a zero tail (fine), larger with a non-zero tail. */
  NEWER(et_allocate_options) big;
  memset(&big, 0, sizeof big);
  big.known.struct_size = sizeof big;
  big.known.memory = ET_MEMORY_HEAP;
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &big.known, &t));
  et_tensor_release(t);
  big.newer = 1;
  char offset[80];
  snprintf(offset, sizeof offset, "byte at offset %zu is 0x01", sizeof(et_allocate_options));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &big.known, &t));
  CHECK(t == NULL);
  CHECK_MESSAGE(offset);
  CHECK_MESSAGE("et_allocate_options");
  et_allocate_options small = {.struct_size = 4};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &small, &t));
  CHECK_MESSAGE("struct_size 4 is below");
  small.struct_size = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &small, &t));
  small.struct_size = 5000;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &small, &t));
  CHECK_MESSAGE("is above 4096");

  /* et_import_options */
  int fd = sealed_memfd(6, F_SEAL_SHRINK);
  CHECK(fd >= 0);
  NEWER(et_import_options) imp;
  memset(&imp, 0, sizeof imp);
  imp.known.struct_size = sizeof imp;
  CHECK_OK(et_tensor_import_dup(fd, 2, kShape23, ET_DTYPE_U8, &imp.known, &t));
  et_tensor_release(t);
  imp.newer = UINT64_C(1) << 56;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, kShape23, ET_DTYPE_U8, &imp.known, &t));
  CHECK_MESSAGE("et_import_options");
  et_import_options imp_small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, kShape23, ET_DTYPE_U8, &imp_small, &t));

  /* et_send_options and et_receive_options */
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  CHECK_OK(et_tensor_import_dup(fd, 2, kShape23, ET_DTYPE_U8, NULL, &t));
  NEWER(et_send_options) send;
  memset(&send, 0, sizeof send);
  send.known.struct_size = sizeof send;
  send.newer = 7;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_send_tensor(sv[0], t, &send.known));
  send.newer = 0;
  CHECK_OK(et_ipc_send_tensor(sv[0], t, &send.known));
  et_tensor_release(t);
  NEWER(et_receive_options) recv;
  memset(&recv, 0, sizeof recv);
  recv.known.struct_size = sizeof recv;
  recv.newer = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_receive_tensor(sv[1], &recv.known, &t));
  recv.newer = 0;
  CHECK_OK(et_ipc_receive_tensor(sv[1], &recv.known, &t));
  et_receive_options recv_small = {.struct_size = 2};
  et_tensor* u = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_receive_tensor(sv[1], &recv_small, &u));
  close(sv[0]);
  close(sv[1]);

  /* Output structs: a newer caller's tail is zeroed and its struct_size kept; too small is refused. */
  NEWER(et_tensor_info) info;
  memset(&info, 0xab, sizeof info);
  info.known.struct_size = sizeof info;
  CHECK_OK(et_tensor_get_info(t, &info.known));
  CHECK(info.newer == 0 && info.known.struct_size == sizeof info && info.known.shape[1] == 3);
  et_tensor_info info_small = {.struct_size = 16};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_info(t, &info_small));
  NEWER(et_buffer_desc) desc;
  memset(&desc, 0xab, sizeof desc);
  desc.known.struct_size = sizeof desc;
  et_descriptor* holder = NULL;
  CHECK_OK(et_tensor_describe(t, 0, &desc.known, &holder));
  CHECK(desc.newer == 0 && desc.known.struct_size == sizeof desc && desc.known.planes[0].size_bytes == 6);
  et_descriptor_release(holder);
  et_buffer_desc desc_small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_describe(t, 0, &desc_small, &holder));
  CHECK(holder == NULL);
  et_tensor_release(t);
  close(fd);
  return 0;
}

/* ---- imports and export ---------------------------------------------------------------------------- */

static int case_import_dup_and_export(void) {
  et_tensor* a = filled_shm(4, 8, 1);
  CHECK(a != NULL);
  int32_t fd = -1;
  CHECK_OK(et_tensor_export_fd(a, &fd));
  CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  /* The same buffer seen as [8, 4] u8 from the second row: another identity, the same buffer key. */
  const uint64_t shape[2] = {3, 8};
  et_import_options o = {.struct_size = sizeof o, .offset_bytes = 8, .name = "imported"};
  et_tensor* b = NULL;
  CHECK_OK(et_tensor_import_dup(fd, 2, shape, ET_DTYPE_U8, &o, &b));
  CHECK(fd_is_open(fd)); /* dup: the caller's fd stays the caller's */
  et_tensor_info ia = {.struct_size = sizeof ia}, ib = {.struct_size = sizeof ib};
  CHECK_OK(et_tensor_get_info(a, &ia));
  CHECK_OK(et_tensor_get_info(b, &ib));
  CHECK(ia.identity != ib.identity && ia.buffer_key == ib.buffer_key);
  CHECK(ib.offset_bytes == 8 && ib.extent_bytes == 24 && ib.buffer_bytes == ia.buffer_bytes);
  const void* data = NULL;
  size_t size = 0;
  et_map* m = NULL;
  CHECK_OK(et_tensor_map_read(b, &m, &data, &size));
  CHECK(size == 24 && ((const uint8_t*)data)[0] == (uint8_t)(8 * 7 + 1));
  et_map_release(m);
  et_tensor_release(b);
  /* Strided import: every other column. */
  const uint64_t strided_shape[2] = {4, 4};
  const int64_t strides[2] = {8, 2};
  et_import_options s = {.struct_size = sizeof s, .strides_bytes = strides};
  CHECK_OK(et_tensor_import_dup(fd, 2, strided_shape, ET_DTYPE_U8, &s, &b));
  CHECK_OK(et_tensor_get_info(b, &ib));
  CHECK(ib.contiguous == 0 && ib.strides_bytes[1] == 2 && ib.extent_bytes == 31);
  et_tensor_release(b);
  /* Bad input. */
  b = (et_tensor*)&b;
  const uint64_t too_big[2] = {5, 8};
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_import_dup(fd, 2, too_big, ET_DTYPE_U8, NULL, &b));
  CHECK(b == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(-1, 2, shape, ET_DTYPE_U8, NULL, &b));
  CHECK_MESSAGE("negative");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, shape, ET_DTYPE_U8, NULL, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, NULL, ET_DTYPE_U8, NULL, &b));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, shape, 77, NULL, &b));
  et_import_options flags = {.struct_size = sizeof flags, .flags = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, shape, ET_DTYPE_U8, &flags, &b));
  CHECK_MESSAGE("flags 2");
  close(fd);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, shape, ET_DTYPE_U8, NULL, &b));
  /* Export: NULL, heap (not shareable), zero elements. */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_export_fd(NULL, &fd));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_export_fd(a, NULL));
  et_tensor_release(a);
  et_allocate_options heap = {.struct_size = sizeof heap, .memory = ET_MEMORY_HEAP};
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &heap, &a));
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_export_fd(a, &fd));
  CHECK(fd == -1);
  et_tensor_release(a);
  const uint64_t empty[2] = {0, 3};
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM};
  CHECK_OK(et_tensor_allocate(2, empty, ET_DTYPE_U8, &shm, &a));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_export_fd(a, &fd));
  CHECK_MESSAGE("zero elements");
  et_tensor_release(a);
  return 0;
}

static int case_import_shrinkable_memfd(void) {
  int fd = sealed_memfd(6, 0); /* not sealed against shrinking */
  CHECK(fd >= 0);
  et_tensor* t = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 2, kShape23, ET_DTYPE_U8, NULL, &t));
  CHECK_MESSAGE("F_SEAL_SHRINK");
  et_import_options o = {.struct_size = sizeof o, .flags = ET_IMPORT_ALLOW_SHRINKABLE};
  CHECK_OK(et_tensor_import_dup(fd, 2, kShape23, ET_DTYPE_U8, &o, &t));
  et_tensor_release(t);
  close(fd);
  return 0;
}

static int case_import_adopt_takes_the_fd(void) {
  /* Success: the tensor owns the fd; its release closes it (the fd count is checked by the runner). */
  int fd = sealed_memfd(6, F_SEAL_SHRINK);
  CHECK(fd >= 0);
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_import_adopt(fd, 2, kShape23, ET_DTYPE_U8, NULL, &t));
  CHECK(fd_is_open(fd));
  et_tensor_release(t);
  CHECK(!fd_is_open(fd));
  /* Every failure closes it too: argument errors, option errors, and the library's refusals. */
  const uint64_t too_big[2] = {3, 3};
  et_import_options bad_size = {.struct_size = 3};
  et_import_options bad_flags = {.struct_size = sizeof bad_flags, .flags = 8};
  for (int attempt = 0; attempt < 6; ++attempt) {
    fd = sealed_memfd(6, F_SEAL_SHRINK);
    CHECK(fd >= 0);
    et_status s = ET_OK;
    t = (et_tensor*)&t;
    switch (attempt) {
      case 0: s = et_tensor_import_adopt(fd, 2, kShape23, ET_DTYPE_U8, NULL, NULL); break;
      case 1: s = et_tensor_import_adopt(fd, 2, NULL, ET_DTYPE_U8, NULL, &t); break;
      case 2: s = et_tensor_import_adopt(fd, 2, kShape23, 40, NULL, &t); break;
      case 3: s = et_tensor_import_adopt(fd, 2, kShape23, ET_DTYPE_U8, &bad_size, &t); break;
      case 4: s = et_tensor_import_adopt(fd, 2, kShape23, ET_DTYPE_U8, &bad_flags, &t); break;
      case 5: s = et_tensor_import_adopt(fd, 2, too_big, ET_DTYPE_U8, NULL, &t); break;
    }
    CHECK(s == (attempt == 5 ? ET_OUT_OF_RANGE : ET_INVALID_ARGUMENT));
    CHECK(!fd_is_open(fd));
    CHECK(attempt == 0 || t == NULL);
  }
  /* A negative fd is left alone (there is nothing to close). */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_adopt(-1, 2, kShape23, ET_DTYPE_U8, NULL, &t));
  return 0;
}

static int case_read_only_import(void) {
  et_tensor* a = filled_shm(2, 3, 0);
  CHECK(a != NULL);
  int32_t fd = -1;
  CHECK_OK(et_tensor_export_fd(a, &fd));
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", (int)fd);
  int ro = open(path, O_RDONLY | O_CLOEXEC);
  CHECK(ro >= 0);
  close(fd);
  et_tensor* r = NULL;
  CHECK_OK(et_tensor_import_adopt(ro, 2, kShape23, ET_DTYPE_U8, NULL, &r));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(r, &info));
  CHECK(info.read_only == 1);
  et_map* m = (et_map*)&m;
  void* data = NULL;
  size_t size = 0;
  CHECK_STATUS(ET_PERMISSION_DENIED, et_tensor_map_write(r, &m, &data, &size));
  CHECK(m == NULL);
  CHECK_STATUS(ET_PERMISSION_DENIED, et_tensor_map_read_write(r, &m, &data, &size));
  const void* cdata = NULL;
  CHECK_OK(et_tensor_map_read(r, &m, &cdata, &size));
  CHECK(size == 6 && ((const uint8_t*)cdata)[5] == 5 * 7);
  et_map_release(m);
  et_tensor_release(r);
  et_tensor_release(a);
  return 0;
}

/* ---- handles ------------------------------------------------------------------------------------- */

static int case_retain_release(void) {
  et_tensor_release(NULL);
  et_map_release(NULL);
  et_descriptor_release(NULL);
  CHECK(et_tensor_retain(NULL) == NULL && et_map_retain(NULL) == NULL && et_descriptor_retain(NULL) == NULL);
  et_tensor* t = filled_shm(2, 3, 3);
  CHECK(t != NULL);
  CHECK(et_tensor_retain(t) == t);
  et_tensor_release(t);
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(t, &info)); /* one reference left */
  /* A map and a view keep the buffer after the tensor's last release. */
  et_map* m = NULL;
  const void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(t, &m, &data, &size));
  et_tensor* v = NULL;
  CHECK_OK(et_tensor_batch(t, 1, &v));
  et_tensor_release(t);
  CHECK(((const uint8_t*)data)[4] == 4 * 7 + 3);
  CHECK(et_map_retain(m) == m);
  et_map_release(m);
  CHECK(((const uint8_t*)data)[5] == 5 * 7 + 3);
  et_map_release(m);
  CHECK_OK(et_tensor_map_read(v, &m, &data, &size));
  CHECK(size == 3 && ((const uint8_t*)data)[0] == 3 * 7 + 3);
  et_map_release(m);
  et_tensor_release(v);
  /* NULL handles are named errors in every call that takes one. */
  et_tensor* out = NULL;
  const uint64_t shape[1] = {6};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_info(NULL, &info));
  CHECK_MESSAGE("tensor is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_view(NULL, 0, 1, shape, NULL, &out));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_batch(NULL, 0, &out));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_slice(NULL, 0, 0, 1, &out));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_reshape(NULL, 1, shape, &out));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_read(NULL, &m, &data, &size));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_write(NULL, &m, NULL, &size));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_read_write(NULL, &m, NULL, &size));
  et_buffer_desc d = {.struct_size = sizeof d};
  et_descriptor* h = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_describe(NULL, 0, &d, &h));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_send_tensor(0, NULL, NULL));
  return 0;
}

/* ---- views --------------------------------------------------------------------------------------- */

/* Byte `i` of `t`'s extent, through a read map (-1 on error). */
static int byte_at(const et_tensor* t, size_t i) {
  et_map* m = NULL;
  const void* data = NULL;
  size_t size = 0;
  if (et_tensor_map_read(t, &m, &data, &size) != ET_OK || i >= size) return -1;
  const int b = ((const uint8_t*)data)[i];
  et_map_release(m);
  return b;
}

static int case_views(void) {
  et_tensor* t = filled_shm(4, 6, 0); /* byte i = i * 7 */
  CHECK(t != NULL);
  et_tensor_info info = {.struct_size = sizeof info};
  /* view: a [3, 2] window from row 1, column 0, strided every 3rd byte along a row */
  const uint64_t shape[2] = {3, 2};
  const int64_t strides[2] = {6, 3};
  et_tensor* v = NULL;
  CHECK_OK(et_tensor_view(t, 6, 2, shape, strides, &v));
  CHECK_OK(et_tensor_get_info(v, &info));
  CHECK(info.offset_bytes == 6 && info.shape[0] == 3 && info.strides_bytes[1] == 3 && info.extent_bytes == 16);
  CHECK(byte_at(v, 3) == 9 * 7 && byte_at(v, 15) == 21 * 7);
  et_tensor_info parent = {.struct_size = sizeof parent};
  CHECK_OK(et_tensor_get_info(t, &parent));
  CHECK(info.identity == parent.identity && info.buffer_key == parent.buffer_key);
  et_tensor_release(v);
  /* batch */
  CHECK_OK(et_tensor_batch(t, 2, &v));
  CHECK_OK(et_tensor_get_info(v, &info));
  CHECK(info.rank == 1 && info.shape[0] == 6 && info.offset_bytes == 12 && byte_at(v, 0) == 12 * 7);
  et_tensor_release(v);
  /* slice */
  CHECK_OK(et_tensor_slice(t, 1, 2, 5, &v));
  CHECK_OK(et_tensor_get_info(v, &info));
  CHECK(info.shape[0] == 4 && info.shape[1] == 3 && info.offset_bytes == 2 && info.contiguous == 0);
  /* reshape of a non-contiguous view: refused */
  const uint64_t twelve[1] = {12};
  et_tensor* r = (et_tensor*)&r;
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_reshape(v, 1, twelve, &r));
  CHECK(r == NULL);
  et_tensor_release(v);
  /* reshape */
  const uint64_t flat[3] = {2, 3, 4};
  CHECK_OK(et_tensor_reshape(t, 3, flat, &v));
  CHECK_OK(et_tensor_get_info(v, &info));
  CHECK(info.rank == 3 && info.strides_bytes[0] == 12 && info.strides_bytes[2] == 1 && byte_at(v, 23) == (23 * 7));
  et_tensor_release(v);
  /* Bad input: out of bounds (never clamped), wrong dims, counts, NULLs, ranks. */
  v = (et_tensor*)&v;
  const uint64_t too_many[2] = {4, 7};
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_view(t, 0, 2, too_many, NULL, &v));
  CHECK(v == NULL);
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_view(t, 24, 2, shape, strides, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_view(t, 0, 2, NULL, NULL, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_view(t, 0, 2, shape, strides, NULL));
  const uint64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_view(t, 0, 9, nine, NULL, &v));
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_batch(t, 4, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_batch(t, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_slice(t, 2, 0, 1, &v));
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_slice(t, 0, 3, 2, &v));
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_slice(t, 0, 0, 5, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_slice(t, 0, 0, 1, NULL));
  const uint64_t wrong_count[2] = {5, 5};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_reshape(t, 2, wrong_count, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_reshape(t, 2, NULL, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_reshape(t, 9, nine, &v));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_reshape(t, 1, twelve, NULL));
  CHECK(v == NULL);
  /* A scalar has no batch. */
  et_tensor* scalar = NULL;
  CHECK_OK(et_tensor_allocate(0, NULL, ET_DTYPE_U8, NULL, &scalar));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_batch(scalar, 0, &v));
  et_tensor_release(scalar);
  et_tensor_release(t);
  return 0;
}

/* ---- maps ---------------------------------------------------------------------------------------- */

static int case_maps(void) {
  const uint64_t shape[2] = {3, 5};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_U16, NULL, &t));
  et_map* w = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(t, &w, &data, &size));
  CHECK(size == 30 && data != NULL);
  for (uint16_t i = 0; i < 15; ++i) ((uint16_t*)data)[i] = (uint16_t)(1000 + i);
  et_map_release(w);
  et_map* rw = NULL;
  CHECK_OK(et_tensor_map_read_write(t, &rw, &data, &size));
  ((uint16_t*)data)[14] += 1;
  /* A read map while the read-write one is open (maps of one buffer may overlap). */
  et_map* r = NULL;
  const void* cdata = NULL;
  CHECK_OK(et_tensor_map_read(t, &r, &cdata, &size));
  CHECK(((const uint16_t*)cdata)[0] == 1000 && ((const uint16_t*)cdata)[14] == 1015);
  et_map_release(rw);
  et_map_release(r);
  /* A map of a view covers the view's extent only. */
  et_tensor* row = NULL;
  CHECK_OK(et_tensor_batch(t, 1, &row));
  CHECK_OK(et_tensor_map_read(row, &r, &cdata, &size));
  CHECK(size == 10 && ((const uint16_t*)cdata)[0] == 1005);
  et_map_release(r);
  et_tensor_release(row);
  /* NULL pointers; out_map is NULL after a failure. */
  r = (et_map*)&r;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_read(t, NULL, &cdata, &size));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_read(t, &r, NULL, &size));
  CHECK(r == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_read(t, &r, &cdata, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_write(t, &r, &data, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map_read_write(t, &r, NULL, &size));
  CHECK_MESSAGE("out_data is NULL");
  /* Zero elements: an empty map. */
  const uint64_t empty[2] = {0, 4};
  et_tensor* z = NULL;
  CHECK_OK(et_tensor_allocate(2, empty, ET_DTYPE_U8, NULL, &z));
  CHECK_OK(et_tensor_map_read(z, &r, &cdata, &size));
  CHECK(size == 0);
  et_map_release(r);
  et_tensor_release(z);
  et_tensor_release(t);
  return 0;
}

/* ---- runtime descriptors ------------------------------------------------------------------------- */

static int case_describe(void) {
  et_tensor* t = filled_shm(4, 8, 5);
  CHECK(t != NULL);
  et_tensor* v = NULL;
  CHECK_OK(et_tensor_batch(t, 1, &v)); /* [8] at offset 8 */
  const int fds_before = open_fd_count();
  et_buffer_desc d = {.struct_size = sizeof d};
  et_descriptor* h = NULL;
  CHECK_OK(et_tensor_describe(v, ET_MAP_READ, &d, &h));
  CHECK(open_fd_count() == fds_before + 1); /* the holder's fd */
  CHECK(d.plane_count == 1 && d.planes[0].fd >= 0 && d.planes[0].offset_bytes == 8);
  CHECK(d.planes[0].size_bytes == 8 && d.planes[0].row_stride_bytes == 8 && d.buffer_bytes >= 32);
  CHECK(d.data != NULL && d.mapped_bytes == 8 && ((const uint8_t*)d.data)[0] == (uint8_t)(8 * 7 + 5));
  CHECK((fcntl(d.planes[0].fd, F_GETFD) & FD_CLOEXEC) != 0);
  /* The fd is the buffer: a mapping of it of our own shows the same bytes. */
  void* own = mmap(NULL, (size_t)d.buffer_bytes, PROT_READ, MAP_SHARED, d.planes[0].fd, 0);
  CHECK(own != MAP_FAILED);
  CHECK(memcmp((const uint8_t*)own + d.planes[0].offset_bytes, d.data, 8) == 0);
  munmap(own, (size_t)d.buffer_bytes);
  et_descriptor_release(h);
  CHECK(open_fd_count() == fds_before);
  /* A 2-D tensor's row stride is its rows'; no map asked: no address. */
  CHECK_OK(et_tensor_describe(t, 0, &d, &h));
  CHECK(d.data == NULL && d.mapped_bytes == 0 && d.planes[0].row_stride_bytes == 8 && d.planes[0].size_bytes == 32);
  CHECK(et_descriptor_retain(h) == h);
  et_descriptor_release(h);
  CHECK(fd_is_open(d.planes[0].fd));
  et_descriptor_release(h);
  /* Write maps through a descriptor. */
  CHECK_OK(et_tensor_describe(t, ET_MAP_READ_WRITE, &d, &h));
  ((uint8_t*)d.data)[0] = 42;
  et_descriptor_release(h);
  CHECK(byte_at(t, 0) == 42);
  /* Heap memory: no fd, an address still. */
  et_allocate_options heap = {.struct_size = sizeof heap, .memory = ET_MEMORY_HEAP, .alignment_bytes = 64};
  et_tensor* ht = NULL;
  const uint64_t shape[1] = {64};
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_F32, &heap, &ht));
  CHECK_OK(et_tensor_describe(ht, ET_MAP_WRITE, &d, &h));
  CHECK(d.planes[0].fd == -1 && d.data != NULL && (uintptr_t)d.data % 64 == 0 && d.mapped_bytes == 256);
  CHECK(d.planes[0].row_stride_bytes == 256);
  et_descriptor_release(h);
  et_tensor_release(ht);
  /* Bad input. */
  h = (et_descriptor*)&h;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_describe(t, 4, &d, &h));
  CHECK(h == NULL);
  CHECK_MESSAGE("map_mode 4");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_describe(t, 0, NULL, &h));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_describe(t, 0, &d, NULL));
  const uint64_t empty[1] = {0};
  et_tensor* z = NULL;
  CHECK_OK(et_tensor_allocate(1, empty, ET_DTYPE_U8, NULL, &z));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_describe(z, 0, &d, &h));
  et_tensor_release(z);
  et_tensor_release(v);
  et_tensor_release(t);
  return 0;
}

/* ---- images ------------------------------------------------------------------------------------ */

#define FOURCC(a, b, c, d) ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

static int case_pixel_formats(void) {
  CHECK(strcmp(et_pixel_format_name(ET_PIXEL_FORMAT_NV12), "nv12") == 0);
  CHECK(strcmp(et_pixel_format_name(ET_PIXEL_FORMAT_BAYER_GBRG8), "bayer_gbrg8") == 0);
  CHECK(strcmp(et_pixel_format_name(29), "invalid") == 0 && strcmp(et_pixel_format_name(-1), "invalid") == 0);
  int32_t f = -1;
  uint32_t mp = 9, code = 0;
  CHECK_OK(et_pixel_format_from_name("i420", &f));
  CHECK(f == ET_PIXEL_FORMAT_I420);
  CHECK_OK(et_pixel_format_from_v4l2(FOURCC('N', 'M', '1', '2'), &f, &mp));
  CHECK(f == ET_PIXEL_FORMAT_NV12 && mp == 1);
  CHECK_OK(et_pixel_format_from_v4l2(FOURCC('N', 'V', '1', '2'), &f, &mp));
  CHECK(f == ET_PIXEL_FORMAT_NV12 && mp == 0);
  CHECK_OK(et_pixel_format_to_v4l2(ET_PIXEL_FORMAT_NV12, 1, &code));
  CHECK(code == FOURCC('N', 'M', '1', '2'));
  CHECK_OK(et_pixel_format_from_drm(FOURCC('Y', 'U', 'Y', 'V'), &f));
  CHECK(f == ET_PIXEL_FORMAT_YUYV);
  CHECK_OK(et_pixel_format_to_drm(ET_PIXEL_FORMAT_NV12, &code));
  CHECK(code == FOURCC('N', 'V', '1', '2'));
  CHECK_OK(et_pixel_format_from_gst("RGBx", &f));
  CHECK(f == ET_PIXEL_FORMAT_RGBX);
  const char* gst = NULL;
  CHECK_OK(et_pixel_format_to_gst(ET_PIXEL_FORMAT_P010, &gst));
  CHECK(gst != NULL && strcmp(gst, "P010_10LE") == 0);
  /* Bad input: unknown names and codes (named), NULLs, values outside the table. */
  f = 77;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_name("nv13", &f));
  CHECK_MESSAGE("nv13");
  CHECK(f == 77);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_name(NULL, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_name("nv12", NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_v4l2(FOURCC('N', 'M', '9', '9'), &f, &mp));
  CHECK_MESSAGE("NM99");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_v4l2(FOURCC('N', 'V', '1', '2'), &f, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_v4l2(FOURCC('N', 'V', '1', '2'), NULL, &mp));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_drm(0, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_drm(FOURCC('N', 'V', '1', '2'), NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_gst("NOPE", &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_from_gst(NULL, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_v4l2(ET_PIXEL_FORMAT_NV12, 2, &code));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_v4l2(ET_PIXEL_FORMAT_UNKNOWN, 0, &code));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_v4l2(29, 0, &code));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_v4l2(ET_PIXEL_FORMAT_NV12, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_drm(-3, &code));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_drm(ET_PIXEL_FORMAT_NV12, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_gst(0, &gst));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pixel_format_to_gst(ET_PIXEL_FORMAT_NV12, NULL));
  return 0;
}

static int case_images(void) {
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM};
  et_image_options rows64 = {.struct_size = sizeof rows64, .row_alignment_bytes = 64};
  et_tensor* img = NULL;
  CHECK_OK(et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_NV12, &rows64, &shm, &img));
  et_image_layout l = {.struct_size = sizeof l};
  CHECK_OK(et_tensor_get_image_layout(img, &l));
  CHECK(l.format == ET_PIXEL_FORMAT_NV12 && l.width == 60 && l.height == 45 && l.plane_count == 2 && l.modifier == 0);
  CHECK(l.planes[0].offset_bytes == 0 && l.planes[0].row_stride_bytes == 64);
  CHECK(l.planes[1].offset_bytes == 64 * 46 && l.planes[1].row_stride_bytes == 64 && l.planes[2].row_stride_bytes == 0);
  /* (the default layout pads the height to the 4:2:0 subsampling: 46 rows before the UV plane) */
  /* The runtime descriptor has one entry per plane, in one buffer. */
  et_buffer_desc d = {.struct_size = sizeof d};
  et_descriptor* h = NULL;
  CHECK_OK(et_tensor_describe(img, ET_MAP_READ, &d, &h));
  CHECK(d.plane_count == 2 && d.planes[0].fd >= 0 && d.planes[1].fd == d.planes[0].fd);
  CHECK(d.planes[0].size_bytes == 44 * 64 + 60 && d.planes[1].offset_bytes == 64 * 46);
  CHECK(d.planes[1].size_bytes == 22 * 64 + 60 && d.planes[1].row_stride_bytes == 64);
  et_descriptor_release(h);
  /* Plane views: the UV plane is [23, 30, 2] with 64-byte rows; a plane view is no whole image. */
  et_tensor* uv = NULL;
  CHECK_OK(et_tensor_plane(img, 1, &uv));
  et_tensor_info info = {.struct_size = sizeof info};
  CHECK_OK(et_tensor_get_info(uv, &info));
  CHECK(info.rank == 3 && info.shape[0] == 23 && info.shape[1] == 30 && info.shape[2] == 2);
  CHECK(info.strides_bytes[0] == 64 && info.offset_bytes == 64 * 46);
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_get_image_layout(uv, &l));
  et_tensor_release(uv);
  uv = (et_tensor*)&uv;
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_plane(img, 2, &uv));
  CHECK(uv == NULL);
  /* The layout travels with the tensor over ipc. */
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  CHECK_OK(et_ipc_send_tensor(sv[0], img, NULL));
  et_tensor* got = NULL;
  CHECK_OK(et_ipc_receive_tensor(sv[1], NULL, &got));
  et_image_layout lg = {.struct_size = sizeof lg};
  CHECK_OK(et_tensor_get_image_layout(got, &lg));
  CHECK(lg.format == ET_PIXEL_FORMAT_NV12 && lg.planes[1].offset_bytes == 64 * 46);
  et_tensor_release(got);
  close(sv[0]);
  close(sv[1]);
  /* Bad input. */
  et_tensor* t = (et_tensor*)&t;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_UNKNOWN, NULL, NULL, &t));
  CHECK(t == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, 29, NULL, NULL, &t));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(0, 45, ET_PIXEL_FORMAT_RGB, NULL, NULL, &t));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_RGB, NULL, NULL, NULL));
  et_image_options bad = {.struct_size = sizeof bad, .row_alignment_bytes = 48};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_RGB, &bad, NULL, &t));
  bad.row_alignment_bytes = 0;
  bad.reserved = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_RGB, &bad, NULL, &t));
  NEWER(et_image_options) newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.newer = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_RGB, &newer.known, NULL, &t));
  CHECK_MESSAGE("et_image_options");
  et_allocate_options bad_memory = {.struct_size = sizeof bad_memory, .memory = 9};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_RGB, NULL, &bad_memory, &t));
  et_tensor* plain = NULL;
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, NULL, &plain));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_get_image_layout(plain, &l));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_tensor_plane(plain, 0, &t));
  et_tensor_release(plain);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_image_layout(NULL, &l));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_image_layout(img, NULL));
  et_image_layout small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_image_layout(img, &small));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_plane(NULL, 0, &t));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_plane(img, 0, NULL));
  et_tensor_release(img);
  return 0;
}

/* ---- ipc ----------------------------------------------------------------------------------------- */

static int case_ipc_round_trip(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  et_tensor* t = filled_shm(3, 4, 9);
  CHECK(t != NULL);
  et_tensor* v = NULL;
  CHECK_OK(et_tensor_slice(t, 0, 1, 3, &v));
  CHECK_OK(et_ipc_send_tensor(sv[0], v, NULL));
  et_tensor* got = NULL;
  et_receive_options ro = {.struct_size = sizeof ro, .use_timeout = 1, .timeout_ms = 1000, .max_buffer_bytes = 1 << 20};
  CHECK_OK(et_ipc_receive_tensor(sv[1], &ro, &got));
  et_tensor_info a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
  CHECK_OK(et_tensor_get_info(v, &a));
  CHECK_OK(et_tensor_get_info(got, &b));
  CHECK(b.offset_bytes == 4 && b.shape[0] == 2 && b.shape[1] == 4 && b.buffer_key == a.buffer_key);
  CHECK(byte_at(got, 0) == 4 * 7 + 9);
  et_tensor_release(got);
  /* Nothing to read: a timeout of 0 is ET_BUSY at once. */
  got = (et_tensor*)&got;
  ro.timeout_ms = 0;
  CHECK_STATUS(ET_BUSY, et_ipc_receive_tensor(sv[1], &ro, &got));
  CHECK(got == NULL);
  /* A buffer over the receiver's limit. */
  CHECK_OK(et_ipc_send_tensor(sv[0], t, NULL));
  ro.max_buffer_bytes = 4;
  CHECK_STATUS(ET_OUT_OF_RANGE, et_ipc_receive_tensor(sv[1], &ro, &got));
  /* Bad options and arguments. */
  et_send_options so = {.struct_size = sizeof so, .use_timeout = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_send_tensor(sv[0], t, &so));
  CHECK_MESSAGE("use_timeout 2");
  so.use_timeout = 1;
  so.timeout_ms = -5;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_send_tensor(sv[0], t, &so));
  so.timeout_ms = 0;
  so.reserved = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_send_tensor(sv[0], t, &so));
  et_receive_options bad = {.struct_size = sizeof bad, .reserved = 3};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_receive_tensor(sv[1], &bad, &got));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_receive_tensor(sv[1], NULL, NULL));
  /* A heap tensor cannot travel; a pipe is no socket; a closed socket is a bad fd. */
  et_allocate_options heap = {.struct_size = sizeof heap, .memory = ET_MEMORY_HEAP};
  et_tensor* ht = NULL;
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &heap, &ht));
  CHECK_STATUS(ET_UNSUPPORTED, et_ipc_send_tensor(sv[0], ht, NULL));
  et_tensor_release(ht);
  int p[2];
  CHECK(pipe(p) == 0);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_send_tensor(p[1], t, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_ipc_receive_tensor(p[0], NULL, &got));
  close(p[0]);
  close(p[1]);
  /* The peer gone. */
  close(sv[1]);
  CHECK_STATUS(ET_UNAVAILABLE, et_ipc_send_tensor(sv[0], t, NULL));
  close(sv[0]);
  CHECK(et_ipc_send_tensor(sv[0], t, NULL) != ET_OK);
  et_tensor_release(v);
  et_tensor_release(t);
  return 0;
}

/* ---- maps with options --------------------------------------------------------------------------- */

static int case_map_with_options(void) {
  et_tensor* t = filled_shm(2, 4, 3);
  CHECK(t != NULL);
  /* shm never waits: a timeout of 0 ("only check") maps at once; every direction. */
  et_map_options o = {.struct_size = sizeof o, .use_timeout = 1, .timeout_ns = 0};
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map(t, ET_MAP_READ, &o, &m, &data, &size));
  CHECK(size == 8 && ((const uint8_t*)data)[1] == 7 + 3);
  et_map_release(m);
  o.timeout_ns = -1; /* no bound */
  CHECK_OK(et_tensor_map(t, ET_MAP_WRITE, &o, &m, &data, &size));
  ((uint8_t*)data)[0] = 99;
  et_map_release(m);
  CHECK_OK(et_tensor_map(t, ET_MAP_READ_WRITE, NULL, &m, &data, &size));
  CHECK(((uint8_t*)data)[0] == 99);
  et_map_release(m);
  CHECK(ET_DEFAULT_MAP_TIMEOUT_NS == INT64_C(1000000000));
  /* Bad input: each names the value and what is allowed. */
  m = (et_map*)&m;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, 0, NULL, &m, &data, &size));
  CHECK(m == NULL);
  CHECK_MESSAGE("map_mode 0 is not an ET_MAP_* value (1 to 3)");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, 4, NULL, &m, &data, &size));
  CHECK_MESSAGE("map_mode 4");
  et_map_options bad = {.struct_size = sizeof bad, .use_timeout = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_READ, &bad, &m, &data, &size));
  CHECK_MESSAGE("et_map_options.use_timeout 2 is not 0 or 1");
  bad.struct_size = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_READ, &bad, &m, &data, &size));
  CHECK_MESSAGE("et_map_options.struct_size 4 is below the first version's 16 bytes");
  bad.struct_size = 4097;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_READ, &bad, &m, &data, &size));
  CHECK_MESSAGE("struct_size 4097 is above 4096");
  NEWER(et_map_options) newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  CHECK_OK(et_tensor_map(t, ET_MAP_READ, &newer.known, &m, &data, &size));
  et_map_release(m);
  newer.newer = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_READ, &newer.known, &m, &data, &size));
  CHECK_MESSAGE("byte at offset 16 is 0x01");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(NULL, ET_MAP_READ, NULL, &m, &data, &size));
  CHECK_MESSAGE("tensor is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_READ, NULL, NULL, &data, &size));
  CHECK_MESSAGE("out_map is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_READ, NULL, &m, NULL, &size));
  CHECK_MESSAGE("out_data is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_map(t, ET_MAP_WRITE, NULL, &m, &data, NULL));
  CHECK_MESSAGE("out_size is NULL");
  /* A read-only import refuses the write directions here too. */
  int32_t fd = -1;
  CHECK_OK(et_tensor_export_fd(t, &fd));
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", (int)fd);
  int ro = open(path, O_RDONLY | O_CLOEXEC);
  close(fd);
  CHECK(ro >= 0);
  et_tensor* r = NULL;
  const uint64_t shape[2] = {2, 4};
  CHECK_OK(et_tensor_import_adopt(ro, 2, shape, ET_DTYPE_U8, NULL, &r));
  CHECK_STATUS(ET_PERMISSION_DENIED, et_tensor_map(r, ET_MAP_READ_WRITE, &o, &m, &data, &size));
  CHECK(m == NULL);
  CHECK_OK(et_tensor_map(r, ET_MAP_READ, &o, &m, &data, &size));
  et_map_release(m);
  et_tensor_release(r);
  et_tensor_release(t);
  return 0;
}

/* ---- fences -------------------------------------------------------------------------------------- */
/* This host has no sync_file source (no DMA-BUF, no vgem): the signalled fence and every refusal are
 * tested here; real sync_files (wait timeouts, merge, export and import) run in the kernel lane's C++
 * tests (tests/hardware/fence_test.cpp). */

static int case_fence_signalled(void) {
  et_fence* f = NULL;
  CHECK_OK(et_fence_create_signalled(&f));
  CHECK_OK(et_fence_wait(f, 0));
  CHECK_OK(et_fence_wait(f, 1));
  CHECK_OK(et_fence_wait(f, -1));
  int32_t fd = 7;
  CHECK_OK(et_fence_get_borrowed_fd(f, &fd));
  CHECK(fd == -1);
  fd = 7;
  CHECK_OK(et_fence_dup_fd(f, &fd));
  CHECK(fd == -1); /* nothing to duplicate: signalled, with ET_OK */
  et_fence_status st;
  memset(&st, 0xab, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_fence_get_status(f, &st));
  CHECK(st.status == 1 && st.fence_count == 0 && st.pending_count == 0 && st.name[0] == 0 && st.name[31] == 0);
  /* Merging signalled fences gives a signalled one. */
  et_fence* g = NULL;
  CHECK_OK(et_fence_import_dup(-1, &g)); /* -1: the wire's signalled fence */
  et_fence* merged = NULL;
  CHECK_OK(et_fence_merge(f, g, NULL, &merged));
  CHECK_OK(et_fence_get_borrowed_fd(merged, &fd));
  CHECK(fd == -1);
  CHECK_OK(et_fence_wait(merged, 0));
  et_fence_release(merged);
  CHECK_OK(et_fence_merge(f, g, "named", &merged));
  et_fence_release(merged);
  CHECK(et_fence_retain(g) == g);
  et_fence_release(g);
  CHECK_OK(et_fence_wait(g, 0)); /* one reference left */
  et_fence_release(g);
  et_fence_release(f);
  et_fence_release(NULL);
  CHECK(et_fence_retain(NULL) == NULL);
  return 0;
}

static int case_fence_bad_input(void) {
  et_fence* f = (et_fence*)&f;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_create_signalled(NULL));
  CHECK_MESSAGE("et_fence_create_signalled: out is NULL");
  /* Adopt: a pipe is no sync_file (named, with the fd), and is closed; so is every argument error. */
  int p[2];
  CHECK(pipe(p) == 0);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_adopt(p[0], &f));
  CHECK(f == NULL);
  CHECK_MESSAGE("is not a sync_file");
  CHECK_MESSAGE("pipe:");
  CHECK(!fd_is_open(p[0]));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_adopt(p[1], NULL));
  CHECK_MESSAGE("out is NULL");
  CHECK(!fd_is_open(p[1]));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_adopt(-1, &f));
  CHECK_MESSAGE("fd -1 is negative");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_adopt(-5, &f));
  CHECK_MESSAGE("fd -5 is negative");
  /* Dup: the caller's fd stays open; a memfd is no sync_file either; a closed fd is a bad fd. */
  int fd = sealed_memfd(16, 0);
  CHECK(fd >= 0);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_dup(fd, &f));
  CHECK_MESSAGE("is not a sync_file");
  char named[48];
  snprintf(named, sizeof named, "fd %d (/memfd:", fd); /* the caller's fd, not the library's copy */
  CHECK_MESSAGE(named);
  CHECK(fd_is_open(fd));
  close(fd);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_dup(fd, &f));
  CHECK(et_last_error_errno() == EBADF);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_dup(-2, &f));
  CHECK_MESSAGE("fd -2 is negative (only -1, a signalled fence, is allowed)");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_import_dup(-1, NULL));
  /* NULL handles and out-parameters. */
  et_fence* s = NULL;
  CHECK_OK(et_fence_create_signalled(&s));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_wait(NULL, 0));
  CHECK_MESSAGE("et_fence_wait: fence is NULL");
  int32_t out_fd = 5;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_get_borrowed_fd(NULL, &out_fd));
  CHECK(out_fd == -1);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_get_borrowed_fd(s, NULL));
  out_fd = 5;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_dup_fd(NULL, &out_fd));
  CHECK(out_fd == -1);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_dup_fd(s, NULL));
  f = (et_fence*)&f;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_merge(NULL, s, NULL, &f));
  CHECK(f == NULL);
  CHECK_MESSAGE("et_fence_merge: a is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_merge(s, NULL, NULL, &f));
  CHECK_MESSAGE("b is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_merge(s, s, NULL, NULL));
  /* et_fence_status: NULL, too small, absurd; a newer caller's tail is zeroed. */
  et_fence_status st = {.struct_size = sizeof st};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_get_status(NULL, &st));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_get_status(s, NULL));
  et_fence_status small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_get_status(s, &small));
  CHECK_MESSAGE("et_fence_status.struct_size 8 is below the first version's 48 bytes");
  small.struct_size = 8192;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_fence_get_status(s, &small));
  CHECK_MESSAGE("struct_size 8192 is above 4096");
  NEWER(et_fence_status) newer;
  memset(&newer, 0xab, sizeof newer);
  newer.known.struct_size = sizeof newer;
  CHECK_OK(et_fence_get_status(s, &newer.known));
  CHECK(newer.newer == 0 && newer.known.struct_size == sizeof newer && newer.known.status == 1);
  et_fence_release(s);
  return 0;
}

static int case_tensor_fences_need_dmabuf(void) {
  /* Fences attach to DMA-BUFs only: memfd and heap tensors are refused, naming the memory kind. */
  et_tensor* t = filled_shm(2, 3, 0);
  CHECK(t != NULL);
  et_fence* f = (et_fence*)&f;
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_export_fence(t, ET_FENCE_ACCESS_READ, &f));
  CHECK(f == NULL);
  CHECK_MESSAGE("shm tensor");
  CHECK_MESSAGE("fences attach to DMA-BUFs only");
  et_fence* s = NULL;
  CHECK_OK(et_fence_create_signalled(&s));
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_import_fence(t, s, ET_FENCE_ACCESS_WRITE));
  CHECK_MESSAGE("shm tensor");
  et_allocate_options heap = {.struct_size = sizeof heap, .memory = ET_MEMORY_HEAP};
  et_tensor* h = NULL;
  CHECK_OK(et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &heap, &h));
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_export_fence(h, ET_FENCE_ACCESS_WRITE, &f));
  CHECK_MESSAGE("heap tensor");
  CHECK_STATUS(ET_UNSUPPORTED, et_tensor_import_fence(h, s, ET_FENCE_ACCESS_READ));
  et_tensor_release(h);
  /* Bad input: access values (named, with the allowed ones), NULLs. */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_export_fence(t, 0, &f));
  CHECK_MESSAGE("access 0 is not ET_FENCE_ACCESS_READ (1) or ET_FENCE_ACCESS_WRITE (2)");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_export_fence(t, 3, &f));
  CHECK_MESSAGE("access 3");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_fence(t, s, -1));
  CHECK_MESSAGE("access -1");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_export_fence(NULL, ET_FENCE_ACCESS_READ, &f));
  CHECK_MESSAGE("tensor is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_export_fence(t, ET_FENCE_ACCESS_READ, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_fence(NULL, s, ET_FENCE_ACCESS_READ));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_fence(t, NULL, ET_FENCE_ACCESS_READ));
  CHECK_MESSAGE("fence is NULL");
  et_fence_release(s);
  et_tensor_release(t);
  /* A DMA-BUF where the host has one (the kernel lane): an idle buffer's export is signalled. */
  et_allocate_options dma = {.struct_size = sizeof dma, .memory = ET_MEMORY_DMABUF};
  et_tensor* d = NULL;
  if (et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &dma, &d) == ET_OK) {
    const et_status e = et_tensor_export_fence(d, ET_FENCE_ACCESS_WRITE, &f);
    if (e == ET_OK) {
      CHECK_OK(et_fence_wait(f, 0));
      CHECK_OK(et_tensor_import_fence(d, f, ET_FENCE_ACCESS_READ));
      et_fence_release(f);
    } else {
      CHECK(e == ET_UNSUPPORTED); /* a kernel before 6.0, named */
      CHECK_MESSAGE("Linux");
    }
    et_tensor_release(d);
  }
  return 0;
}

/* ---- pools --------------------------------------------------------------------------------------- */

struct acquire_arg {
  et_pool* pool;
  et_tensor* got;
  et_status status;
};
static void* acquire_in_thread(void* p) {
  struct acquire_arg* a = p;
  a->status = et_pool_acquire(a->pool, INT64_C(5000000000), &a->got); /* 5 s */
  return NULL;
}

static int case_pool(void) {
  const uint64_t shape[2] = {4, 16};
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM};
  et_pool_options o = {.struct_size = sizeof o, .min_buffers = 1, .max_buffers = 2, .name = "cam0", .allocate = &shm};
  et_pool* pool = NULL;
  CHECK_OK(et_pool_create(2, shape, ET_DTYPE_U8, &o, &pool));
  et_pool_stats st = {.struct_size = sizeof st};
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.allocated == 1 && st.free == 1 && st.in_use == 0 && st.packed_bytes == 64);
  /* Acquire: a shm buffer; write it, release it; the next acquire is the same buffer, bytes kept. */
  et_tensor* a = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &a));
  et_tensor_info ia = {.struct_size = sizeof ia};
  CHECK_OK(et_tensor_get_info(a, &ia));
  CHECK(ia.memory == ET_MEMORY_SHM && ia.shape[0] == 4 && ia.shape[1] == 16);
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(a, &m, &data, &size));
  ((uint8_t*)data)[0] = 17;
  et_map_release(m);
  et_tensor* view = NULL;
  CHECK_OK(et_tensor_batch(a, 1, &view));
  et_tensor_release(a);
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.in_use == 1); /* the view still holds it */
  et_tensor_release(view);
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.in_use == 0 && st.free == 1 && st.acquired == 1);
  CHECK_OK(et_pool_acquire(pool, 0, &a));
  et_tensor_info again = {.struct_size = sizeof again};
  CHECK_OK(et_tensor_get_info(a, &again));
  CHECK(again.buffer_key == ia.buffer_key && again.identity != ia.identity);
  CHECK(byte_at(a, 0) == 17);
  /* A second buffer is allocated (max 2); a third acquire finds none: the timeout status, named. */
  et_tensor* b = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &b));
  et_tensor* c = (et_tensor*)&c;
  /* A pool is a queue, not device work: ET_BUSY (ET_TIMEOUT is for fences and maps), errno EAGAIN for a
   * zero timeout and ETIMEDOUT for one that passed. */
  CHECK_STATUS(ET_BUSY, et_pool_acquire(pool, 0, &c));
  CHECK(et_last_error_errno() == EAGAIN);
  CHECK(c == NULL);
  CHECK_MESSAGE("pool 'cam0'");
  CHECK_MESSAGE("max_buffers 2");
  /* 1 ns is rounded up to 1 ms: it waits (stats.waits), unlike 0. */
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.waits == 0 && st.timeouts == 1);
  CHECK_STATUS(ET_BUSY, et_pool_acquire(pool, 1, &c));
  CHECK(et_last_error_errno() == ETIMEDOUT);
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.waits == 1 && st.timeouts == 2 && st.allocated == 2 && st.in_use == 2 && st.peak_in_use == 2);
  /* A waiting acquire gets the buffer released by another thread. */
  struct acquire_arg arg = {.pool = pool, .got = NULL, .status = ET_INTERNAL};
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, acquire_in_thread, &arg) == 0);
  usleep(20000);
  et_tensor_release(b);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK_OK(arg.status);
  CHECK(arg.got != NULL);
  /* The pool released with buffers out: they stay valid, and free their memory at their last release. */
  et_pool* extra = et_pool_retain(pool);
  et_pool_release(extra);
  et_pool_release(pool);
  CHECK(byte_at(a, 0) == 17);
  et_tensor_release(a);
  et_tensor_release(arg.got);
  /* zero_on_reuse: a reused buffer reads as zeros. */
  et_pool_options z = {.struct_size = sizeof z, .flags = ET_POOL_ZERO_ON_REUSE, .max_buffers = 1};
  CHECK_OK(et_pool_create(2, shape, ET_DTYPE_U8, &z, &pool));
  CHECK_OK(et_pool_acquire(pool, -1, &a));
  CHECK_OK(et_tensor_map_write(a, &m, &data, &size));
  ((uint8_t*)data)[5] = 9;
  et_map_release(m);
  et_tensor_release(a);
  CHECK_OK(et_pool_acquire(pool, -1, &a));
  CHECK(byte_at(a, 5) == 0);
  et_tensor_release(a);
  et_pool_release(pool);
  et_pool_release(NULL);
  return 0;
}

static int case_pool_bad_input(void) {
  const uint64_t shape[2] = {4, 16};
  et_pool* p = (et_pool*)&p;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, NULL, NULL));
  CHECK_MESSAGE("et_pool_create: out is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, NULL, ET_DTYPE_U8, NULL, &p));
  CHECK(p == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(9, shape, ET_DTYPE_U8, NULL, &p));
  CHECK_MESSAGE("rank 9 is above ET_MAX_RANK (8)");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, 12, NULL, &p));
  CHECK_MESSAGE("dtype 12 is not an ET_DTYPE_* value (0 to 11)");
  const uint64_t huge[2] = {UINT64_C(1) << 62, 16};
  CHECK_STATUS(ET_OUT_OF_RANGE, et_pool_create(2, huge, ET_DTYPE_U8, NULL, &p));
  const uint64_t empty[2] = {0, 16};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, empty, ET_DTYPE_U8, NULL, &p));
  CHECK_MESSAGE("zero");
  et_pool_options o = {.struct_size = sizeof o, .min_buffers = 3, .max_buffers = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &o, &p));
  CHECK_MESSAGE("3");
  CHECK_MESSAGE("2");
  o.min_buffers = 0;
  o.flags = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &o, &p));
  CHECK_MESSAGE("et_pool_options.flags 2 has bits other than ET_POOL_ZERO_ON_REUSE");
  o.flags = 0;
  char name[64];
  snprintf(name, sizeof name, "/et-capi-pool-%d", (int)getpid());
  et_allocate_options named = {.struct_size = sizeof named, .memory = ET_MEMORY_SHM, .shm_name = name};
  o.allocate = &named;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &o, &p));
  CHECK_MESSAGE("shm_name");
  et_allocate_options bad_memory = {.struct_size = sizeof bad_memory, .memory = 7};
  o.allocate = &bad_memory;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &o, &p));
  CHECK_MESSAGE("et_allocate_options.memory 7");
  et_pool_options small = {.struct_size = 12};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &small, &p));
  CHECK_MESSAGE("et_pool_options.struct_size 12 is below the first version's 32 bytes");
  small.struct_size = 100000;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &small, &p));
  CHECK_MESSAGE("is above 4096");
  NEWER(et_pool_options) newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.newer = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create(2, shape, ET_DTYPE_U8, &newer.known, &p));
  CHECK_MESSAGE("byte at offset 32 is 0x03");
  newer.newer = 0;
  CHECK_OK(et_pool_create(2, shape, ET_DTYPE_U8, &newer.known, &p));
  /* Acquire and stats: NULLs, struct sizes. */
  et_tensor* t = (et_tensor*)&t;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_acquire(NULL, 0, &t));
  CHECK(t == NULL);
  CHECK_MESSAGE("et_pool_acquire: pool is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_acquire(p, 0, NULL));
  et_pool_stats st = {.struct_size = sizeof st};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_get_stats(NULL, &st));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_get_stats(p, NULL));
  et_pool_stats st_small = {.struct_size = 16};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_get_stats(p, &st_small));
  CHECK_MESSAGE("et_pool_stats.struct_size 16 is below the first version's 80 bytes");
  NEWER(et_pool_stats) st_newer;
  memset(&st_newer, 0xab, sizeof st_newer);
  st_newer.known.struct_size = sizeof st_newer;
  CHECK_OK(et_pool_get_stats(p, &st_newer.known));
  CHECK(st_newer.newer == 0 && st_newer.known.reserved == 0 && st_newer.known.allocated == 0);
  et_pool_release(p);
  return 0;
}

/* An image pool: every acquired tensor is an image of the pool's layout, and a released buffer comes back. */
static int case_pool_image(void) {
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM};
  et_image_options rows64 = {.struct_size = sizeof rows64, .row_alignment_bytes = 64};
  et_pool_options o = {.struct_size = sizeof o, .min_buffers = 1, .max_buffers = 2, .name = "cam1", .allocate = &shm};
  et_pool* pool = NULL;
  CHECK_OK(et_pool_create_image(60, 45, ET_PIXEL_FORMAT_NV12, &rows64, &o, &pool));
  /* The layout et_tensor_allocate_image gives for the same arguments. */
  et_tensor* reference = NULL;
  CHECK_OK(et_tensor_allocate_image(60, 45, ET_PIXEL_FORMAT_NV12, &rows64, &shm, &reference));
  et_image_layout want = {.struct_size = sizeof want};
  CHECK_OK(et_tensor_get_image_layout(reference, &want));
  et_tensor_release(reference);
  /* Its bytes end with the UV plane's last row (46 padded rows of Y, then 22 rows of 64 and 60 bytes). */
  const uint64_t packed = 64 * 46 + 22 * 64 + 60;
  et_pool_stats st = {.struct_size = sizeof st};
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.allocated == 1 && st.free == 1 && st.packed_bytes == packed);
  et_tensor* a = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &a));
  et_image_layout l = {.struct_size = sizeof l};
  CHECK_OK(et_tensor_get_image_layout(a, &l));
  CHECK(memcmp(&l, &want, sizeof l) == 0);
  CHECK(l.format == ET_PIXEL_FORMAT_NV12 && l.width == 60 && l.height == 45 && l.plane_count == 2);
  CHECK(l.planes[1].offset_bytes == 64 * 46 && l.planes[1].row_stride_bytes == 64);
  et_tensor_info ia = {.struct_size = sizeof ia};
  CHECK_OK(et_tensor_get_info(a, &ia));
  CHECK(ia.memory == ET_MEMORY_SHM && ia.dtype == ET_DTYPE_U8 && ia.rank == 1 && ia.shape[0] == packed);
  /* Write a UV sample through a plane view; a frame of it shares the buffer. */
  et_tensor* uv = NULL;
  CHECK_OK(et_tensor_plane(a, 1, &uv));
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(uv, &m, &data, &size));
  ((uint8_t*)data)[1] = 77;
  et_map_release(m);
  et_tensor_release(uv);
  et_frame* frame = NULL;
  CHECK_OK(et_frame_from_tensor(a, &frame));
  et_image_layout fl = {.struct_size = sizeof fl};
  CHECK_OK(et_frame_get_layout(frame, &fl));
  CHECK(memcmp(&fl, &want, sizeof fl) == 0);
  et_tensor_release(a);
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.in_use == 1); /* the frame still holds it */
  et_frame_release(frame);
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.in_use == 0 && st.free == 1 && st.acquired == 1);
  /* Reuse: the same buffer (key), a new acquisition (identity), the layout again, the bytes kept. */
  CHECK_OK(et_pool_acquire(pool, 0, &a));
  et_tensor_info again = {.struct_size = sizeof again};
  CHECK_OK(et_tensor_get_info(a, &again));
  CHECK(again.buffer_key == ia.buffer_key && again.identity != ia.identity);
  CHECK(byte_at(a, 64 * 46 + 1) == 77);
  memset(&l, 0, sizeof l);
  l.struct_size = sizeof l;
  CHECK_OK(et_tensor_get_image_layout(a, &l));
  CHECK(memcmp(&l, &want, sizeof l) == 0);
  /* Capacity: a second buffer, then none; a wait that runs out is ET_BUSY naming the pool and its limit. */
  et_tensor* b = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &b));
  et_tensor_info ib = {.struct_size = sizeof ib};
  CHECK_OK(et_tensor_get_info(b, &ib));
  CHECK(ib.buffer_key != ia.buffer_key);
  et_tensor* c = (et_tensor*)&c;
  CHECK_STATUS(ET_BUSY, et_pool_acquire(pool, 0, &c));
  CHECK(c == NULL && et_last_error_errno() == EAGAIN);
  c = (et_tensor*)&c;
  CHECK_STATUS(ET_BUSY, et_pool_acquire(pool, INT64_C(2000000), &c)); /* 2 ms */
  CHECK(c == NULL && et_last_error_errno() == ETIMEDOUT);
  CHECK_MESSAGE("pool 'cam1'");
  CHECK_MESSAGE("max_buffers 2");
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.allocated == 2 && st.in_use == 2 && st.timeouts == 2);
  et_tensor_release(b);
  et_tensor_release(a);
  et_pool_release(pool);

  /* A layout of the caller's: RGB 10x4 with 40-byte rows (30 would do); the last row ends at 3 x 40 + 30. */
  et_image_layout rgb = {.struct_size = sizeof rgb, .format = ET_PIXEL_FORMAT_RGB, .width = 10, .height = 4};
  rgb.planes[0].row_stride_bytes = 40;
  et_pool_options one = {.struct_size = sizeof one, .max_buffers = 1, .allocate = &shm};
  CHECK_OK(et_pool_create_image_layout(&rgb, &one, &pool));
  CHECK_OK(et_pool_get_stats(pool, &st));
  CHECK(st.allocated == 0 && st.packed_bytes == 150);
  CHECK_OK(et_pool_acquire(pool, -1, &a));
  memset(&l, 0, sizeof l);
  l.struct_size = sizeof l;
  CHECK_OK(et_tensor_get_image_layout(a, &l));
  CHECK(l.format == ET_PIXEL_FORMAT_RGB && l.width == 10 && l.height == 4 && l.plane_count == 1);
  CHECK(l.planes[0].offset_bytes == 0 && l.planes[0].row_stride_bytes == 40);
  CHECK_OK(et_tensor_get_info(a, &ia));
  et_tensor_release(a);
  CHECK_OK(et_pool_acquire(pool, -1, &a));
  CHECK_OK(et_tensor_get_info(a, &again));
  CHECK(again.buffer_key == ia.buffer_key);
  et_tensor_release(a);
  et_pool_release(pool);
  return 0;
}

static int case_pool_image_bad_input(void) {
  et_pool* p = (et_pool*)&p;
  /* et_pool_create_image: NULL out, the format, the size, the image options, the pool options. */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, NULL, NULL));
  CHECK_MESSAGE("et_pool_create_image: out is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_UNKNOWN, NULL, NULL, &p));
  CHECK(p == NULL);
  CHECK_MESSAGE("et_pool_create_image: format 0 is not an ET_PIXEL_FORMAT_* value (1 to 28)");
  p = (et_pool*)&p;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, 29, NULL, NULL, &p));
  CHECK(p == NULL);
  CHECK_MESSAGE("format 29");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(0, 8, ET_PIXEL_FORMAT_RGB, NULL, NULL, &p));
  CHECK_MESSAGE("et_pool_create_image: rgb 0x8: width and height must be non-zero");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 0, ET_PIXEL_FORMAT_RGB, NULL, NULL, &p));
  CHECK_MESSAGE("8x0: width and height must be non-zero");
  CHECK_STATUS(ET_OUT_OF_RANGE, et_pool_create_image(UINT32_MAX, UINT32_MAX, ET_PIXEL_FORMAT_RGBA, NULL, NULL, &p));
  CHECK(p == NULL);
  et_image_options io = {.struct_size = sizeof io, .row_alignment_bytes = 48};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, &io, NULL, &p));
  CHECK_MESSAGE("48");
  io.row_alignment_bytes = 8192;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, &io, NULL, &p));
  io.row_alignment_bytes = 0;
  io.reserved = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, &io, NULL, &p));
  CHECK_MESSAGE("et_image_options.reserved is 1, not 0");
  et_image_options io_small = {.struct_size = 8};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, &io_small, NULL, &p));
  CHECK_MESSAGE("et_image_options.struct_size 8 is below the first version's 16 bytes");
  NEWER(et_image_options) io_newer;
  memset(&io_newer, 0, sizeof io_newer);
  io_newer.known.struct_size = sizeof io_newer;
  io_newer.newer = 5;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, &io_newer.known, NULL, &p));
  CHECK_MESSAGE("et_image_options: byte at offset 16 is 0x05");
  io_newer.newer = 0;
  CHECK_OK(et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, &io_newer.known, NULL, &p)); /* a zero tail is fine */
  et_pool_release(p);
  et_pool_options o = {.struct_size = sizeof o, .min_buffers = 3, .max_buffers = 2};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, &o, &p));
  CHECK(p == NULL);
  CHECK_MESSAGE("3");
  o.min_buffers = 0;
  o.flags = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, &o, &p));
  CHECK_MESSAGE("et_pool_options.flags 4 has bits other than ET_POOL_ZERO_ON_REUSE");
  o.flags = 0;
  char name[64];
  snprintf(name, sizeof name, "/et-capi-image-pool-%d", (int)getpid());
  et_allocate_options named = {.struct_size = sizeof named, .memory = ET_MEMORY_SHM, .shm_name = name};
  o.allocate = &named;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, &o, &p));
  CHECK_MESSAGE("shm_name");
  et_allocate_options bad_memory = {.struct_size = sizeof bad_memory, .memory = 7};
  o.allocate = &bad_memory;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, &o, &p));
  CHECK_MESSAGE("et_allocate_options.memory 7");
  et_pool_options small = {.struct_size = 12};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, &small, &p));
  CHECK_MESSAGE("et_pool_options.struct_size 12 is below the first version's 32 bytes");
  NEWER(et_pool_options) newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.newer = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image(8, 8, ET_PIXEL_FORMAT_RGB, NULL, &newer.known, &p));
  CHECK_MESSAGE("byte at offset 32 is 0x03");
  CHECK(p == NULL);

  /* et_pool_create_image_layout: NULLs, the layout's struct_size rule, its format, size, strides and planes. */
  et_image_layout l = {.struct_size = sizeof l, .format = ET_PIXEL_FORMAT_NV12, .width = 16, .height = 8};
  l.planes[0].row_stride_bytes = 16;
  l.planes[1].offset_bytes = 16 * 8;
  l.planes[1].row_stride_bytes = 16;
  CHECK_OK(et_pool_create_image_layout(&l, NULL, &p)); /* the good layout the cases below break */
  et_pool_release(p);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&l, NULL, NULL));
  CHECK_MESSAGE("et_pool_create_image_layout: out is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(NULL, NULL, &p));
  CHECK(p == NULL);
  CHECK_MESSAGE("et_pool_create_image_layout: layout is NULL");
  et_image_layout bad = l;
  bad.struct_size = 8;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&bad, NULL, &p));
  CHECK_MESSAGE("et_image_layout.struct_size 8 is below");
  NEWER(et_image_layout) l_newer;
  memset(&l_newer, 0, sizeof l_newer);
  l_newer.known = l;
  l_newer.known.struct_size = sizeof l_newer;
  l_newer.newer = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&l_newer.known, NULL, &p));
  CHECK_MESSAGE("et_image_layout: byte at offset");
  bad = l;
  bad.format = 29;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&bad, NULL, &p));
  CHECK_MESSAGE("format 29 is not an ET_PIXEL_FORMAT_* value");
  bad = l;
  bad.width = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&bad, NULL, &p));
  CHECK_MESSAGE("width");
  bad = l;
  bad.planes[1].row_stride_bytes = 8; /* UV rows of 16 bytes */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&bad, NULL, &p));
  CHECK_MESSAGE("plane 1");
  bad = l;
  bad.planes[1].offset_bytes = 16 * 4; /* inside the Y plane */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&bad, NULL, &p));
  CHECK(p == NULL);
  CHECK_MESSAGE("plane 0 (Y) [0, 128) and plane 1 (UV) [64, 128) overlap");
  bad = l;
  bad.planes[1].offset_bytes = UINT64_MAX - 8;
  CHECK_STATUS(ET_OUT_OF_RANGE, et_pool_create_image_layout(&bad, NULL, &p));
  CHECK(p == NULL);
  et_pool_options lo_small = {.struct_size = 4};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_pool_create_image_layout(&l, &lo_small, &p));
  CHECK_MESSAGE("et_pool_options.struct_size 4");
  CHECK(p == NULL);
  return 0;
}

/* ---- quantization and colorimetry ---------------------------------------------------------------- */

static int case_quantization(void) {
  const uint64_t shape[2] = {3, 4};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_I8, NULL, &t));
  et_quantization q = {.struct_size = sizeof q};
  CHECK_OK(et_tensor_get_quantization(t, &q));
  CHECK(q.kind == ET_QUANTIZATION_NONE && q.scales == NULL);
  /* Per tensor: a new handle; the old one keeps none. */
  et_quantization pt = {.struct_size = sizeof pt, .kind = ET_QUANTIZATION_PER_TENSOR, .scale = 0.5f, .zero_point = -3};
  et_tensor* u = NULL;
  CHECK_OK(et_tensor_with_quantization(t, &pt, &u));
  CHECK_OK(et_tensor_get_quantization(u, &q));
  CHECK(q.kind == ET_QUANTIZATION_PER_TENSOR && q.scale == 0.5f && q.zero_point == -3 && q.channel_count == 0);
  CHECK_OK(et_tensor_get_quantization(t, &q));
  CHECK(q.kind == ET_QUANTIZATION_NONE);
  et_tensor_info a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
  CHECK_OK(et_tensor_get_info(t, &a));
  CHECK_OK(et_tensor_get_info(u, &b));
  CHECK(a.identity == b.identity); /* the same buffer */
  /* Per axis: the arrays are copied; the getter's point into the handle's own. */
  float scales[3] = {0.25f, 0.5f, 1.0f};
  int32_t zeros[3] = {0, 1, -1};
  et_quantization pa = {.struct_size = sizeof pa, .kind = ET_QUANTIZATION_PER_AXIS, .axis = 0, .channel_count = 3,
                        .scales = scales, .zero_points = zeros};
  et_tensor* w = NULL;
  CHECK_OK(et_tensor_with_quantization(u, &pa, &w));
  scales[1] = 9.0f;
  CHECK_OK(et_tensor_get_quantization(w, &q));
  CHECK(q.kind == ET_QUANTIZATION_PER_AXIS && q.axis == 0 && q.channel_count == 3 && q.scale == 0.0f);
  CHECK(q.scales != scales && q.scales[1] == 0.5f && q.zero_points[2] == -1);
  /* It follows views: a slice along the axis keeps its channels. */
  et_tensor* row = NULL;
  CHECK_OK(et_tensor_slice(w, 0, 1, 3, &row));
  CHECK_OK(et_tensor_get_quantization(row, &q));
  CHECK(q.kind == ET_QUANTIZATION_PER_AXIS && q.channel_count == 2 && q.scales[0] == 0.5f);
  et_tensor_release(row);
  /* NULL removes it. */
  et_tensor* none = NULL;
  CHECK_OK(et_tensor_with_quantization(w, NULL, &none));
  CHECK_OK(et_tensor_get_quantization(none, &q));
  CHECK(q.kind == ET_QUANTIZATION_NONE);
  et_tensor_release(none);
  /* Bad input: each names the value and the limit. */
  et_tensor* x = (et_tensor*)&x;
  et_quantization bad = pt;
  bad.kind = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK(x == NULL);
  CHECK_MESSAGE("et_quantization.kind 3 is not an ET_QUANTIZATION_* value (0 to 2)");
  bad = pt;
  bad.scale = -1.0f;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("scale");
  bad = pt;
  bad.zero_point = 300; /* i8 holds -128 to 127 */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("300");
  CHECK_MESSAGE("127");
  bad = pt;
  bad.channel_count = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("must be zero for kind PER_TENSOR");
  bad = pa;
  bad.scale = 1.0f;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("scale and zero_point must be zero for kind PER_AXIS");
  bad = pa;
  bad.channel_count = 4; /* shape[0] is 3 */
  float four[4] = {1, 1, 1, 1};
  int32_t four_zeros[4] = {0, 0, 0, 0};
  bad.scales = four;
  bad.zero_points = four_zeros;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("4");
  CHECK_MESSAGE("3");
  bad = pa;
  bad.channel_count = ET_MAX_QUANTIZATION_CHANNELS + 1;
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("channel_count 4097 is above ET_MAX_QUANTIZATION_CHANNELS (4096)");
  bad = pa;
  bad.scales = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("scales is NULL");
  bad = pa;
  bad.zero_points = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("zero_points is NULL");
  bad = pa;
  bad.axis = 2; /* rank 2 */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("axis 2");
  bad = pt;
  bad.struct_size = 8;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &bad, &x));
  CHECK_MESSAGE("et_quantization.struct_size 8 is below the first version's 40 bytes");
  et_tensor* f = NULL;
  CHECK_OK(et_tensor_allocate(2, shape, ET_DTYPE_F32, NULL, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(f, &pt, &x));
  CHECK_MESSAGE("f32");
  et_tensor_release(f);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(NULL, &pt, &x));
  CHECK_MESSAGE("tensor is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_quantization(t, &pt, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_quantization(NULL, &q));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_quantization(t, NULL));
  et_quantization small = {.struct_size = 12};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_quantization(t, &small));
  NEWER(et_quantization) newer;
  memset(&newer, 0xab, sizeof newer);
  newer.known.struct_size = sizeof newer;
  CHECK_OK(et_tensor_get_quantization(w, &newer.known));
  CHECK(newer.newer == 0 && newer.known.channel_count == 3);
  et_tensor_release(w);
  et_tensor_release(u);
  et_tensor_release(t);
  return 0;
}

static int case_colorimetry(void) {
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_allocate_image(16, 8, ET_PIXEL_FORMAT_NV12, NULL, NULL, &t));
  et_colorimetry c = {.struct_size = sizeof c};
  CHECK_OK(et_tensor_get_colorimetry(t, &c));
  CHECK(c.primaries == ET_COLOR_PRIMARIES_UNSPECIFIED && c.transfer == 0 && c.matrix == 0 && c.range == 0);
  et_colorimetry bt709 = {.struct_size = sizeof bt709, .primaries = ET_COLOR_PRIMARIES_BT709,
                          .transfer = ET_TRANSFER_BT709, .matrix = ET_YCBCR_MATRIX_BT709, .range = ET_COLOR_RANGE_LIMITED};
  et_tensor* u = NULL;
  CHECK_OK(et_tensor_with_colorimetry(t, &bt709, &u));
  CHECK_OK(et_tensor_get_colorimetry(u, &c));
  CHECK(c.primaries == ET_COLOR_PRIMARIES_BT709 && c.transfer == ET_TRANSFER_BT709 &&
        c.matrix == ET_YCBCR_MATRIX_BT709 && c.range == ET_COLOR_RANGE_LIMITED);
  /* The image layout stays; the plane views carry it; the old handle keeps its own. */
  et_image_layout l = {.struct_size = sizeof l};
  CHECK_OK(et_tensor_get_image_layout(u, &l));
  CHECK(l.format == ET_PIXEL_FORMAT_NV12);
  et_tensor* uv = NULL;
  CHECK_OK(et_tensor_plane(u, 1, &uv));
  CHECK_OK(et_tensor_get_colorimetry(uv, &c));
  CHECK(c.matrix == ET_YCBCR_MATRIX_BT709);
  et_tensor_release(uv);
  CHECK_OK(et_tensor_get_colorimetry(t, &c));
  CHECK(c.primaries == ET_COLOR_PRIMARIES_UNSPECIFIED);
  et_tensor* cleared = NULL;
  CHECK_OK(et_tensor_with_colorimetry(u, NULL, &cleared));
  CHECK_OK(et_tensor_get_colorimetry(cleared, &c));
  CHECK(c.range == ET_COLOR_RANGE_UNSPECIFIED);
  et_tensor_release(cleared);
  /* Bad input: the field, the value and the last valid one. */
  et_tensor* x = (et_tensor*)&x;
  et_colorimetry bad = bt709;
  bad.primaries = 9;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bad, &x));
  CHECK(x == NULL);
  CHECK_MESSAGE("et_colorimetry.primaries 9 is not an ET_COLOR_PRIMARIES_* value (0 to 8)");
  bad = bt709;
  bad.transfer = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bad, &x));
  CHECK_MESSAGE("et_colorimetry.transfer -1 is not an ET_TRANSFER_* value (0 to 8)");
  bad = bt709;
  bad.matrix = 7;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bad, &x));
  CHECK_MESSAGE("matrix 7 is not an ET_YCBCR_MATRIX_* value (0 to 6)");
  bad = bt709;
  bad.range = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bad, &x));
  CHECK_MESSAGE("range 3 is not an ET_COLOR_RANGE_* value (0 to 2)");
  bad = bt709;
  bad.reserved = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bad, &x));
  CHECK_MESSAGE("reserved is 1, not 0");
  bad = bt709;
  bad.struct_size = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bad, &x));
  CHECK_MESSAGE("et_colorimetry.struct_size 4 is below the first version's 24 bytes");
  NEWER(et_colorimetry) newer;
  memset(&newer, 0, sizeof newer);
  newer.known = bt709;
  newer.known.struct_size = sizeof newer;
  newer.newer = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &newer.known, &x));
  CHECK_MESSAGE("byte at offset 24 is 0x01");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(NULL, &bt709, &x));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_with_colorimetry(t, &bt709, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_colorimetry(NULL, &c));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_colorimetry(t, NULL));
  et_colorimetry small = {.struct_size = 20};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_get_colorimetry(t, &small));
  et_tensor_release(u);
  et_tensor_release(t);
  return 0;
}

/* ---- info ---------------------------------------------------------------------------------------- */

static int case_info_json(void) {
  char* json = NULL;
  CHECK_OK(et_info_json(&json));
  CHECK(json != NULL && json[0] == '{' && strstr(json, "\"edgetensor.info/1\"") != NULL);
  CHECK(strstr(json, "\"heap\"") != NULL);
  et_string_free(json);
  et_string_free(NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_info_json(NULL));
  return 0;
}

/* The header's rule: a failure sets an out fd to -1, whichever check failed first (a NULL handle too). Each
 * out fd starts at 1234, an fd number the caller might close by mistake if it were left as it was. */
static int case_failures_set_out_fds_to_minus_one(void) {
  int32_t fd = 1234;
#define CHECK_NULL_HANDLE_RESETS_FD(call)      \
  do {                                         \
    fd = 1234;                                 \
    CHECK_STATUS(ET_INVALID_ARGUMENT, call);   \
    CHECK(fd == -1);                           \
  } while (0)
  CHECK_NULL_HANDLE_RESETS_FD(et_tensor_export_fd(NULL, &fd));
  CHECK_NULL_HANDLE_RESETS_FD(et_channel_receiver_get_fd(NULL, &fd));
  CHECK_NULL_HANDLE_RESETS_FD(et_channel_listener_get_fd(NULL, &fd));
  CHECK_NULL_HANDLE_RESETS_FD(et_fence_dup_fd(NULL, &fd));
  CHECK_NULL_HANDLE_RESETS_FD(et_fence_get_borrowed_fd(NULL, &fd));
  CHECK_NULL_HANDLE_RESETS_FD(et_channel_listener_accept(NULL, 0, &fd));
  CHECK_NULL_HANDLE_RESETS_FD(et_channel_connect(NULL, 0, &fd));
#undef CHECK_NULL_HANDLE_RESETS_FD
  /* A failure past the handle checks: a heap tensor has no fd to export. */
  const uint64_t shape[1] = {16};
  et_tensor* heap = NULL;
  et_allocate_options heap_options = {.struct_size = sizeof heap_options, .memory = ET_MEMORY_HEAP};
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &heap_options, &heap));
  fd = 1234;
  CHECK(et_tensor_export_fd(heap, &fd) != ET_OK);
  CHECK(fd == -1);
  et_tensor_release(heap);
  return 0;
}

static const struct test_case kCases[] = {
    {"names", case_names},
    {"errno_kept_and_last_error", case_errno_kept_and_last_error},
    {"last_error_is_per_thread", case_last_error_is_per_thread},
    {"allocate_every_memory_kind", case_allocate_every_memory_kind},
    {"allocate_options", case_allocate_options},
    {"allocate_bad_input", case_allocate_bad_input},
    {"struct_size_rule", case_struct_size_rule},
    {"import_dup_and_export", case_import_dup_and_export},
    {"failures_set_out_fds_to_minus_one", case_failures_set_out_fds_to_minus_one},
    {"import_shrinkable_memfd", case_import_shrinkable_memfd},
    {"import_adopt_takes_the_fd", case_import_adopt_takes_the_fd},
    {"read_only_import", case_read_only_import},
    {"retain_release", case_retain_release},
    {"views", case_views},
    {"maps", case_maps},
    {"describe", case_describe},
    {"pixel_formats", case_pixel_formats},
    {"images", case_images},
    {"ipc_round_trip", case_ipc_round_trip},
    {"info_json", case_info_json},
    {"map_with_options", case_map_with_options},
    {"fence_signalled", case_fence_signalled},
    {"fence_bad_input", case_fence_bad_input},
    {"tensor_fences_need_dmabuf", case_tensor_fences_need_dmabuf},
    {"pool", case_pool},
    {"pool_bad_input", case_pool_bad_input},
    {"pool_image", case_pool_image},
    {"pool_image_bad_input", case_pool_image_bad_input},
    {"quantization", case_quantization},
    {"colorimetry", case_colorimetry},
};

int main(int argc, char** argv) {
  /* The first allocation of each kind opens what the library keeps for the process (the dma-heap nodes of
   * its default allocator): done before the fd counts start. */
  const int32_t kinds[] = {ET_MEMORY_AUTO, ET_MEMORY_SHM, ET_MEMORY_DMABUF};
  for (size_t k = 0; k < 3; ++k) {
    et_allocate_options o = {.struct_size = sizeof o, .memory = kinds[k]};
    et_tensor* t = NULL;
    if (et_tensor_allocate(2, kShape23, ET_DTYPE_U8, &o, &t) == ET_OK) et_tensor_release(t);
  }
  return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
