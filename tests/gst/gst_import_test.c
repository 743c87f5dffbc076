/* SPDX-License-Identifier: Apache-2.0 */
/* edgetensorsink importing upstream's own fd memory (C11; the C API and GStreamer only). The upstream is an
 * appsrc fed from a GstBufferPool of this file's (FdPool): a fixed set of sealed memfds wrapped as
 * GstFdMemory with GstVideoMeta, reused as a capture pool reuses its buffers, counting each buffer that comes
 * back. A C consumer checks every byte of every NV12 1080p frame against what was written, holds one frame
 * while later ones pass and checks it is still intact (its buffer did not go back upstream), and counts the
 * buffer keys (each upstream buffer announced once). Layouts: GStreamer's default, a strided one with plane
 * offsets (one fd), one memory per plane (two fds). Also: a small upstream pool with consumers holding
 * frames (never a deadlock: frames beyond what the pool can spare are copied), the drop policy with no
 * receiver (buffers come back at once), and a layout the sink cannot send (copied, no crash). */
#define _GNU_SOURCE
#include "../capi/capi_check.h"

#include <gst/allocators/allocators.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

enum { kWidth = 1920, kHeight = 1080 };
enum { LAYOUT_DEFAULT = 0, LAYOUT_STRIDED = 1, LAYOUT_TWO_FDS = 2, LAYOUT_BAD_STRIDE = 3 };

static uint8_t pattern(uint64_t sequence, unsigned plane, unsigned row, unsigned col) {
  return (uint8_t)((sequence * 13u + plane * 50u + row * 3u + col * 7u) & 0xffu);
}
static unsigned plane_rows(unsigned plane) { return plane == 0 ? kHeight : kHeight / 2; }

/* ---- FdPool: a GstBufferPool of memfd-backed GstFdMemory -------------------------------------------- */

typedef struct {
  GstBufferPool parent;
  int layout;
  GstAllocator* allocator;
  gint returned; /* atomic: buffers given back to the pool */
  gint allocated;
} FdPool;
typedef struct {
  GstBufferPoolClass parent_class;
} FdPoolClass;
GType fd_pool_get_type(void);
G_DEFINE_TYPE(FdPool, fd_pool, GST_TYPE_BUFFER_POOL)

/* Plane offsets (from the buffer's start) and strides of a layout; *size the bytes of its one memory (or
 * of each memory for LAYOUT_TWO_FDS, then offsets count from each plane's memory). */
static void layout_of(int layout, gsize offsets[GST_VIDEO_MAX_PLANES], gint strides[GST_VIDEO_MAX_PLANES], gsize* size) {
  switch (layout) {
    case LAYOUT_STRIDED:
      strides[0] = strides[1] = 2048;
      offsets[0] = 4096;
      offsets[1] = 4096 + 2048u * kHeight + 8192;
      *size = offsets[1] + 2048u * (kHeight / 2) + 4096;
      break;
    case LAYOUT_TWO_FDS:
      strides[0] = strides[1] = kWidth;
      offsets[0] = 0;
      offsets[1] = (gsize)kWidth * kHeight; /* in the buffer: the second memory starts there */
      *size = (gsize)kWidth * kHeight;      /* each memory: the Y plane; UV needs half */
      break;
    case LAYOUT_BAD_STRIDE: /* a stride shorter than a row: not an image the library can describe */
      strides[0] = strides[1] = kWidth;
      offsets[0] = 0;
      offsets[1] = (gsize)kWidth * kHeight;
      *size = (gsize)kWidth * kHeight * 3 / 2;
      break;
    default:
      strides[0] = strides[1] = kWidth;
      offsets[0] = 0;
      offsets[1] = (gsize)kWidth * kHeight;
      *size = (gsize)kWidth * kHeight * 3 / 2;
      break;
  }
}

static GstMemory* memfd_memory(GstAllocator* allocator, gsize size) {
  int fd = memfd_create("fd-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return NULL;
  if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    close(fd);
    return NULL;
  }
  return gst_fd_allocator_alloc(allocator, fd, size, GST_FD_MEMORY_FLAG_NONE); /* takes the fd */
}

static GstFlowReturn fd_pool_alloc_buffer(GstBufferPool* pool, GstBuffer** buffer, GstBufferPoolAcquireParams* params) {
  (void)params;
  FdPool* self = (FdPool*)pool;
  gsize offsets[GST_VIDEO_MAX_PLANES] = {0}, size;
  gint strides[GST_VIDEO_MAX_PLANES] = {0};
  layout_of(self->layout, offsets, strides, &size);
  GstBuffer* b = gst_buffer_new();
  const int memories = self->layout == LAYOUT_TWO_FDS ? 2 : 1;
  for (int i = 0; i < memories; ++i) {
    GstMemory* m = memfd_memory(self->allocator, size);
    if (m == NULL) {
      gst_buffer_unref(b);
      return GST_FLOW_ERROR;
    }
    gst_buffer_append_memory(b, m);
  }
  if (self->layout == LAYOUT_BAD_STRIDE) strides[0] = 1000;
  gst_buffer_add_video_meta_full(b, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, kWidth, kHeight, 2, offsets,
                                 strides);
  g_atomic_int_inc(&self->allocated);
  *buffer = b;
  return GST_FLOW_OK;
}

static void fd_pool_release_buffer(GstBufferPool* pool, GstBuffer* buffer) {
  g_atomic_int_inc(&((FdPool*)pool)->returned);
  GST_BUFFER_POOL_CLASS(fd_pool_parent_class)->release_buffer(pool, buffer);
}

static void fd_pool_finalize(GObject* object) {
  gst_object_unref(((FdPool*)object)->allocator);
  G_OBJECT_CLASS(fd_pool_parent_class)->finalize(object);
}

static void fd_pool_class_init(FdPoolClass* klass) {
  GST_BUFFER_POOL_CLASS(klass)->alloc_buffer = fd_pool_alloc_buffer;
  GST_BUFFER_POOL_CLASS(klass)->release_buffer = fd_pool_release_buffer;
  G_OBJECT_CLASS(klass)->finalize = fd_pool_finalize;
}
static void fd_pool_init(FdPool* self) { self->allocator = gst_fd_allocator_new(); }

static FdPool* fd_pool_new(int layout, guint buffers, GstCaps* caps) {
  FdPool* pool = g_object_new(fd_pool_get_type(), NULL);
  gst_object_ref_sink(pool);
  pool->layout = layout;
  GstStructure* config = gst_buffer_pool_get_config(GST_BUFFER_POOL(pool));
  gsize offsets[GST_VIDEO_MAX_PLANES] = {0}, size;
  gint strides[GST_VIDEO_MAX_PLANES] = {0};
  layout_of(layout, offsets, strides, &size);
  /* The pool's size is the whole buffer's (a released buffer of another size would be discarded). */
  gst_buffer_pool_config_set_params(config, caps, (guint)(layout == LAYOUT_TWO_FDS ? 2 * size : size), buffers, buffers);
  if (!gst_buffer_pool_set_config(GST_BUFFER_POOL(pool), config) || !gst_buffer_pool_set_active(GST_BUFFER_POOL(pool), TRUE)) {
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}

/* ---- The producer: appsrc fed from an FdPool --------------------------------------------------------- */

struct producer {
  GstElement* appsrc;
  FdPool* pool;
  int frames;
  int pushed;
  int fill_once; /* bench: every buffer was written before the run (only the hand-off is measured) */
  int lead;       /* > 0: frame i waits (up to 2 s) until the consumer received frame i - lead - 1 */
  gint* received; /* the consumer's count, read atomically (with lead) */
  GThread* thread;
};

static gboolean fill(GstBuffer* buffer, uint64_t sequence) {
  GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
  GstMapInfo map;
  for (unsigned p = 0; p < 2; ++p) {
    guint index = 0, length = 0;
    gsize skip = 0;
    if (!gst_buffer_find_memory(buffer, meta->offset[p], 1, &index, &length, &skip)) return FALSE;
    GstMemory* memory = gst_buffer_peek_memory(buffer, index);
    if (!gst_memory_map(memory, &map, GST_MAP_WRITE)) return FALSE;
    const gint stride = meta->stride[p] < kWidth ? kWidth : meta->stride[p];
    for (unsigned r = 0; r < plane_rows(p); ++r) {
      uint8_t* row = map.data + skip + (gsize)r * (gsize)stride;
      if (skip + (gsize)r * (gsize)stride + kWidth > map.size) break;
      for (unsigned c = 0; c < kWidth; ++c) row[c] = pattern(sequence, p, r, c);
    }
    gst_memory_unmap(memory, &map);
  }
  return TRUE;
}

static gpointer produce(gpointer data) {
  struct producer* p = data;
  for (int i = 0; i < p->frames; ++i) {
    for (int w = 0; p->lead > 0 && w < 2000 && i - g_atomic_int_get(p->received) > p->lead; ++w) g_usleep(1000);
    GstBuffer* buffer = NULL;
    if (gst_buffer_pool_acquire_buffer(GST_BUFFER_POOL(p->pool), &buffer, NULL) != GST_FLOW_OK) break;
    if (!p->fill_once && !fill(buffer, (uint64_t)i)) {
      gst_buffer_unref(buffer);
      break;
    }
    GST_BUFFER_PTS(buffer) = (GstClockTime)i * GST_SECOND / 30;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
    GstFlowReturn flow = GST_FLOW_OK;
    g_signal_emit_by_name(p->appsrc, "push-buffer", buffer, &flow);
    gst_buffer_unref(buffer);
    if (flow != GST_FLOW_OK) break;
    ++p->pushed;
  }
  GstFlowReturn flow = GST_FLOW_OK;
  g_signal_emit_by_name(p->appsrc, "end-of-stream", &flow);
  return NULL;
}

#define CAPS_TEXT "video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"

/* ---- The consumer ---------------------------------------------------------------------------------- */

/* Bytes of plane `p` of `frame` that differ from frame `sequence`'s pattern (-1: cannot read it). */
static long mismatches(const et_frame* frame, unsigned p, uint64_t sequence) {
  et_tensor* plane = NULL;
  if (et_frame_plane(frame, p, &plane) != ET_OK) return -1;
  et_tensor_info info = {0};
  info.struct_size = sizeof info;
  et_map* map = NULL;
  const void* data = NULL;
  size_t size = 0;
  long bad = -1;
  if (et_tensor_get_info(plane, &info) == ET_OK && et_tensor_map_read(plane, &map, &data, &size) == ET_OK) {
    bad = 0;
    const uint8_t* bytes = data;
    for (unsigned r = 0; r < plane_rows(p); ++r)
      for (unsigned c = 0; c < kWidth; ++c)
        bad += bytes[(size_t)r * (size_t)info.strides_bytes[0] + c] != pattern(sequence, p, r, c);
    et_map_release(map);
  }
  et_tensor_release(plane);
  return bad;
}

static guint64 stat_of(GstStructure* stats, const char* name) {
  guint64 v = 0;
  gst_structure_get_uint64(stats, name, &v);
  return v;
}

struct run {
  int layout;
  guint pool_buffers;
  int frames;
  const char* sink_properties;
  int hold_ms;     /* the consumer holds each frame this long... */
  int hold_count;  /* ...keeping this many held at once (0: releases each at once) */
  int keep_one;    /* holds frame 5 until frame 20 arrived, then checks it again */
  int receivers;   /* 0: nobody connects (wait-receivers=0) */
  int lead;        /* > 0: the producer runs at most this many frames ahead of the consumer */
  /* results */
  int received, right, kept_intact, keys;
  guint64 announces, retires; /* the receiver's: each announce is an fd and a mapping */
  gint returned, allocated;
  GstStructure* stats;
  gint64 elapsed_ms;
};

static int run_pipeline(struct run* r) {
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-import-test-%d-%d", (int)getpid(), r->layout);
  GstCaps* caps = gst_caps_from_string(CAPS_TEXT);
  FdPool* pool = fd_pool_new(r->layout, r->pool_buffers, caps);
  CHECK(pool != NULL);
  char* text = g_strdup_printf("appsrc name=src format=time caps=" CAPS_TEXT " ! edgetensorsink name=sink "
                               "socket-path=%s wait-receivers=%d sync=false %s",
                               path, r->receivers, r->sink_properties ? r->sink_properties : "");
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  gst_caps_unref(caps);
  CHECK(pipeline != NULL);
  struct producer producer = {0};
  producer.appsrc = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  producer.pool = pool;
  producer.frames = r->frames;
  gint received_now = 0;
  producer.lead = r->lead;
  producer.received = &received_now;
  const gint64 start = g_get_monotonic_time();
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  producer.thread = g_thread_new("producer", produce, &producer);
  et_channel_receiver* receiver = NULL;
  if (r->receivers > 0) {
    int32_t fd = -1;
    for (int tries = 0; tries < 500 && et_channel_connect(path, 1000, &fd) != ET_OK; ++tries) g_usleep(10000);
    CHECK(fd >= 0);
    CHECK_OK(et_channel_receiver_create_adopt(fd, NULL, &receiver));
  }
  et_frame* held[8] = {0};
  int held_count = 0;
  et_frame* kept = NULL;
  uint64_t keys[64];
  r->keys = r->received = r->right = r->kept_intact = 0;
  while (receiver != NULL) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 20000, &d) != ET_OK) {
      fprintf(stderr, "receive: %s\n", et_last_error_message());
      break;
    }
    if (d.end_of_stream) break;
    long bad = d.frame == NULL ? -1 : 0;
    for (unsigned p = 0; bad >= 0 && p < 2; ++p) {
      const long b = mismatches(d.frame, p, d.sequence);
      bad = b < 0 ? -1 : bad + b;
    }
    if (bad != 0) fprintf(stderr, "frame %llu: %ld bytes differ\n", (unsigned long long)d.sequence, bad);
    r->right += bad == 0;
    ++r->received;
    g_atomic_int_set(&received_now, r->received);
    uint32_t buffer_count = 0;
    uint32_t plane_buffers[ET_MAX_PLANES];
    CHECK(et_frame_get_buffers(d.frame, &buffer_count, plane_buffers) == ET_OK);
    for (uint32_t b = 0; b < buffer_count; ++b) {  /* the keys of every buffer of the frame */
      et_tensor* buffer = NULL;
      et_tensor_info info = {0};
      info.struct_size = sizeof info;
      if (et_frame_buffer(d.frame, b, &buffer) == ET_OK && et_tensor_get_info(buffer, &info) == ET_OK) {
        int k = 0;
        while (k < r->keys && keys[k] != info.buffer_key) ++k;
        if (k == r->keys && r->keys < 64) keys[r->keys++] = info.buffer_key;
      }
      et_tensor_release(buffer);
    }
    if (r->keep_one && d.sequence == 5) {
      kept = d.frame;
      continue;
    }
    if (kept != NULL && d.sequence == 20) {
      r->kept_intact = mismatches(kept, 0, 5) == 0 && mismatches(kept, 1, 5) == 0;
      et_frame_release(kept);
      kept = NULL;
    }
    if (r->hold_count > 0) {
      if (held_count == r->hold_count) {
        g_usleep((gulong)r->hold_ms * 1000);
        et_frame_release(held[0]);
        memmove(held, held + 1, sizeof held[0] * (size_t)(held_count - 1));
        --held_count;
      }
      held[held_count++] = d.frame;
      continue;
    }
    et_frame_release(d.frame);
  }
  for (int i = 0; i < held_count; ++i) et_frame_release(held[i]);
  et_frame_release(kept);
  if (receiver != NULL) {
    et_channel_receiver_stats rs = {0};
    rs.struct_size = sizeof rs;
    CHECK(et_channel_receiver_get_stats(receiver, &rs) == ET_OK);
    r->announces = rs.announces;
    r->retires = rs.retires;
  }
  et_channel_receiver_release(receiver);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 20 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  CHECK(message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS);
  gst_message_unref(message);
  gst_object_unref(bus);
  r->elapsed_ms = (g_get_monotonic_time() - start) / 1000;
  g_thread_join(producer.thread);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_get(sink, "stats", &r->stats, NULL);
  gst_object_unref(sink);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(producer.appsrc);
  gst_object_unref(pipeline);
  r->returned = g_atomic_int_get(&pool->returned);
  r->allocated = g_atomic_int_get(&pool->allocated);
  gst_buffer_pool_set_active(GST_BUFFER_POOL(pool), FALSE);
  gst_object_unref(pool);
  char* s = gst_structure_to_string(r->stats);
  printf("layout %d, pool %u: %d frames pushed, %d received, %d right, held frame intact %d, %d buffer keys, "
         "%llu announces, %llu retires, %d buffers back of %d allocated, %lld ms; %s\n",
         r->layout, r->pool_buffers, producer.pushed, r->received, r->right, r->kept_intact, r->keys,
         (unsigned long long)r->announces, (unsigned long long)r->retires, r->returned,
         r->allocated, (long long)r->elapsed_ms, s);
  g_free(s);
  CHECK(producer.pushed == r->frames);
  /* Every buffer the sink took went back to upstream's pool once nobody held it (the pool counts its min
   * buffers going in once, at activation). */
  CHECK(r->returned == r->frames + (gint)r->pool_buffers);
  return 0;
}

static int zero_copy_case(int layout) {
  /* The producer paced 2 frames ahead: with the kept frame at most 4 imports are held, below the 6 the sink
   * takes from a pool of 8, however slow the build (sanitizers) or the machine. */
  struct run r = {.layout = layout, .pool_buffers = 8, .frames = 40, .keep_one = 1, .receivers = 1, .lead = 2};
  CHECK(run_pipeline(&r) == 0);
  const guint64 copies = stat_of(r.stats, "copies"), imported = stat_of(r.stats, "imported");
  const guint64 held = stat_of(r.stats, "imports-held");
  gst_structure_free(r.stats);
  CHECK(r.received == r.frames && r.right == r.frames);
  CHECK(r.kept_intact == 1);
  CHECK(copies == 0 && imported == (guint64)r.frames && held == 0);
  /* One key per upstream memory: at most the pool's buffers times their fds (NV12 with one fd per plane in
   * layout 2), a new key per frame otherwise. */
  const int fds_per_buffer = layout == 2 ? 2 : 1;
  CHECK(r.keys >= 1 && r.keys <= r.allocated * fds_per_buffer && r.allocated <= 8);
  /* ...and each announced to the receiver once: not retired while upstream keeps it (the sink's import of each
   * upstream memory holds it), so never announced again (an announce per frame otherwise: docs/GSTREAMER.md).
   * A retire is right for a memory upstream's pool freed (GstBufferPool discards a buffer now and then at the
   * start of a stream): its key does not come back. */
  CHECK(r.announces == (guint64)r.keys);
  return 0;
}

static int case_sink_imports_upstream_fd_memory(void) { return zero_copy_case(LAYOUT_DEFAULT); }
static int case_sink_imports_a_strided_layout_with_offsets(void) { return zero_copy_case(LAYOUT_STRIDED); }

/* One memory per plane: a frame of two buffers (the consumer checks it through et_frame_plane). */
static int case_sink_imports_one_fd_per_plane(void) { return zero_copy_case(LAYOUT_TWO_FDS); }

/* Upstream's pool of 3 (the sink imports at most 1 of them at once) while the consumer keeps 3 frames held,
 * 30 ms each: no deadlock, every frame arrives right, the rest are copied, and it ends in bounded time. */
static int case_sink_small_upstream_pool_with_holding_consumer(void) {
  struct run r = {.layout = LAYOUT_DEFAULT, .pool_buffers = 3, .frames = 30, .hold_ms = 30, .hold_count = 3,
                  .receivers = 1, .sink_properties = "pool-size=8"};
  CHECK(run_pipeline(&r) == 0);
  const guint64 copies = stat_of(r.stats, "copies"), imported = stat_of(r.stats, "imported");
  gst_structure_free(r.stats);
  CHECK(r.received == r.frames && r.right == r.frames);
  CHECK(imported >= 1 && imported + copies == (guint64)r.frames);
  CHECK(r.elapsed_ms < 20000);
  return 0;
}

/* policy=drop and no receiver: each imported frame goes nowhere and gives its buffer back at once, so a pool
 * of 2 serves 20 frames, all imported. */
static int case_sink_drop_policy_gives_buffers_back_at_once(void) {
  struct run r = {.layout = LAYOUT_DEFAULT, .pool_buffers = 2, .frames = 20, .receivers = 0,
                  .sink_properties = "policy=drop"};
  CHECK(run_pipeline(&r) == 0);
  const guint64 imported = stat_of(r.stats, "imported"), held = stat_of(r.stats, "imports-held");
  gst_structure_free(r.stats);
  CHECK(imported == (guint64)r.frames && held == 0);
  return 0;
}

/* A stride shorter than a row: the sink copies (a logged reason), never crashes; no frame is imported. */
static int case_sink_copies_a_layout_it_cannot_send(void) {
  struct run r = {.layout = LAYOUT_BAD_STRIDE, .pool_buffers = 4, .frames = 5, .receivers = 0,
                  .sink_properties = "policy=drop"};
  CHECK(run_pipeline(&r) == 0);
  const guint64 imported = stat_of(r.stats, "imported"), copies = stat_of(r.stats, "copies");
  gst_structure_free(r.stats);
  CHECK(imported == 0 && copies == (guint64)r.frames);
  return 0;
}

/* bench <sink description> <frames>: FdPool (8 buffers, each written once) ! appsrc ! the sink, sync=false;
 * prints this process's CPU time (user + system, ms) once the pipeline reached EOS. For
 * bench/gst_import_handoff.sh; asserts nothing about time. */
static int bench(const char* sink_text, int frames) {
  GstCaps* caps = gst_caps_from_string(CAPS_TEXT);
  FdPool* pool = fd_pool_new(LAYOUT_DEFAULT, 8, caps);
  gst_caps_unref(caps);
  CHECK(pool != NULL);
  char* text = g_strdup_printf("appsrc name=src format=time caps=" CAPS_TEXT " ! %s", sink_text);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  CHECK(pipeline != NULL);
  /* Every buffer written before the clock starts: only the hand-off runs while it is measured. */
  GstBuffer* buffers[8];
  for (int i = 0; i < 8; ++i) CHECK(gst_buffer_pool_acquire_buffer(GST_BUFFER_POOL(pool), &buffers[i], NULL) == GST_FLOW_OK);
  for (int i = 0; i < 8; ++i) {
    CHECK(fill(buffers[i], 0));
    gst_buffer_unref(buffers[i]);
  }
  struct producer producer = {0};
  producer.appsrc = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  producer.pool = pool;
  producer.frames = frames;
  producer.fill_once = 1;
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  producer.thread = g_thread_new("producer", produce, &producer);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  CHECK(message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS);
  gst_message_unref(message);
  gst_object_unref(bus);
  g_thread_join(producer.thread);
  getrusage(RUSAGE_SELF, &after);
  const double ms = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec + after.ru_stime.tv_sec -
                             before.ru_stime.tv_sec) * 1e3 +
                    (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec + after.ru_stime.tv_usec -
                             before.ru_stime.tv_usec) / 1e3;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  if (sink != NULL) {
    GstStructure* stats = NULL;
    g_object_get(sink, "stats", &stats, NULL);
    char* s = gst_structure_to_string(stats);
    fprintf(stderr, "%s\n", s);
    g_free(s);
    gst_structure_free(stats);
    gst_object_unref(sink);
  }
  printf("cpu_ms %.1f frames %d\n", ms, producer.pushed);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(producer.appsrc);
  gst_object_unref(pipeline);
  gst_buffer_pool_set_active(GST_BUFFER_POOL(pool), FALSE);
  gst_object_unref(pool);
  return producer.pushed == frames ? 0 : 1;
}

int main(int argc, char** argv) {
  gst_init(NULL, NULL);
  if (argc == 4 && strcmp(argv[1], "bench") == 0) return bench(argv[2], atoi(argv[3]));
  if (gst_element_factory_find("edgetensorsink") == NULL || gst_element_factory_find("appsrc") == NULL) {
    fprintf(stderr, "edgetensorsink or appsrc missing (GST_PLUGIN_PATH, gstreamer1.0-plugins-base)\n");
    return getenv("EDGETENSOR_REQUIRE_GSTREAMER") != NULL ? 1 : 77;
  }
  static const struct test_case cases[] = {
      {"sink_imports_upstream_fd_memory", case_sink_imports_upstream_fd_memory},
      {"sink_imports_a_strided_layout_with_offsets", case_sink_imports_a_strided_layout_with_offsets},
      {"sink_imports_one_fd_per_plane", case_sink_imports_one_fd_per_plane},
      {"sink_small_upstream_pool_with_holding_consumer", case_sink_small_upstream_pool_with_holding_consumer},
      {"sink_drop_policy_gives_buffers_back_at_once", case_sink_drop_policy_gives_buffers_back_at_once},
      {"sink_copies_a_layout_it_cannot_send", case_sink_copies_a_layout_it_cannot_send},
  };
  return run_cases(cases, sizeof cases / sizeof *cases, argc, argv);
}
