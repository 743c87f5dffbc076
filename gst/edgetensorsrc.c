/* SPDX-License-Identifier: Apache-2.0 */
#include "edgetensorsrc.h"

#include "formats.h"
#include "framepool.h"

#include <edgetensor/c/edgetensor_c.h>
#include <gst/allocators/allocators.h>
#include <gst/video/video.h>

#include <errno.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC(et_gst_src_debug);
#define GST_CAT_DEFAULT et_gst_src_debug

enum {
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_CONNECT_TIMEOUT,
  PROP_LATEST,
  PROP_RECONNECT,
  PROP_STATS,
};

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
/* How long one receive waits before it looks at unlock (flushing, state changes). */
#define RECEIVE_SLICE_MS 50
/* Received buffers kept wrapped as GstMemory (one fd and one mapping each), least recently used evicted:
 * the receiver's own table (32 by default) fits. */
#define MAX_CACHED_MEMORIES 64
/* The longest wait for a frame's acquire fence (the library's default map wait, C++ kDefaultMapTimeout). */
#define ACQUIRE_FENCE_WAIT_NS INT64_C(1000000000)

/* One received buffer wrapped once: its GstMemory (KEEP_MAPPED: mapped once, never re-faulted), by key. */
typedef struct {
  uint64_t buffer_key;
  GstMemory* memory;
  guint64 last_used;
} CachedMemory;

struct _GstEdgetensorSrc {
  GstPushSrc parent;
  /* Properties (object lock). */
  char* socket_path;
  guint connect_timeout_ms;
  gboolean latest;
  gboolean reconnect;
  /* Between start and stop; the receiver's calls are thread-safe. */
  et_channel_receiver* receiver;
  gint unlocked;                 /* atomic: unlock() asked the streaming thread to stop waiting */
  /* Streaming thread only. */
  GArray* cache;                 /* CachedMemory */
  GstAllocator* fd_allocator;
  GstAllocator* dmabuf_allocator;
  GstVideoInfo info;             /* of the caps set last, with the frames' layout */
  gboolean have_caps;
  et_image_layout last_layout;   /* the last frame's layout in its GstBuffer, and its buffers' bytes: */
  uint64_t last_bytes;           /* a frame with both the same has `info` (no GstVideoInfo made again) */
  gboolean downstream_meta;      /* downstream reads GstVideoMeta (its ALLOCATION answer to those caps) */
  GstVideoInfo default_info;     /* those caps in GStreamer's own layout */
  GstBufferPool* copy_pool;      /* buffers of that layout, when frames must be copied into it */
  GstBufferPool* frame_pool;     /* the frames' GstBuffers, recycled (framepool.h); between start and stop */
  guint64 uses;
  gboolean discont;              /* the next buffer follows a (re)connect */
  gint pts_on_clock;             /* the producer's pts is on CLOCK_MONOTONIC: 1, 0, or -1 until its first pts */
  gint64 full_since;             /* g_get_monotonic_time() of the first of a run of receiver-limit refusals; 0: none */
  /* Counters (object lock). */
  guint64 frames;
  guint64 memories_wrapped;      /* buffers wrapped as GstMemory (each once while cached) */
  guint64 buffers_reused;        /* frames pushed in a GstBuffer of an earlier frame (framepool.h) */
  guint64 copies;                /* frames copied into GStreamer's layout (a downstream without GstVideoMeta) */
  guint64 reconnects;
  et_channel_receiver_stats ended; /* the receivers' counters of those gone since start (reconnect, stop) */
};

G_DEFINE_TYPE(GstEdgetensorSrc, gst_edgetensor_src, GST_TYPE_PUSH_SRC)

static void gst_edgetensor_src_set_property(GObject* object, guint id, const GValue* value, GParamSpec* pspec) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(object);
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_SOCKET_PATH:
      g_free(self->socket_path);
      self->socket_path = g_value_dup_string(value);
      break;
    case PROP_CONNECT_TIMEOUT: self->connect_timeout_ms = g_value_get_uint(value); break;
    case PROP_LATEST: self->latest = g_value_get_boolean(value); break;
    case PROP_RECONNECT: self->reconnect = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

/* Object lock held. The receivers' counters since start: those gone (self->ended) and the current one's. */
static GstStructure* src_stats(GstEdgetensorSrc* self) {
  et_channel_receiver_stats r = {0};
  r.struct_size = sizeof r;
  if (self->receiver != NULL && et_channel_receiver_get_stats(self->receiver, &r) != ET_OK) memset(&r, 0, sizeof r);
  r.announces += self->ended.announces;
  r.frames_skipped += self->ended.frames_skipped;
  r.frames_missing += self->ended.frames_missing;
  r.acquire_fences += self->ended.acquire_fences;
  return gst_structure_new("edgetensorsrc-stats", "frames", G_TYPE_UINT64, self->frames, "memories-wrapped",
                           G_TYPE_UINT64, self->memories_wrapped, "buffers-reused", G_TYPE_UINT64, self->buffers_reused, "announces", G_TYPE_UINT64, r.announces,
                           "frames-skipped", G_TYPE_UINT64, r.frames_skipped, "frames-missing", G_TYPE_UINT64,
                           r.frames_missing, "reconnects", G_TYPE_UINT64, self->reconnects, "acquire-fences",
                           G_TYPE_UINT64, r.acquire_fences, "copies", G_TYPE_UINT64, self->copies, NULL);
}

static void gst_edgetensor_src_get_property(GObject* object, guint id, GValue* value, GParamSpec* pspec) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(object);
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_SOCKET_PATH: g_value_set_string(value, self->socket_path); break;
    case PROP_CONNECT_TIMEOUT: g_value_set_uint(value, self->connect_timeout_ms); break;
    case PROP_LATEST: g_value_set_boolean(value, self->latest); break;
    case PROP_RECONNECT: g_value_set_boolean(value, self->reconnect); break;
    case PROP_STATS: g_value_take_boxed(value, src_stats(self)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void clear_cache(GstEdgetensorSrc* self) {
  for (guint i = 0; i < self->cache->len; ++i) gst_memory_unref(g_array_index(self->cache, CachedMemory, i).memory);
  g_array_set_size(self->cache, 0);
}

/* Copies still downstream are freed when they come back (an inactive pool frees what it gets back). */
static void clear_copy_pool(GstEdgetensorSrc* self) {
  if (self->copy_pool == NULL) return;
  gst_buffer_pool_set_active(self->copy_pool, FALSE);
  gst_object_unref(self->copy_pool);
  self->copy_pool = NULL;
}

static void gst_edgetensor_src_finalize(GObject* object) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(object);
  clear_cache(self);
  clear_copy_pool(self);
  g_array_unref(self->cache);
  gst_object_unref(self->fd_allocator);
  gst_object_unref(self->dmabuf_allocator);
  g_free(self->socket_path);
  G_OBJECT_CLASS(gst_edgetensor_src_parent_class)->finalize(object);
}

/* A receiver on socket-path, trying to connect every 50 ms for up to connect-timeout while nobody listens
 * there yet (the producer may start after the consumer, or restart), until unlock. NULL with *message
 * (g_free it) on failure. */
static et_channel_receiver* connect_receiver(GstEdgetensorSrc* self, char** message) {
  GST_OBJECT_LOCK(self);
  char* path = g_strdup(self->socket_path);
  const guint timeout_ms = self->connect_timeout_ms;
  GST_OBJECT_UNLOCK(self);
  if (path == NULL || path[0] == '\0') {
    *message = g_strdup("edgetensorsrc needs socket-path (the producer's socket)");
    g_free(path);
    return NULL;
  }
  const gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  int32_t fd = -1;
  et_status status;
  for (;;) {
    status = et_channel_connect(path, 1000, &fd);
    if (status == ET_OK || (status != ET_NOT_FOUND && status != ET_UNAVAILABLE) || g_get_monotonic_time() >= deadline ||
        g_atomic_int_get(&self->unlocked))
      break;
    g_usleep(50 * 1000);
  }
  et_channel_receiver* receiver = NULL;
  if (status == ET_OK) {
    char* name = gst_object_get_name(GST_OBJECT(self));
    et_channel_receiver_options options = {0};
    options.struct_size = sizeof options;
    options.name = name;
    status = et_channel_receiver_create_adopt(fd, &options, &receiver);
    g_free(name);
  }
  if (status != ET_OK)
    *message = g_strdup_printf("cannot receive from %s: %s", path, et_last_error_message());
  else
    GST_INFO_OBJECT(self, "receiving from %s", path);
  g_free(path);
  return receiver;
}

/* Takes the receiver out (object lock held), its counters added to self->ended so that stats keep them after
 * a reconnect or stop; the caller releases it outside the lock. */
static et_channel_receiver* retire_receiver(GstEdgetensorSrc* self) {
  et_channel_receiver* receiver = self->receiver;
  self->receiver = NULL;
  et_channel_receiver_stats r = {0};
  r.struct_size = sizeof r;
  if (receiver != NULL && et_channel_receiver_get_stats(receiver, &r) == ET_OK) {
    self->ended.announces += r.announces;
    self->ended.frames_skipped += r.frames_skipped;
    self->ended.frames_missing += r.frames_missing;
    self->ended.acquire_fences += r.acquire_fences;
  }
  return receiver;
}

static gboolean gst_edgetensor_src_start(GstBaseSrc* src) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(src);
  GST_OBJECT_LOCK(self);
  self->frames = self->memories_wrapped = self->buffers_reused = self->reconnects = self->copies = 0;
  memset(&self->ended, 0, sizeof self->ended);
  GST_OBJECT_UNLOCK(self);
  char* message = NULL;
  et_channel_receiver* receiver = connect_receiver(self, &message);
  if (receiver == NULL) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("%s", message), (NULL));
    g_free(message);
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  self->receiver = receiver;
  GST_OBJECT_UNLOCK(self);
  self->have_caps = FALSE; /* also: no last layout */
  self->frame_pool = gst_edgetensor_frame_pool_new();
  self->full_since = 0;
  self->discont = TRUE;
  self->pts_on_clock = -1;
  return TRUE;
}

/* reconnect=true: the producer is gone (`what`), so wait for the next one on the same path (connect-timeout). */
static gboolean reconnect(GstEdgetensorSrc* self, const char* what, const char* why) {
  GST_WARNING_OBJECT(self, "%s (%s): connecting again", what, why);
  GST_OBJECT_LOCK(self);
  et_channel_receiver* old = retire_receiver(self);
  GST_OBJECT_UNLOCK(self);
  et_channel_receiver_release(old);
  clear_cache(self); /* the next producer's buffers are others */
  gst_edgetensor_frame_pool_drop_idle(self->frame_pool, FALSE);
  char* message = NULL;
  et_channel_receiver* receiver = connect_receiver(self, &message);
  if (receiver == NULL) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("%s (%s) and no other came: %s", what, why, message), (NULL));
    g_free(message);
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  self->receiver = receiver;
  ++self->reconnects;
  GST_OBJECT_UNLOCK(self);
  self->discont = TRUE;
  self->pts_on_clock = -1;
  return TRUE;
}

#define FULL_RETRY_MS 100

/* After a receiver-limit refusal with reconnect: waits FULL_RETRY_MS (unlock ends it) unless connect-timeout
 * has passed since the first refusal of this run. FALSE: time is up, or unlocked. */
static gboolean wait_for_room(GstEdgetensorSrc* self) {
  const gint64 now = g_get_monotonic_time();
  if (self->full_since == 0) self->full_since = now;
  GST_OBJECT_LOCK(self);
  const gint64 timeout_us = (gint64)self->connect_timeout_ms * 1000;
  GST_OBJECT_UNLOCK(self);
  if (now - self->full_since >= timeout_us) return FALSE;
  for (int slept = 0; slept < FULL_RETRY_MS; slept += 10) {
    if (g_atomic_int_get(&self->unlocked)) return FALSE;
    g_usleep(10 * 1000);
  }
  return TRUE;
}

static gboolean gst_edgetensor_src_stop(GstBaseSrc* src) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(src);
  GST_OBJECT_LOCK(self);
  et_channel_receiver* receiver = retire_receiver(self);
  GST_OBJECT_UNLOCK(self);
  clear_cache(self);
  clear_copy_pool(self);
  if (self->frame_pool != NULL) {
    /* Buffers still downstream are freed when they come back. */
    gst_edgetensor_frame_pool_drop_idle(self->frame_pool, TRUE);
    gst_object_unref(self->frame_pool);
    self->frame_pool = NULL;
  }
  et_channel_receiver_release(receiver); /* buffers still downstream stay valid; they release on their own */
  return TRUE;
}

static gboolean gst_edgetensor_src_unlock(GstBaseSrc* src) {
  g_atomic_int_set(&GST_EDGETENSOR_SRC(src)->unlocked, 1);
  return TRUE;
}

static gboolean gst_edgetensor_src_unlock_stop(GstBaseSrc* src) {
  g_atomic_int_set(&GST_EDGETENSOR_SRC(src)->unlocked, 0);
  return TRUE;
}

/* The GstMemory of the buffer `buffer` (a u8 tensor over the whole received buffer, described by `described`):
 * the cached one, or a new one over an fd of it (KEEP_MAPPED). A new reference to the cached memory; NULL on
 * failure (logged). */
static GstMemory* memory_of(GstEdgetensorSrc* self, const et_tensor* buffer, const et_tensor_info* described) {
  const et_tensor_info info = *described;
  ++self->uses;
  for (guint i = 0; i < self->cache->len; ++i) {
    CachedMemory* c = &g_array_index(self->cache, CachedMemory, i);
    if (c->buffer_key == info.buffer_key) {
      c->last_used = self->uses;
      return gst_memory_ref(c->memory);
    }
  }
  int32_t fd = -1;
  if (et_tensor_export_fd(buffer, &fd) != ET_OK) {
    GST_ERROR_OBJECT(self, "exporting a received buffer: %s", et_last_error_message());
    return NULL;
  }
  GstMemory* memory = info.memory == ET_MEMORY_DMABUF
                          ? gst_fd_allocator_alloc(self->dmabuf_allocator, fd, (gsize)info.buffer_bytes,
                                                   GST_FD_MEMORY_FLAG_KEEP_MAPPED)
                          : gst_fd_allocator_alloc(self->fd_allocator, fd, (gsize)info.buffer_bytes,
                                                   GST_FD_MEMORY_FLAG_KEEP_MAPPED);
  if (memory == NULL) return NULL;
  if (self->cache->len >= MAX_CACHED_MEMORIES) {
    guint oldest = 0;
    for (guint i = 1; i < self->cache->len; ++i)
      if (g_array_index(self->cache, CachedMemory, i).last_used < g_array_index(self->cache, CachedMemory, oldest).last_used)
        oldest = i;
    gst_memory_unref(g_array_index(self->cache, CachedMemory, oldest).memory);
    g_array_remove_index_fast(self->cache, oldest);
  }
  CachedMemory c = {info.buffer_key, memory, self->uses};
  g_array_append_val(self->cache, c);
  GST_OBJECT_LOCK(self);
  ++self->memories_wrapped;
  GST_OBJECT_UNLOCK(self);
  return gst_memory_ref(memory);
}

/* Whether every plane of `frame` ends inside its buffer (its last row without padding). */
static gboolean planes_end_inside(const et_frame* frame, const et_image_layout* layout) {
  for (uint32_t p = 0; p < layout->plane_count; ++p) {
    et_tensor* plane = NULL;
    et_tensor_info info = {0};
    info.struct_size = sizeof info;
    const gboolean ok = et_frame_plane(frame, p, &plane) == ET_OK && et_tensor_get_info(plane, &info) == ET_OK &&
                        info.offset_bytes + info.extent_bytes <= info.buffer_bytes;
    et_tensor_release(plane);
    if (!ok) return FALSE;
  }
  return TRUE;
}

/* Asks downstream (ALLOCATION query for `caps`, the caps just set) whether it reads GstVideoMeta; a new
 * caps also drops the copy pool of the caps before. */
static void query_downstream_meta(GstEdgetensorSrc* self, GstCaps* caps) {
  GstQuery* query = gst_query_new_allocation(caps, FALSE);
  const gboolean answered = gst_pad_peer_query(GST_BASE_SRC_PAD(self), query);
  self->downstream_meta = answered && gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  gst_query_unref(query);
  if (!gst_video_info_from_caps(&self->default_info, caps)) gst_video_info_init(&self->default_info);
  clear_copy_pool(self);
  GST_DEBUG_OBJECT(self, "downstream %s GstVideoMeta", self->downstream_meta ? "reads" : "does not read");
}

/* Whether `a` and `b` are the same layout (every field a frame's layout sets). */
static gboolean same_layout(const et_image_layout* a, const et_image_layout* b) {
  if (a->format != b->format || a->width != b->width || a->height != b->height || a->plane_count != b->plane_count ||
      a->modifier != b->modifier)
    return FALSE;
  for (uint32_t p = 0; p < a->plane_count && p < ET_MAX_PLANES; ++p)
    if (a->planes[p].offset_bytes != b->planes[p].offset_bytes ||
        a->planes[p].row_stride_bytes != b->planes[p].row_stride_bytes)
      return FALSE;
  return TRUE;
}

/* Whether a downstream that ignores GstVideoMeta reads `info`'s image right: GStreamer's own layout for the
 * caps (offsets, strides) in a buffer at least its size. */
static gboolean default_layout(const GstVideoInfo* info, const GstVideoInfo* defaults) {
  if (GST_VIDEO_INFO_N_PLANES(info) != GST_VIDEO_INFO_N_PLANES(defaults) || info->size < defaults->size) return FALSE;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(info); ++p)
    if (info->offset[p] != defaults->offset[p] || info->stride[p] != defaults->stride[p]) return FALSE;
  return TRUE;
}

/* `image` (taken) copied into a buffer of GStreamer's own layout for the caps, from a pool of such buffers
 * (made on the first need, per caps): for a downstream that ignores GstVideoMeta when the frame's layout is
 * not that one. Releases the frame at once. NULL (element error posted) on failure. */
static GstBuffer* default_layout_copy(GstEdgetensorSrc* self, GstBuffer* image) {
  GstBuffer* copy = NULL;
  if (self->copy_pool == NULL) {
    GstBufferPool* pool = gst_video_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(pool);
    GstCaps* caps = gst_video_info_to_caps(&self->default_info);
    gst_buffer_pool_config_set_params(config, caps, (guint)self->default_info.size, 2, 0);
    gst_caps_unref(caps);
    if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
      gst_object_unref(pool);
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("a pool of %" G_GSIZE_FORMAT " B buffers for copies",
                                                        self->default_info.size), (NULL));
      gst_buffer_unref(image);
      return NULL;
    }
    self->copy_pool = pool;
  }
  GstVideoFrame from, to;
  gboolean ok = gst_buffer_pool_acquire_buffer(self->copy_pool, &copy, NULL) == GST_FLOW_OK;
  if (ok && gst_video_frame_map(&from, &self->info, image, GST_MAP_READ)) {
    if (gst_video_frame_map(&to, &self->default_info, copy, GST_MAP_WRITE)) {
      ok = gst_video_frame_copy(&to, &from);
      gst_video_frame_unmap(&to);
    } else {
      ok = FALSE;
    }
    gst_video_frame_unmap(&from);
  } else {
    ok = FALSE;
  }
  gst_buffer_unref(image);
  if (!ok) {
    if (copy != NULL) gst_buffer_unref(copy);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("copying a frame into GStreamer's layout for a downstream without "
                                             "GstVideoMeta"), (NULL));
    return NULL;
  }
  GST_OBJECT_LOCK(self);
  const gboolean first = self->copies++ == 0;
  GST_OBJECT_UNLOCK(self);
  if (first)
    GST_INFO_OBJECT(self, "downstream does not read GstVideoMeta and the frames' layout is not GStreamer's for "
                    "the caps: each frame is copied (counted in stats.copies; logged once)");
  return copy;
}

/* `vinfo` for a frame of `layout` (`flat`: the same in its GstBuffer of `total` bytes), setting caps first
 * when it differs from the caps set last (the frame rate guessed from `d`'s duration the first time). FALSE
 * (element error posted) on failure. */
static gboolean video_info_of(GstEdgetensorSrc* self, const et_frame* frame, const et_image_layout* layout,
                              const et_image_layout* flat, uint64_t total, const et_channel_delivery* d,
                              GstVideoInfo* vinfo) {
  char* message = NULL;
  if (!et_gst_info_from_layout(flat, total, vinfo, &message)) {
    /* GStreamer's size pads every plane's last row to its stride; a producer need not allocate that padding
     * (an image pool's buffers end with the last row's last byte): the buffer holds the image when each
     * plane view (the library checked it against its buffer) ends inside it. */
    char* again = NULL;
    const gboolean fits =
        et_gst_info_from_layout(flat, UINT64_MAX, vinfo, &again) && planes_end_inside(frame, layout);
    g_free(again);
    if (!fits) {
      GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("%s", message), (NULL));
      g_free(message);
      return FALSE;
    }
    g_free(message);
    vinfo->size = (gsize)total;
  }
  /* The frame rate: the one negotiated, or guessed from the first frame's duration (variable: 0/1). */
  if (self->have_caps) {
    GST_VIDEO_INFO_FPS_N(vinfo) = GST_VIDEO_INFO_FPS_N(&self->info);
    GST_VIDEO_INFO_FPS_D(vinfo) = GST_VIDEO_INFO_FPS_D(&self->info);
  } else if ((d->has & ET_CHANNEL_HAS_DURATION) && d->duration_ns > 0) {
    gst_video_guess_framerate((GstClockTime)d->duration_ns, &GST_VIDEO_INFO_FPS_N(vinfo), &GST_VIDEO_INFO_FPS_D(vinfo));
  }
  if (!self->have_caps || !gst_video_info_is_equal(vinfo, &self->info)) {
    GstCaps* caps = gst_video_info_to_caps(vinfo);
    const gboolean ok = gst_base_src_set_caps(GST_BASE_SRC(self), caps);
    GST_INFO_OBJECT(self, "caps %" GST_PTR_FORMAT, (void*)caps);
    if (ok) query_downstream_meta(self, caps);
    gst_caps_unref(caps);
    if (!ok) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("downstream refused the frames' caps"), (NULL));
      return FALSE;
    }
    self->info = *vinfo;
    self->have_caps = TRUE;
  }
  self->last_layout = *flat;
  self->last_bytes = total;
  return TRUE;
}

/* A buffer over the delivered frame: one GstMemory per buffer of the frame, each a memory of its own sharing
 * the cached one (so copies of the GstBuffer keep it) and holding the frame until GStreamer frees it, in
 * buffer order; GstVideoMeta from the layout, each plane's offset counted across the memories before its
 * buffer's. Sets caps first when the layout changed (the frame rate guessed from `d`'s duration the first
 * time). Copied into GStreamer's layout when downstream ignores GstVideoMeta and needs that. NULL (element
 * error posted) on failure. */
static GstBuffer* buffer_of(GstEdgetensorSrc* self, et_frame* frame, const et_channel_delivery* d) {
  et_image_layout layout = {0};
  layout.struct_size = sizeof layout;
  uint32_t buffer_count = 0, plane_buffers[ET_MAX_PLANES] = {0};
  if (et_frame_get_layout(frame, &layout) != ET_OK || et_frame_get_buffers(frame, &buffer_count, plane_buffers) != ET_OK) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("reading a frame: %s", et_last_error_message()), (NULL));
    return NULL;
  }
  if (buffer_count == 0 || buffer_count > ET_MAX_PLANES) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("a frame in %u buffers (1 to %u)", buffer_count, (unsigned)ET_MAX_PLANES),
                      (NULL));
    return NULL;
  }
  GstMemory* parents[ET_MAX_PLANES] = {NULL};
  uint64_t starts[ET_MAX_PLANES] = {0}, sizes[ET_MAX_PLANES] = {0}, total = 0;
  for (uint32_t b = 0; b < buffer_count; ++b) {
    et_tensor* whole = NULL;
    et_tensor_info info = {0};
    info.struct_size = sizeof info;
    if (et_frame_buffer(frame, b, &whole) == ET_OK && et_tensor_get_info(whole, &info) == ET_OK)
      parents[b] = memory_of(self, whole, &info);
    et_tensor_release(whole);
    if (parents[b] == NULL) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("wrapping buffer %u of a frame as GstMemory", b), (NULL));
      for (uint32_t c = 0; c < b; ++c) gst_memory_unref(parents[c]);
      return NULL;
    }
    starts[b] = total;
    sizes[b] = info.buffer_bytes;
    total += info.buffer_bytes;
  }
  /* The layout in the GstBuffer: each plane's offset past the memories of the buffers before its own. */
  et_image_layout flat = layout;
  for (uint32_t p = 0; p < layout.plane_count && p < ET_MAX_PLANES; ++p)
    flat.planes[p].offset_bytes += starts[plane_buffers[p] < buffer_count ? plane_buffers[p] : 0];
  GstVideoInfo vinfo;
  if (self->have_caps && total == self->last_bytes && same_layout(&flat, &self->last_layout)) {
    vinfo = self->info; /* the steady state: the layout of the frame before */
  } else if (!video_info_of(self, frame, &layout, &flat, total, d, &vinfo)) {
    for (uint32_t b = 0; b < buffer_count; ++b) gst_memory_unref(parents[b]);
    return NULL;
  }
  /* Each memory its whole buffer, the last one only up to the image's end (not a DMA-BUF's page rounding). */
  GstEdgetensorFrameParts parts = {{NULL}, {0}, buffer_count, GST_VIDEO_INFO_FORMAT(&vinfo), &flat};
  const uint32_t last = buffer_count - 1;
  for (uint32_t b = 0; b < buffer_count; ++b) {
    parts.parents[b] = parents[b];
    parts.sizes[b] = b == last && vinfo.size > starts[b] && vinfo.size - starts[b] < sizes[b] ? vinfo.size - starts[b]
                                                                                              : sizes[b];
  }
  gboolean reused = FALSE;
  GstBuffer* buffer = gst_edgetensor_frame_pool_buffer(self->frame_pool, &parts, frame, &reused);
  for (uint32_t b = 0; b < buffer_count; ++b) gst_memory_unref(parents[b]);

  if (buffer == NULL) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("wrapping a frame as a GstBuffer"), (NULL));
    return NULL;
  }
  if (!self->downstream_meta && !default_layout(&vinfo, &self->default_info)) return default_layout_copy(self, buffer);
  if (reused) { /* counted where it is pushed: not a copy's */
    GST_OBJECT_LOCK(self);
    ++self->buffers_reused;
    GST_OBJECT_UNLOCK(self);
  }
  return buffer;
}

/* How far a pts on CLOCK_MONOTONIC may lie from its frame's send stamp (a capture time before it, a render time
 * after it by the producer pipeline's latency). */
#define PTS_ON_CLOCK_NS (INT64_C(10) * 1000 * 1000 * 1000)

/* The producer's time re-based on this pipeline's base time: its pts when that is on CLOCK_MONOTONIC, GStreamer's
 * system clock (edgetensorsink's pts: base time + running time), else its send stamp (always CLOCK_MONOTONIC).
 * Which, the first frame with a pts decides, for the connection: within PTS_ON_CLOCK_NS of its send stamp. A pts
 * on the producer's own timeline (from 0, or the epoch) would otherwise give every buffer pts 0 (before the base
 * time), or one hours ahead. */
static void set_timing(GstEdgetensorSrc* self, const et_channel_delivery* d, GstBuffer* buffer) {
  const gboolean has_pts = (d->has & ET_CHANNEL_HAS_PTS) != 0;
  if (has_pts && self->pts_on_clock < 0) {
    /* In unsigned arithmetic: the distance of any two int64 values fits. */
    const uint64_t apart = d->pts_ns > d->timestamp_ns ? (uint64_t)d->pts_ns - (uint64_t)d->timestamp_ns
                                                       : (uint64_t)d->timestamp_ns - (uint64_t)d->pts_ns;
    self->pts_on_clock = d->pts_ns > 0 && apart <= (uint64_t)PTS_ON_CLOCK_NS;
    if (!self->pts_on_clock)
      GST_INFO_OBJECT(self, "the producer's pts (%" G_GINT64_FORMAT " ns) is not on CLOCK_MONOTONIC (its send stamp: %"
                      G_GINT64_FORMAT " ns): buffers take their send stamp's time", d->pts_ns, d->timestamp_ns);
  }
  const int64_t at = has_pts && self->pts_on_clock == 1 ? d->pts_ns : d->timestamp_ns;
  const GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
  GST_BUFFER_PTS(buffer) = (GST_CLOCK_TIME_IS_VALID(base) && at > 0 && (GstClockTime)at >= base) ? (GstClockTime)at - base : 0;
  if (d->has & ET_CHANNEL_HAS_DURATION) GST_BUFFER_DURATION(buffer) = (GstClockTime)d->duration_ns;
  /* The producer's own buffer flags (GstBufferFlags), those that describe the data. */
  const guint carried = GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_CORRUPTED | GST_BUFFER_FLAG_MARKER |
                        GST_BUFFER_FLAG_HEADER | GST_BUFFER_FLAG_DROPPABLE;
  GST_BUFFER_FLAG_SET(buffer, d->flags & carried);
}

static GstFlowReturn gst_edgetensor_src_create(GstPushSrc* src, GstBuffer** out) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(src);
  GST_OBJECT_LOCK(self);
  const gboolean latest = self->latest, again = self->reconnect;
  GST_OBJECT_UNLOCK(self);
  et_channel_delivery d = {0};
  for (;;) {
    if (g_atomic_int_get(&self->unlocked)) return GST_FLOW_FLUSHING;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    const et_status status = latest ? et_channel_receiver_receive_latest(self->receiver, RECEIVE_SLICE_MS, &d)
                                    : et_channel_receiver_receive(self->receiver, RECEIVE_SLICE_MS, &d);
    if (status == ET_BUSY) continue;
    /* Refused by the producer: not allowed (EACCES) ends the stream, as connecting again would be refused
     * again; at its receiver limit (EUSERS) a slot may free up, so with reconnect it is asked again every
     * FULL_RETRY_MS for up to connect-timeout. */
    const int32_t err = status == ET_OK ? 0 : et_last_error_errno();
    const gboolean full = status == ET_OUT_OF_RANGE && err == EUSERS;
    if ((status == ET_PERMISSION_DENIED && err == EACCES) || (full && !again) ||
        (full && !wait_for_room(self))) {
      if (!g_atomic_int_get(&self->unlocked)) {
        char* asked = full && again ? g_strdup_printf(" for %lld ms, asked every %d ms",
                                                      (long long)((g_get_monotonic_time() - self->full_since) / 1000),
                                                      FULL_RETRY_MS)
                                    : g_strdup("");
        GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                          ("the producer refused this consumer%s: %s", asked, et_last_error_message()), (NULL));
        g_free(asked);
      }
      return g_atomic_int_get(&self->unlocked) ? GST_FLOW_FLUSHING : GST_FLOW_ERROR;
    }
    if (!full) self->full_since = 0;
    if (status != ET_OK && again) {
      char* why = g_strdup(et_last_error_message());
      const gboolean ok =
          reconnect(self, full ? "the producer serves its receiver limit" : "the producer is gone", why);
      g_free(why);
      if (!ok) return g_atomic_int_get(&self->unlocked) ? GST_FLOW_FLUSHING : GST_FLOW_ERROR;
      continue;
    }
    if (status != ET_OK) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("the producer is gone: %s", et_last_error_message()), (NULL));
      return GST_FLOW_ERROR;
    }
    break;
  }
  if (d.end_of_stream) {
    GST_INFO_OBJECT(self, "end of stream after %llu frames", (unsigned long long)d.sequence);
    return GST_FLOW_EOS;
  }
  /* The producer's acquire fences (its device may still write the frame), waited on here, bounded: GStreamer
   * maps the memory on its own, without them (1.22's DMA-BUF map waits unbounded on the buffer's implicit
   * fences only). Held by the delivery's handle, so before it is released. */
  for (uint32_t b = 0; b < d.acquire_fence_count && b < ET_MAX_PLANES; ++b) {
    const et_fence* fence = d.acquire_fences[b].fence;
    if (fence != NULL && et_fence_wait(fence, ACQUIRE_FENCE_WAIT_NS) != ET_OK) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED,
                        ("frame %llu: the producer's acquire fence of buffer %u: %s", (unsigned long long)d.sequence, b,
                         et_last_error_message()),
                        (NULL));
      et_tensor_release(d.tensor);
      et_frame_release(d.frame);
      return GST_FLOW_ERROR;
    }
  }
  et_frame* frame = d.frame;
  if (frame == NULL && d.tensor != NULL) {
    if (et_frame_from_tensor(d.tensor, &frame) != ET_OK) {
      GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("a tensor without an image layout: %s", et_last_error_message()), (NULL));
      et_tensor_release(d.tensor);
      return GST_FLOW_ERROR;
    }
  }
  et_tensor_release(d.tensor);
  GstBuffer* buffer = buffer_of(self, frame, &d);
  et_frame_release(frame); /* the buffer's memory holds it now */
  if (buffer == NULL) return GST_FLOW_ERROR;
  set_timing(self, &d, buffer);
  if (self->discont) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DISCONT);
  self->discont = FALSE;
  GST_BUFFER_OFFSET(buffer) = d.sequence;
  GST_OBJECT_LOCK(self);
  ++self->frames;
  GST_OBJECT_UNLOCK(self);
  *out = buffer;
  return GST_FLOW_OK;
}

/* The caps come from each frame's layout (create sets them). GstBaseSrc's default would fixate the template
 * before the first frame (1x1, 0/1 fps), which an encoder takes as its first configuration: vp8enc,
 * reconfigured to the real size, then encodes nothing. A RECONFIGURE keeps the frames' caps. */
static gboolean gst_edgetensor_src_negotiate(GstBaseSrc* src) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(src);
  if (self->have_caps) { /* downstream changed: ask again whether it reads GstVideoMeta */
    GstCaps* caps = gst_pad_get_current_caps(GST_BASE_SRC_PAD(src));
    if (caps != NULL) query_downstream_meta(self, caps);
    if (caps != NULL) gst_caps_unref(caps);
  }
  return TRUE;
}

/* Live: frames arrive as the producer sends them; a frame's duration is the latency it adds. */
static gboolean gst_edgetensor_src_query(GstBaseSrc* src, GstQuery* query) {
  GstEdgetensorSrc* self = GST_EDGETENSOR_SRC(src);
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    GstClockTime min = 0;
    if (self->have_caps && GST_VIDEO_INFO_FPS_N(&self->info) > 0)
      min = gst_util_uint64_scale_int(GST_SECOND, GST_VIDEO_INFO_FPS_D(&self->info), GST_VIDEO_INFO_FPS_N(&self->info));
    gst_query_set_latency(query, TRUE, min, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS(gst_edgetensor_src_parent_class)->query(src, query);
}

static void gst_edgetensor_src_class_init(GstEdgetensorSrcClass* klass) {
  GObjectClass* object_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSrcClass* base_class = GST_BASE_SRC_CLASS(klass);
  GST_DEBUG_CATEGORY_INIT(et_gst_src_debug, "edgetensorsrc", 0, "edgetensor source");
  object_class->set_property = gst_edgetensor_src_set_property;
  object_class->get_property = gst_edgetensor_src_get_property;
  object_class->finalize = gst_edgetensor_src_finalize;
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  g_object_class_install_property(
      object_class, PROP_SOCKET_PATH,
      g_param_spec_string("socket-path", "Socket path", "The producer's named socket ('@' first: an abstract name)",
                          NULL, rw));
  g_object_class_install_property(
      object_class, PROP_CONNECT_TIMEOUT,
      g_param_spec_uint("connect-timeout", "Connect timeout",
                        "Milliseconds to keep trying to connect while nobody listens on socket-path yet (0: once)", 0,
                        G_MAXINT32, DEFAULT_CONNECT_TIMEOUT_MS, rw));
  g_object_class_install_property(
      object_class, PROP_LATEST,
      g_param_spec_boolean("latest", "Latest frame",
                           "Push the newest frame only, releasing older ones at once (a consumer slower than the producer)",
                           FALSE, rw));
  g_object_class_install_property(
      object_class, PROP_RECONNECT,
      g_param_spec_boolean("reconnect", "Reconnect",
                           "When the producer closes or dies without ending the stream, wait connect-timeout for "
                           "the next one on socket-path instead of an error (its first buffer is DISCONT); a "
                           "producer at its receiver limit is asked again every 100 ms for connect-timeout, one "
                           "whose allow rule refuses this consumer is an error",
                           FALSE, rw));
  g_object_class_install_property(
      object_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Frames pushed, buffers wrapped, GstBuffers reused, frames skipped and missing, frames copied "
                         "(for a downstream without GstVideoMeta)",
                         GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  GstCaps* caps = et_gst_template_caps();
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  gst_element_class_set_static_metadata(element_class, "edgetensor source", "Source/Video",
                                        "Receives raw video frames from an edgetensor producer over a named socket, "
                                        "zero-copy (the frame channel)",
                                        "edgetensor");
  base_class->start = gst_edgetensor_src_start;
  base_class->stop = gst_edgetensor_src_stop;
  base_class->unlock = gst_edgetensor_src_unlock;
  base_class->unlock_stop = gst_edgetensor_src_unlock_stop;
  base_class->query = gst_edgetensor_src_query;
  base_class->negotiate = gst_edgetensor_src_negotiate;
  GST_PUSH_SRC_CLASS(klass)->create = gst_edgetensor_src_create;
}

static void gst_edgetensor_src_init(GstEdgetensorSrc* self) {
  self->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  self->cache = g_array_new(FALSE, TRUE, sizeof(CachedMemory));
  self->fd_allocator = gst_edgetensor_frame_allocator_new(FALSE);
  self->dmabuf_allocator = gst_edgetensor_frame_allocator_new(TRUE);
  gst_video_info_init(&self->info);
  gst_base_src_set_live(GST_BASE_SRC(self), TRUE);
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
}
