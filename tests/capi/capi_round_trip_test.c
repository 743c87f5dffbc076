/* SPDX-License-Identifier: Apache-2.0 */
/* A round trip from C through a peer in another language and back, over two frame channels (issue 23, "Round
 * trips"): this C program allocates pool tensors, fills them, sends them to the peer on one socket pair, and
 * checks every byte of the copies the peer sends back on a second pair (each byte + 1), with their sequence,
 * pts, duration and flags. Written in C11 (-Wall -Wextra -Wpedantic -Werror), linking libedgetensor-c.so only.
 *
 *   et_capi_round_trip_test <peer program> [<peer arguments>...]
 *
 * runs the peer as `<peer program> <peer arguments>... --receive-fd <a> --send-fd <b>`: it receives this
 * program's frames on fd a and sends its copies on fd b (both connected SOCK_SEQPACKET sockets it owns).
 * Frames alternate: an even sequence is an NV12 image (et_pool_create_image, sent as a frame), an odd one a
 * u16 tensor (et_pool_create, sent as a tensor). Byte o of frame s (o counted from the image's or tensor's
 * first byte) is round_trip_byte(s, o); the peer's copy holds round_trip_byte(s, o) + 1 (mod 256) at the same
 * place of each plane row; the peer checks the first before it writes the second. Peers: round_trip_cpp_peer.cpp
 * (C++ API) and round_trip_python_peer.py (Python ctypes). Exits 0 when every byte matched, the peer exited 0
 * and the fd count is as it was; else prints what differed and exits 1. */
#define _GNU_SOURCE
#include "capi_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Frames sent (3 images, 3 tensors): more than each pool's 2 buffers, so buffers are reused. */
enum { kFrames = 6, kWidth = 24, kHeight = 10, kRows = 5, kCols = 9, kWaitMs = 20000 };

/* Byte `o` of frame `seq`; the peers compute the same. */
static uint8_t round_trip_byte(uint64_t seq, uint64_t o) { return (uint8_t)((seq * 37u + o * 11u + 5u) & 0xffu); }

static int64_t pts_of(uint64_t seq) { return (int64_t)seq * 40000000 + 7; }
static uint32_t flags_of(uint64_t seq) { return 0x1000u + (uint32_t)seq; }
enum { kDurationNs = 40000000 };

/* Fills `t` (contiguous) with frame `seq`'s bytes. */
static int fill(et_tensor* t, uint64_t seq) {
  et_map* m = NULL;
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_write(t, &m, &data, &size));
  for (size_t o = 0; o < size; ++o) ((uint8_t*)data)[o] = round_trip_byte(seq, o);
  et_map_release(m);
  return 0;
}

/* Checks `rows` rows of `row_bytes` bytes, `stride` apart, of `t` against frame `seq`'s bytes + 1 from offset
 * `first` on (the offset in the sent image or tensor). */
static int check_rows(const et_tensor* t, uint64_t seq, uint64_t first, uint64_t rows, uint64_t row_bytes,
                      uint64_t stride) {
  et_map* m = NULL;
  const void* data = NULL;
  size_t size = 0;
  CHECK_OK(et_tensor_map_read(t, &m, &data, &size));
  int bad = size < (rows - 1) * stride + row_bytes;
  if (bad) fprintf(stderr, "frame %llu: a map of %zu bytes, below %llu rows of %llu bytes %llu apart\n",
                   (unsigned long long)seq, size, (unsigned long long)rows, (unsigned long long)row_bytes,
                   (unsigned long long)stride);
  for (uint64_t r = 0; !bad && r < rows; ++r) {
    for (uint64_t c = 0; !bad && c < row_bytes; ++c) {
      const uint64_t o = r * stride + c;
      const uint8_t want = (uint8_t)(round_trip_byte(seq, first + o) + 1u);
      const uint8_t got = ((const uint8_t*)data)[o];
      if (got != want) {
        fprintf(stderr, "frame %llu: byte %llu (row %llu, column %llu) is %u, expected %u\n", (unsigned long long)seq,
                (unsigned long long)(first + o), (unsigned long long)r, (unsigned long long)c, got, want);
        bad = 1;
      }
    }
  }
  et_map_release(m);
  return bad;
}

/* The peer's copy of NV12 frame `seq`: the same layout, each plane's bytes + 1. */
static int check_image(const et_frame* frame, const et_image_layout* sent, uint64_t seq) {
  et_image_layout got;
  memset(&got, 0, sizeof got);
  got.struct_size = sizeof got;
  CHECK_OK(et_frame_get_layout(frame, &got));
  CHECK(got.format == sent->format && got.width == sent->width && got.height == sent->height &&
        got.plane_count == sent->plane_count);
  for (uint32_t p = 0; p < got.plane_count; ++p) {
    et_tensor* plane = NULL;
    CHECK_OK(et_frame_plane(frame, p, &plane));
    et_tensor_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    const et_status s = et_tensor_get_info(plane, &info);
    /* NV12: Y is [h, w], UV [h / 2, w / 2, 2], u8; the rows as the sender laid them out. */
    const uint64_t row_bytes = info.rank == 3 ? info.shape[1] * info.shape[2] : info.shape[1];
    const int bad = s != ET_OK || info.dtype != ET_DTYPE_U8 || info.strides_bytes[0] <= 0 ||
                    check_rows(plane, seq, sent->planes[p].offset_bytes, info.shape[0], row_bytes,
                               (uint64_t)info.strides_bytes[0]) != 0;
    et_tensor_release(plane);
    CHECK(!bad);
  }
  return 0;
}

/* The peer's copy of tensor frame `seq`: the same shape and dtype, every byte + 1. */
static int check_tensor(const et_tensor* t, uint64_t seq) {
  et_tensor_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_OK(et_tensor_get_info(t, &info));
  CHECK(info.dtype == ET_DTYPE_U16 && info.rank == 2 && info.shape[0] == kRows && info.shape[1] == kCols &&
        info.contiguous == 1 && info.packed_bytes == (uint64_t)kRows * kCols * 2);
  CHECK(check_rows(t, seq, 0, 1, info.packed_bytes, info.packed_bytes) == 0);
  return 0;
}

/* Starts argv[0..] with "--receive-fd <a> --send-fd <b>" appended; the child keeps only those two of ours
 * (the rest are CLOEXEC). Returns the pid, or -1. */
static pid_t start_peer(char** argv, int argc, int receive_fd, int send_fd) {
  char receive_arg[16], send_arg[16];
  snprintf(receive_arg, sizeof receive_arg, "%d", receive_fd);
  snprintf(send_arg, sizeof send_arg, "%d", send_fd);
  char** args = calloc((size_t)argc + 5, sizeof *args);
  if (args == NULL) return -1;
  for (int i = 0; i < argc; ++i) args[i] = argv[i];
  args[argc] = "--receive-fd";
  args[argc + 1] = receive_arg;
  args[argc + 2] = "--send-fd";
  args[argc + 3] = send_arg;
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    if (fcntl(receive_fd, F_SETFD, 0) != 0 || fcntl(send_fd, F_SETFD, 0) != 0) _exit(126);
    execv(args[0], args);
    fprintf(stderr, "exec %s failed\n", args[0]);
    _exit(127);
  }
  free(args);
  return pid;
}

static et_pool* make_pool(int image) {
  et_allocate_options a = {.struct_size = sizeof a, .memory = ET_MEMORY_SHM};
  et_pool_options o = {.struct_size = sizeof o, .max_buffers = 2, .allocate = &a, .name = "c-round-trip"};
  et_pool* pool = NULL;
  const uint64_t shape[2] = {kRows, kCols};
  const et_status s = image ? et_pool_create_image(kWidth, kHeight, ET_PIXEL_FORMAT_NV12, NULL, &o, &pool)
                            : et_pool_create(2, shape, ET_DTYPE_U16, &o, &pool);
  return s == ET_OK ? pool : NULL;
}

/* Sends frame `seq` from the image pool (even) or the tensor pool (odd); *layout gets an image's layout. */
static int send_one(et_channel_sender* sender, et_pool* images, et_pool* tensors, uint64_t seq,
                    et_image_layout* layout) {
  const int image = seq % 2 == 0;
  et_tensor* t = NULL;
  CHECK_OK(et_channel_sender_acquire(sender, image ? images : tensors, kWaitMs, &t));
  const int filled = fill(t, seq);
  et_channel_send_options o = {.struct_size = sizeof o, .has = ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION,
                               .flags = flags_of(seq), .pts_ns = pts_of(seq), .duration_ns = kDurationNs};
  uint64_t sent = UINT64_MAX;
  et_status s = ET_OK;
  if (filled == 0 && image) {
    memset(layout, 0, sizeof *layout);
    layout->struct_size = sizeof *layout;
    et_frame* frame = NULL;
    s = et_tensor_get_image_layout(t, layout);
    if (s == ET_OK) s = et_frame_from_tensor(t, &frame);
    if (s == ET_OK) s = et_channel_sender_send_frame(sender, frame, &o, &sent);
    et_frame_release(frame);
  } else if (filled == 0) {
    s = et_channel_sender_send(sender, t, &o, &sent);
  }
  et_tensor_release(t); /* the pool has it back once the peer releases the frame */
  CHECK(filled == 0);
  CHECK_OK(s);
  CHECK(sent == seq);
  return 0;
}

/* Receives the peer's copy of frame `seq` and checks it. */
static int receive_one(et_channel_receiver* receiver, uint64_t seq, const et_image_layout* layout) {
  et_channel_delivery d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  CHECK_OK(et_channel_receiver_receive(receiver, kWaitMs, &d));
  int bad = d.end_of_stream != 0 || d.sequence != seq || d.has != (ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION) ||
            d.pts_ns != pts_of(seq) || d.duration_ns != kDurationNs || d.flags != flags_of(seq);
  if (bad) fprintf(stderr,
                   "frame %llu came back as sequence %llu, end %u, has %#x, pts %lld, duration %lld, flags %#x\n",
                   (unsigned long long)seq, (unsigned long long)d.sequence, d.end_of_stream, d.has,
                   (long long)d.pts_ns, (long long)d.duration_ns, d.flags);
  if (!bad && seq % 2 == 0) bad = d.frame == NULL || d.tensor != NULL || check_image(d.frame, layout, seq) != 0;
  if (!bad && seq % 2 == 1) bad = d.tensor == NULL || d.frame != NULL || check_tensor(d.tensor, seq) != 0;
  et_tensor_release(d.tensor);
  et_frame_release(d.frame);
  CHECK(!bad);
  return 0;
}

static int round_trip(int argc, char** argv) {
  const int fds_before = open_fd_count();
  int32_t forward[2] = {-1, -1}, back[2] = {-1, -1};
  CHECK_OK(et_channel_socket_pair(forward));
  CHECK_OK(et_channel_socket_pair(back));
  /* Before any handle exists: a sender or receiver may not be used across fork(). */
  const pid_t peer = start_peer(argv, argc, forward[1], back[0]);
  close(forward[1]);
  close(back[0]);
  if (peer < 0) {
    close(forward[0]);
    close(back[1]);
  }
  CHECK(peer > 0);
  et_channel_sender_options so = {.struct_size = sizeof so, .use_send_timeout = 1, .send_timeout_ms = kWaitMs,
                                  .name = "c-to-peer"};
  et_channel_receiver_options ro = {.struct_size = sizeof ro, .name = "peer-to-c"};
  et_channel_sender* sender = NULL;
  et_channel_receiver* receiver = NULL;
  CHECK_OK(et_channel_sender_create_adopt(forward[0], &so, &sender));
  CHECK_OK(et_channel_receiver_create_adopt(back[1], &ro, &receiver));
  et_pool* images = make_pool(1);
  et_pool* tensors = make_pool(0);
  CHECK(images != NULL && tensors != NULL);
  /* One frame out at a time: the peer holds ours while it waits for a buffer of its own pool. */
  et_image_layout layout;
  memset(&layout, 0, sizeof layout);
  for (uint64_t seq = 0; seq < kFrames; ++seq) {
    CHECK(send_one(sender, images, tensors, seq, &layout) == 0);
    CHECK(receive_one(receiver, seq, &layout) == 0);
  }
  CHECK_OK(et_channel_sender_end_stream(sender));
  CHECK_OK(et_channel_sender_drain(sender, kWaitMs));
  et_channel_delivery d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  CHECK_OK(et_channel_receiver_receive(receiver, kWaitMs, &d));
  CHECK(d.end_of_stream == 1 && d.sequence == kFrames);
  int status = 0;
  CHECK(waitpid(peer, &status, 0) == peer);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  et_channel_sender_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(et_channel_sender_get_stats(sender, &st));
  CHECK(st.frames_sent == kFrames && st.releases == kFrames && st.frames_out == 0 && st.frames_dropped == 0);
  et_channel_sender_release(sender);
  et_channel_receiver_release(receiver);
  et_pool_release(images);
  et_pool_release(tensors);
  const int fds_after = open_fd_count();
  if (fds_after != fds_before) fprintf(stderr, "%d fds open before, %d after\n", fds_before, fds_after);
  CHECK(fds_after == fds_before);
  printf("ok: %d frames (NV12 %ux%u, u16 [%u, %u]) to %s and back, every byte checked\n", kFrames, kWidth,
         kHeight, kRows, kCols, argv[0]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <peer program> [<peer arguments>...]\n", argv[0]);
    return 2;
  }
  return round_trip(argc - 1, argv + 1);
}
