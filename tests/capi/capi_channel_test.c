/* SPDX-License-Identifier: Apache-2.0 */
/* The frame channel and frames through the C API, tested in C (-std=c11 -Wall -Wextra -Wpedantic -Werror):
 * a producer and a consumer in two processes with the pixels checked, the end of stream, receive_latest,
 * the drop policy, a named socket that refuses a peer, polling the receiver's fd, and every bad input.
 * Each case is a ctest of its own (capi.<case>) and must leave the process's fd count as it found it. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* NV12 8 x 4 with one buffer per plane: Y 4 rows of 8 bytes, UV 2 rows of 8 bytes. */
enum { kWidth = 8, kHeight = 4, kYBytes = 32, kUvBytes = 16 };

/* Byte i of frame `seq`'s buffer `plane`. */
static uint8_t pixel(uint64_t seq, int plane, size_t i) { return (uint8_t)((seq * 31u + (unsigned)plane * 101u + i * 7u) & 0xffu); }

/* Whether `fd` is open in this process (an fd closed by the library reads EBADF). */
static int fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

/* A memfd of `size` bytes holding plane `plane` of frame `seq`, sealed against shrinking; -1 on failure. */
static int plane_memfd(uint64_t seq, int plane, size_t size) {
  int fd = memfd_create("capi-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  uint8_t bytes[64];
  for (size_t i = 0; i < size; ++i) bytes[i] = pixel(seq, plane, i);
  if (ftruncate(fd, (off_t)size) != 0 || pwrite(fd, bytes, size, 0) != (ssize_t)size ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static et_image_layout nv12_layout(void) {
  et_image_layout l;
  memset(&l, 0, sizeof l);
  l.struct_size = sizeof l;
  l.format = ET_PIXEL_FORMAT_NV12;
  l.width = kWidth;
  l.height = kHeight;
  l.planes[0].row_stride_bytes = kWidth; /* each plane at offset 0 of its own buffer */
  l.planes[1].row_stride_bytes = kWidth;
  return l;
}

/* An NV12 frame of two memfds (one per plane) holding frame `seq`'s pixels. */
static et_status two_buffer_frame(uint64_t seq, et_frame** out) {
  int fds[2] = {plane_memfd(seq, 0, kYBytes), plane_memfd(seq, 1, kUvBytes)};
  const et_image_layout layout = nv12_layout();
  et_status s = fds[0] < 0 || fds[1] < 0 ? ET_INTERNAL : et_frame_import_planes_dup(fds, 2, &layout, NULL, out);
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  return s;
}

/* Fills `t` (u8) with frame `seq`'s plane-0 pixels. */
static int fill(et_tensor* t, uint64_t seq) {
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(t, &m, &data, &size));
  for (size_t i = 0; i < size; ++i) ((uint8_t*)data)[i] = pixel(seq, 0, i);
  et_map_release(m);
  return 0;
}

/* Whether `t`'s bytes are frame `seq`'s plane `plane` (1) or not (0). */
static int holds(const et_tensor* t, uint64_t seq, int plane, size_t expected_size) {
  et_map* m = NULL;
  const void* data = NULL;
  size_t size = 0;
  if (et_tensor_map_read(t, &m, &data, &size) != ET_OK) return 0;
  int ok = size == expected_size;
  for (size_t i = 0; ok && i < size; ++i) ok = ((const uint8_t*)data)[i] == pixel(seq, plane, i);
  et_map_release(m);
  return ok;
}

static et_channel_delivery delivery(void) {
  et_channel_delivery d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  return d;
}

static void drop(et_channel_delivery* d) {
  et_tensor_release(d->tensor);
  et_frame_release(d->frame);
  d->tensor = NULL;
  d->frame = NULL;
}

/* A sender and a receiver on a socket pair in this process (`so` NULL: defaults). */
static int make_pair(const et_channel_sender_options* so, et_channel_sender** s, et_channel_receiver** r) {
  int32_t fds[2] = {-1, -1};
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK_OK(et_channel_sender_create_adopt(fds[0], so, s));
  CHECK_OK(et_channel_receiver_create_adopt(fds[1], NULL, r));
  return 0;
}

static et_pool* shm_pool(uint32_t buffers) {
  const uint64_t shape[2] = {4, 8};
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_SHM};
  et_pool_options o = {.struct_size = sizeof o, .max_buffers = buffers, .allocate = &a, .name = "capi-channel"};
  et_pool* pool = NULL;
  return et_pool_create(2, shape, ET_DTYPE_U8, &o, &pool) == ET_OK ? pool : NULL;
}

/* ---- two processes --------------------------------------------------------------------------------- */

/* The producer (the child): 3 pooled tensors with per-frame timing, a frame of two buffers, the end. */
static int produce(int32_t socket_fd) {
  et_channel_sender_options so = {.struct_size = sizeof so, .name = "capi-producer"};
  et_channel_sender* sender = NULL;
  CHECK_OK(et_channel_sender_create_adopt(socket_fd, &so, &sender));
  et_pool* pool = shm_pool(2);
  CHECK(pool != NULL);
  for (uint64_t seq = 0; seq < 3; ++seq) {
    et_tensor* t = NULL;
    CHECK_OK(et_channel_sender_acquire(sender, pool, 5000, &t));
    CHECK(fill(t, seq) == 0);
    et_channel_send_options o = {.struct_size = sizeof o, .flags = 0x40u + (uint32_t)seq};
    if (seq == 1) {
      o.has = ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION | ET_CHANNEL_HAS_TIMESTAMP;
      o.pts_ns = 33366666;
      o.duration_ns = 33333333;
      o.timestamp_ns = 123456789;
    }
    uint64_t sent = UINT64_MAX;
    CHECK_OK(et_channel_sender_send(sender, t, &o, &sent));
    CHECK(sent == seq);
    et_tensor_release(t);  /* the pool has it back when the consumer releases the frame */
  }
  et_frame* frame = NULL;
  CHECK_OK(two_buffer_frame(3, &frame));
  uint64_t sent = 0;
  CHECK_OK(et_channel_sender_send_frame(sender, frame, NULL, &sent));
  CHECK(sent == 3);
  CHECK_OK(et_channel_sender_end_stream(sender));
  CHECK_OK(et_channel_sender_end_stream(sender)); /* again: nothing */
  uint64_t after_end = 0;
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_channel_sender_send_frame(sender, frame, NULL, &after_end));
  et_frame_release(frame);
  CHECK_OK(et_channel_sender_drain(sender, 10000));
  et_channel_sender_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_sender_get_stats(sender, &st));
  CHECK(st.frames_sent == 4 && st.frames_out == 0 && st.releases == 5 && st.frames_dropped == 0);
  et_channel_sender_release(sender);
  et_pool_release(pool);
  return 0;
}

static int case_channel_two_processes(void) {
  const int fds_before = open_fd_count();
  int32_t fds[2] = {-1, -1};
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK(fds[0] >= 0 && fds[1] >= 0 && fds[0] != fds[1]);
  fflush(NULL);
  const pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    close(fds[1]);
    _exit(produce(fds[0]));
  }
  close(fds[0]);
  et_channel_receiver_options ro = {.struct_size = sizeof ro, .name = "capi-consumer"};
  et_channel_receiver* receiver = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(fds[1], &ro, &receiver));
  et_channel_delivery d = delivery();
  for (uint64_t seq = 0; seq < 3; ++seq) {
    CHECK_OK(et_channel_receiver_receive(receiver, 10000, &d));
    CHECK(d.sequence == seq && d.end_of_stream == 0 && d.frame == NULL && d.tensor != NULL);
    CHECK(d.flags == 0x40u + seq);
    if (seq == 1) {
      CHECK(d.has == (ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION));
      CHECK(d.pts_ns == 33366666 && d.duration_ns == 33333333 && d.timestamp_ns == 123456789);
    } else {
      CHECK(d.has == 0 && d.pts_ns == 0 && d.duration_ns == 0 && d.timestamp_ns > 0);
    }
    CHECK(holds(d.tensor, seq, 0, kYBytes));
    drop(&d);
  }
  CHECK_OK(et_channel_receiver_receive(receiver, 10000, &d));
  CHECK(d.sequence == 3 && d.tensor == NULL && d.frame != NULL);
  et_image_layout layout;
  memset(&layout, 0, sizeof layout);
  layout.struct_size = sizeof layout;
  CHECK_OK(et_frame_get_layout(d.frame, &layout));
  CHECK(layout.format == ET_PIXEL_FORMAT_NV12 && layout.width == kWidth && layout.height == kHeight &&
        layout.plane_count == 2);
  uint32_t buffers = 0, plane_buffers[ET_MAX_PLANES];
  CHECK_OK(et_frame_get_buffers(d.frame, &buffers, plane_buffers));
  CHECK(buffers == 2 && plane_buffers[0] == 0 && plane_buffers[1] == 1);
  for (uint32_t p = 0; p < 2; ++p) {
    et_tensor* plane = NULL;
    CHECK_OK(et_frame_plane(d.frame, p, &plane));
    CHECK(holds(plane, 3, (int)p, p == 0 ? kYBytes : kUvBytes));
    et_tensor_release(plane);
  }
  drop(&d);
  /* The end of stream: not an error, and the answer to every later call (also once the sender is gone). */
  for (int i = 0; i < 2; ++i) {
    CHECK_OK(et_channel_receiver_receive(receiver, 10000, &d));
    CHECK(d.end_of_stream == 1 && d.sequence == 4 && d.tensor == NULL && d.frame == NULL);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_OK(et_channel_receiver_receive_latest(receiver, 0, &d));
  CHECK(d.end_of_stream == 1);
  et_channel_receiver_stats rs;
  memset(&rs, 0, sizeof rs);
  rs.struct_size = sizeof rs;
  CHECK_OK(et_channel_receiver_get_stats(receiver, &rs));
  CHECK(rs.frames_received == 4 && rs.end_of_stream == 1 && rs.frames_out == 0 && rs.frames_missing == 0);
  /* The pool's buffers (1 or 2: a consumer that releases frame 0 before the producer's next acquire gets
   * the same buffer back), then the frame's 2 memfds. */
  CHECK(rs.announces == 3 || rs.announces == 4);
  et_channel_receiver_release(receiver);
  CHECK(open_fd_count() == fds_before);
  return 0;
}

/* ---- one process --------------------------------------------------------------------------------- */

static int case_channel_latest_and_end_of_stream(void) {
  et_channel_sender* s = NULL;
  et_channel_receiver* r = NULL;
  CHECK(make_pair(NULL, &s, &r) == 0);
  et_pool* pool = shm_pool(5);
  CHECK(pool != NULL);
  uint64_t seq = 0;
  for (int i = 0; i < 5; ++i) {
    et_tensor* t = NULL;
    CHECK_OK(et_channel_sender_acquire(s, pool, 0, &t));
    CHECK(fill(t, (uint64_t)i) == 0);
    CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
    et_tensor_release(t);
  }
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive_latest(r, 1000, &d));
  CHECK(d.sequence == 4 && holds(d.tensor, 4, 0, kYBytes));
  et_channel_receiver_stats rs;
  memset(&rs, 0, sizeof rs);
  rs.struct_size = sizeof rs;
  CHECK_OK(et_channel_receiver_get_stats(r, &rs));
  CHECK(rs.frames_skipped == 4 && rs.frames_out == 1);
  drop(&d);
  CHECK_OK(et_channel_sender_drain(s, 2000)); /* the skipped ones were released at once */
  /* Nothing there: ET_BUSY, errno EAGAIN for 0 and ETIMEDOUT for a wait; the channel stays open. */
  CHECK_STATUS(ET_BUSY, et_channel_receiver_receive(r, 0, &d));
  CHECK(et_last_error_errno() == EAGAIN && d.tensor == NULL && d.frame == NULL);
  CHECK_STATUS(ET_BUSY, et_channel_receiver_receive_latest(r, 5, &d));
  CHECK(et_last_error_errno() == ETIMEDOUT);
  CHECK_OK(et_channel_receiver_status(r));
  CHECK_OK(et_channel_receiver_flush(r));
  CHECK_OK(et_channel_sender_end_stream(s));
  uint64_t late = 0;
  et_tensor* t = NULL;
  CHECK_OK(et_channel_sender_acquire(s, pool, 0, &t));
  CHECK_STATUS(ET_FAILED_PRECONDITION, et_channel_sender_send(s, t, NULL, &late));
  et_tensor_release(t);
  CHECK_OK(et_channel_receiver_receive_latest(r, 1000, &d));
  CHECK(d.end_of_stream == 1 && d.sequence == 5);
  CHECK_OK(et_channel_receiver_receive(r, ET_WAIT_FOREVER, &d));
  CHECK(d.end_of_stream == 1);
  et_channel_sender_release(s);
  et_channel_receiver_release(r);
  et_pool_release(pool);
  return 0;
}

static int case_channel_drop_policy(void) {
  et_channel_sender_options so = {.struct_size = sizeof so, .policy = ET_CHANNEL_POLICY_DROP, .max_frames_out = 1};
  et_channel_sender* s = NULL;
  et_channel_receiver* r = NULL;
  CHECK(make_pair(&so, &s, &r) == 0);
  et_pool* pool = shm_pool(3);
  CHECK(pool != NULL);
  et_tensor* t = NULL;
  CHECK_OK(et_channel_sender_acquire(s, pool, 0, &t));
  uint64_t seq = 99;
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  CHECK(seq == 0);
  /* The receiver holds its limit (one frame sent, not released): the next frame is dropped, not an error. */
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  CHECK(seq == 1);
  et_channel_sender_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_sender_get_stats(s, &st));
  CHECK(st.frames_dropped == 1 && st.frames_sent == 1 && st.frames_out == 1);
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  CHECK(d.sequence == 0);
  drop(&d);
  CHECK_OK(et_channel_sender_drain(s, 2000));
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  CHECK(seq == 2);
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  CHECK(d.sequence == 2);
  drop(&d);
  et_channel_receiver_stats rs;
  memset(&rs, 0, sizeof rs);
  rs.struct_size = sizeof rs;
  CHECK_OK(et_channel_receiver_get_stats(r, &rs));
  CHECK(rs.frames_missing == 1 && rs.frames_received == 2);
  et_channel_sender_release(s);
  et_channel_receiver_release(r);

  /* BLOCK with no wait: the same situation is ET_BUSY, and the channel stays open. */
  so.policy = ET_CHANNEL_POLICY_BLOCK;
  so.use_send_timeout = 1;
  so.send_timeout_ms = 0;
  CHECK(make_pair(&so, &s, &r) == 0);
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  CHECK_STATUS(ET_BUSY, et_channel_sender_send(s, t, NULL, &seq));
  CHECK_OK(et_channel_sender_status(s));
  /* The receiver goes: the sender's calls then say so, and so does its status. */
  et_channel_receiver_release(r);
  et_status sent = ET_OK;
  for (int i = 0; i < 200 && (sent = et_channel_sender_status(s)) == ET_OK; ++i) usleep(5000);
  CHECK(sent == ET_UNAVAILABLE);
  CHECK_STATUS(ET_UNAVAILABLE, et_channel_sender_send(s, t, NULL, &seq));
  et_channel_sender_release(s);
  et_tensor_release(t);
  et_pool_release(pool);
  return 0;
}

/* et_channel_set_wait_check: a BLOCK send with no time limit, to a receiver at its frame limit, calls the check
 * every slice while it returns 0, ends with ET_BUSY and ECANCELED when it returns 1 (the channel stays open),
 * waits no more once cleared and released; a publisher's send and end_stream stop the same way. */
struct wait_check_state {
  int calls;
  int stop_at; /* the call that returns 1 */
};
static int count_and_stop(void* data) {
  struct wait_check_state* state = data;
  return ++state->calls >= state->stop_at;
}

static int case_channel_wait_check_stops_a_send(void) {
  et_channel_sender_options so = {.struct_size = sizeof so, .policy = ET_CHANNEL_POLICY_BLOCK, .max_frames_out = 1,
                                  .use_send_timeout = 1, .send_timeout_ms = ET_WAIT_FOREVER};
  et_channel_sender* s = NULL;
  et_channel_receiver* r = NULL;
  CHECK(make_pair(&so, &s, &r) == 0);
  et_pool* pool = shm_pool(3);
  CHECK(pool != NULL);
  et_tensor* t = NULL;
  CHECK_OK(et_channel_sender_acquire(s, pool, 0, &t));
  uint64_t seq = 99;
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq)); /* frame 0: the receiver's limit */
  struct wait_check_state state = {0, 3};
  CHECK_OK(et_channel_set_wait_check(count_and_stop, &state));
  CHECK_STATUS(ET_BUSY, et_channel_sender_send(s, t, NULL, &seq));
  printf("wait check: the send stopped at call %d: errno %d, '%s'\n", state.calls, et_last_error_errno(),
         et_last_error_message());
  CHECK(state.calls == 3 && et_last_error_errno() == ECANCELED);
  CHECK(strstr(et_last_error_message(), "et_channel_set_wait_check") != NULL);
  CHECK_OK(et_channel_set_wait_check(NULL, NULL));
  CHECK_OK(et_channel_sender_status(s)); /* open */
  /* The receiver releases frame 0: the next send goes, with no check and no limit. */
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  CHECK(d.sequence == 0);
  drop(&d);
  CHECK_OK(et_channel_sender_drain(s, 2000));
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  CHECK(d.sequence == seq);
  /* Held again: a check that stops at once ends the wait at its first slice. */
  state.calls = 0;
  state.stop_at = 1;
  CHECK_OK(et_channel_set_wait_check(count_and_stop, &state));
  CHECK_STATUS(ET_BUSY, et_channel_sender_send(s, t, NULL, &seq));
  CHECK(state.calls == 1 && et_last_error_errno() == ECANCELED);
  CHECK_OK(et_channel_set_wait_check(NULL, NULL));
  drop(&d);
  et_channel_sender_release(s);
  et_channel_receiver_release(r);

  /* A publisher with one such receiver: send and end_stream stop the same way. */
  int sv[2] = {-1, -1};
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  et_channel_publisher_options po = {.struct_size = sizeof po, .receiver = &so};
  et_channel_publisher* p = NULL;
  CHECK_OK(et_channel_publisher_create(&po, &p));
  uint64_t id = 0;
  CHECK_OK(et_channel_publisher_add_receiver_adopt(p, sv[0], NULL, &id));
  CHECK_OK(et_channel_receiver_create_adopt(sv[1], NULL, &r));
  et_channel_publish_result result = {.struct_size = sizeof result};
  CHECK_OK(et_channel_publisher_send(p, t, NULL, &result));
  CHECK(result.delivered == 1);
  state.calls = 0;
  state.stop_at = 2;
  CHECK_OK(et_channel_set_wait_check(count_and_stop, &state));
  CHECK_STATUS(ET_BUSY, et_channel_publisher_send(p, t, NULL, &result));
  CHECK(state.calls == 2 && et_last_error_errno() == ECANCELED);
  CHECK_OK(et_channel_set_wait_check(NULL, NULL));
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  drop(&d);
  CHECK_OK(et_channel_publisher_drain(p, 2000));
  CHECK_OK(et_channel_publisher_send(p, t, NULL, &result)); /* still served */
  CHECK(result.delivered == 1);
  et_channel_publisher_release(p);
  et_channel_receiver_release(r);
  et_tensor_release(t);
  et_pool_release(pool);
  return 0;
}

static int case_channel_receiver_fd_polls(void) {
  et_channel_sender* s = NULL;
  et_channel_receiver* r = NULL;
  CHECK(make_pair(NULL, &s, &r) == 0);
  int32_t fd = -1;
  CHECK_OK(et_channel_receiver_get_fd(r, &fd));
  CHECK(fd >= 0);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  et_channel_delivery d = delivery();
  /* The sender's hello is a message: readable, and receive(0) takes it and answers ET_BUSY. */
  CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN));
  CHECK_STATUS(ET_BUSY, et_channel_receiver_receive(r, 0, &d));
  CHECK(poll(&p, 1, 0) == 0);
  et_tensor* t = NULL;
  const uint64_t shape[1] = {16};
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_SHM};
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &a, &t));
  uint64_t seq = 0;
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN));
  CHECK_OK(et_channel_receiver_receive(r, 0, &d));
  CHECK(d.tensor != NULL);
  drop(&d);
  /* The sender goes: readable again, and the receive says the channel ended. */
  et_channel_sender_release(s);
  CHECK(poll(&p, 1, 1000) == 1);
  CHECK_STATUS(ET_UNAVAILABLE, et_channel_receiver_receive(r, 0, &d));
  CHECK_STATUS(ET_UNAVAILABLE, et_channel_receiver_status(r));
  et_channel_receiver_release(r);
  et_tensor_release(t);
  return 0;
}

/* A unique socket path for this process. */
static void socket_path(char* path, size_t size, const char* what) {
  snprintf(path, size, "/tmp/et-capi-%s-%ld.sock", what, (long)getpid());
}

static int case_channel_listener(void) {
  char path[96];
  socket_path(path, sizeof path, "listen");
  et_channel_listener* l = NULL;
  CHECK_OK(et_channel_listener_create(path, NULL, &l));
  const char* got = NULL;
  CHECK_OK(et_channel_listener_get_path(l, &got));
  CHECK(strcmp(got, path) == 0);
  int32_t lfd = -1;
  CHECK_OK(et_channel_listener_get_fd(l, &lfd));
  CHECK(lfd >= 0);
  int32_t client = -1, server = -1;
  CHECK_OK(et_channel_connect(path, 1000, &client));
  CHECK_OK(et_channel_listener_accept(l, 1000, &server));
  CHECK(client >= 0 && server >= 0);
  et_channel_sender* s = NULL;
  et_channel_receiver* r = NULL;
  CHECK_OK(et_channel_sender_create_adopt(server, NULL, &s));
  CHECK_OK(et_channel_receiver_create_adopt(client, NULL, &r));
  et_pool* pool = shm_pool(1);
  et_tensor* t = NULL;
  CHECK_OK(et_channel_sender_acquire(s, pool, 0, &t));
  CHECK(fill(t, 7) == 0);
  uint64_t seq = 0;
  CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
  et_tensor_release(t);
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  CHECK(holds(d.tensor, 7, 0, kYBytes));
  drop(&d);
  et_channel_sender_release(s);
  et_channel_receiver_release(r);
  et_pool_release(pool);
  et_channel_listener_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_listener_get_stats(l, &st));
  CHECK(st.accepted == 1 && st.refused == 0 && st.has_last_refused == 0);
  /* A live listener's path is refused. */
  et_channel_listener* twice = (et_channel_listener*)&twice;
  CHECK_STATUS(ET_ALREADY_EXISTS, et_channel_listener_create(path, NULL, &twice));
  CHECK(twice == NULL);
  et_channel_listener_release(l);
  CHECK(access(path, F_OK) != 0); /* the last release unlinks the socket file */
  CHECK_STATUS(ET_NOT_FOUND, et_channel_connect(path, 100, &client));
  CHECK(client == -1);
  return 0;
}

static int case_channel_listener_refuses_a_peer(void) {
  char path[96];
  socket_path(path, sizeof path, "refuse");
  /* An allow rule that nobody matches: not this uid, and no uid or gid listed. */
  et_channel_listen_options o = {.struct_size = sizeof o, .flags = ET_LISTEN_NO_SAME_UID, .mode = 0600, .backlog = 4};
  et_channel_listener* l = NULL;
  CHECK_OK(et_channel_listener_create(path, &o, &l));
  int32_t client = -1, server = 12345;
  CHECK_OK(et_channel_connect(path, 1000, &client)); /* the kernel queues it; accept checks it */
  CHECK_STATUS(ET_BUSY, et_channel_listener_accept(l, 200, &server));
  CHECK(server == -1 && et_last_error_errno() == ETIMEDOUT);
  et_channel_listener_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_listener_get_stats(l, &st));
  CHECK(st.refused == 1 && st.accepted == 0 && st.has_last_refused == 1);
  CHECK(st.last_refused_pid == (int32_t)getpid() && st.last_refused_uid == (uint32_t)geteuid());
  /* The refused peer was told why (a refuse message), then closed unread: ET_PERMISSION_DENIED, errno EACCES,
   * naming its uid and the path. */
  et_channel_receiver* r = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(client, NULL, &r));
  et_channel_delivery d = delivery();
  CHECK_STATUS(ET_PERMISSION_DENIED, et_channel_receiver_receive(r, 1000, &d));
  CHECK(et_last_error_errno() == EACCES);
  char want[160];
  snprintf(want, sizeof want, "uid %u (gid %u) is not allowed to connect to '%s'", (unsigned)geteuid(),
           (unsigned)getegid(), path);
  CHECK(strstr(et_last_error_message(), "the sender refused this end and closed the channel: ") != NULL);
  CHECK(strstr(et_last_error_message(), want) != NULL);
  et_channel_receiver_release(r);
  et_channel_listener_release(l);
  /* This uid listed: the same rule passes it. */
  const uint32_t uids[1] = {(uint32_t)geteuid()};
  o.uid_count = 1;
  o.uids = uids;
  CHECK_OK(et_channel_listener_create(path, &o, &l));
  CHECK_OK(et_channel_connect(path, 1000, &client));
  CHECK_OK(et_channel_listener_accept(l, 1000, &server));
  close(client);
  close(server);
  et_channel_listener_release(l);
  return 0;
}

/* ---- frames ---------------------------------------------------------------------------------------- */

static int case_frame_calls(void) {
  et_frame* f = NULL;
  CHECK_OK(two_buffer_frame(9, &f));
  et_tensor* buffer = NULL;
  CHECK_OK(et_frame_buffer(f, 1, &buffer));
  CHECK(holds(buffer, 9, 1, kUvBytes));
  et_tensor_release(buffer);
  CHECK_STATUS(ET_OUT_OF_RANGE, et_frame_buffer(f, 2, &buffer));
  CHECK(buffer == NULL);
  CHECK_STATUS(ET_OUT_OF_RANGE, et_frame_plane(f, 2, &buffer));
  et_frame_release(et_frame_retain(f));
  et_frame_release(f);
  /* A single-buffer image tensor as a frame: one buffer, both planes in it. */
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_SHM};
  et_tensor* image = NULL;
  CHECK_OK(et_tensor_allocate_image(kWidth, kHeight, ET_PIXEL_FORMAT_NV12, NULL, &a, &image));
  CHECK_OK(et_frame_from_tensor(image, &f));
  uint32_t buffers = 0, plane_buffers[ET_MAX_PLANES] = {9, 9, 9, 9};
  CHECK_OK(et_frame_get_buffers(f, &buffers, plane_buffers));
  CHECK(buffers == 1 && plane_buffers[0] == 0 && plane_buffers[1] == 0 && plane_buffers[2] == 0);
  et_frame_release(f);
  /* Not an image: refused. */
  et_tensor* plain = NULL;
  const uint64_t shape[1] = {8};
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &a, &plain));
  f = (et_frame*)&f;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_from_tensor(plain, &f));
  CHECK(f == NULL);
  et_tensor_release(plain);
  et_tensor_release(image);
  return 0;
}

/* ---- fences ----------------------------------------------------------------------------------------- */

/* Acquire fences with sends, release fences with releases, their counters, and older callers' struct sizes.
 * This host has no sync_file source: signalled fences (which send nothing) and every refusal are checked
 * here; real sync_files cross in tests/hardware/fence_capi_test.cpp (vgem). */
static int case_channel_fences(void) {
  et_channel_sender* sender = NULL;
  et_channel_receiver* receiver = NULL;
  CHECK(make_pair(NULL, &sender, &receiver) == 0);
  et_fence* signalled = NULL;
  CHECK_OK(et_fence_create_signalled(&signalled));
  et_tensor* t = NULL;
  const uint64_t shape[1] = {kYBytes};
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_SHM};
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &a, &t));
  CHECK(fill(t, 0) == 0);
  /* One fence for the tensor's one buffer: a signalled one sends nothing; so does a NULL entry. */
  const et_fence* one[1] = {signalled};
  et_channel_send_options o = {.struct_size = sizeof o, .acquire_fences = one, .acquire_fence_count = 1};
  uint64_t seq = 0;
  CHECK_OK(et_channel_sender_send(sender, t, &o, &seq));
  const et_fence* none[1] = {NULL};
  o.acquire_fences = none;
  CHECK_OK(et_channel_sender_send(sender, t, &o, &seq));
  /* An older caller's options (0.3: up to duration_ns): what follows is not read. */
  struct {
    et_channel_send_options o;
    uint64_t guard;
  } old;
  memset(&old, 0, sizeof old);
  old.o.struct_size = ET_CHANNEL_SEND_OPTIONS_SIZE_VER0;
  old.o.acquire_fence_count = 99; /* past the older struct: ignored */
  CHECK_OK(et_channel_sender_send(sender, t, &old.o, &seq));
  CHECK(seq == 2);
  /* Refused: a count the frame does not have, past ET_MAX_PLANES, a NULL array, reserved2. */
  const et_fence* two[2] = {signalled, signalled};
  o.acquire_fences = two;
  o.acquire_fence_count = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  CHECK_MESSAGE("2 acquire fences for a frame of 1 buffer: give none, one for every buffer, or one per buffer");
  o.acquire_fence_count = 5;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  CHECK_MESSAGE("et_channel_send_options.acquire_fence_count 5 is above ET_MAX_PLANES (4)");
  o.acquire_fences = NULL;
  o.acquire_fence_count = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  CHECK_MESSAGE("et_channel_send_options: acquire_fences (acquire_fence_count 1) is NULL");
  o.acquire_fences = one;
  o.reserved2 = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  CHECK_MESSAGE("et_channel_send_options.reserved2 is 1, not 0");
  o.reserved2 = 0;
  /* A frame of two buffers: one fence each. */
  et_frame* frame = NULL;
  CHECK_OK(two_buffer_frame(3, &frame));
  o.acquire_fences = two;
  o.acquire_fence_count = 2;
  CHECK_OK(et_channel_sender_send_frame(sender, frame, &o, &seq));
  et_frame_release(frame);
  CHECK(seq == 3);

  /* Received: no fences came (all signalled), so none are shown; the bytes are right. */
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive(receiver, 5000, &d));
  CHECK(d.tensor != NULL && d.acquire_fence_count == 0 && d.acquire_fences[0].fence == NULL);
  CHECK(holds(d.tensor, 0, 0, kYBytes));
  /* A release fence: a signalled one adds nothing; NULLs and a tensor this receiver did not deliver are refused. */
  CHECK_OK(et_channel_receiver_add_release_fence(receiver, d.tensor, signalled));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence(NULL, d.tensor, signalled));
  CHECK_MESSAGE("et_channel_receiver_add_release_fence: receiver is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence(receiver, NULL, signalled));
  CHECK_MESSAGE("et_channel_receiver_add_release_fence: tensor is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence(receiver, d.tensor, NULL));
  CHECK_MESSAGE("et_channel_receiver_add_release_fence: fence is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence(receiver, t, signalled));
  CHECK_MESSAGE("the tensor is not a frame buffer this receiver delivered");
  drop(&d);
  /* An older caller's delivery (0.3: up to frame): nothing is written past it. */
  struct {
    et_channel_delivery d;
    uint64_t guard;
  } old_d;
  memset(&old_d, 0, sizeof old_d);
  old_d.d.struct_size = ET_CHANNEL_DELIVERY_SIZE_VER0;
  old_d.d.acquire_fence_count = 0xdead;
  old_d.d.acquire_fences[0].fence = signalled;
  CHECK_OK(et_channel_receiver_receive(receiver, 5000, &old_d.d));
  CHECK(old_d.d.tensor != NULL && old_d.d.sequence == 1);
  CHECK(old_d.d.acquire_fence_count == 0xdead && old_d.d.acquire_fences[0].fence == signalled);
  drop(&old_d.d);
  d = delivery();
  CHECK_OK(et_channel_receiver_receive(receiver, 5000, &d));
  CHECK(d.sequence == 2 && d.acquire_fence_count == 0);
  drop(&d);
  d = delivery();
  CHECK_OK(et_channel_receiver_receive(receiver, 5000, &d));
  CHECK(d.frame != NULL && d.sequence == 3 && d.acquire_fence_count == 0);
  CHECK_OK(et_channel_receiver_add_release_fence_frame(receiver, d.frame, signalled));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence_frame(NULL, d.frame, signalled));
  CHECK_MESSAGE("et_channel_receiver_add_release_fence_frame: receiver is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence_frame(receiver, NULL, signalled));
  CHECK_MESSAGE("et_channel_receiver_add_release_fence_frame: frame is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence_frame(receiver, d.frame, NULL));
  CHECK_MESSAGE("et_channel_receiver_add_release_fence_frame: fence is NULL");
  et_frame* foreign = NULL;
  CHECK_OK(two_buffer_frame(4, &foreign));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_add_release_fence_frame(receiver, foreign, signalled));
  et_frame_release(foreign);
  drop(&d);
  CHECK_OK(et_channel_sender_drain(sender, 5000));

  /* The fence counters (none crossed), and the older stats sizes: nothing written past them. */
  et_channel_sender_stats ss;
  memset(&ss, 0xab, sizeof ss);
  ss.struct_size = sizeof ss;
  CHECK_OK(et_channel_sender_get_stats(sender, &ss));
  CHECK(ss.frames_sent == 4 && ss.acquire_fences_sent == 0 && ss.acquire_fences_waited == 0 && ss.release_fences == 0);
  memset(&ss, 0xab, sizeof ss);
  ss.struct_size = ET_CHANNEL_SENDER_STATS_SIZE_VER0;
  CHECK_OK(et_channel_sender_get_stats(sender, &ss));
  CHECK(ss.frames_sent == 4 && ss.acquire_fences_sent == UINT64_C(0xabababababababab));
  et_channel_receiver_stats rs;
  memset(&rs, 0xab, sizeof rs);
  rs.struct_size = sizeof rs;
  CHECK_OK(et_channel_receiver_get_stats(receiver, &rs));
  CHECK(rs.frames_received == 4 && rs.acquire_fences == 0 && rs.release_fences_sent == 0);
  memset(&rs, 0xab, sizeof rs);
  rs.struct_size = ET_CHANNEL_RECEIVER_STATS_SIZE_VER0;
  CHECK_OK(et_channel_receiver_get_stats(receiver, &rs));
  CHECK(rs.frames_received == 4 && rs.acquire_fences == UINT64_C(0xabababababababab));
  et_channel_receiver_release(receiver);
  et_channel_sender_release(sender);

  /* A publisher's receiver list for an older caller (0.3 elements of 112 bytes): the nested stats say 72. */
  et_channel_publisher* pub = NULL;
  CHECK_OK(et_channel_publisher_create(NULL, &pub));
  int32_t fds[2] = {-1, -1};
  CHECK_OK(et_channel_socket_pair(fds));
  uint64_t id = 0;
  CHECK_OK(et_channel_publisher_add_receiver_adopt(pub, fds[0], NULL, &id));
  uint64_t raw[2 * ET_CHANNEL_RECEIVER_INFO_SIZE_VER0 / 8];
  memset(raw, 0xab, sizeof raw);
  const uint32_t old_size = ET_CHANNEL_RECEIVER_INFO_SIZE_VER0;
  memcpy(raw, &old_size, sizeof old_size);
  uint32_t count = 0;
  CHECK_OK(et_channel_publisher_get_receivers(pub, (et_channel_receiver_info*)(void*)raw, 1, &count));
  const et_channel_receiver_info* first = (const et_channel_receiver_info*)(const void*)raw;
  CHECK(count == 1 && first->struct_size == old_size && first->id == id);
  CHECK(first->stats.struct_size == ET_CHANNEL_SENDER_STATS_SIZE_VER0);
  CHECK(raw[ET_CHANNEL_RECEIVER_INFO_SIZE_VER0 / 8] == UINT64_C(0xabababababababab)); /* the next element untouched */
  et_channel_receiver_info now;
  memset(&now, 0, sizeof now);
  now.struct_size = sizeof now;
  CHECK_OK(et_channel_publisher_get_receivers(pub, &now, 1, &count));
  CHECK(now.stats.struct_size == sizeof now.stats && now.stats.acquire_fences_sent == 0);
  et_channel_publisher_release(pub);
  close(fds[1]);
  et_fence_release(signalled);
  et_tensor_release(t);
  return 0;
}

/* ---- bad input ------------------------------------------------------------------------------------ */

static int case_frame_bad_input(void) {
  int fds[2] = {plane_memfd(0, 0, kYBytes), plane_memfd(0, 1, kUvBytes)};
  CHECK(fds[0] >= 0 && fds[1] >= 0);
  et_image_layout layout = nv12_layout();
  et_frame* f = (et_frame*)&f;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 2, &layout, NULL, NULL));
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(NULL, 2, &layout, NULL, &f));
  CHECK(f == NULL);
  CHECK_MESSAGE("borrowed_fds is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 2, NULL, NULL, &f));
  CHECK_MESSAGE("layout is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 0, &layout, NULL, &f));
  CHECK_MESSAGE("fd_count 0");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 5, &layout, NULL, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 1, &layout, NULL, &f)); /* NV12 has 2 planes */
  int bad[2] = {fds[0], -1};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(bad, 2, &layout, NULL, &f));
  layout.struct_size = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 2, &layout, NULL, &f));
  CHECK_MESSAGE("et_image_layout.struct_size 4");
  layout = nv12_layout();
  layout.format = 99;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 2, &layout, NULL, &f));
  CHECK_MESSAGE("ET_PIXEL_FORMAT_");
  layout = nv12_layout();
  layout.planes[1].offset_bytes = 8; /* the UV plane past its 16-byte buffer */
  CHECK_STATUS(ET_OUT_OF_RANGE, et_frame_import_planes_dup(fds, 2, &layout, NULL, &f));
  layout = nv12_layout();
  et_import_options io = {.struct_size = sizeof io, .offset_bytes = 4};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 2, &layout, &io, &f));
  CHECK_MESSAGE("offset_bytes must be 0");
  io.offset_bytes = 0;
  io.flags = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_import_planes_dup(fds, 2, &layout, &io, &f));
  CHECK(f == NULL && fd_is_open(fds[0]) && fd_is_open(fds[1])); /* borrowed: still the caller's */
  et_tensor* t = (et_tensor*)&t;
  uint32_t count = 0, planes[ET_MAX_PLANES];
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_from_tensor(NULL, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_from_tensor(t, NULL));
  CHECK_OK(et_frame_import_planes_dup(fds, 2, &layout, NULL, &f));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_get_layout(NULL, &layout));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_get_layout(f, NULL));
  layout.struct_size = 5000;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_get_layout(f, &layout));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_get_buffers(NULL, &count, planes));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_get_buffers(f, NULL, planes));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_get_buffers(f, &count, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_buffer(NULL, 0, &t));
  CHECK(t == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_buffer(f, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_plane(NULL, 0, &t));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_frame_plane(f, 0, NULL));
  CHECK(et_frame_retain(NULL) == NULL);
  et_frame_release(NULL);
  et_frame_release(f);
  close(fds[0]);
  close(fds[1]);
  return 0;
}

/* create_adopt takes its fd on every path: closed after each refusal (a negative fd is left alone). */
static int refused_and_closed(int which, const et_channel_sender_options* so, const et_channel_receiver_options* ro,
                              int null_out, et_status expected) {
  int32_t fds[2] = {-1, -1};
  CHECK_OK(et_channel_socket_pair(fds));
  et_channel_sender* s = (et_channel_sender*)&s;
  et_channel_receiver* r = (et_channel_receiver*)&r;
  if (which == 0)
    CHECK_STATUS(expected, et_channel_sender_create_adopt(fds[0], so, null_out ? NULL : &s));
  else
    CHECK_STATUS(expected, et_channel_receiver_create_adopt(fds[0], ro, null_out ? NULL : &r));
  CHECK(!fd_is_open(fds[0]));
  CHECK(null_out || (which == 0 ? s == NULL : r == NULL));
  close(fds[1]);
  return 0;
}

static int case_channel_bad_input(void) {
  et_channel_sender_options so = {.struct_size = sizeof so};
  et_channel_receiver_options ro = {.struct_size = sizeof ro};
  /* Sender and receiver creation. */
  CHECK(refused_and_closed(0, NULL, NULL, 1, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("out is NULL");
  CHECK(refused_and_closed(1, NULL, NULL, 1, ET_INVALID_ARGUMENT) == 0);
  so.policy = 2;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("policy 2");
  so.policy = 256; /* the C++ enum is 8 bits: must not wrap to BLOCK */
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  so.policy = -1;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  so.policy = 0;
  so.use_send_timeout = 1;
  so.send_timeout_ms = -2;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("timeout_ms -2");
  so.use_send_timeout = 2;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  so.use_send_timeout = 0;
  so.max_buffers = 1025;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  so.max_buffers = 0;
  so.max_frames_out = (uint64_t)1 << 21;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  so.max_frames_out = 0;
  so.flags = 4; /* an unknown flag */
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  so.flags = 0;
  so.struct_size = 4;
  CHECK(refused_and_closed(0, &so, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("et_channel_sender_options.struct_size 4");
  ro.struct_size = 5000;
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  ro.struct_size = sizeof ro;
  ro.max_buffers = 2000;
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  ro.max_buffers = 0;
  ro.max_queued_releases = (uint64_t)1 << 21;
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  ro.max_queued_releases = 0;
  /* A newer caller's struct with a non-zero field this library does not know. */
  struct {
    et_channel_sender_options known;
    uint32_t newer_field;
    uint32_t pad;
  } newer = {.known = {.struct_size = sizeof newer}, .newer_field = 1};
  CHECK(refused_and_closed(0, &newer.known, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("must be zero");
  newer.newer_field = 0;
  et_channel_sender* s = NULL;
  int32_t fds[2];
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK_OK(et_channel_sender_create_adopt(fds[0], &newer.known, &s)); /* zero tail: accepted */
  et_channel_sender_release(s);
  close(fds[1]);
  /* Bad fds: -1 is refused (nothing to close), a pipe is no SEQPACKET socket (closed). */
  s = (et_channel_sender*)&s;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_create_adopt(-1, NULL, &s));
  CHECK(s == NULL);
  CHECK_MESSAGE("socket_fd -1");
  et_channel_receiver* r = (et_channel_receiver*)&r;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_create_adopt(-1, NULL, &r));
  CHECK(r == NULL);
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_create_adopt(pipe_fds[0], NULL, &r));
  CHECK(!fd_is_open(pipe_fds[0]));
  close(pipe_fds[1]);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_socket_pair(NULL));

  /* Calls on a live pair with NULL handles, NULL outs, bad options and bad timeouts. */
  et_channel_sender* sender = NULL;
  et_channel_receiver* receiver = NULL;
  CHECK(make_pair(NULL, &sender, &receiver) == 0);
  et_pool* pool = shm_pool(1);
  et_tensor* t = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  uint64_t seq = 0;
  et_channel_send_options o = {.struct_size = sizeof o};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(NULL, t, &o, &seq));
  CHECK_MESSAGE("sender is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, NULL, &o, &seq));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, NULL));
  CHECK_MESSAGE("out_sequence is NULL");
  et_frame* frame = NULL;
  CHECK_OK(two_buffer_frame(0, &frame));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send_frame(NULL, frame, NULL, &seq));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send_frame(sender, NULL, NULL, &seq));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send_frame(sender, frame, NULL, NULL));
  o.has = 16;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  CHECK_MESSAGE("ET_CHANNEL_HAS_");
  o.has = ET_CHANNEL_HAS_DURATION;
  o.duration_ns = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  CHECK_MESSAGE("negative");
  o.has = ET_CHANNEL_HAS_PTS;
  o.pts_ns = INT64_MIN;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  o.has = 0;
  o.reserved = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  o.reserved = 0;
  o.struct_size = 8;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq));
  o.struct_size = sizeof o;
  o.has = ET_CHANNEL_HAS_SEQUENCE;
  o.sequence = 10;
  CHECK_OK(et_channel_sender_send(sender, t, &o, &seq));
  CHECK(seq == 10);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_send(sender, t, &o, &seq)); /* not increasing */
  CHECK_MESSAGE("sequence");
  /* A heap tensor cannot cross. */
  et_tensor* heap = NULL;
  const uint64_t shape[1] = {4};
  et_allocate_options ha = {.struct_size = sizeof ha, .memory = ET_MEMORY_HEAP};
  CHECK_OK(et_tensor_allocate(1, shape, ET_DTYPE_U8, &ha, &heap));
  CHECK_STATUS(ET_UNSUPPORTED, et_channel_sender_send(sender, heap, NULL, &seq));
  et_tensor_release(heap);
  et_tensor* acquired = (et_tensor*)&acquired;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_acquire(NULL, pool, 0, &acquired));
  CHECK(acquired == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_acquire(sender, NULL, 0, &acquired));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_acquire(sender, pool, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_acquire(sender, pool, -5, &acquired));
  CHECK_MESSAGE("timeout_ms -5");
  CHECK_STATUS(ET_BUSY, et_channel_sender_acquire(sender, pool, 0, &acquired)); /* its one buffer is out */
  CHECK_MESSAGE("capi-channel");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_drain(NULL, 0));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_drain(sender, -2));
  CHECK_STATUS(ET_BUSY, et_channel_sender_drain(sender, 0)); /* a frame is out */
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_end_stream(NULL));
  et_channel_sender_stats ss;
  memset(&ss, 0, sizeof ss);
  ss.struct_size = sizeof ss;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_get_stats(NULL, &ss));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_get_stats(sender, NULL));
  ss.struct_size = 3;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_get_stats(sender, &ss));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_sender_status(NULL));
  CHECK(et_channel_sender_retain(NULL) == NULL);
  et_channel_sender_release(NULL);

  et_channel_delivery d = delivery();
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_receive(NULL, 0, &d));
  CHECK_MESSAGE("receiver is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_receive(receiver, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_receive(receiver, -2, &d));
  CHECK_MESSAGE("timeout_ms -2");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_receive_latest(receiver, INT32_MIN, &d));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_receive_latest(NULL, 0, &d));
  d.struct_size = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_receive(receiver, 1000, &d));
  CHECK_MESSAGE("et_channel_delivery.struct_size 4");
  d = delivery();
  CHECK_OK(et_channel_receiver_status(receiver)); /* argument errors leave the channel open */
  CHECK_OK(et_channel_receiver_receive(receiver, 1000, &d));
  CHECK(d.sequence == 10);
  drop(&d);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_flush(NULL));
  int32_t fd = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_get_fd(NULL, &fd));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_get_fd(receiver, NULL));
  et_channel_receiver_stats rs;
  memset(&rs, 0, sizeof rs);
  rs.struct_size = sizeof rs;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_get_stats(NULL, &rs));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_get_stats(receiver, NULL));
  rs.struct_size = 4097;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_get_stats(receiver, &rs));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_receiver_status(NULL));
  CHECK(et_channel_receiver_retain(NULL) == NULL);
  et_channel_receiver_release(NULL);
  et_channel_receiver_release(et_channel_receiver_retain(receiver));
  et_channel_sender_release(et_channel_sender_retain(sender));
  et_frame_release(frame);
  et_tensor_release(t);
  et_channel_sender_release(sender);
  et_channel_receiver_release(receiver);
  et_pool_release(pool);
  return 0;
}

static int case_channel_listener_bad_input(void) {
  char path[96];
  socket_path(path, sizeof path, "bad");
  et_channel_listener* l = (et_channel_listener*)&l;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(NULL, NULL, &l));
  CHECK(l == NULL);
  CHECK_MESSAGE("path is NULL");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, NULL, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create("", NULL, &l));
  char long_path[200];
  memset(long_path, 'x', sizeof long_path - 1);
  long_path[0] = '/';
  long_path[sizeof long_path - 1] = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(long_path, NULL, &l));
  et_channel_listen_options o = {.struct_size = sizeof o, .mode = 01777};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  o.mode = 0;
  o.backlog = -1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  o.backlog = 5000;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  o.backlog = 0;
  o.flags = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  CHECK_MESSAGE("ET_LISTEN_NO_SAME_UID");
  o.flags = 0;
  o.uid_count = 1;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  CHECK_MESSAGE("uids (uid_count 1) is NULL");
  o.uid_count = 0;
  o.gid_count = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  o.gid_count = 0;
  o.struct_size = 12;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_create(path, &o, &l));
  CHECK(access(path, F_OK) != 0); /* nothing was bound */
  /* A path that is not a socket is never replaced. */
  char file_path[96];
  socket_path(file_path, sizeof file_path, "file");
  int file = open(file_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  CHECK(file >= 0);
  close(file);
  CHECK_STATUS(ET_ALREADY_EXISTS, et_channel_listener_create(file_path, NULL, &l));
  CHECK(access(file_path, F_OK) == 0);
  unlink(file_path);

  CHECK_OK(et_channel_listener_create(path, NULL, &l));
  int32_t fd = 7;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_accept(NULL, 0, &fd));
  CHECK(fd == -1);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_accept(l, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_accept(l, -3, &fd));
  CHECK_MESSAGE("timeout_ms -3");
  CHECK_STATUS(ET_BUSY, et_channel_listener_accept(l, 0, &fd));
  CHECK(et_last_error_errno() == EAGAIN && fd == -1);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_fd(NULL, &fd));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_fd(l, NULL));
  const char* p = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_path(NULL, &p));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_path(l, NULL));
  et_channel_listener_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_stats(NULL, &st));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_stats(l, NULL));
  st.struct_size = 2;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_listener_get_stats(l, &st));
  CHECK(et_channel_listener_retain(NULL) == NULL);
  et_channel_listener_release(NULL);
  et_channel_listener_release(et_channel_listener_retain(l));
  CHECK(access(path, F_OK) == 0); /* one reference is left */
  et_channel_listener_release(l);

  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_connect(NULL, 0, &fd));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_connect(path, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_connect(path, -2, &fd));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_connect("", 0, &fd));
  CHECK_STATUS(ET_NOT_FOUND, et_channel_connect(path, 0, &fd));
  CHECK(fd == -1);
  return 0;
}

/* errno as it was on entry, on success and on failure (the header's rule), for the channel's calls too. */
static int case_channel_errno_kept(void) {
  errno = EDOM;
  int32_t fds[2];
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK(errno == EDOM);
  et_channel_receiver* r = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(fds[1], NULL, &r));
  et_channel_delivery d = delivery();
  errno = ERANGE;
  CHECK_STATUS(ET_BUSY, et_channel_receiver_receive(r, 1, &d));
  CHECK(errno == ERANGE && et_last_error_errno() == ETIMEDOUT);
  close(fds[0]);
  errno = EDOM;
  et_channel_receiver_release(r);
  CHECK(errno == EDOM);
  return 0;
}

/* ---- policy requests and the publisher ---------------------------------------------------------- */

/* Sends `t` until the sender counts a drop (the receiver's request is applied once its hello is read). */
static uint64_t sends_until_a_drop(et_channel_sender* s, et_tensor* t) {
  et_channel_sender_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  uint64_t seq = 0;
  for (int i = 0; i < 200; ++i) {
    if (et_channel_sender_send(s, t, NULL, &seq) != ET_OK || et_channel_sender_get_stats(s, &st) != ET_OK) return 0;
    if (st.frames_dropped > 0) return st.frames_dropped;
    usleep(5000);
  }
  return 0;
}

static int case_channel_receiver_asks_for_its_policy(void) {
  et_pool* pool = shm_pool(1);
  et_tensor* t = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  for (int fixed = 0; fixed < 2; ++fixed) {
    int32_t fds[2];
    CHECK_OK(et_channel_socket_pair(fds));
    et_channel_sender_options so = {.struct_size = sizeof so, .flags = fixed ? ET_CHANNEL_SENDER_FIXED_POLICY : 0};
    et_channel_receiver_options ro = {.struct_size = sizeof ro, .use_policy = 1, .policy = ET_CHANNEL_POLICY_DROP,
                                      .max_frames_out = 1};
    et_channel_sender* s = NULL;
    et_channel_receiver* r = NULL;
    CHECK_OK(et_channel_receiver_create_adopt(fds[1], &ro, &r));
    CHECK_OK(et_channel_sender_create_adopt(fds[0], &so, &s));
    if (fixed) {
      usleep(100000); /* the hello has long been read: still no drop, the sender's policy stands */
      uint64_t seq = 0;
      for (int i = 0; i < 20; ++i) CHECK_OK(et_channel_sender_send(s, t, NULL, &seq));
      et_channel_sender_stats st;
      memset(&st, 0, sizeof st);
      st.struct_size = sizeof st;
      CHECK_OK(et_channel_sender_get_stats(s, &st));
      CHECK(st.frames_dropped == 0 && st.frames_sent == 20);
    } else {
      CHECK(sends_until_a_drop(s, t) > 0); /* the receiver holds its one frame: DROP, as it asked */
    }
    et_channel_sender_release(s);
    et_channel_receiver_release(r);
  }
  et_tensor_release(t);
  et_pool_release(pool);
  return 0;
}

/* A consumer in a child process: 3 frames with their pixels, then the end of stream. */
static int consume_three(int32_t socket_fd) {
  et_channel_receiver* r = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(socket_fd, NULL, &r));
  et_channel_delivery d = delivery();
  for (uint64_t seq = 0; seq < 3; ++seq) {
    CHECK_OK(et_channel_receiver_receive(r, 10000, &d));
    CHECK(d.sequence == seq && holds(d.tensor, seq, 0, kYBytes));
    drop(&d);
  }
  CHECK_OK(et_channel_receiver_receive(r, 10000, &d));
  CHECK(d.end_of_stream == 1);
  et_channel_receiver_release(r);
  return 0;
}

static int case_channel_publisher_fan_out(void) {
  int32_t child_fds[2], local_fds[2];
  CHECK_OK(et_channel_socket_pair(child_fds));
  fflush(NULL);
  const pid_t child = fork(); /* before any sender exists: a sender has a thread */
  CHECK(child >= 0);
  if (child == 0) {
    close(child_fds[0]);
    _exit(consume_three(child_fds[1]));
  }
  close(child_fds[1]);
  et_channel_publisher_options po = {.struct_size = sizeof po, .name = "capi-fanout"};
  et_channel_publisher* pub = NULL;
  CHECK_OK(et_channel_publisher_create(&po, &pub));
  uint64_t id1 = 0, id2 = 0;
  CHECK_OK(et_channel_publisher_add_receiver_adopt(pub, child_fds[0], NULL, &id1));
  CHECK_OK(et_channel_socket_pair(local_fds));
  et_channel_sender_options drop_one = {.struct_size = sizeof drop_one, .policy = ET_CHANNEL_POLICY_DROP,
                                        .max_frames_out = 1};
  CHECK_OK(et_channel_publisher_add_receiver_adopt(pub, local_fds[0], &drop_one, &id2));
  CHECK(id1 == 1 && id2 == 2);
  et_channel_receiver* slow = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(local_fds[1], NULL, &slow));
  et_pool* pool = shm_pool(4);
  CHECK(pool != NULL);
  et_channel_publish_result pr;
  memset(&pr, 0, sizeof pr);
  pr.struct_size = sizeof pr;
  for (uint64_t seq = 0; seq < 3; ++seq) {
    et_tensor* t = NULL;
    CHECK_OK(et_channel_publisher_acquire(pub, pool, 5000, &t));
    CHECK(fill(t, seq) == 0);
    CHECK_OK(et_channel_publisher_send(pub, t, NULL, &pr));
    et_tensor_release(t);
    /* The slow receiver holds frame 0 unread (its limit, 1): frames 1 and 2 are dropped for it alone. */
    CHECK(pr.sequence == seq && pr.delivered == (seq == 0 ? 2u : 1u) && pr.dropped == (seq == 0 ? 0u : 1u) &&
          pr.removed == 0);
  }
  et_channel_receiver_info infos[3];
  memset(infos, 0, sizeof infos);
  infos[0].struct_size = sizeof infos[0];
  uint32_t count = 0;
  CHECK_OK(et_channel_publisher_get_receivers(pub, infos, 1, &count)); /* too small: the count says so */
  CHECK(count == 2 && infos[0].id == id1 && infos[1].struct_size == 0);
  CHECK_OK(et_channel_publisher_get_receivers(pub, infos, 3, &count));
  CHECK(count == 2 && infos[1].struct_size == sizeof infos[1] && infos[2].struct_size == 0);
  CHECK(infos[0].policy == ET_CHANNEL_POLICY_BLOCK && infos[0].stats.frames_sent == 3 && infos[0].has_peer == 1);
  CHECK(infos[0].peer_pid == (int32_t)getpid()); /* a socket pair: this process made both ends */
  CHECK(infos[1].id == id2 && infos[1].policy == ET_CHANNEL_POLICY_DROP && infos[1].max_frames_out == 1 &&
        infos[1].stats.frames_dropped == 2 && infos[1].stats.struct_size == sizeof infos[1].stats);
  /* Disconnected: the slow receiver still reads what it was sent, then the channel's end. */
  CHECK_OK(et_channel_publisher_disconnect(pub, id2));
  CHECK_STATUS(ET_NOT_FOUND, et_channel_publisher_disconnect(pub, id2));
  CHECK_MESSAGE("no receiver 2");
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive(slow, 1000, &d));
  CHECK(d.sequence == 0 && holds(d.tensor, 0, 0, kYBytes));
  drop(&d);
  CHECK_STATUS(ET_UNAVAILABLE, et_channel_receiver_receive(slow, 1000, &d));
  CHECK_OK(et_channel_publisher_end_stream(pub));
  CHECK_OK(et_channel_publisher_drain(pub, 10000));
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  et_channel_publisher_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_publisher_get_stats(pub, &st));
  CHECK(st.frames_published == 3 && st.deliveries == 4 && st.drops == 2 && st.receivers_joined == 2);
  CHECK(st.receivers_left == 1 && st.receivers == 1);
  const char* path = NULL;
  CHECK_OK(et_channel_publisher_get_path(pub, &path));
  CHECK(path != NULL && path[0] == 0);
  et_channel_receiver_release(slow);
  et_channel_publisher_release(pub);
  et_pool_release(pool);
  return 0;
}

static int case_channel_publisher_listens(void) {
  char path[96];
  socket_path(path, sizeof path, "publish");
  et_channel_publisher* pub = NULL;
  CHECK_OK(et_channel_publisher_listen(path, NULL, NULL, &pub));
  const char* got = NULL;
  CHECK_OK(et_channel_publisher_get_path(pub, &got));
  CHECK(strcmp(got, path) == 0);
  int32_t fd = -1;
  CHECK_OK(et_channel_connect(path, 1000, &fd));
  et_channel_receiver* r = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(fd, NULL, &r));
  et_channel_publisher_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  for (int i = 0; i < 400 && st.receivers == 0; ++i) {
    CHECK_OK(et_channel_publisher_get_stats(pub, &st));
    if (st.receivers == 0) usleep(5000);
  }
  CHECK(st.receivers == 1);
  et_pool* pool = shm_pool(2);
  et_tensor* t = NULL;
  CHECK_OK(et_channel_publisher_acquire(pub, pool, 1000, &t));
  CHECK(fill(t, 5) == 0);
  et_channel_publish_result pr;
  memset(&pr, 0, sizeof pr);
  pr.struct_size = sizeof pr;
  CHECK_OK(et_channel_publisher_send(pub, t, NULL, &pr));
  CHECK(pr.delivered == 1);
  et_channel_delivery d = delivery();
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  CHECK(holds(d.tensor, 5, 0, kYBytes));
  drop(&d);
  /* A frame of two buffers to every receiver. */
  et_frame* frame = NULL;
  CHECK_OK(two_buffer_frame(6, &frame));
  CHECK_OK(et_channel_publisher_send_frame(pub, frame, NULL, &pr));
  CHECK(pr.sequence == 1 && pr.delivered == 1);
  CHECK_OK(et_channel_receiver_receive(r, 1000, &d));
  et_tensor* uv = NULL;
  CHECK(d.frame != NULL);
  CHECK_OK(et_frame_plane(d.frame, 1, &uv));
  CHECK(holds(uv, 6, 1, kUvBytes));
  et_tensor_release(uv);
  drop(&d);
  et_frame_release(frame);
  et_tensor_release(t);
  et_channel_receiver_release(r);
  et_channel_publisher_release(pub);
  CHECK(access(path, F_OK) != 0);
  et_pool_release(pool);
  return 0;
}

static int case_channel_publisher_bad_input(void) {
  et_channel_publisher* pub = (et_channel_publisher*)&pub;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_create(NULL, NULL));
  et_channel_publisher_options po = {.struct_size = sizeof po, .max_receivers = 2000};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_create(&po, &pub));
  CHECK(pub == NULL);
  et_channel_sender_options bad_sender = {.struct_size = sizeof bad_sender, .policy = 5};
  po.max_receivers = 0;
  po.receiver = &bad_sender;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_create(&po, &pub));
  CHECK_MESSAGE("policy 5");
  po.receiver = NULL;
  po.struct_size = 7;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_create(&po, &pub));
  po.struct_size = sizeof po;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_listen(NULL, NULL, NULL, &pub));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_listen("", NULL, NULL, &pub));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_listen("/tmp/x", NULL, NULL, NULL));
  et_channel_listen_options lo = {.struct_size = sizeof lo, .backlog = -4};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_listen("@et-capi-bad", &lo, NULL, &pub));
  po.max_receivers = 1;
  CHECK_OK(et_channel_publisher_create(&po, &pub));
  uint64_t id = 0;
  /* add_receiver_adopt takes its fd on every path. */
  int32_t fds[2];
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_add_receiver_adopt(NULL, fds[0], NULL, &id));
  CHECK(!fd_is_open(fds[0]));
  close(fds[1]);
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_add_receiver_adopt(pub, fds[0], &bad_sender, &id));
  CHECK(!fd_is_open(fds[0]));
  close(fds[1]);
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_add_receiver_adopt(pub, fds[0], NULL, NULL));
  CHECK(!fd_is_open(fds[0]));
  close(fds[1]);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_add_receiver_adopt(pub, -1, NULL, &id));
  CHECK_MESSAGE("socket_fd -1");
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_add_receiver_adopt(pub, pipe_fds[1], NULL, &id));
  CHECK(!fd_is_open(pipe_fds[1]));
  close(pipe_fds[0]);
  CHECK_OK(et_channel_socket_pair(fds));
  CHECK_OK(et_channel_publisher_add_receiver_adopt(pub, fds[0], NULL, &id));
  int32_t more[2];
  CHECK_OK(et_channel_socket_pair(more));
  CHECK_STATUS(ET_OUT_OF_RANGE, et_channel_publisher_add_receiver_adopt(pub, more[0], NULL, &id)); /* max 1 */
  CHECK(!fd_is_open(more[0]));
  close(more[1]);
  et_pool* pool = shm_pool(1);
  et_tensor* t = NULL;
  CHECK_OK(et_pool_acquire(pool, 0, &t));
  et_channel_publish_result pr;
  memset(&pr, 0, sizeof pr);
  pr.struct_size = sizeof pr;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send(NULL, t, NULL, &pr));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send(pub, NULL, NULL, &pr));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send(pub, t, NULL, NULL));
  pr.struct_size = 4;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send(pub, t, NULL, &pr));
  CHECK_MESSAGE("et_channel_publish_result.struct_size 4");
  pr.struct_size = sizeof pr;
  et_channel_send_options so = {.struct_size = sizeof so, .has = 32};
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send(pub, t, &so, &pr));
  et_channel_publisher_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_publisher_get_stats(pub, &st));
  CHECK(st.frames_published == 0); /* nothing was sent by the refused calls */
  et_frame* frame = NULL;
  CHECK_OK(two_buffer_frame(0, &frame));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send_frame(NULL, frame, NULL, &pr));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send_frame(pub, NULL, NULL, &pr));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_send_frame(pub, frame, NULL, NULL));
  et_frame_release(frame);
  et_tensor* acquired = (et_tensor*)&acquired;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_acquire(NULL, pool, 0, &acquired));
  CHECK(acquired == NULL);
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_acquire(pub, NULL, 0, &acquired));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_acquire(pub, pool, 0, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_acquire(pub, pool, -7, &acquired));
  CHECK_MESSAGE("timeout_ms -7");
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_end_stream(NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_drain(NULL, 0));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_drain(pub, -2));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_disconnect(NULL, 1));
  CHECK_STATUS(ET_NOT_FOUND, et_channel_publisher_disconnect(pub, 77));
  uint32_t count = 0;
  et_channel_receiver_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_receivers(NULL, &info, 1, &count));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_receivers(pub, &info, 1, NULL));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_receivers(pub, NULL, 1, &count));
  CHECK_MESSAGE("infos (capacity 1) is NULL");
  CHECK_OK(et_channel_publisher_get_receivers(pub, NULL, 0, &count));
  CHECK(count == 1);
  info.struct_size = 16;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_receivers(pub, &info, 1, &count));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_stats(NULL, &st));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_stats(pub, NULL));
  st.struct_size = 0;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_stats(pub, &st));
  const char* path = NULL;
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_path(NULL, &path));
  CHECK_STATUS(ET_INVALID_ARGUMENT, et_channel_publisher_get_path(pub, NULL));
  CHECK(et_channel_publisher_retain(NULL) == NULL);
  et_channel_publisher_release(NULL);
  /* Receiver options of a policy request, and the sender's flags (each refusal closes the fd). */
  et_channel_receiver_options ro = {.struct_size = sizeof ro, .use_policy = 2};
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("use_policy 2");
  ro.use_policy = 0;
  ro.policy = ET_CHANNEL_POLICY_DROP;
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("use_policy 1");
  ro.use_policy = 1;
  ro.policy = 7;
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("policy 7");
  ro.policy = ET_CHANNEL_POLICY_DROP;
  ro.max_frames_out = (uint64_t)1 << 21;
  CHECK(refused_and_closed(1, NULL, &ro, 0, ET_INVALID_ARGUMENT) == 0);
  et_channel_sender_options flags = {.struct_size = sizeof flags, .flags = 2};
  CHECK(refused_and_closed(0, &flags, NULL, 0, ET_INVALID_ARGUMENT) == 0);
  CHECK_MESSAGE("ET_CHANNEL_SENDER_FIXED_POLICY");
  et_tensor_release(t);
  et_channel_publisher_release(pub);
  close(fds[1]);
  et_pool_release(pool);
  return 0;
}

static const struct test_case kCases[] = {
    {"channel_two_processes", case_channel_two_processes},
    {"channel_latest_and_end_of_stream", case_channel_latest_and_end_of_stream},
    {"channel_drop_policy", case_channel_drop_policy},
    {"channel_wait_check_stops_a_send", case_channel_wait_check_stops_a_send},
    {"channel_receiver_fd_polls", case_channel_receiver_fd_polls},
    {"channel_listener", case_channel_listener},
    {"channel_listener_refuses_a_peer", case_channel_listener_refuses_a_peer},
    {"frame_calls", case_frame_calls},
    {"channel_fences", case_channel_fences},
    {"frame_bad_input", case_frame_bad_input},
    {"channel_bad_input", case_channel_bad_input},
    {"channel_listener_bad_input", case_channel_listener_bad_input},
    {"channel_errno_kept", case_channel_errno_kept},
    {"channel_receiver_asks_for_its_policy", case_channel_receiver_asks_for_its_policy},
    {"channel_publisher_fan_out", case_channel_publisher_fan_out},
    {"channel_publisher_listens", case_channel_publisher_listens},
    {"channel_publisher_bad_input", case_channel_publisher_bad_input},
};

int main(int argc, char** argv) { return run_cases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
