/* SPDX-License-Identifier: Apache-2.0 */
/* et_import_options.release_callback (C API 0.7), in C: called exactly once when the import's last holder
 * goes (handles, views, maps, frames, a channel's hold until the receiver's release), never for a failed
 * import, never reached with a struct_size below ET_IMPORT_OPTIONS_SIZE_VER1; user_data without a callback
 * is refused. */
#define _GNU_SOURCE
#include <edgetensor/c/edgetensor_c.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "capi_check.h"

/* What a release hook saw: its calls, the fds open then, and whether it ran on the test's thread. */
struct hook_state {
  atomic_int calls;
  int fds_at_call;
  int on_main_thread;
  pthread_t main_thread;
};

static void on_release(void* user_data) {
  struct hook_state* s = (struct hook_state*)user_data;
  s->fds_at_call = open_fd_count();
  s->on_main_thread = pthread_equal(pthread_self(), s->main_thread) ? 1 : 0;
  atomic_fetch_add(&s->calls, 1);
}

static void hook_init(struct hook_state* s) {
  atomic_init(&s->calls, 0);
  s->fds_at_call = -1;
  s->on_main_thread = -1;
  s->main_thread = pthread_self();
}

static et_import_options hook_options(struct hook_state* s) {
  et_import_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.release_callback = on_release;
  o.user_data = s;
  return o;
}

/* A memfd of `size` bytes filled with `value`, sealed against shrinking. */
static int filled_memfd(size_t size, int value) {
  int fd = memfd_create("capi-import-release", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    close(fd);
    return -1;
  }
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return -1;
  }
  memset(p, value, size);
  munmap(p, size);
  return fd;
}

static int wait_calls(struct hook_state* s, int want, int timeout_ms) {
  for (int i = 0; i < timeout_ms && atomic_load(&s->calls) != want; ++i) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return atomic_load(&s->calls) == want;
}

static int case_release_after_last_holder(void) {
  int fd = filled_memfd(4096, 9);
  CHECK(fd >= 0);
  struct hook_state s;
  hook_init(&s);
  et_import_options o = hook_options(&s);
  const uint64_t shape[2] = {64, 64};
  const int fds_before = open_fd_count();
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_import_dup(fd, 2, shape, ET_DTYPE_U8, &o, &t));
  et_tensor* view = NULL;
  CHECK_OK(et_tensor_slice(t, 0, 2, 4, &view));
  et_map* map = NULL;
  const void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(view, &map, &data, &size));
  et_tensor_retain(t);
  et_tensor_release(t);
  et_tensor_release(t);
  et_tensor_release(view);
  CHECK(atomic_load(&s.calls) == 0); /* the map holds the storage */
  CHECK(((const uint8_t*)data)[0] == 9);
  et_map_release(map);
  CHECK(atomic_load(&s.calls) == 1);
  CHECK(s.on_main_thread == 1);
  CHECK(s.fds_at_call == fds_before); /* the import's own fd was closed first */
  close(fd);
  CHECK(atomic_load(&s.calls) == 1);
  return 0;
}

static int case_release_adopt_and_frame(void) {
  struct hook_state s;
  hook_init(&s);
  et_import_options o = hook_options(&s);
  const uint64_t shape[1] = {4096};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_import_adopt(filled_memfd(4096, 1), 1, shape, ET_DTYPE_U8, &o, &t));
  et_tensor_release(t);
  CHECK(atomic_load(&s.calls) == 1);

  /* A frame of two buffers: called when the last of them goes. */
  struct hook_state f;
  hook_init(&f);
  o = hook_options(&f);
  int fds[2] = {filled_memfd(4096, 0x10), filled_memfd(4096, 0x80)};
  CHECK(fds[0] >= 0 && fds[1] >= 0);
  et_image_layout l;
  memset(&l, 0, sizeof l);
  l.struct_size = sizeof l;
  l.format = ET_PIXEL_FORMAT_NV12;
  l.width = 64;
  l.height = 32;
  l.plane_count = 2;
  l.planes[0].row_stride_bytes = 64;
  l.planes[1].row_stride_bytes = 64;
  et_frame* frame = NULL;
  CHECK_OK(et_frame_import_planes_dup(fds, 2, &l, &o, &frame));
  et_tensor* chroma = NULL;
  CHECK_OK(et_frame_plane(frame, 1, &chroma));
  et_frame_release(frame);
  CHECK(atomic_load(&f.calls) == 0);
  et_tensor_release(chroma);
  CHECK(atomic_load(&f.calls) == 1);
  close(fds[0]);
  close(fds[1]);
  return 0;
}

/* A failed import never calls the hook: user_data stays the caller's. */
static int case_release_not_called_on_failure(void) {
  int fd = filled_memfd(4096, 0);
  CHECK(fd >= 0);
  struct hook_state s;
  hook_init(&s);
  et_import_options o = hook_options(&s);
  const uint64_t too_big[1] = {8192};
  et_tensor* t = NULL;
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_import_dup(fd, 1, too_big, ET_DTYPE_U8, &o, &t));
  CHECK(t == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(-1, 1, too_big, ET_DTYPE_U8, &o, &t));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 1, too_big, 99, &o, &t));
  /* adopt: the fd is closed, the hook still not called */
  int other = filled_memfd(4096, 0);
  CHECK(other >= 0);
  CHECK_STATUS(ET_OUT_OF_RANGE, et_tensor_import_adopt(other, 1, too_big, ET_DTYPE_U8, &o, &t));
  CHECK(fcntl(other, F_GETFD) == -1);
  et_image_layout l;
  memset(&l, 0, sizeof l);
  l.struct_size = sizeof l;
  l.format = ET_PIXEL_FORMAT_NV12;
  l.width = 1920;
  l.height = 1080;
  l.plane_count = 2;
  l.planes[0].row_stride_bytes = 1920;
  l.planes[1].row_stride_bytes = 1920;
  l.planes[1].offset_bytes = 1920 * 1080;
  const int fds[2] = {fd, fd};
  et_frame* frame = NULL;
  CHECK_STATUS(ET_OUT_OF_RANGE, et_frame_import_planes_dup(fds, 2, &l, &o, &frame));
  CHECK_MESSAGE("plane 0");
  CHECK(atomic_load(&s.calls) == 0);
  close(fd);
  return 0;
}

/* Bad input: user_data without a callback is refused; a callback behind a struct_size of the 0.1 struct is
 * never reached (the import holds no hook). */
static int case_release_bad_input(void) {
  int fd = filled_memfd(4096, 0);
  CHECK(fd >= 0);
  struct hook_state s;
  hook_init(&s);
  const uint64_t shape[1] = {4096};
  et_tensor* t = NULL;
  et_import_options o = hook_options(&s);
  o.release_callback = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_tensor_import_dup(fd, 1, shape, ET_DTYPE_U8, &o, &t));
  CHECK_MESSAGE("user_data");
  et_frame* frame = NULL;
  et_image_layout l;
  memset(&l, 0, sizeof l);
  l.struct_size = sizeof l;
  l.format = ET_PIXEL_FORMAT_GREY;
  l.width = 64;
  l.height = 64;
  l.plane_count = 1;
  l.planes[0].row_stride_bytes = 64;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(&fd, 1, &l, &o, &frame));
  CHECK_MESSAGE("user_data");

  o = hook_options(&s);
  o.struct_size = ET_IMPORT_OPTIONS_SIZE_VER0;
  CHECK_OK(et_tensor_import_dup(fd, 1, shape, ET_DTYPE_U8, &o, &t));
  et_tensor_release(t);
  CHECK_OK(et_frame_import_planes_dup(&fd, 1, &l, &o, &frame));
  et_frame_release(frame);
  CHECK(atomic_load(&s.calls) == 0);
  /* Between the two sizes (part of the callback's bytes): neither field is read, never a half pointer. */
  o.struct_size = ET_IMPORT_OPTIONS_SIZE_VER0 + 4;
  CHECK_OK(et_tensor_import_dup(fd, 1, shape, ET_DTYPE_U8, &o, &t));
  et_tensor_release(t);
  o.struct_size = ET_IMPORT_OPTIONS_SIZE_VER1 - 4;
  CHECK_OK(et_tensor_import_dup(fd, 1, shape, ET_DTYPE_U8, &o, &t));
  et_tensor_release(t);
  CHECK(atomic_load(&s.calls) == 0);
  close(fd);
  return 0;
}

/* Sent through a channel: the sender holds the import until the receiver releases the frame; the hook
 * then runs once, on the sender's release reader thread. */
static int case_release_through_channel(void) {
  int sv[2];
  CHECK_OK(et_channel_socket_pair(sv));
  et_channel_sender* sender = NULL;
  et_channel_receiver* receiver = NULL;
  CHECK_OK(et_channel_sender_create_adopt(sv[0], NULL, &sender));
  CHECK_OK(et_channel_receiver_create_adopt(sv[1], NULL, &receiver));
  int fd = filled_memfd(4096, 0x5a);
  CHECK(fd >= 0);
  struct hook_state s;
  hook_init(&s);
  et_import_options o = hook_options(&s);
  const uint64_t shape[1] = {4096};
  et_tensor* t = NULL;
  CHECK_OK(et_tensor_import_dup(fd, 1, shape, ET_DTYPE_U8, &o, &t));
  uint64_t sequence = 0;
  CHECK_OK(et_channel_sender_send(sender, t, NULL, &sequence));
  et_tensor_release(t);
  CHECK(atomic_load(&s.calls) == 0);
  et_channel_delivery d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  CHECK_OK(et_channel_receiver_receive(receiver, 1000, &d));
  CHECK(d.tensor != NULL);
  et_map* map = NULL;
  const void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(d.tensor, &map, &data, &size));
  CHECK(size == 4096 && ((const uint8_t*)data)[4095] == 0x5a);
  et_map_release(map);
  struct timespec pause = {0, 20 * 1000000};
  nanosleep(&pause, NULL);
  CHECK(atomic_load(&s.calls) == 0); /* the receiver still holds it */
  et_tensor_release(d.tensor);
  CHECK(wait_calls(&s, 1, 2000));
  CHECK(s.on_main_thread == 0);
  et_channel_sender_release(sender);
  et_channel_receiver_release(receiver);
  CHECK(atomic_load(&s.calls) == 1);
  close(fd);
  return 0;
}

static const struct test_case kCases[] = {
    {"import_release_after_last_holder", case_release_after_last_holder},
    {"import_release_adopt_and_frame", case_release_adopt_and_frame},
    {"import_release_not_called_on_failure", case_release_not_called_on_failure},
    {"import_release_bad_input", case_release_bad_input},
    {"import_release_through_channel", case_release_through_channel},
};

int main(int argc, char** argv) { return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
