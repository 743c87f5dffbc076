/* SPDX-License-Identifier: Apache-2.0 */
/* The elements in pipelines, checked pixel by pixel (C11; the C API and GStreamer only):
 * - edgetensorsrc: a C producer (listener, sender) sends NV12 frames of a known pattern; the pipeline
 *   `edgetensorsrc ! appsink` gets every frame with its pixels, as fd memory (no copy), then EOS; a producer
 *   that dies without ending the stream becomes an element error naming it, and nothing hangs.
 * - edgetensorsink: `videotestsrc pattern=ball ! edgetensorsink` feeds a C consumer (connect, receiver),
 *   which checks every frame against the same pattern rendered to appsink by a reference pipeline; with the
 *   sink's pool taken upstream the stats show 0 copies, with the ALLOCATION query dropped (identity
 *   drop-allocation) every frame is one copy, and the pixels are the same. Either way the sink's buffers are
 *   reused: the consumer sees a few buffer keys, not one per frame, also across a caps change; a copy pool
 *   whose buffers consumers all hold drops frames (drop policy at once, block after its wait) and never
 *   stalls the pipeline. */
#include "../capi/capi_check.h"

#include <gst/allocators/allocators.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kWidth = 320, kHeight = 240, kFrames = 30 };
enum { PATTERN = 0, PLAIN = 1, TWO_BUFFER = 2, POOL_RGB = 3, PADDED = 4 };
enum { PTS_NONE = 0, PTS_CLOCK = 1, PTS_OWN = 2, PTS_EPOCH = 3 };
/* TWO_BUFFER frames: NV12 with each plane in a buffer of its own, rows kWidth bytes apart (GStreamer's own
 * layout once the two memories are one after the other); PADDED frames: the same with rows kPaddedStride
 * bytes apart (a layout only GstVideoMeta can describe). */
enum { kPaddedStride = 384 };
/* POOL_RGB frames: RGB kOddWidth x kHeight from an image pool with GStreamer's 4-byte rows (484-byte stride,
 * 483 bytes a row): its buffers end with the last row's last byte, one short of GStreamer's size. */
enum { kOddWidth = 161 };

static uint8_t pattern(uint64_t sequence, unsigned plane, unsigned row, unsigned col) {
  return (uint8_t)((sequence * 13u + plane * 50u + row * 3u + col * 7u) & 0xffu);
}

/* NV12's planes: rows and bytes per row. */
static unsigned plane_rows(unsigned plane) { return plane == 0 ? kHeight : (kHeight + 1) / 2; }
static unsigned plane_row_bytes(unsigned plane) { return plane == 0 ? kWidth : (kWidth + 1) / 2 * 2; }

/* A new NV12 image holding frame `sequence`'s pattern. */
static et_tensor* pattern_image(uint64_t sequence) {
  et_allocate_options options = {0};
  options.struct_size = sizeof options;
  options.memory = ET_MEMORY_SHM;
  et_tensor* image = NULL;
  if (et_tensor_allocate_image(kWidth, kHeight, ET_PIXEL_FORMAT_NV12, NULL, &options, &image) != ET_OK) return NULL;
  et_image_layout layout = {0};
  layout.struct_size = sizeof layout;
  et_map* map = NULL;
  void* data = NULL;
  size_t size = 0;
  if (et_tensor_get_image_layout(image, &layout) != ET_OK || et_tensor_map_write(image, &map, &data, &size) != ET_OK) {
    et_tensor_release(image);
    return NULL;
  }
  for (unsigned p = 0; p < 2; ++p)
    for (unsigned r = 0; r < plane_rows(p); ++r) {
      uint8_t* row = (uint8_t*)data + layout.planes[p].offset_bytes + r * layout.planes[p].row_stride_bytes;
      for (unsigned c = 0; c < plane_row_bytes(p); ++c) row[c] = pattern(sequence, p, r, c);
    }
  et_map_release(map);
  return image;
}

/* Mismatching bytes of a GStreamer NV12 frame against frame `sequence`'s pattern. */
static long mismatches(const GstVideoFrame* frame, uint64_t sequence) {
  long bad = 0;
  if (GST_VIDEO_FRAME_FORMAT(frame) == GST_VIDEO_FORMAT_RGB) { /* a POOL_RGB frame */
    const uint8_t* data = GST_VIDEO_FRAME_PLANE_DATA(frame, 0);
    for (unsigned r = 0; r < (unsigned)GST_VIDEO_FRAME_HEIGHT(frame); ++r)
      for (unsigned c = 0; c < (unsigned)GST_VIDEO_FRAME_WIDTH(frame) * 3; ++c)
        bad += data[(size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0) + c] != pattern(sequence, 0, r, c);
    return bad;
  }
  for (unsigned p = 0; p < 2; ++p) {
    const uint8_t* data = GST_VIDEO_FRAME_PLANE_DATA(frame, p);
    const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(frame, p);
    for (unsigned r = 0; r < plane_rows(p); ++r)
      for (unsigned c = 0; c < plane_row_bytes(p); ++c) bad += data[(size_t)r * stride + c] != pattern(sequence, p, r, c);
  }
  return bad;
}

struct producer {
  char path[108];
  int frames;         /* frames to send, per round */
  int end_stream;     /* 1: the last round ends the stream; 0: it vanishes (a producer killed mid-stream) */
  int rounds;         /* producers one after the other on the same path; all but the last vanish */
  int kind;           /* what it sends: PATTERN, TWO_BUFFER, PADDED or POOL_RGB frames, a PLAIN tensor (no layout) */
  int pool_buffers;   /* POOL_RGB: the pool's buffers */
  int pts_mode;       /* the pts sent: PTS_NONE, PTS_CLOCK (CLOCK_MONOTONIC, 2 ms before the send), PTS_OWN (i x 33.3 ms),
                       * PTS_EPOCH (CLOCK_REALTIME) */
  int64_t sent_pts[64]; /* of the first 64 frames */
  int status;         /* 0 when every call succeeded */
  pthread_t thread;
};

/* Sends what edgetensorsrc refuses: a tensor with no image layout. */
static et_status send_plain(et_channel_sender* sender) {
  et_allocate_options options = {0};
  options.struct_size = sizeof options;
  options.memory = ET_MEMORY_SHM;
  const uint64_t size = (uint64_t)kWidth * kHeight;
  et_tensor* buffer = NULL;
  et_status status = et_tensor_allocate(1, &size, ET_DTYPE_U8, &options, &buffer);
  uint64_t sequence = 0;
  if (status == ET_OK) status = et_channel_sender_send(sender, buffer, NULL, &sequence);
  et_tensor_release(buffer);
  return status;
}

/* Frame `sequence`'s NV12 pattern with each plane in a buffer of its own (memfds), rows `stride` bytes apart
 * (NULL on failure). */
static et_frame* two_buffer_frame(uint64_t sequence, unsigned stride) {
  et_allocate_options options = {0};
  options.struct_size = sizeof options;
  options.memory = ET_MEMORY_SHM;
  et_tensor* buffers[2] = {NULL, NULL};
  int32_t fds[2] = {-1, -1};
  et_status status = ET_OK;
  for (unsigned p = 0; p < 2 && status == ET_OK; ++p) {
    const uint64_t size = (uint64_t)stride * plane_rows(p);
    et_map* map = NULL;
    void* data = NULL;
    size_t mapped = 0;
    status = et_tensor_allocate(1, &size, ET_DTYPE_U8, &options, &buffers[p]);
    if (status == ET_OK) status = et_tensor_map_write(buffers[p], &map, &data, &mapped);
    if (status != ET_OK) break;
    memset(data, 0xee, mapped); /* the row padding: never in a frame GStreamer reads */
    for (unsigned r = 0; r < plane_rows(p); ++r)
      for (unsigned c = 0; c < plane_row_bytes(p); ++c)
        ((uint8_t*)data)[(size_t)r * stride + c] = pattern(sequence, p, r, c);
    et_map_release(map);
    status = et_tensor_export_fd(buffers[p], &fds[p]);
  }
  et_image_layout layout = {0};
  layout.struct_size = sizeof layout;
  layout.format = ET_PIXEL_FORMAT_NV12;
  layout.width = kWidth;
  layout.height = kHeight;
  layout.planes[0].row_stride_bytes = layout.planes[1].row_stride_bytes = stride;
  et_frame* frame = NULL;
  if (status == ET_OK) status = et_frame_import_planes_dup(fds, 2, &layout, NULL, &frame);
  for (unsigned p = 0; p < 2; ++p) {
    if (fds[p] >= 0) close(fds[p]);
    et_tensor_release(buffers[p]);
  }
  return status == ET_OK ? frame : NULL;
}

/* The next POOL_RGB frame: a buffer of `pool` holding frame `sequence`'s pattern (NULL on failure). */
static et_tensor* pool_rgb_image(et_channel_sender* sender, et_pool* pool, uint64_t sequence) {
  et_tensor* image = NULL;
  if (et_channel_sender_acquire(sender, pool, 5000, &image) != ET_OK) return NULL;
  et_image_layout layout = {0};
  layout.struct_size = sizeof layout;
  et_map* map = NULL;
  void* data = NULL;
  size_t size = 0;
  if (et_tensor_get_image_layout(image, &layout) != ET_OK || et_tensor_map_write(image, &map, &data, &size) != ET_OK) {
    et_tensor_release(image);
    return NULL;
  }
  for (unsigned r = 0; r < kHeight; ++r)
    for (unsigned c = 0; c < kOddWidth * 3; ++c)
      ((uint8_t*)data)[r * layout.planes[0].row_stride_bytes + c] = pattern(sequence, 0, r, c);
  et_map_release(map);
  return image;
}

/* One producer on p->path: accepts one receiver, sends p->frames frames, then ends the stream or vanishes. */
static int produce_round(struct producer* p, int end_stream) {
  int rc = 1;
  et_channel_listener* listener = NULL;
  int32_t fd = -1;
  et_channel_sender* sender = NULL;
  et_pool* pool = NULL;
  if (p->kind == POOL_RGB) {
    et_image_options rows = {0};
    rows.struct_size = sizeof rows;
    rows.row_alignment_bytes = 4;
    et_allocate_options shm = {0};
    shm.struct_size = sizeof shm;
    shm.memory = ET_MEMORY_SHM; /* a memfd of the image's bytes (a DMA-BUF would be page-rounded) */
    et_pool_options options = {0};
    options.struct_size = sizeof options;
    options.max_buffers = (uint32_t)p->pool_buffers;
    options.allocate = &shm;
    if (et_pool_create_image(kOddWidth, kHeight, ET_PIXEL_FORMAT_RGB, &rows, &options, &pool) != ET_OK) goto out;
  }
  if (et_channel_listener_create(p->path, NULL, &listener) != ET_OK) goto out;
  if (et_channel_listener_accept(listener, 10000, &fd) != ET_OK) goto out;
  if (et_channel_sender_create_adopt(fd, NULL, &sender) != ET_OK) goto out;
  /* Timed frames: after the consumer's pipeline has played (base time set), most of them. */
  if (p->pts_mode != PTS_NONE) g_usleep(200 * 1000);
  for (int i = 0; i < p->frames; ++i) {
    if (p->kind == PLAIN) {
      if (send_plain(sender) != ET_OK) goto out;
      continue;
    }
    et_tensor* image = NULL;
    et_frame* frame = NULL;
    if (p->kind == TWO_BUFFER || p->kind == PADDED)
      frame = two_buffer_frame((uint64_t)i, p->kind == PADDED ? kPaddedStride : kWidth);
    else
      image = p->kind == POOL_RGB ? pool_rgb_image(sender, pool, (uint64_t)i) : pattern_image((uint64_t)i);
    et_channel_send_options options = {0};
    options.struct_size = sizeof options;
    options.has = ET_CHANNEL_HAS_DURATION;
    options.duration_ns = 33333333;
    if (p->pts_mode != PTS_NONE) {
      struct timespec now;
      clock_gettime(p->pts_mode == PTS_EPOCH ? CLOCK_REALTIME : CLOCK_MONOTONIC, &now);
      const int64_t ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
      options.has |= ET_CHANNEL_HAS_PTS;
      options.pts_ns = p->pts_mode == PTS_CLOCK ? ns - 2000000 : p->pts_mode == PTS_OWN ? (int64_t)i * 33333333 : ns;
      if (i < 64) p->sent_pts[i] = options.pts_ns;
    }
    uint64_t sequence = 0;
    const et_status status = frame != NULL ? ET_OK : image == NULL ? ET_INTERNAL : et_frame_from_tensor(image, &frame);
    const et_status sent = status == ET_OK ? et_channel_sender_send_frame(sender, frame, &options, &sequence) : status;
    et_frame_release(frame);
    et_tensor_release(image);
    if (sent != ET_OK) {
      fprintf(stderr, "producer: frame %d: %s\n", i, et_last_error_message());
      goto out;
    }
  }
  if (end_stream && et_channel_sender_end_stream(sender) != ET_OK) goto out;
  /* Before the sender goes, the consumer has everything: frames still in the socket would be lost with it
   * (a receiver whose release meets a closed peer closes too). Not drain(): appsink keeps its preroll
   * buffer, a frame, until the consumer's pipeline stops. */
  for (int waits = 0; waits < 500; ++waits) {
    et_channel_sender_stats stats = {0};
    stats.struct_size = sizeof stats;
    if (et_channel_sender_get_stats(sender, &stats) != ET_OK || stats.frames_out <= 1) break;
    g_usleep(10000);
  }
  rc = 0;
out:
  if (rc != 0) fprintf(stderr, "producer failed: %s\n", et_last_error_message());
  /* The listener first: a consumer reconnecting as the sender goes must not reach this listener's queue. */
  et_channel_listener_release(listener);
  et_channel_sender_release(sender);
  et_pool_release(pool);
  return rc;
}

static void* produce(void* arg) {
  struct producer* p = arg;
  p->status = 0;
  for (int round = 0; round < p->rounds && p->status == 0; ++round)
    p->status = produce_round(p, round + 1 == p->rounds && p->end_stream);
  return NULL;
}

static void start_producer_pool(struct producer* p, int frames, int end_stream, int rounds, int kind, int pool_buffers,
                                int pts_mode) {
  snprintf(p->path, sizeof p->path, "@edgetensor-gst-test-%d-%d-%d-%d-%d", (int)getpid(), end_stream, rounds, kind,
           pts_mode);
  p->pts_mode = pts_mode;
  p->kind = kind;
  p->pool_buffers = pool_buffers;
  p->frames = frames;
  p->end_stream = end_stream;
  p->rounds = rounds;
  pthread_create(&p->thread, NULL, produce, p);
}

static void start_producer_of(struct producer* p, int frames, int end_stream, int rounds, int kind) {
  start_producer_pool(p, frames, end_stream, rounds, kind, 4, PTS_NONE);
}

static void start_producer(struct producer* p, int frames, int end_stream, int rounds) {
  start_producer_of(p, frames, end_stream, rounds, PATTERN);
}

/* `edgetensorsrc ! appsink`: pulls until EOS or an error; counts frames whose pixels all match. */
struct pulled {
  int frames, matching, in_order, fd_memory, discont, eos;
  GstClockTime pts[64], base_time; /* the first 64 buffers' pts; the pipeline's base time */
  int with_meta, two_memories; /* buffers with GstVideoMeta; buffers of two memories */
  int fps_n, fps_d;  /* of the last sample's caps */
  char error[512];
  guint64 announces_live, announces_stopped; /* the src's stats.announces before and after going to NULL */
};

static GstElement* src_pipeline(const char* path, const char* properties, GstElement** sink) {
  char* text = g_strdup_printf("edgetensorsrc name=src socket-path=%s connect-timeout=10000 %s ! appsink name=out sync=false "
                               "enable-last-sample=false", path, properties);
  GError* error = NULL;
  GstElement* pipeline = gst_parse_launch(text, &error);
  g_free(text);
  if (pipeline == NULL) {
    fprintf(stderr, "gst_parse_launch: %s\n", error->message);
    g_error_free(error);
    return NULL;
  }
  *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  return pipeline;
}

/* pull_all keeps a copy (gst_buffer_copy: the same memory) of the first `hold_copies` buffers until EOS, then
 * counts those whose pixels are still their frame's in `held_right`; with `hold_rows`, a copy of only the first
 * hold_rows rows of an RGB (POOL_RGB) frame (gst_buffer_copy_region: a share of part of the memory), whose
 * bytes are checked. */
static int hold_copies;
static int hold_rows;
static int held_right;

/* Bytes of the first `rows` rows of POOL_RGB frame `sequence` that differ in `buffer` (-1: unreadable). */
static long rgb_rows_mismatches(GstBuffer* buffer, uint64_t sequence, unsigned rows) {
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return -1;
  const unsigned stride = 484; /* kOddWidth x 3, rounded up to 4 */
  long bad = map.size < (gsize)stride * rows ? -1 : 0;
  for (unsigned r = 0; bad >= 0 && r < rows; ++r)
    for (unsigned c = 0; c < kOddWidth * 3; ++c) bad += map.data[(size_t)r * stride + c] != pattern(sequence, 0, r, c);
  gst_buffer_unmap(buffer, &map);
  return bad;
}

static void pull_all(GstElement* pipeline, GstElement* sink, struct pulled* out) {
  memset(out, 0, sizeof *out);
  GstSample* held[8] = {NULL};
  int holding = 0;
  GstBus* bus = gst_element_get_bus(pipeline);
  for (;;) {
    GstSample* sample = NULL;
    g_signal_emit_by_name(sink, "try-pull-sample", (GstClockTime)(5 * GST_SECOND), &sample);
    if (sample == NULL) break; /* EOS, error or nothing for 5 s */
    GstBuffer* buffer = gst_sample_get_buffer(sample);
    GstVideoInfo info;
    GstVideoFrame frame;
    out->fd_memory += gst_is_fd_memory(gst_buffer_peek_memory(buffer, 0));
    out->with_meta += gst_buffer_get_video_meta(buffer) != NULL;
    out->two_memories += gst_buffer_n_memory(buffer) == 2;
    if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample))) {
      out->fps_n = GST_VIDEO_INFO_FPS_N(&info);
      out->fps_d = GST_VIDEO_INFO_FPS_D(&info);
    }
    if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) && gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ)) {
      const long bad = mismatches(&frame, GST_BUFFER_OFFSET(buffer));
      if (bad != 0) fprintf(stderr, "frame %llu: %ld bytes differ\n", (unsigned long long)GST_BUFFER_OFFSET(buffer), bad);
      out->matching += bad == 0;
      out->in_order += GST_BUFFER_OFFSET(buffer) == (guint64)out->frames;
      out->discont += GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_DISCONT);
      gst_video_frame_unmap(&frame);
    }
    if (out->frames < 64) out->pts[out->frames] = GST_BUFFER_PTS(buffer);
    ++out->frames;
    if (holding < hold_copies && holding < 8) {
      GstBuffer* copy = hold_rows == 0 ? gst_buffer_copy(buffer)
                                       : gst_buffer_copy_region(buffer, GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS |
                                                                GST_BUFFER_COPY_MEMORY, 0, (gsize)484 * hold_rows);
      held[holding++] = gst_sample_new(copy, gst_sample_get_caps(sample), NULL, NULL);
      gst_buffer_unref(copy);
    }
    gst_sample_unref(sample);
  }
  out->base_time = gst_element_get_base_time(pipeline);
  held_right = 0;
  for (int i = 0; i < holding; ++i) {
    GstBuffer* copy = gst_sample_get_buffer(held[i]);
    GstVideoInfo info;
    GstVideoFrame frame;
    if (hold_rows != 0) {
      const long bad = rgb_rows_mismatches(copy, GST_BUFFER_OFFSET(copy), (unsigned)hold_rows);
      if (bad != 0) fprintf(stderr, "held rows of frame %llu: %ld bytes differ\n", (unsigned long long)GST_BUFFER_OFFSET(copy), bad);
      held_right += bad == 0;
    } else if (gst_video_info_from_caps(&info, gst_sample_get_caps(held[i])) &&
        gst_video_frame_map(&frame, &info, copy, GST_MAP_READ)) {
      const long bad = mismatches(&frame, GST_BUFFER_OFFSET(copy));
      if (bad != 0) fprintf(stderr, "held copy of frame %llu: %ld bytes differ\n", (unsigned long long)GST_BUFFER_OFFSET(copy), bad);
      held_right += bad == 0;
      gst_video_frame_unmap(&frame);
    }
    gst_sample_unref(held[i]);
  }
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS) out->eos = 1;
  if (message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    GError* error = NULL;
    gst_message_parse_error(message, &error, NULL);
    snprintf(out->error, sizeof out->error, "%s", error->message);
    g_error_free(error);
  }
  if (message != NULL) gst_message_unref(message);
  gst_object_unref(bus);
}

/* Answers the ALLOCATION query for appsink, saying it reads GstVideoMeta (appsink itself does not). */
static GstPadProbeReturn answer_with_video_meta(GstPad* pad, GstPadProbeInfo* info, gpointer data) {
  (void)pad;
  (void)data;
  GstQuery* query = GST_PAD_PROBE_INFO_QUERY(info);
  if (GST_QUERY_TYPE(query) != GST_QUERY_ALLOCATION) return GST_PAD_PROBE_OK;
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  return GST_PAD_PROBE_HANDLED;
}

/* `edgetensorsrc <properties> ! appsink` against `producer` until EOS or an error, appsink saying it reads
 * GstVideoMeta when `video_meta`; *stat gets the src's stats field `stat_name` (0 when absent). */
static int run_src_to(struct producer* producer, const char* properties, int video_meta, struct pulled* got,
                      const char* stat_name, guint64* stat) {
  GstElement* sink = NULL;
  GstElement* pipeline = src_pipeline(producer->path, properties, &sink);
  CHECK(pipeline != NULL);
  if (video_meta) {
    GstPad* pad = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM, answer_with_video_meta, NULL, NULL);
    gst_object_unref(pad);
  }
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  pull_all(pipeline, sink, got);
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstStructure* stats = NULL;
  g_object_get(src, "stats", &stats, NULL);
  *stat = 0;
  got->announces_live = got->announces_stopped = 0;
  if (stats != NULL) gst_structure_get_uint64(stats, stat_name, stat);
  if (stats != NULL) gst_structure_get_uint64(stats, "announces", &got->announces_live);
  if (stats != NULL) gst_structure_free(stats);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  /* The receivers' counters stay in stats after stop (and across a reconnect). */
  g_object_get(src, "stats", &stats, NULL);
  if (stats != NULL) gst_structure_get_uint64(stats, "announces", &got->announces_stopped);
  if (stats != NULL) gst_structure_free(stats);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  pthread_join(producer->thread, NULL);
  return 0;
}

static int run_src(struct producer* producer, const char* properties, struct pulled* got, const char* stat_name,
                   guint64* stat) {
  return run_src_to(producer, properties, 0, got, stat_name, stat);
}

static int case_src_pushes_every_frame_with_its_pixels(void) {
  struct producer producer;
  start_producer(&producer, kFrames, 1, 1);
  struct pulled got;
  guint64 wrapped = 0;
  CHECK(run_src(&producer, "", &got, "memories-wrapped", &wrapped) == 0);
  printf("src: %d frames, %d with every pixel right, %d as fd memory, EOS %d, %llu buffers wrapped, caps framerate "
         "%d/%d; error '%s'\n", got.frames, got.matching, got.fd_memory, got.eos, (unsigned long long)wrapped, got.fps_n,
         got.fps_d, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == kFrames && got.matching == kFrames && got.in_order == kFrames && got.fd_memory == kFrames);
  CHECK(got.discont == 1);
  CHECK(got.fps_n == 30 && got.fps_d == 1); /* guessed from the frames' 33.3 ms duration */
  CHECK(got.eos == 1 && got.error[0] == '\0');
  return 0;
}

static int case_src_reports_a_dead_producer(void) {
  struct producer producer;
  start_producer(&producer, 3, 0, 1);
  struct pulled got;
  guint64 frames = 0;
  CHECK(run_src(&producer, "", &got, "frames", &frames) == 0);
  printf("src, producer gone after 3 frames: %d frames, %d right, EOS %d, error '%s'\n", got.frames, got.matching,
         got.eos, got.error);
  CHECK(got.frames == 3 && got.matching == 3 && got.eos == 0 && frames == 3);
  CHECK(strstr(got.error, "producer is gone") != NULL && strstr(got.error, "Unavailable") != NULL);
  return 0;
}

/* An image pool's buffer ends with its last row's last byte, one byte short of GStreamer's size of the image
 * (which pads the last row to its stride): the src still pushes every frame, with every pixel. */
static int case_src_accepts_a_buffer_without_the_last_rows_padding(void) {
  struct producer producer;
  start_producer_of(&producer, 10, 1, 1, POOL_RGB);
  struct pulled got;
  guint64 wrapped = 0;
  CHECK(run_src(&producer, "", &got, "memories-wrapped", &wrapped) == 0);
  printf("src, RGB %dx%d from an image pool: %d frames, %d with every pixel right, EOS %d, %llu buffers wrapped; "
         "error '%s'\n", kOddWidth, kHeight, got.frames, got.matching, got.eos, (unsigned long long)wrapped, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == 10 && got.matching == 10 && got.in_order == 10 && got.eos == 1 && got.error[0] == '\0');
  CHECK(wrapped >= 1 && wrapped <= 4); /* the pool's buffers, each wrapped once */
  return 0;
}

/* The src pushes most frames in a GstBuffer of an earlier frame (its memories, its GstVideoMeta), each with
 * its own pixels; a buffer whose memory a copy still shares is never reused, nor its frame released, while
 * the copy lives: the copies of the first 2 frames, held until EOS, still hold those frames' pixels. The
 * producer's pool of 4 (2 held, appsink's preroll frame, 1 more) hands out the buffer back last first, so a
 * frame released too early would be overwritten by the next. */
static int case_src_reuses_its_buffers_but_not_one_a_copy_shares(void) {
  struct producer producer;
  start_producer_pool(&producer, 24, 1, 1, POOL_RGB, 4, PTS_NONE);
  struct pulled got;
  guint64 reused = 0;
  hold_copies = 2;
  CHECK(run_src_to(&producer, "", 1, &got, "buffers-reused", &reused) == 0); /* appsink "reads GstVideoMeta": no copy */
  hold_copies = 0;
  printf("src, RGB from a pool of 4 buffers, copies of the first 2 held: %d frames, %d right, EOS %d, %llu GstBuffers "
         "reused, %d held copies right; error '%s'\n", got.frames, got.matching, got.eos, (unsigned long long)reused,
         held_right, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == 24 && got.matching == 24 && got.in_order == 24 && got.eos == 1 && got.error[0] == '\0');
  CHECK(held_right == 2);
  /* Each buffer new once, the held ones never again, and a buffer whose next frame arrives before GStreamer
   * freed it (the producer resends it once the release is out, which goes first) new again: half, here. */
  CHECK(reused >= 24 / 2);
  /* To appsink without GstVideoMeta these frames (one byte short of GStreamer's size) are each copied: the copy
   * is pushed, so none counts as reused, though the src still keeps its own buffers. */
  start_producer_pool(&producer, 24, 1, 1, POOL_RGB, 4, PTS_NONE);
  CHECK(run_src(&producer, "", &got, "buffers-reused", &reused) == 0);
  printf("src, the same to appsink without GstVideoMeta: %d frames, %d right, %llu GstBuffers reused\n", got.frames,
         got.matching, (unsigned long long)reused);
  CHECK(producer.status == 0 && got.frames == 24 && got.matching == 24 && reused == 0);
  return 0;
}

/* The same with copies of only the first 4 rows of the first 2 frames (gst_buffer_copy_region: a share of part of
 * the frame's memory, as GstAdapter and rtpgstpay make): the frames stay held while those parts live. Before
 * 0.7.7 such a share was a child of the buffer's first memory, not the frame's, and the producer overwrote it. */
static int case_src_keeps_a_frame_while_part_of_it_is_held(void) {
  struct producer producer;
  start_producer_pool(&producer, 24, 1, 1, POOL_RGB, 4, PTS_NONE);
  struct pulled got;
  guint64 reused = 0;
  hold_copies = 2;
  hold_rows = 4;
  CHECK(run_src_to(&producer, "", 1, &got, "buffers-reused", &reused) == 0);
  hold_copies = hold_rows = 0;
  printf("src, RGB from a pool of 4 buffers, the first 4 rows of the first 2 frames held: %d frames, %d right, EOS %d, "
         "%d held parts right; error '%s'\n", got.frames, got.matching, got.eos, held_right, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == 24 && got.matching == 24 && got.in_order == 24 && got.eos == 1 && got.error[0] == '\0');
  CHECK(held_right == 2);
  return 0;
}

/* The src re-bases the producer's pts on its pipeline's base time when that pts is on CLOCK_MONOTONIC (a
 * capture time): each buffer's pts is the pts sent minus the base time. A pts on the producer's own timeline
 * (from 0) or on CLOCK_REALTIME is not (it gave every buffer pts 0, or one 56 years ahead): the send stamp
 * stands in, so pts still advance with the frames, and stay near the pipeline's running time. */
static int case_src_rebases_pts_from_any_timeline(void) {
  static const char* const names[] = {"", "CLOCK_MONOTONIC", "own, from 0", "CLOCK_REALTIME"};
  for (int mode = PTS_CLOCK; mode <= PTS_EPOCH; ++mode) {
    struct producer producer;
    start_producer_pool(&producer, 12, 1, 1, PATTERN, 4, mode);
    struct pulled got;
    guint64 frames = 0;
    CHECK(run_src(&producer, "", &got, "frames", &frames) == 0);
    /* Frames sent before the pipeline played (the producer sends once connected) are before its base time: pts 0. */
    int zero = 0, eligible = 0, exact = 0, increasing = 0;
    for (int i = 0; i < got.frames && i < 64; ++i) {
      const int64_t sent = producer.sent_pts[i];
      zero += got.pts[i] == 0;
      eligible += sent >= (int64_t)got.base_time;
      exact += sent >= (int64_t)got.base_time && got.pts[i] == (GstClockTime)(sent - (int64_t)got.base_time);
      increasing += i > 0 && got.pts[i - 1] != 0 && got.pts[i] > got.pts[i - 1];
    }
    printf("src, pts %s: %d frames, %d right, EOS %d; pts 0 (sent before the pipeline played) %d, then %d increasing, "
           "last %.3f ms; %d of %d sent after the base time exactly the pts sent minus it\n", names[mode], got.frames,
           got.matching, got.eos, zero, increasing, (double)got.pts[got.frames - 1] / 1e6, exact, eligible);
    CHECK(producer.status == 0 && got.frames == 12 && got.matching == 12 && got.eos == 1);
    CHECK(zero < 12 - 4 && increasing == 12 - 1 - zero); /* after the first non-zero pts, each one later */
    CHECK(got.pts[11] < 60 * GST_SECOND);                /* near the running time, not hours or years ahead */
    if (mode == PTS_CLOCK) CHECK(exact == eligible && exact >= 4);
  }
  return 0;
}

/* A GstSample of frame `sequence`'s NV12 pattern in GStreamer's default layout. */
static GstSample* pattern_sample(uint64_t sequence) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, kWidth, kHeight);
  GstBuffer* buffer = gst_buffer_new_allocate(NULL, info.size, NULL);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE)) return NULL;
  for (unsigned p = 0; p < 2; ++p)
    for (unsigned r = 0; r < plane_rows(p); ++r) {
      uint8_t* row = (uint8_t*)GST_VIDEO_FRAME_PLANE_DATA(&frame, p) + (size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
      for (unsigned c = 0; c < plane_row_bytes(p); ++c) row[c] = pattern(sequence, p, r, c);
    }
  gst_video_frame_unmap(&frame);
  GstCaps* caps = gst_video_info_to_caps(&info);
  GstSample* sample = gst_sample_new(buffer, caps, NULL, NULL);
  gst_caps_unref(caps);
  gst_buffer_unref(buffer);
  return sample;
}

/* Bytes of two RGB samples that differ (-1: unreadable or another size). */
static long rgb_mismatches(GstSample* a, GstSample* b) {
  GstVideoInfo ia, ib;
  GstVideoFrame fa, fb;
  if (!gst_video_info_from_caps(&ia, gst_sample_get_caps(a)) || !gst_video_info_from_caps(&ib, gst_sample_get_caps(b)) ||
      ia.width != ib.width || ia.height != ib.height)
    return -1;
  if (!gst_video_frame_map(&fa, &ia, gst_sample_get_buffer(a), GST_MAP_READ)) return -1;
  if (!gst_video_frame_map(&fb, &ib, gst_sample_get_buffer(b), GST_MAP_READ)) {
    gst_video_frame_unmap(&fa);
    return -1;
  }
  long bad = 0;
  for (int r = 0; r < ia.height; ++r)
    for (int c = 0; c < ia.width * 3; ++c)
      bad += ((const uint8_t*)GST_VIDEO_FRAME_PLANE_DATA(&fa, 0))[(size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(&fa, 0) + c] !=
             ((const uint8_t*)GST_VIDEO_FRAME_PLANE_DATA(&fb, 0))[(size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(&fb, 0) + c];
  gst_video_frame_unmap(&fa);
  gst_video_frame_unmap(&fb);
  return bad;
}

/* The second pipeline: a producer into `edgetensorsrc ! videoconvert ! video/x-raw,format=RGB !
 * appsink`; each RGB frame equals GStreamer's own conversion of the NV12 frame sent
 * (gst_video_convert_sample), pixel by pixel. */
static int case_src_feeds_videoconvert_to_rgb(void) {
  enum { kRgbFrames = 10 };
  struct producer producer;
  start_producer(&producer, kRgbFrames, 1, 1);
  char* text = g_strdup_printf("edgetensorsrc socket-path=%s connect-timeout=10000 ! videoconvert ! "
                               "video/x-raw,format=RGB ! appsink name=out sync=false enable-last-sample=false",
                               producer.path);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  CHECK(pipeline != NULL);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  GstCaps* rgb = gst_caps_from_string("video/x-raw,format=RGB");
  int frames = 0, right = 0;
  for (;;) {
    GstSample* sample = NULL;
    g_signal_emit_by_name(sink, "try-pull-sample", (GstClockTime)(5 * GST_SECOND), &sample);
    if (sample == NULL) break;
    GstSample* sent = pattern_sample((uint64_t)frames);
    GstSample* expected = sent == NULL ? NULL : gst_video_convert_sample(sent, rgb, 5 * GST_SECOND, NULL);
    const long bad = expected == NULL ? -1 : rgb_mismatches(sample, expected);
    if (bad != 0) fprintf(stderr, "RGB frame %d: %ld bytes differ from gst_video_convert_sample's\n", frames, bad);
    right += bad == 0;
    ++frames;
    if (expected != NULL) gst_sample_unref(expected);
    if (sent != NULL) gst_sample_unref(sent);
    gst_sample_unref(sample);
  }
  gst_caps_unref(rgb);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  pthread_join(producer.thread, NULL);
  printf("src ! videoconvert ! RGB: %d frames, %d equal to GStreamer's conversion of the frame sent\n", frames, right);
  CHECK(producer.status == 0 && frames == kRgbFrames && right == kRgbFrames);
  return 0;
}

/* reconnect=true: a producer that vanishes after 3 frames is followed by another on the same path, which
 * sends 3 and ends the stream: 6 frames, each right, the first after each connect DISCONT, then EOS. */
static int case_src_reconnects_to_the_next_producer(void) {
  struct producer producer;
  start_producer(&producer, 3, 1, 2);
  struct pulled got;
  guint64 reconnects = 0;
  CHECK(run_src(&producer, "reconnect=true", &got, "reconnects", &reconnects) == 0);
  printf("src, reconnect=true, two producers of 3 frames: %d frames, %d right, %d DISCONT, %llu reconnects, EOS %d, "
         "error '%s'; stats.announces %llu while playing, %llu after NULL\n", got.frames, got.matching, got.discont,
         (unsigned long long)reconnects, got.eos, got.error, (unsigned long long)got.announces_live,
         (unsigned long long)got.announces_stopped);
  CHECK(producer.status == 0);
  CHECK(got.frames == 6 && got.matching == 6 && got.discont == 2 && reconnects == 1);
  /* Each producer announced its buffers: the first's count after the reconnect, both after stop. */
  CHECK(got.announces_live >= 2 && got.announces_stopped == got.announces_live);
  CHECK(got.eos == 1 && got.error[0] == '\0');
  return 0;
}

/* Runs `text` to PLAYING and waits (at most 10 s) for an element error: 0 when it comes and its message holds
 * `expected`. */
static int expect_error(const char* text, const char* expected) {
  GstElement* pipeline = gst_parse_launch(text, NULL);
  CHECK(pipeline != NULL);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  char text_of_error[512] = "";
  if (message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    GError* error = NULL;
    gst_message_parse_error(message, &error, NULL);
    snprintf(text_of_error, sizeof text_of_error, "%s", error->message);
    g_error_free(error);
  }
  if (message != NULL) gst_message_unref(message);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  printf("'%s': error '%s'\n", text, text_of_error);
  CHECK(strstr(text_of_error, expected) != NULL);
  return 0;
}

static int case_sink_needs_a_socket_path(void) {
  return expect_error("videotestsrc num-buffers=1 ! edgetensorsink", "needs socket-path");
}

/* A path where a live sink listens is refused, naming it. */
static int case_sink_refuses_a_live_socket(void) {
  char text[256];
  snprintf(text, sizeof text, "videotestsrc ! edgetensorsink socket-path=@edgetensor-gst-live-%d", (int)getpid());
  GstElement* first = gst_parse_launch(text, NULL);
  CHECK(first != NULL);
  CHECK(gst_element_set_state(first, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
  const int rc = expect_error(text, "AlreadyExists");
  gst_element_set_state(first, GST_STATE_NULL);
  gst_object_unref(first);
  return rc;
}

static int case_src_needs_a_socket_path(void) {
  return expect_error("edgetensorsrc ! fakesink", "needs socket-path");
}

/* Nobody listens: after connect-timeout the error names the path and the library's reason. */
static int case_src_without_a_producer_fails_after_connect_timeout(void) {
  char text[256];
  snprintf(text, sizeof text, "edgetensorsrc socket-path=@edgetensor-gst-nobody-%d connect-timeout=300 ! fakesink",
           (int)getpid());
  const gint64 start = g_get_monotonic_time();
  CHECK(expect_error(text, "nobody listens there") == 0);
  const gint64 waited_ms = (g_get_monotonic_time() - start) / 1000;
  printf("failed after %lld ms (connect-timeout 300)\n", (long long)waited_ms);
  CHECK(waited_ms >= 250 && waited_ms < 5000);
  return 0;
}

/* Sends pattern frame `sequence` through `publisher`; its status. */
static et_status publish_pattern(et_channel_publisher* publisher, uint64_t sequence) {
  et_tensor* image = pattern_image(sequence);
  et_frame* frame = NULL;
  et_status status = image == NULL ? ET_INTERNAL : et_frame_from_tensor(image, &frame);
  et_channel_send_options options = {0};
  options.struct_size = sizeof options;
  options.has = ET_CHANNEL_HAS_DURATION;
  options.duration_ns = 33333333;
  et_channel_publish_result result = {0};
  result.struct_size = sizeof result;
  if (status == ET_OK) status = et_channel_publisher_send_frame(publisher, frame, &options, &result);
  et_frame_release(frame);
  et_tensor_release(image);
  return status;
}

static et_channel_publisher_stats publisher_stats(const et_channel_publisher* publisher) {
  et_channel_publisher_stats s = {0};
  s.struct_size = sizeof s;
  if (et_channel_publisher_get_stats(publisher, &s) != ET_OK) memset(&s, 0, sizeof s);
  return s;
}

/* A producer at its receiver limit (max_receivers 1, served): edgetensorsrc names the refusal and the limit at
 * once; with reconnect=true it asks again every 100 ms, and fails after connect-timeout if no slot frees, or is
 * served once one does. */
static int case_src_at_the_receiver_limit_names_it_and_may_wait_for_room(void) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-full-%d", (int)getpid());
  et_channel_publisher_options po = {0};
  po.struct_size = sizeof po;
  po.max_receivers = 1;
  et_channel_publisher* publisher = NULL;
  CHECK(et_channel_publisher_listen(path, NULL, &po, &publisher) == ET_OK);
  int32_t fd = -1;
  et_channel_receiver* first = NULL;
  CHECK(et_channel_connect(path, 1000, &fd) == ET_OK && et_channel_receiver_create_adopt(fd, NULL, &first) == ET_OK);
  for (int i = 0; i < 500 && publisher_stats(publisher).receivers < 1; ++i) g_usleep(10000);
  CHECK(publisher_stats(publisher).receivers == 1);
  char text[256];
  snprintf(text, sizeof text, "edgetensorsrc socket-path=%s ! fakesink", path);
  CHECK(expect_error(text, "the publisher serves 1 receiver already, its limit (max_receivers 1)") == 0);
  snprintf(text, sizeof text, "edgetensorsrc socket-path=%s reconnect=true connect-timeout=400 ! fakesink", path);
  gint64 start = g_get_monotonic_time();
  CHECK(expect_error(text, "the producer refused this consumer for 4") == 0); /* "for 4xx ms, asked every 100 ms" */
  const gint64 waited_ms = (g_get_monotonic_time() - start) / 1000;
  printf("reconnect=true, connect-timeout=400, no slot frees: failed after %lld ms\n", (long long)waited_ms);
  CHECK(waited_ms >= 350 && waited_ms < 5000);
  /* A slot frees 300 ms after the src starts asking: the publisher drops the first receiver at its next send. */
  GstElement* sink = NULL;
  GstElement* pipeline = src_pipeline(path, "reconnect=true", &sink);
  CHECK(pipeline != NULL);
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  g_usleep(300000);
  et_channel_receiver_release(first);
  uint64_t sequence = 0;
  for (int i = 0; i < 100 && publisher_stats(publisher).receivers_joined < 2; ++i, ++sequence) {
    CHECK(publish_pattern(publisher, sequence) == ET_OK);
    g_usleep(50000);
  }
  const et_channel_publisher_stats joined = publisher_stats(publisher);
  for (int i = 0; i < 3; ++i, ++sequence) CHECK(publish_pattern(publisher, sequence) == ET_OK);
  CHECK(et_channel_publisher_end_stream(publisher) == ET_OK);
  struct pulled got;
  pull_all(pipeline, sink, &got);
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstStructure* stats = NULL;
  g_object_get(src, "stats", &stats, NULL);
  guint64 reconnects = 0;
  if (stats != NULL) gst_structure_get_uint64(stats, "reconnects", &reconnects);
  if (stats != NULL) gst_structure_free(stats);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  const et_channel_publisher_stats end = publisher_stats(publisher);
  et_channel_publisher_release(publisher);
  printf("reconnect=true, a slot frees after 300 ms: joined %llu, refused %llu; %d frames, %d right, EOS %d, "
         "%llu reconnects, error '%s'\n", (unsigned long long)joined.receivers_joined,
         (unsigned long long)end.receivers_refused, got.frames, got.matching, got.eos, (unsigned long long)reconnects,
         got.error);
  CHECK(joined.receivers_joined == 2 && end.receivers_refused >= 3); /* the two runs above, then at least one */
  CHECK(got.frames >= 3 && got.matching == got.frames && got.eos == 1 && got.error[0] == '\0' && reconnects >= 1);
  return 0;
}

/* What the src cannot push is an element error naming it, not a crash or a wrong buffer. */
static int refused_by_src(int kind, const char* expected) {
  struct producer producer;
  start_producer_of(&producer, 1, 1, 1, kind);
  char text[256];
  snprintf(text, sizeof text, "edgetensorsrc socket-path=%s connect-timeout=10000 ! fakesink", producer.path);
  const int rc = expect_error(text, expected);
  pthread_join(producer.thread, NULL);
  return rc;
}

static int case_src_refuses_a_tensor_without_layout(void) {
  return refused_by_src(PLAIN, "without an image layout");
}

/* Planes in two buffers (as a V4L2 multi-planar capture gives them): one GstMemory per buffer, no copy. They
 * lie one after the other as GStreamer lays NV12 out, so even appsink (no GstVideoMeta) reads them. */
static int case_src_pushes_planes_in_two_buffers_as_two_memories(void) {
  struct producer producer;
  start_producer_of(&producer, 10, 1, 1, TWO_BUFFER);
  struct pulled got;
  guint64 copies = 1;
  CHECK(run_src(&producer, "", &got, "copies", &copies) == 0);
  printf("src, NV12 in two buffers: %d frames, %d with every pixel right, %d of two fd memories, %d with "
         "GstVideoMeta, %llu copies, EOS %d; error '%s'\n", got.frames, got.matching, got.two_memories, got.with_meta,
         (unsigned long long)copies, got.eos, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == 10 && got.matching == 10 && got.in_order == 10 && got.eos == 1 && got.error[0] == '\0');
  CHECK(got.two_memories == 10 && got.fd_memory == 10 && got.with_meta == 10 && copies == 0);
  return 0;
}

/* Rows 384 bytes apart, which only GstVideoMeta describes: appsink does not read it, so each frame reaches it
 * copied into GStreamer's own layout (no GstVideoMeta: the pixel check maps it by the caps alone), counted. */
static int case_src_copies_for_a_downstream_without_video_meta(void) {
  struct producer producer;
  start_producer_of(&producer, 10, 1, 1, PADDED);
  struct pulled got;
  guint64 copies = 0;
  CHECK(run_src(&producer, "", &got, "copies", &copies) == 0);
  printf("src, NV12 with %d-byte rows to appsink: %d frames, %d with every pixel right, %d with GstVideoMeta, %d "
         "as fd memory, %llu copies, EOS %d; error '%s'\n", kPaddedStride, got.frames, got.matching, got.with_meta,
         got.fd_memory, (unsigned long long)copies, got.eos, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == 10 && got.matching == 10 && got.in_order == 10 && got.eos == 1 && got.error[0] == '\0');
  CHECK(got.with_meta == 0 && got.fd_memory == 0 && copies == 10);
  return 0;
}

/* The same frames to a downstream that reads GstVideoMeta: no copy, the producer's layout in the meta. */
static int case_src_sends_its_layout_to_a_downstream_with_video_meta(void) {
  struct producer producer;
  start_producer_of(&producer, 10, 1, 1, PADDED);
  struct pulled got;
  guint64 copies = 1;
  CHECK(run_src_to(&producer, "", 1, &got, "copies", &copies) == 0);
  printf("src, NV12 with %d-byte rows to a GstVideoMeta reader: %d frames, %d with every pixel right, %d with "
         "GstVideoMeta, %d of two fd memories, %llu copies, EOS %d; error '%s'\n", kPaddedStride, got.frames,
         got.matching, got.with_meta, got.two_memories, (unsigned long long)copies, got.eos, got.error);
  CHECK(producer.status == 0);
  CHECK(got.frames == 10 && got.matching == 10 && got.in_order == 10 && got.eos == 1 && got.error[0] == '\0');
  CHECK(got.with_meta == 10 && got.two_memories == 10 && got.fd_memory == 10 && copies == 0);
  return 0;
}

/* ---- edgetensorsink ---- */
#define CAPS "video/x-raw,format=NV12,width=320,height=240,framerate=30/1"

/* Frame i of the reference pipeline, plane p, as tight rows: reference[i * 2 + p]. */
static GByteArray** reference_frames(int frames) {
  char* text = g_strdup_printf("videotestsrc num-buffers=%d pattern=ball ! " CAPS " ! appsink name=out sync=false", frames);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  if (pipeline == NULL) return NULL;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GByteArray** planes = g_new0(GByteArray*, (size_t)frames * 2);
  for (int i = 0; i < frames; ++i) {
    GstSample* sample = NULL;
    g_signal_emit_by_name(sink, "try-pull-sample", (GstClockTime)(5 * GST_SECOND), &sample);
    if (sample == NULL) break;
    GstVideoInfo info;
    GstVideoFrame frame;
    if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
        gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
      for (unsigned p = 0; p < 2; ++p) {
        planes[i * 2 + p] = g_byte_array_new();
        for (unsigned r = 0; r < plane_rows(p); ++r)
          g_byte_array_append(planes[i * 2 + p],
                              (const guint8*)GST_VIDEO_FRAME_PLANE_DATA(&frame, p) + (size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p),
                              plane_row_bytes(p));
      }
      gst_video_frame_unmap(&frame);
    }
    gst_sample_unref(sample);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return planes;
}

static void free_reference(GByteArray** planes, int frames) {
  for (int i = 0; i < frames * 2; ++i)
    if (planes[i] != NULL) g_byte_array_unref(planes[i]);
  g_free(planes);
}

/* Bytes of a delivered frame's plane p that differ from the reference (-1: the plane cannot be read). */
static long frame_mismatches(const et_frame* frame, unsigned p, const GByteArray* reference) {
  et_tensor* plane = NULL;
  et_map* map = NULL;
  const void* data = NULL;
  size_t size = 0;
  et_tensor_info info = {0};
  info.struct_size = sizeof info;
  long bad = -1;
  if (reference != NULL && et_frame_plane(frame, p, &plane) == ET_OK && et_tensor_get_info(plane, &info) == ET_OK &&
      et_tensor_map_read(plane, &map, &data, &size) == ET_OK && info.shape[0] == plane_rows(p)) {
    bad = 0;
    for (unsigned r = 0; r < plane_rows(p); ++r)
      for (unsigned c = 0; c < plane_row_bytes(p); ++c)
        bad += ((const uint8_t*)data)[(size_t)r * (size_t)info.strides_bytes[0] + c] !=
               reference->data[(size_t)r * plane_row_bytes(p) + c];
  }
  et_map_release(map);
  et_tensor_release(plane);
  return bad;
}

/* Plays `text` (an edgetensorsink named sink on `path`, wait-receivers=1) and connects a receiver to it. */
static int play_and_connect(const char* text, const char* path, GstElement** pipeline, et_channel_receiver** receiver) {
  *pipeline = gst_parse_launch(text, NULL);
  CHECK(*pipeline != NULL);
  CHECK(gst_element_set_state(*pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  int32_t fd = -1;
  for (int tries = 0; tries < 500 && et_channel_connect(path, 1000, &fd) != ET_OK; ++tries) g_usleep(10000);
  CHECK(fd >= 0);
  CHECK_OK(et_channel_receiver_create_adopt(fd, NULL, receiver));
  return 0;
}

/* Field `name` of the stats of the element named sink in `pipeline` (0 when absent). */
static guint64 sink_stat(GstElement* pipeline, const char* name) {
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstStructure* stats = NULL;
  g_object_get(sink, "stats", &stats, NULL);
  gst_object_unref(sink);
  guint64 value = 0;
  gst_structure_get_uint64(stats, name, &value);
  gst_structure_free(stats);
  return value;
}

/* Buffer keys seen, each once (a frame's first buffer), and frames whose planes lay in more than one buffer. */
struct keys {
  uint64_t key[64];
  int count;
  int split_frames;
};

/* Adds the key of `frame`'s (first) buffer to `keys` when it is new. */
static void note_key(struct keys* keys, const et_frame* frame) {
  et_tensor* buffer = NULL;
  et_tensor_info info = {0};
  info.struct_size = sizeof info;
  if (frame == NULL || et_frame_buffer(frame, 0, &buffer) != ET_OK || et_tensor_get_info(buffer, &info) != ET_OK) {
    et_tensor_release(buffer);
    return;
  }
  et_tensor_release(buffer);
  uint32_t buffers = 0, plane_buffers[ET_MAX_PLANES];
  if (et_frame_get_buffers(frame, &buffers, plane_buffers) == ET_OK && buffers > 1) ++keys->split_frames;
  for (int i = 0; i < keys->count; ++i)
    if (keys->key[i] == info.buffer_key) return;
  if (keys->count < 64) keys->key[keys->count++] = info.buffer_key;
}

/* Runs `pipeline_text` (an edgetensorsink on `path` with wait-receivers=1) while a C consumer receives every
 * frame; *right counts frames equal to the reference, *keys the sink's buffers they came in, *stats gets the
 * sink's stats. */
static int consume_sink(const char* pipeline_text, const char* path, int frames, int* received, int* right,
                        int* ended, struct keys* keys, GstStructure** stats) {
  GByteArray** reference = reference_frames(frames);
  CHECK(reference != NULL);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  CHECK(play_and_connect(pipeline_text, path, &pipeline, &receiver) == 0);
  *received = *right = *ended = 0;
  keys->count = keys->split_frames = 0;
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 10000, &d) != ET_OK) {
      fprintf(stderr, "receive: %s\n", et_last_error_message());
      break;
    }
    if (d.end_of_stream) {
      *ended = 1;
      break;
    }
    const int i = (int)d.sequence;
    long bad = d.frame == NULL || i >= frames || !(d.has & ET_CHANNEL_HAS_PTS) ? -1 : 0;
    for (unsigned p = 0; bad >= 0 && p < 2; ++p) {
      const long b = frame_mismatches(d.frame, p, reference[i * 2 + p]);
      bad = b < 0 ? -1 : bad + b;
    }
    if (bad != 0) fprintf(stderr, "frame %d: %ld bytes differ from the reference\n", i, bad);
    *right += bad == 0 && i == *received;
    ++*received;
    note_key(keys, d.frame);
    et_frame_release(d.frame);
    et_tensor_release(d.tensor);
  }
  et_channel_receiver_release(receiver);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  CHECK(message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS);
  gst_message_unref(message);
  gst_object_unref(bus);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_get(sink, "stats", stats, NULL);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  /* The counters stay after stop (before 0.7.5 the publisher's fell back to 0). */
  GstStructure* stopped = NULL;
  g_object_get(sink, "stats", &stopped, NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  free_reference(reference, frames);
  guint64 live[3] = {0, 0, 0}, after[3] = {1, 1, 1};
  static const char* const kept[] = {"deliveries", "receivers-joined", "copy-buffers"};
  for (int k = 0; k < 3; ++k) {
    gst_structure_get_uint64(*stats, kept[k], &live[k]);
    gst_structure_get_uint64(stopped, kept[k], &after[k]);
    if (live[k] != after[k]) fprintf(stderr, "stats.%s: %llu while playing, %llu after NULL\n", kept[k],
                                     (unsigned long long)live[k], (unsigned long long)after[k]);
  }
  gst_structure_free(stopped);
  CHECK(live[0] == after[0] && live[1] == after[1] && live[2] == after[2]);
  return 0;
}

/* The sink's buffers with default properties: pool-size (6) consumer buffers; the proposed pool adds as many to
 * upstream's own (its min, pool-size). */
enum { kCopyCapacity = 6, kProposedCapacity = 12 };

/* `between` goes between the caps and the sink, `properties` to the sink; plane-buffers=true expects every frame
 * in one buffer per plane (the proposed plane pool), else in one buffer. */
static int sink_case(const char* between, const char* properties, guint64 expected_copies) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-sink-test-%d", (int)getpid());
  char* text = g_strdup_printf("videotestsrc num-buffers=%d pattern=ball ! " CAPS " %s ! edgetensorsink name=sink "
                               "socket-path=%s wait-receivers=1 sync=false %s",
                               kFrames, between, path, properties);
  int received = 0, right = 0, ended = 0;
  struct keys keys;
  GstStructure* stats = NULL;
  const int rc = consume_sink(text, path, kFrames, &received, &right, &ended, &keys, &stats);
  g_free(text);
  CHECK(rc == 0 && stats != NULL);
  guint64 copies = 99, zero_copy = 99, deliveries = 0, copy_buffers = 99, copy_drops = 99, imported = 99;
  gst_structure_get_uint64(stats, "imported", &imported);
  gst_structure_get_uint64(stats, "copy-buffers", &copy_buffers);
  gst_structure_get_uint64(stats, "copy-drops", &copy_drops);
  gst_structure_get_uint64(stats, "copies", &copies);
  gst_structure_get_uint64(stats, "zero-copy", &zero_copy);
  gst_structure_get_uint64(stats, "deliveries", &deliveries);
  char* stats_text = gst_structure_to_string(stats);
  printf("sink%s %s: C consumer got %d frames in %d distinct buffers (%d in one buffer per plane), %d equal to the "
         "reference, end of stream %d; %s\n",
         between, properties, received, keys.count, keys.split_frames, right, ended, stats_text);
  g_free(stats_text);
  gst_structure_free(stats);
  CHECK(received == kFrames && right == kFrames && ended == 1);
  CHECK(copies == expected_copies && zero_copy == kFrames - expected_copies && deliveries == kFrames);
  CHECK(copy_drops == 0 && imported == 0);
  const int per_plane = strstr(properties, "plane-buffers=true") != NULL && expected_copies == 0;
  CHECK(keys.split_frames == (per_plane ? kFrames : 0));
  /* Reused: at most the pool's capacity of buffers for 30 frames (a new buffer per frame before). */
  if (expected_copies > 0) CHECK(keys.count >= 1 && keys.count <= kCopyCapacity && copy_buffers == (guint64)keys.count);
  if (expected_copies == 0) CHECK(keys.count >= 1 && keys.count <= kProposedCapacity && copy_buffers == 0);
  return 0;
}

/* edgetensorsink's warnings whose text holds "receivers skipped each one" (gst_debug_add_log_function). */
static gint skipped_warnings;

static void count_skipped_warnings(GstDebugCategory* category, GstDebugLevel level, const gchar* file,
                                   const gchar* function, gint line, GObject* object, GstDebugMessage* message,
                                   gpointer data) {
  (void)file, (void)function, (void)line, (void)object, (void)data;
  const gchar* text = gst_debug_message_get(message);
  if (level == GST_LEVEL_WARNING && strcmp(gst_debug_category_get_name(category), "edgetensorsink") == 0 &&
      text != NULL && strstr(text, "receivers skipped each one") != NULL)
    g_atomic_int_inc(&skipped_warnings);
}

/* policy=drop max-frames-out=1: a receiver that holds its first frame and reads nothing more never stalls the
 * pipeline; it misses the other 29 (stats.drops) and still gets the end of stream. The sink warns once that a
 * receiver is skipped frame after frame (16 in a row), not once per frame. */
static gpointer set_null(gpointer pipeline) {
  gst_element_set_state(GST_ELEMENT(pipeline), GST_STATE_NULL);
  return NULL;
}

/* send-timeout=-1 under block: a receiver that holds its one frame blocks the sink's next send for as long as
 * it holds it; going to NULL ends that wait (unlock, through the channel's wait check) instead of hanging
 * until the frame comes back. */
static int case_sink_unlock_ends_a_send_waiting_without_limit(void) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-unlock-test-%d", (int)getpid());
  char* text = g_strdup_printf("videotestsrc ! " CAPS " ! edgetensorsink name=sink socket-path=%s wait-receivers=1 "
                               "policy=block send-timeout=-1 max-frames-out=1 sync=false", path);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  const int started = play_and_connect(text, path, &pipeline, &receiver);
  g_free(text);
  CHECK(started == 0);
  et_channel_delivery held = {0};
  held.struct_size = sizeof held;
  CHECK_OK(et_channel_receiver_receive(receiver, 10000, &held));
  /* The sink renders frame 1 and waits in its send: nothing comes, nothing is dropped. */
  for (int i = 0; i < 500 && sink_stat(pipeline, "frames") < 2; ++i) g_usleep(10000);
  g_usleep(300 * 1000);
  et_channel_delivery next = {0};
  next.struct_size = sizeof next;
  const et_status more = et_channel_receiver_receive(receiver, 0, &next);
  const guint64 frames = sink_stat(pipeline, "frames"), drops = sink_stat(pipeline, "drops");
  GThread* stopper = g_thread_new("set-null", set_null, pipeline);
  const gint64 start = g_get_monotonic_time();
  GstState state = GST_STATE_PLAYING;
  while (g_get_monotonic_time() - start < 10 * G_USEC_PER_SEC) {
    gst_element_get_state(pipeline, &state, NULL, 0);
    if (state == GST_STATE_NULL) break;
    g_usleep(10000);
  }
  const gint64 stop_ms = (g_get_monotonic_time() - start) / 1000;
  const int stopped = state == GST_STATE_NULL;
  et_frame_release(held.frame); /* a sink still waiting (the failure) goes on once it has the frame back */
  g_thread_join(stopper);
  printf("block, send-timeout=-1, a receiver holding frame %llu: %llu frames rendered, %llu dropped, another "
         "frame received: %s; NULL reached %d after %lld ms\n", (unsigned long long)held.sequence,
         (unsigned long long)frames, (unsigned long long)drops, more == ET_OK ? "yes" : "no", stopped,
         (long long)stop_ms);
  if (more == ET_OK) et_frame_release(next.frame);
  et_channel_receiver_release(receiver);
  gst_object_unref(pipeline);
  CHECK(held.sequence == 0 && frames == 2 && drops == 0 && more == ET_BUSY);
  CHECK(stopped);
  return 0;
}

static int case_sink_drop_policy_never_stalls_for_a_holding_receiver(void) {
  gst_debug_set_threshold_for_name("edgetensorsink", GST_LEVEL_WARNING);
  /* The functions, not their macros (which compare a function pointer with void *: clang's -Wpedantic). */
  (gst_debug_add_log_function)(count_skipped_warnings, NULL, NULL);
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-drop-test-%d", (int)getpid());
  char* text = g_strdup_printf("videotestsrc num-buffers=%d ! " CAPS " ! edgetensorsink name=sink socket-path=%s "
                               "wait-receivers=1 policy=drop max-frames-out=1 drain-timeout=0 sync=false",
                               kFrames, path);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  const int started = play_and_connect(text, path, &pipeline, &receiver);
  g_free(text);
  CHECK(started == 0);
  et_channel_delivery held = {0};
  held.struct_size = sizeof held;
  CHECK_OK(et_channel_receiver_receive(receiver, 10000, &held));
  const gint64 start = g_get_monotonic_time();
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const gint64 eos_ms = (g_get_monotonic_time() - start) / 1000;
  const int eos = message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS;
  if (message != NULL) gst_message_unref(message);
  gst_object_unref(bus);
  et_channel_delivery end = {0};
  end.struct_size = sizeof end;
  const et_status got_end = et_channel_receiver_receive(receiver, 5000, &end);
  const guint64 deliveries = sink_stat(pipeline, "deliveries"), drops = sink_stat(pipeline, "drops");
  printf("drop policy, a receiver holding frame %llu: pipeline EOS %d after %lld ms, %llu delivered, %llu dropped, "
         "end of stream %u\n", (unsigned long long)held.sequence, eos, (long long)eos_ms, (unsigned long long)deliveries,
         (unsigned long long)drops, got_end == ET_OK ? end.end_of_stream : 0u);
  et_frame_release(held.frame);
  et_channel_receiver_release(receiver);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  (gst_debug_remove_log_function)(count_skipped_warnings);
  printf("warnings that a receiver is skipped frame after frame: %d\n", g_atomic_int_get(&skipped_warnings));
  CHECK(eos && held.sequence == 0 && deliveries == 1 && drops == kFrames - 1);
  CHECK(got_end == ET_OK && end.end_of_stream == 1);
  CHECK(g_atomic_int_get(&skipped_warnings) == 1);
  return 0;
}

/* plane-buffers=true with a receiver holding every frame it gets: the plane pool (12 buffers: pool-size 6 and as
 * many for consumers) runs out and videotestsrc waits in its acquire, as with the sink's other pool; no frame is
 * copied (the import limit, max less 2, is for other pools' buffers). Once the receiver lets go, the rest flow. */
static int case_sink_plane_pool_waits_while_consumers_hold_it(void) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-plane-hold-%d", (int)getpid());
  char* text = g_strdup_printf("videotestsrc num-buffers=%d ! " CAPS " ! edgetensorsink name=sink socket-path=%s "
                               "wait-receivers=1 plane-buffers=true sync=false",
                               kFrames, path);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  const int started = play_and_connect(text, path, &pipeline, &receiver);
  g_free(text);
  CHECK(started == 0);
  enum { kHeld = 12 };
  et_frame* held[kHeld] = {NULL};
  int holding = 0;
  for (; holding < kHeld; ++holding) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 5000, &d) != ET_OK || d.frame == NULL) break;
    held[holding] = d.frame;
  }
  g_usleep(300 * 1000); /* the pool is out: videotestsrc waits (formerly frames past the 10th were copied) */
  const guint64 rendered_while_held = sink_stat(pipeline, "frames");
  for (int i = 0; i < holding; ++i) et_frame_release(held[i]);
  int rest = 0, ended = 0;
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 10000, &d) != ET_OK) break;
    if (d.end_of_stream) {
      ended = 1;
      break;
    }
    ++rest;
    et_frame_release(d.frame);
  }
  const guint64 copies = sink_stat(pipeline, "copies"), zero_copy = sink_stat(pipeline, "zero-copy");
  printf("plane pool, a receiver holding every frame: held %d, %llu rendered while held, then %d more, end of stream "
         "%d; zero-copy=%llu copies=%llu\n", holding, (unsigned long long)rendered_while_held, rest, ended,
         (unsigned long long)zero_copy, (unsigned long long)copies);
  et_channel_receiver_release(receiver);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  CHECK(holding == kHeld && rendered_while_held == kHeld && holding + rest == kFrames && ended == 1);
  CHECK(copies == 0 && zero_copy == kFrames);
  return 0;
}

/* plane-buffers=true with I420 (three planes) while a queue in front of the sink keeps the pool cycling through
 * every buffer (as v4l2src's ring does): the pool holds at most 10 frames, pool-size=20 included, so its 30
 * plane buffers fit a receiver's default buffer table (32) and each is announced once. With 12 (36 buffers) the
 * channel evicted buffers still in use and announced them again, an fd, an import and a mapping per plane and
 * frame (177 announces for 60 frames); with pool-size=20 as the pool's min, 60 buffers. */
static int case_sink_plane_pool_fits_the_receivers_buffer_table(void) {
  enum { kCycled = 60 };
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-plane-table-%d", (int)getpid());
  char* text = g_strdup_printf("videotestsrc num-buffers=%d ! video/x-raw,format=I420,width=%d,height=%d ! "
                               "queue max-size-buffers=20 ! identity sleep-time=2000 ! edgetensorsink name=sink "
                               "socket-path=%s wait-receivers=1 plane-buffers=true pool-size=20 sync=false",
                               kCycled, kWidth, kHeight, path);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  const int started = play_and_connect(text, path, &pipeline, &receiver);
  g_free(text);
  CHECK(started == 0);
  uint64_t keys[256];
  int distinct = 0, received = 0, three = 0, ended = 0;
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 10000, &d) != ET_OK) break;
    if (d.end_of_stream) {
      ended = 1;
      break;
    }
    ++received;
    uint32_t count = 0, plane_buffers[ET_MAX_PLANES];
    if (d.frame != NULL && et_frame_get_buffers(d.frame, &count, plane_buffers) == ET_OK) {
      three += count == 3;
      for (uint32_t b = 0; b < count; ++b) {
        et_tensor* buffer = NULL;
        et_tensor_info info = {0};
        info.struct_size = sizeof info;
        if (et_frame_buffer(d.frame, b, &buffer) == ET_OK && et_tensor_get_info(buffer, &info) == ET_OK) {
          int seen = 0;
          for (int k = 0; k < distinct; ++k) seen |= keys[k] == info.buffer_key;
          if (!seen && distinct < 256) keys[distinct++] = info.buffer_key;
        }
        et_tensor_release(buffer);
      }
    }
    et_frame_release(d.frame);
  }
  const guint64 copies = sink_stat(pipeline, "copies");
  et_channel_receiver_stats stats = {0};
  stats.struct_size = sizeof stats;
  CHECK_OK(et_channel_receiver_get_stats(receiver, &stats));
  printf("plane pool, I420 through a 20-buffer queue: %d frames (%d in three buffers), %d distinct buffer keys, "
         "%llu announced to the receiver, copies=%llu, end of stream %d\n", received, three, distinct,
         (unsigned long long)stats.announces, (unsigned long long)copies, ended);
  et_channel_receiver_release(receiver);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  CHECK(received == kCycled && three == kCycled && ended == 1 && copies == 0);
  CHECK(distinct >= 3 && distinct <= 30 && distinct % 3 == 0 && stats.announces == (uint64_t)distinct);
  return 0;
}

/* A caps change mid-stream (320x240 to 160x120 after frame 9) becomes a new layout on the channel: every frame
 * after it carries 160x120 planes, sent from the sink's pool (0 copies), or copied into the copy pool of the
 * new caps (`between` drops the ALLOCATION query: a copy each); either way from a few buffers per layout. */
static int caps_change_case(const char* between, int expect_copies) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-caps-test-%d-%d", (int)getpid(), expect_copies);
  // A live source paces the frames (1/30 s each), so the caps change after frame 9 lands well before the
  // last frame however slow this machine is (a non-live one could send all 30 before the change).
  char* text = g_strdup_printf("videotestsrc is-live=true num-buffers=%d ! capsfilter name=f caps=" CAPS " %s ! "
                               "edgetensorsink name=sink socket-path=%s wait-receivers=1 sync=false",
                               kFrames, between, path);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  const int started = play_and_connect(text, path, &pipeline, &receiver);
  g_free(text);
  CHECK(started == 0);
  int frames = 0, large = 0, small = 0, other = 0, ended = 0;
  struct keys keys;
  keys.count = 0;
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 10000, &d) != ET_OK || d.end_of_stream) {
      ended = d.end_of_stream;
      break;
    }
    note_key(&keys, d.frame);
    et_image_layout layout = {0};
    layout.struct_size = sizeof layout;
    if (d.frame != NULL && et_frame_get_layout(d.frame, &layout) == ET_OK && layout.format == ET_PIXEL_FORMAT_NV12) {
      const int is_large = layout.width == 320 && layout.height == 240 && layout.planes[0].row_stride_bytes == 320;
      const int is_small = layout.width == 160 && layout.height == 120 && layout.planes[0].row_stride_bytes == 160;
      large += is_large;
      small += is_small && large > 0;
      other += !is_large && !is_small;
    } else {
      ++other;
    }
    et_frame_release(d.frame);
    et_tensor_release(d.tensor);
    if (++frames == 10) {
      GstElement* filter = gst_bin_get_by_name(GST_BIN(pipeline), "f");
      GstCaps* caps = gst_caps_from_string("video/x-raw,format=NV12,width=160,height=120,framerate=30/1");
      g_object_set(filter, "caps", caps, NULL);
      gst_caps_unref(caps);
      gst_object_unref(filter);
    }
  }
  et_channel_receiver_release(receiver);
  const guint64 copies = sink_stat(pipeline, "copies"), drops = sink_stat(pipeline, "copy-drops");
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  printf("caps change after frame 9%s: %d frames, %d at 320x240, then %d at 160x120, %d other; %d distinct buffers; "
         "%llu copies, %llu dropped; end %d\n", between, frames, large, small, other, keys.count,
         (unsigned long long)copies, (unsigned long long)drops, ended);
  CHECK(frames == kFrames && ended == 1 && other == 0 && large >= 10 && small >= 1 && large + small == kFrames);
  CHECK(copies == (expect_copies ? (guint64)kFrames : 0u) && drops == 0);
  CHECK(keys.count >= 2 && keys.count <= 2 * (expect_copies ? kCopyCapacity : kProposedCapacity));
  return 0;
}

static int case_sink_caps_change_is_a_new_layout(void) { return caps_change_case("", 0); }
static int case_sink_copy_path_survives_a_caps_change(void) {
  return caps_change_case("! identity drop-allocation=true", 1);
}

/* The copy pool exhausted: with pool-size=2 and no frame limit, a receiver that reads nothing holds both copy
 * buffers (their frames wait in its socket); every later frame is dropped (stats.copy-drops) at once under
 * policy=drop, after a wait of the channel's send timeout (1 s) under block, and EOS still comes. */
static int exhausted_case(const char* policy, int frames, gint64 min_ms, gint64 max_ms) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-exhausted-%s-%d", policy, (int)getpid());
  char* text = g_strdup_printf("videotestsrc num-buffers=%d ! " CAPS " ! identity drop-allocation=true ! edgetensorsink "
                               "name=sink socket-path=%s wait-receivers=1 policy=%s pool-size=2 drain-timeout=0 sync=false",
                               frames, path, policy);
  GstElement* pipeline = NULL;
  et_channel_receiver* receiver = NULL;
  const gint64 start = g_get_monotonic_time();
  const int started = play_and_connect(text, path, &pipeline, &receiver);
  g_free(text);
  CHECK(started == 0);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 20 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const gint64 eos_ms = (g_get_monotonic_time() - start) / 1000;
  const int eos = message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS;
  if (message != NULL) gst_message_unref(message);
  gst_object_unref(bus);
  /* Now read: the two frames sent, then the end of stream. */
  et_channel_delivery held[2];
  memset(held, 0, sizeof held);
  int got = 0, ended = 0;
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 5000, &d) != ET_OK) break;
    if (d.end_of_stream) {
      ended = 1;
      break;
    }
    if (got < 2) held[got] = d;
    else et_frame_release(d.frame);
    ++got;
  }
  const guint64 copies = sink_stat(pipeline, "copies"), drops = sink_stat(pipeline, "copy-drops");
  const guint64 buffers = sink_stat(pipeline, "copy-buffers");
  printf("copy pool of 2 held by a receiver, policy=%s, %d frames: EOS %d after %lld ms, %llu copied, %llu dropped, "
         "%llu copy buffers; the receiver got %d frames and end of stream %d\n", policy, frames, eos, (long long)eos_ms,
         (unsigned long long)copies, (unsigned long long)drops, (unsigned long long)buffers, got, ended);
  for (int i = 0; i < got && i < 2; ++i) et_frame_release(held[i].frame);
  et_channel_receiver_release(receiver);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  CHECK(eos && ended && got == 2 && copies == 2 && buffers == 2 && drops == (guint64)frames - 2);
  CHECK(eos_ms >= min_ms && eos_ms < max_ms);
  return 0;
}

static int case_sink_copy_pool_exhausted_drops_at_once(void) { return exhausted_case("drop", 10, 0, 10000); }
static int case_sink_copy_pool_exhausted_waits_then_drops(void) { return exhausted_case("block", 4, 1900, 15000); }

static int case_sink_feeds_a_c_consumer_zero_copy(void) { return sink_case("", "", 0); }
static int case_sink_copies_once_without_its_pool(void) {
  return sink_case("! identity drop-allocation=true", "", kFrames);
}
/* plane-buffers=true: videotestsrc writes into the plane pool (one buffer per plane), every frame reaches the
 * consumer in its two buffers, no copy, nothing counted as imported. */
static int case_sink_plane_buffers_sends_one_buffer_per_plane(void) {
  return sink_case("", "plane-buffers=true", 0);
}

/* The pool the sink proposes for NV12 kWidth x kHeight, from its ALLOCATION query (the sink PAUSED, so its pad
 * answers), or NULL. */
static GstBufferPool* proposed_pool(GstElement* sink, GstCaps* caps) {
  GstQuery* query = gst_query_new_allocation(caps, TRUE);
  GstBufferPool* pool = NULL;
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  if (gst_pad_query(pad, query) && gst_query_get_n_allocation_pools(query) > 0)
    gst_query_parse_nth_allocation_pool(query, 0, &pool, NULL, NULL, NULL);
  gst_object_unref(pad);
  gst_query_unref(query);
  return pool;
}

/* A PAUSED edgetensorsink on an abstract socket named after `tag`, and NV12 kWidth x kHeight as info and caps
 * (the caller unrefs both). NULL on failure. */
static GstElement* paused_sink(const char* tag, GstVideoInfo* info, GstCaps** caps) {
  char path[96];
  snprintf(path, sizeof path, "@edgetensor-gst-%s-%d", tag, (int)getpid());
  GstElement* sink = gst_element_factory_make("edgetensorsink", NULL);
  if (sink == NULL) return NULL;
  g_object_set(sink, "socket-path", path, NULL);
  if (gst_element_set_state(sink, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    gst_object_unref(sink);
    return NULL;
  }
  gst_video_info_set_format(info, GST_VIDEO_FORMAT_NV12, kWidth, kHeight);
  *caps = gst_video_info_to_caps(info);
  return sink;
}

/* The sink's pool holds GStreamer's layout of the caps exactly: a config asking for larger buffers (a V4L2
 * driver's sizeimage with padding, as v4l2src io-mode=dmabuf-import sets it) is refused, and the pool does not
 * start on it, instead of handing out buffers shorter than upstream writes; the layout's own size (or less,
 * which grows to it) works. */
static int case_sink_pool_refuses_buffers_larger_than_its_layout(void) {
  GstVideoInfo info;
  GstCaps* caps = NULL;
  GstElement* sink = paused_sink("pool-size", &info, &caps);
  CHECK(sink != NULL);
  int rc = 1;
  GstBufferPool* pool = proposed_pool(sink, caps);
  if (pool != NULL) {
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, (guint)info.size + 4096, 2, 0);
    const gboolean larger = gst_buffer_pool_set_config(pool, config);
    const gboolean started_larger = gst_buffer_pool_set_active(pool, TRUE);
    config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, (guint)info.size - 16, 2, 0);
    const gboolean smaller = gst_buffer_pool_set_config(pool, config);
    guint size = 0;
    config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_get_params(config, NULL, &size, NULL, NULL);
    gst_structure_free(config);
    const gboolean started = gst_buffer_pool_set_active(pool, TRUE);
    GstBuffer* buffer = NULL;
    const gboolean acquired = started && gst_buffer_pool_acquire_buffer(pool, &buffer, NULL) == GST_FLOW_OK;
    const gsize bytes = buffer != NULL ? gst_buffer_get_size(buffer) : 0;
    if (buffer != NULL) gst_buffer_unref(buffer);
    if (started) gst_buffer_pool_set_active(pool, FALSE);
    printf("larger config %s, started %s; smaller config %s (size %u of %" G_GSIZE_FORMAT "), started %s, buffer of "
           "%" G_GSIZE_FORMAT " bytes\n", larger ? "accepted" : "refused", started_larger ? "yes" : "no",
           smaller ? "accepted" : "refused", size, info.size, started ? "yes" : "no", bytes);
    rc = !larger && !started_larger && smaller && size == info.size && acquired && bytes == info.size ? 0 : 1;
    gst_object_unref(pool);
  } else {
    fprintf(stderr, "the sink proposed no pool\n");
  }
  gst_caps_unref(caps);
  gst_element_set_state(sink, GST_STATE_NULL);
  gst_object_unref(sink);
  return rc;
}

/* One buffer of the pool a PAUSED sink with plane-buffers=true proposes for `format` kOddWidth x 97: as many fd
 * memories as the format has planes (planar formats: each exactly its plane's bytes of GStreamer's layout, each
 * its own fd),
 * GstVideoMeta with GStreamer's offsets and strides; written through gst_video_frame_map and read back. Returns
 * the planes checked (0 on failure, reason printed). */
static guint check_plane_pool_buffer(GstElement* sink, GstVideoFormat format) {
  GstVideoInfo info;
  CHECK(gst_video_info_set_format(&info, format, kOddWidth, 97));
  GstCaps* caps = gst_video_info_to_caps(&info);
  GstBufferPool* pool = proposed_pool(sink, caps);
  GstBuffer* buffer = NULL;
  guint good = 0;
  const guint planes = GST_VIDEO_INFO_N_PLANES(&info);
  if (pool != NULL && gst_buffer_pool_set_active(pool, TRUE) &&
      gst_buffer_pool_acquire_buffer(pool, &buffer, NULL) == GST_FLOW_OK) {
    const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
    const guint memories = gst_buffer_n_memory(buffer);
    /* A packed format gets the sink's usual pool (one image, which ends with its last row's last byte). */
    gboolean ok = meta != NULL && memories == planes && meta->n_planes == planes &&
                  (planes == 1 || gst_buffer_get_size(buffer) == info.size);
    for (guint p = 0; ok && planes > 1 && p < planes; ++p) {
      GstMemory* memory = gst_buffer_peek_memory(buffer, p);
      const gsize end = p + 1 < planes ? info.offset[p + 1] : info.size;
      ok = gst_is_fd_memory(memory) && memory->size == end - info.offset[p] && meta->offset[p] == info.offset[p] &&
           meta->stride[p] == info.stride[p] &&
           (p == 0 || gst_fd_memory_get_fd(memory) != gst_fd_memory_get_fd(gst_buffer_peek_memory(buffer, 0)));
      if (!ok)
        fprintf(stderr, "%s plane %u: memory of %zu bytes (fd %d), meta offset %zu stride %d; GStreamer's plane "
                "%zu bytes at %zu, stride %d\n", gst_video_format_to_string(format), p, memory->size,
                gst_fd_memory_get_fd(memory), meta->offset[p], meta->stride[p], end - info.offset[p],
                info.offset[p], info.stride[p]);
    }
    GstVideoFrame frame;
    if (ok && gst_video_frame_map(&frame, &info, buffer, GST_MAP_READWRITE)) {
      for (guint p = 0; p < planes; ++p) {
        guint8* row = (guint8*)GST_VIDEO_FRAME_PLANE_DATA(&frame, p) +
                      (size_t)GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p) * (GST_VIDEO_FRAME_COMP_HEIGHT(&frame, p) - 1);
        row[0] = (guint8)(p + 1);
      }
      gst_video_frame_unmap(&frame);
      GstMapInfo map;
      for (guint p = 0; p < planes; ++p) {
        GstMemory* memory = gst_buffer_peek_memory(buffer, p);
        const gsize last_row = (size_t)info.stride[p] * (GST_VIDEO_INFO_COMP_HEIGHT(&info, p) - 1);
        if (gst_memory_map(memory, &map, GST_MAP_READ)) {
          good += map.data[last_row] == p + 1;
          gst_memory_unmap(memory, &map);
        }
      }
    } else {
      fprintf(stderr, "%s: %u memories (%u planes), meta %s, %zu bytes (GStreamer %zu)\n",
              gst_video_format_to_string(format), memories, planes, meta != NULL ? "yes" : "no",
              gst_buffer_get_size(buffer), info.size);
    }
    gst_buffer_unref(buffer);
  } else {
    fprintf(stderr, "%s: no pool proposed, or it gave no buffer\n", gst_video_format_to_string(format));
  }
  if (pool != NULL) {
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
  gst_caps_unref(caps);
  return good == planes ? planes : 0;
}

/* plane-buffers=true: for every format of the sink's template, the proposed pool's buffers hold each plane in a
 * buffer of its own (check_plane_pool_buffer); packed formats, one plane, one buffer. */
static int case_sink_plane_pool_holds_each_plane_apart_for_every_format(void) {
  GstVideoInfo info;
  GstCaps* unused = NULL;
  GstElement* sink = paused_sink("plane-pool", &info, &unused);
  CHECK(sink != NULL);
  gst_caps_unref(unused);
  g_object_set(sink, "plane-buffers", TRUE, NULL);
  GstCaps* template = gst_pad_template_get_caps(
      gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(sink), "sink"));
  const GValue* list = gst_structure_get_value(gst_caps_get_structure(template, 0), "format");
  guint formats = 0, planar = 0, planes = 0, failed = 0;
  for (guint i = 0; list != NULL && i < gst_value_list_get_size(list); ++i) {
    const GstVideoFormat format = gst_video_format_from_string(g_value_get_string(gst_value_list_get_value(list, i)));
    const guint checked = check_plane_pool_buffer(sink, format);
    failed += checked == 0;
    planar += checked > 1;
    planes += checked > 1 ? checked : 0;
    ++formats;
  }
  gst_caps_unref(template);
  gst_element_set_state(sink, GST_STATE_NULL);
  gst_object_unref(sink);
  printf("plane-buffers=true, %ux97: %u formats, %u of them planar, their %u planes each in a buffer of its own, %u "
         "failed\n", (unsigned)kOddWidth, formats, planar, planes, failed);
  CHECK(formats >= 15 && planar >= 5 && failed == 0);
  return 0;
}

static void set_flag(gpointer data, GstMiniObject* object) {
  (void)object;
  *(int*)data = 1;
}

/* A pool of one image (max 1) started on the sink's proposed pool; NULL on failure. */
static GstBufferPool* one_image_pool(GstElement* sink, GstCaps* caps, gsize size) {
  GstBufferPool* pool = proposed_pool(sink, caps);
  if (pool == NULL) return NULL;
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, (guint)size, 1, 1);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}

/* A buffer of the sink's pool copied downstream (gst_buffer_copy shares its memory, as videorate and identity
 * do) goes back to the pool while the copy lives: its image is not handed out again while the copy holds the
 * memory, and once the copy goes, the next buffer of that image has the same GstMemory, mapped at the same
 * address (no new wrap, mmap or page faults). The memory is freed when the pool stops, and also when it
 * outlives the pool. */
static int case_sink_pool_takes_back_memory_a_copy_shared(void) {
  GstVideoInfo info;
  GstCaps* caps = NULL;
  GstElement* sink = paused_sink("pool-copy", &info, &caps);
  CHECK(sink != NULL);
  int rc = 1;
  GstBufferPool* pool = one_image_pool(sink, caps, info.size);
  if (pool == NULL) {
    fprintf(stderr, "no started pool of one image from the sink\n");
    goto out;
  }
  GstBuffer* first = NULL;
  GstBuffer* again = NULL;
  GstBuffer* busy = NULL;
  GstBufferPoolAcquireParams dont_wait = {.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT};
  CHECK(gst_buffer_pool_acquire_buffer(pool, &first, NULL) == GST_FLOW_OK);
  GstMemory* memory = gst_buffer_peek_memory(first, 0);
  GstMapInfo map;
  CHECK(gst_buffer_map(first, &map, GST_MAP_WRITE));
  const guint8* address = map.data;
  map.data[0] = 0x5a;
  gst_buffer_unmap(first, &map);
  int freed = 0;
  gst_mini_object_weak_ref(GST_MINI_OBJECT_CAST(memory), set_flag, &freed);
  GstBuffer* copy = gst_buffer_copy(first);
  gst_buffer_unref(first); /* back to the pool while the copy shares its memory */
  const GstFlowReturn while_copied = gst_buffer_pool_acquire_buffer(pool, &busy, &dont_wait);
  if (busy != NULL) gst_buffer_unref(busy);
  gst_buffer_unref(copy);
  const int freed_by_copy = freed;
  CHECK(gst_buffer_pool_acquire_buffer(pool, &again, NULL) == GST_FLOW_OK);
  const gboolean same_memory = gst_buffer_peek_memory(again, 0) == memory;
  CHECK(gst_buffer_map(again, &map, GST_MAP_READ));
  const gboolean same_address = map.data == address && map.data[0] == 0x5a;
  gst_buffer_unmap(again, &map);
  const gboolean has_meta = gst_buffer_get_video_meta(again) != NULL;
  gst_buffer_unref(again);
  const int freed_while_idle = freed;
  gst_buffer_pool_set_active(pool, FALSE);
  const int freed_at_stop = freed;

  /* A memory that outlives its pool: freed with its last holder. */
  CHECK(gst_buffer_pool_set_active(pool, TRUE));
  CHECK(gst_buffer_pool_acquire_buffer(pool, &first, NULL) == GST_FLOW_OK);
  int outlived_freed = 0;
  gst_mini_object_weak_ref(GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(first, 0)), set_flag, &outlived_freed);
  copy = gst_buffer_copy(first);
  gst_buffer_unref(first);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  pool = NULL;
  const int outlived_before = outlived_freed;
  gst_buffer_unref(copy);
  printf("acquire while a copy shares the memory: %s; freed by the copy %d; again: same GstMemory %d, same address "
         "and byte %d, video meta %d; freed while idle %d, at stop %d; after the pool: freed before its copy %d, "
         "with it %d\n", gst_flow_get_name(while_copied), freed_by_copy, same_memory, same_address, has_meta,
         freed_while_idle, freed_at_stop, outlived_before, outlived_freed);
  rc = while_copied == GST_FLOW_EOS && !freed_by_copy && same_memory && same_address && has_meta &&
               !freed_while_idle && freed_at_stop && !outlived_before && outlived_freed
           ? 0
           : 1;
out:
  if (pool != NULL) gst_object_unref(pool);
  gst_caps_unref(caps);
  gst_element_set_state(sink, GST_STATE_NULL);
  gst_object_unref(sink);
  return rc;
}

int main(int argc, char** argv) {
  gst_init(NULL, NULL);
  if (gst_element_factory_find("edgetensorsrc") == NULL || gst_element_factory_find("appsink") == NULL) {
    fprintf(stderr, "edgetensorsrc or appsink missing (GST_PLUGIN_PATH, gstreamer1.0-plugins-base)\n");
    return getenv("EDGETENSOR_REQUIRE_GSTREAMER") != NULL ? 1 : 77;
  }
  static const struct test_case cases[] = {
      {"src_pushes_every_frame_with_its_pixels", case_src_pushes_every_frame_with_its_pixels},
      {"src_reports_a_dead_producer", case_src_reports_a_dead_producer},
      {"src_reconnects_to_the_next_producer", case_src_reconnects_to_the_next_producer},
      {"src_feeds_videoconvert_to_rgb", case_src_feeds_videoconvert_to_rgb},
      {"sink_drop_policy_never_stalls_for_a_holding_receiver", case_sink_drop_policy_never_stalls_for_a_holding_receiver},
      {"sink_caps_change_is_a_new_layout", case_sink_caps_change_is_a_new_layout},
      {"sink_copy_path_survives_a_caps_change", case_sink_copy_path_survives_a_caps_change},
      {"sink_copy_pool_exhausted_drops_at_once", case_sink_copy_pool_exhausted_drops_at_once},
      {"sink_copy_pool_exhausted_waits_then_drops", case_sink_copy_pool_exhausted_waits_then_drops},
      {"src_accepts_a_buffer_without_the_last_rows_padding", case_src_accepts_a_buffer_without_the_last_rows_padding},
      {"src_reuses_its_buffers_but_not_one_a_copy_shares", case_src_reuses_its_buffers_but_not_one_a_copy_shares},
      {"src_rebases_pts_from_any_timeline", case_src_rebases_pts_from_any_timeline},
      {"src_keeps_a_frame_while_part_of_it_is_held", case_src_keeps_a_frame_while_part_of_it_is_held},
      {"sink_needs_a_socket_path", case_sink_needs_a_socket_path},
      {"sink_unlock_ends_a_send_waiting_without_limit", case_sink_unlock_ends_a_send_waiting_without_limit},
      {"sink_pool_refuses_buffers_larger_than_its_layout", case_sink_pool_refuses_buffers_larger_than_its_layout},
      {"sink_pool_takes_back_memory_a_copy_shared", case_sink_pool_takes_back_memory_a_copy_shared},
      {"sink_refuses_a_live_socket", case_sink_refuses_a_live_socket},
      {"src_needs_a_socket_path", case_src_needs_a_socket_path},
      {"src_without_a_producer_fails_after_connect_timeout", case_src_without_a_producer_fails_after_connect_timeout},
      {"src_at_the_receiver_limit_names_it_and_may_wait_for_room", case_src_at_the_receiver_limit_names_it_and_may_wait_for_room},
      {"src_refuses_a_tensor_without_layout", case_src_refuses_a_tensor_without_layout},
      {"src_pushes_planes_in_two_buffers_as_two_memories", case_src_pushes_planes_in_two_buffers_as_two_memories},
      {"src_copies_for_a_downstream_without_video_meta", case_src_copies_for_a_downstream_without_video_meta},
      {"src_sends_its_layout_to_a_downstream_with_video_meta", case_src_sends_its_layout_to_a_downstream_with_video_meta},
      {"sink_feeds_a_c_consumer_zero_copy", case_sink_feeds_a_c_consumer_zero_copy},
      {"sink_copies_once_without_its_pool", case_sink_copies_once_without_its_pool},
      {"sink_plane_buffers_sends_one_buffer_per_plane", case_sink_plane_buffers_sends_one_buffer_per_plane},
      {"sink_plane_pool_holds_each_plane_apart_for_every_format", case_sink_plane_pool_holds_each_plane_apart_for_every_format},
      {"sink_plane_pool_waits_while_consumers_hold_it", case_sink_plane_pool_waits_while_consumers_hold_it},
      {"sink_plane_pool_fits_the_receivers_buffer_table", case_sink_plane_pool_fits_the_receivers_buffer_table},
  };
  return run_cases(cases, sizeof cases / sizeof *cases, argc, argv);
}
