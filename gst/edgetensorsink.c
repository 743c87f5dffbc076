/* SPDX-License-Identifier: Apache-2.0 */
#include "edgetensorsink.h"

#include "edgetensorpool.h"
#include "formats.h"

#include <edgetensor/c/edgetensor_c.h>
#include <gst/allocators/allocators.h>
#include <gst/video/video.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC(gst_edgetensor_sink_debug);
#define GST_CAT_DEFAULT gst_edgetensor_sink_debug

/* What a send does for a receiver at its limit (the channel's ReceiverPolicy). */
#define GST_TYPE_EDGETENSOR_POLICY (gst_edgetensor_policy_get_type())
static GType gst_edgetensor_policy_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {0, "Back-pressure: wait for a release, then drop the frame for that receiver", "block"},
      {1, "Never wait: a receiver at its limit misses the frame", "drop"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstEdgetensorPolicy", values));
  return type;
}

enum {
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_POLICY,
  PROP_MAX_FRAMES_OUT,
  PROP_POOL_SIZE,
  PROP_WAIT_RECEIVERS,
  PROP_DRAIN_TIMEOUT,
  PROP_SEND_TIMEOUT,
  PROP_SOCKET_MODE,
  PROP_ALLOW_UIDS,
  PROP_ALLOW_GIDS,
  PROP_PLANE_BUFFERS,
  PROP_STATS,
};

#define DEFAULT_POLICY 0
#define DEFAULT_MAX_FRAMES_OUT 0
#define DEFAULT_POOL_SIZE 6
/* Frames in a row some receiver skipped (at its frame limit) before a warning: about half a second at 30 fps. */
#define SKIPPED_WARN_FRAMES 16u
#define DEFAULT_WAIT_RECEIVERS 0
#define DEFAULT_DRAIN_TIMEOUT_MS 1000
#define DEFAULT_SOCKET_MODE 0600u
/* Most entries of allow-uids and of allow-gids. */
#define MAX_ALLOW_IDS 64u
/* send-timeout's default: under the block policy, a send's longest wait for a receiver (the channel's send
 * timeout, which the sink's receivers have), and the copy path's for a free buffer. */
#define DEFAULT_SEND_TIMEOUT_MS 1000
/* A wait for a copy buffer is cut in slices of this, so that unlock() ends it. */
#define COPY_WAIT_SLICE_MS 50
/* Most buffers of a pool (the channel's buffer table holds at most 1024). */
#define MAX_POOL_BUFFERS 1024u
/* No memory kind chosen yet (before the first caps). */
#define ET_MEMORY_UNSET_ (-1)

struct _GstEdgetensorSink {
  GstBaseSink parent;
  /* Properties (object lock). */
  char* socket_path;
  gint policy;
  guint max_frames_out;
  guint pool_size;
  guint wait_receivers;
  guint drain_timeout_ms;
  gint send_timeout_ms;     /* block: the longest wait for a receiver, per frame (-1: until unlock) */
  guint socket_mode;        /* permission bits of the socket file */
  char* allow_uids;         /* "1000,1001": peers of these uids pass besides this process's uid */
  char* allow_gids;         /* peers whose primary gid is one of these pass */
  gboolean plane_buffers;   /* the proposed pool: one buffer per plane (gst_edgetensor_plane_pool_new) */
  gint unlocked;            /* atomic: unlock() asked render to stop waiting for receivers */
  gboolean waited;          /* wait-receivers was met (once per stream) */
  /* Between start and stop (the publisher's calls are thread-safe). */
  et_channel_publisher* publisher;
  /* Streaming thread only, set in set_caps. */
  GstVideoInfo info;
  et_image_layout layout;
  int32_t memory;           /* what the pool allocates: ET_MEMORY_DMABUF or ET_MEMORY_SHM */
  et_pool* copy_pool;       /* images of set_caps' layout that frames from elsewhere are copied into */
  gboolean ended;           /* the end of stream was sent */
  /* Counters (object lock). */
  guint64 frames;           /* buffers rendered */
  guint64 zero_copy;        /* sent from the memory upstream wrote */
  guint64 copies;           /* copied into a pool buffer first */
  guint64 imported;         /* upstream's own fd memory imported and sent, holding its GstBuffer (also zero_copy) */
  gint imports_held;        /* atomic: imported frames whose GstBuffer a holder (channel, receiver) still keeps */
  gboolean import_logged;
  gboolean fallback_logged;
  guint64 copy_drops;       /* not published: every copy buffer was still held (see copy_of) */
  guint64 send_errors;      /* frames the publisher refused (logged) */
  guint skipped_streak;     /* frames in a row that some receiver skipped (streaming thread only) */
  guint64 refused_logged;   /* consumers refused, as last warned about (streaming thread only) */
  /* What stats keep of objects gone since start (object lock): the publisher's counters at stop, the copy
   * buffers of copy pools replaced by a caps change or dropped at stop. */
  et_channel_publisher_stats publisher_at_stop;
  guint64 ended_copy_buffers;
  gboolean copy_logged;
};

G_DEFINE_TYPE(GstEdgetensorSink, gst_edgetensor_sink, GST_TYPE_BASE_SINK)


static void gst_edgetensor_sink_set_property(GObject* object, guint id, const GValue* value, GParamSpec* pspec) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(object);
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_SOCKET_PATH:
      g_free(self->socket_path);
      self->socket_path = g_value_dup_string(value);
      break;
    case PROP_POLICY: self->policy = g_value_get_enum(value); break;
    case PROP_MAX_FRAMES_OUT: self->max_frames_out = g_value_get_uint(value); break;
    case PROP_POOL_SIZE: self->pool_size = g_value_get_uint(value); break;
    case PROP_WAIT_RECEIVERS: self->wait_receivers = g_value_get_uint(value); break;
    case PROP_DRAIN_TIMEOUT: self->drain_timeout_ms = g_value_get_uint(value); break;
    case PROP_SEND_TIMEOUT: self->send_timeout_ms = g_value_get_int(value); break;
    case PROP_SOCKET_MODE: self->socket_mode = g_value_get_uint(value); break;
    case PROP_ALLOW_UIDS:
      g_free(self->allow_uids);
      self->allow_uids = g_value_dup_string(value);
      break;
    case PROP_ALLOW_GIDS:
      g_free(self->allow_gids);
      self->allow_gids = g_value_dup_string(value);
      break;
    case PROP_PLANE_BUFFERS: self->plane_buffers = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

/* Object lock held. */
static GstStructure* sink_stats(GstEdgetensorSink* self) {
  et_channel_publisher_stats p = self->publisher_at_stop; /* after stop: its counters then, no receiver now */
  p.receivers = 0;
  if (self->publisher != NULL && et_channel_publisher_get_stats(self->publisher, &p) != ET_OK) memset(&p, 0, sizeof p);
  et_pool_stats c = {0};
  c.struct_size = sizeof c;
  if (self->copy_pool != NULL && et_pool_get_stats(self->copy_pool, &c) != ET_OK) memset(&c, 0, sizeof c);
  c.allocated += self->ended_copy_buffers;
  return gst_structure_new("edgetensorsink-stats", "frames", G_TYPE_UINT64, self->frames, "zero-copy", G_TYPE_UINT64,
                           self->zero_copy, "imported", G_TYPE_UINT64, self->imported, "imports-held", G_TYPE_UINT64,
                           (guint64)g_atomic_int_get(&self->imports_held), "copies", G_TYPE_UINT64, self->copies,
                           "copy-buffers", G_TYPE_UINT64,
                           c.allocated, "copy-drops", G_TYPE_UINT64, self->copy_drops, "send-errors", G_TYPE_UINT64,
                           self->send_errors, "memory", G_TYPE_STRING, et_memory_kind_name(self->memory), "receivers",
                           G_TYPE_UINT64, p.receivers, "receivers-joined", G_TYPE_UINT64, p.receivers_joined,
                           "receivers-refused", G_TYPE_UINT64, p.receivers_refused,
                           "deliveries", G_TYPE_UINT64, p.deliveries, "drops", G_TYPE_UINT64, p.drops, NULL);
}

static void gst_edgetensor_sink_get_property(GObject* object, guint id, GValue* value, GParamSpec* pspec) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(object);
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_SOCKET_PATH: g_value_set_string(value, self->socket_path); break;
    case PROP_POLICY: g_value_set_enum(value, self->policy); break;
    case PROP_MAX_FRAMES_OUT: g_value_set_uint(value, self->max_frames_out); break;
    case PROP_POOL_SIZE: g_value_set_uint(value, self->pool_size); break;
    case PROP_WAIT_RECEIVERS: g_value_set_uint(value, self->wait_receivers); break;
    case PROP_DRAIN_TIMEOUT: g_value_set_uint(value, self->drain_timeout_ms); break;
    case PROP_SEND_TIMEOUT: g_value_set_int(value, self->send_timeout_ms); break;
    case PROP_SOCKET_MODE: g_value_set_uint(value, self->socket_mode); break;
    case PROP_ALLOW_UIDS: g_value_set_string(value, self->allow_uids); break;
    case PROP_ALLOW_GIDS: g_value_set_string(value, self->allow_gids); break;
    case PROP_PLANE_BUFFERS: g_value_set_boolean(value, self->plane_buffers); break;
    case PROP_STATS: g_value_take_boxed(value, sink_stats(self)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_edgetensor_sink_finalize(GObject* object) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(object);
  g_free(self->socket_path);
  g_free(self->allow_uids);
  g_free(self->allow_gids);
  G_OBJECT_CLASS(gst_edgetensor_sink_parent_class)->finalize(object);
}

/* Buffers consumers may hold: max-frames-out for each of wait-receivers receivers (at least one), plus the
 * frame being filled; never fewer than pool-size. The copy pool's capacity, and what the proposed pool adds
 * to upstream's own buffers. */
static guint consumer_buffers(GstEdgetensorSink* self) {
  GST_OBJECT_LOCK(self);
  const guint64 held = (guint64)self->max_frames_out * MAX(self->wait_receivers, 1u) + 1;
  const guint64 buffers = MAX(held, (guint64)self->pool_size);
  GST_OBJECT_UNLOCK(self);
  return (guint)MIN(buffers, (guint64)MAX_POOL_BUFFERS);
}

/* The C pool the copy path fills: images of `layout` (GStreamer's layout of the caps) of the sink's memory
 * kind, allocated on demand, at most consumer_buffers(). NULL (element error posted) on failure. */
static et_pool* new_copy_pool(GstEdgetensorSink* self, const et_image_layout* layout) {
  et_allocate_options allocate = {0};
  allocate.struct_size = sizeof allocate;
  allocate.memory = self->memory;
  et_pool_options options = {0};
  options.struct_size = sizeof options;
  options.max_buffers = consumer_buffers(self);
  options.name = "edgetensorsink copies";
  options.allocate = &allocate;
  et_pool* pool = NULL;
  if (et_pool_create_image_layout(layout, &options, &pool) != ET_OK) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("cannot make the pool frames are copied into: %s", et_last_error_message()),
                      (NULL));
    return NULL;
  }
  return pool;
}

static GstBufferPool* new_pool(GstEdgetensorSink* self, GstCaps* caps);

/* Buffers `pool` (NULL: none) has allocated. */
static guint64 copy_buffers_of(et_pool* pool) {
  et_pool_stats c = {0};
  c.struct_size = sizeof c;
  return pool != NULL && et_pool_get_stats(pool, &c) == ET_OK ? c.allocated : 0;
}

static gboolean gst_edgetensor_sink_set_caps(GstBaseSink* sink, GstCaps* caps) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("caps are no raw video: %" GST_PTR_FORMAT, (void*)caps), (NULL));
    return FALSE;
  }
  char* message = NULL;
  if (!et_gst_layout_from_info(&info, &self->layout, &message)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("%s", message), (NULL));
    g_free(message);
    return FALSE;
  }
  self->info = info;
  self->memory = gst_edgetensor_probe_memory(&self->layout);
  /* A new layout, a new pool: frames of the old one still held by consumers stay valid. */
  et_pool* pool = new_copy_pool(self, &self->layout);
  if (pool == NULL) return FALSE;
  GST_OBJECT_LOCK(self);
  et_pool* old = self->copy_pool;
  self->copy_pool = pool;
  self->ended_copy_buffers += copy_buffers_of(old);
  GST_OBJECT_UNLOCK(self);
  et_pool_release(old);
  GST_INFO_OBJECT(self, "caps %" GST_PTR_FORMAT ": edgetensor %s in %s buffers", (void*)caps,
                  et_pixel_format_name(self->layout.format), et_memory_kind_name(self->memory));
  return TRUE;
}

/* The min of the pool proposed for `info`: pool-size, but with plane-buffers no more frames than a receiver's
 * default buffer table (32 entries) holds planes: past it, the channel would evict buffers still in use and
 * announce them again (and a receiver holding that many frames would get none until it released). */
static guint proposed_min(GstEdgetensorSink* self, const GstVideoInfo* info) {
  GST_OBJECT_LOCK(self);
  const guint pool_size = self->pool_size;
  const gboolean per_plane = self->plane_buffers && GST_VIDEO_INFO_N_PLANES(info) > 1;
  GST_OBJECT_UNLOCK(self);
  if (!per_plane) return pool_size;
  const guint table_frames = gst_edgetensor_plane_pool_table_frames(GST_VIDEO_INFO_N_PLANES(info));
  if (pool_size <= table_frames) return pool_size;
  GST_WARNING_OBJECT(self, "pool-size %u with plane-buffers: %u frames of %u planes fill a receiver's buffer table of "
                     "32 buffers, so the pool proposed holds %u", pool_size, table_frames,
                     GST_VIDEO_INFO_N_PLANES(info), table_frames);
  return table_frames;
}

/* A new GstBufferPool of `caps`' images (the sink's memory kind) to propose upstream, configured; NULL
 * (logged) on failure. */
static GstBufferPool* new_pool(GstEdgetensorSink* self, GstCaps* caps) {
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return NULL;
  GST_OBJECT_LOCK(self);
  const gboolean per_plane = self->plane_buffers && GST_VIDEO_INFO_N_PLANES(&info) > 1;
  GST_OBJECT_UNLOCK(self);
  const guint min = proposed_min(self, &info);
  GstBufferPool* pool = per_plane ? gst_edgetensor_plane_pool_new(self->memory, consumer_buffers(self))
                                  : gst_edgetensor_buffer_pool_new(self->memory, consumer_buffers(self));
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, (guint)info.size, min, 0);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool, config)) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("the edgetensor buffer pool refused caps %" GST_PTR_FORMAT, (void*)caps),
                      (NULL));
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}

/* Answers the ALLOCATION query with a pool of edgetensor images (fd memory with GstVideoMeta), so upstream
 * writes into memory the channel shares: no copy. */
static gboolean gst_edgetensor_sink_propose_allocation(GstBaseSink* sink, GstQuery* query) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  GstCaps* caps = NULL;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  if (caps == NULL) return FALSE;
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return FALSE;
  et_image_layout layout;
  char* message = NULL;
  if (!et_gst_layout_from_info(&info, &layout, &message)) {
    GST_WARNING_OBJECT(self, "%s", message);
    g_free(message);
    return FALSE;
  }
  if (need_pool) {
    if (self->memory == ET_MEMORY_UNSET_) self->memory = gst_edgetensor_probe_memory(&layout);
    GstBufferPool* pool = new_pool(self, caps);
    if (pool == NULL) return FALSE;
    const guint min = proposed_min(self, &info);
    GST_INFO_OBJECT(self, "proposing a pool of %s %dx%d images, %s (%s memory)", GST_VIDEO_INFO_NAME(&info),
                    GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                    GST_IS_EDGETENSOR_PLANE_POOL(pool) ? "one buffer per plane" : "every plane in one buffer",
                    et_memory_kind_name(self->memory));
    gst_query_add_allocation_pool(query, pool, (guint)info.size, min, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  return TRUE;
}

/* Parses `text` ("", or decimal ids separated by commas, e.g. "1000,1001") into ids[0..*count). FALSE, with
 * *message (g_free it) naming the property, the entry and the limit, for anything else. */
static gboolean parse_ids(const char* property, const char* text, uint32_t* ids, uint32_t* count, char** message) {
  *count = 0;
  if (text == NULL || text[0] == '\0') return TRUE;
  gchar** parts = g_strsplit(text, ",", -1);
  gboolean ok = TRUE;
  for (gchar** p = parts; ok && *p != NULL; ++p) {
    const char* entry = g_strstrip(*p);
    guint64 id = 0;
    GError* error = NULL;
    if (*count == MAX_ALLOW_IDS) {
      *message = g_strdup_printf("%s '%s': more than %u ids", property, text, MAX_ALLOW_IDS);
      ok = FALSE;
    } else if (!g_ascii_string_to_unsigned(entry, 10, 0, G_MAXUINT32 - 1, &id, &error)) {
      *message = g_strdup_printf("%s '%s': '%s' is not a numeric id from 0 to %u (%s)", property, text, entry,
                                 G_MAXUINT32 - 1, error->message);
      g_error_free(error);
      ok = FALSE;
    } else {
      ids[(*count)++] = (uint32_t)id;
    }
  }
  g_strfreev(parts);
  return ok;
}

/* Publishes on socket-path (socket-mode, allow-uids, allow-gids), each receiver with the policy and frame limit
 * of the properties. */
static gboolean gst_edgetensor_sink_start(GstBaseSink* sink) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  uint32_t uids[MAX_ALLOW_IDS], gids[MAX_ALLOW_IDS];
  et_channel_listen_options listen = {0};
  listen.struct_size = sizeof listen;
  char* message = NULL;
  GST_OBJECT_LOCK(self);
  listen.mode = self->socket_mode;
  const gboolean ids_ok = parse_ids("allow-uids", self->allow_uids, uids, &listen.uid_count, &message) &&
                          parse_ids("allow-gids", self->allow_gids, gids, &listen.gid_count, &message);
  GST_OBJECT_UNLOCK(self);
  if (!ids_ok) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("edgetensorsink: %s", message), (NULL));
    g_free(message);
    return FALSE;
  }
  listen.uids = listen.uid_count > 0 ? uids : NULL;
  listen.gids = listen.gid_count > 0 ? gids : NULL;
  GST_OBJECT_LOCK(self);
  char* path = g_strdup(self->socket_path);
  et_channel_sender_options receiver = {0};
  receiver.struct_size = sizeof receiver;
  receiver.policy = self->policy;
  receiver.max_frames_out = self->max_frames_out;
  receiver.use_send_timeout = 1;
  receiver.send_timeout_ms = self->send_timeout_ms < 0 ? ET_WAIT_FOREVER : self->send_timeout_ms;
  self->frames = self->zero_copy = self->imported = self->copies = self->copy_drops = self->send_errors = 0;
  memset(&self->publisher_at_stop, 0, sizeof self->publisher_at_stop);
  self->publisher_at_stop.struct_size = sizeof self->publisher_at_stop;
  self->ended_copy_buffers = 0;
  self->copy_logged = self->import_logged = self->fallback_logged = FALSE;
  GST_OBJECT_UNLOCK(self);
  if (path == NULL || path[0] == '\0') {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("edgetensorsink needs socket-path (the socket consumers connect to)"),
                      (NULL));
    g_free(path);
    return FALSE;
  }
  char* name = gst_object_get_name(GST_OBJECT(self));
  et_channel_publisher_options options = {0};
  options.struct_size = sizeof options;
  options.name = name;
  options.receiver = &receiver;
  et_channel_publisher* publisher = NULL;
  const et_status status = et_channel_publisher_listen(path, &listen, &options, &publisher);
  g_free(name);
  if (status != ET_OK) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("cannot publish on %s: %s", path, et_last_error_message()), (NULL));
    g_free(path);
    return FALSE;
  }
  GST_INFO_OBJECT(self, "publishing on %s", path);
  g_free(path);
  GST_OBJECT_LOCK(self);
  self->publisher = publisher;
  self->ended = FALSE;
  self->waited = FALSE;
  self->skipped_streak = 0;
  self->refused_logged = 0;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

/* The streaming thread's wait check while it sends (et_channel_set_wait_check): unlock() (a flush, a state
 * change) ends a wait for a receiver within ET_CHANNEL_WAIT_CHECK_INTERVAL_MS. */
static int sink_unlocked(void* sink) { return g_atomic_int_get(&((GstEdgetensorSink*)sink)->unlocked); }
/* The wait check of a send that must not wait for a receiver more than one slice (stopping). */
static int stop_waiting(void* unused) {
  (void)unused;
  return 1;
}

/* Ends the stream on every receiver (once): they see end of stream, not an error. A receiver whose socket
 * stays full makes each try wait the send timeout: `tries` bounds the wait, and unlock ends it; with
 * `stopping`, each receiver's wait is one wait-check slice at most. */
static void end_stream(GstEdgetensorSink* self, int tries, gboolean stopping) {
  if (self->publisher == NULL || self->ended) return;
  et_status status = ET_BUSY;
  (void)et_channel_set_wait_check(stopping ? stop_waiting : sink_unlocked, self);
  for (int i = 0; i < tries && status == ET_BUSY && (stopping || !g_atomic_int_get(&self->unlocked)); ++i)
    status = et_channel_publisher_end_stream(self->publisher);
  (void)et_channel_set_wait_check(NULL, NULL);
  if (status != ET_OK) GST_WARNING_OBJECT(self, "ending the stream: %s", et_last_error_message());
  self->ended = TRUE;
}

/* Going to READY (and NULL): ends the stream if EOS did not, then closes every receiver without waiting
 * for their releases (frames they hold stay valid in their process). */
static gboolean gst_edgetensor_sink_stop(GstBaseSink* sink) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  end_stream(self, 1, TRUE); /* stopping: one short try, the receivers are closed next anyway */
  GST_OBJECT_LOCK(self);
  et_channel_publisher* publisher = self->publisher;
  self->publisher = NULL;
  et_pool* pool = self->copy_pool;
  self->copy_pool = NULL;
  /* stats keep the publisher's counters and the copy buffers past stop. */
  et_channel_publisher_stats ended = {0};
  ended.struct_size = sizeof ended;
  if (publisher != NULL && et_channel_publisher_get_stats(publisher, &ended) == ET_OK) self->publisher_at_stop = ended;
  self->ended_copy_buffers += copy_buffers_of(pool);
  GST_OBJECT_UNLOCK(self);
  et_channel_publisher_release(publisher);
  et_pool_release(pool); /* copy buffers still held elsewhere stay valid */
  return TRUE;
}

/* After the end of stream: waits up to drain-timeout for every receiver to release its frames, so that none
 * is still reading from the socket when the pipeline stops and closes it (a receiver that finds its peer
 * gone stops reading: frames and the end still queued would be lost). */
static void drain(GstEdgetensorSink* self) {
  GST_OBJECT_LOCK(self);
  const guint timeout_ms = self->drain_timeout_ms;
  GST_OBJECT_UNLOCK(self);
  if (self->publisher == NULL || timeout_ms == 0) return;
  if (et_channel_publisher_drain(self->publisher, (int32_t)MIN(timeout_ms, (guint)G_MAXINT32)) != ET_OK)
    GST_INFO_OBJECT(self, "after the end of stream: %s", et_last_error_message());
}

static gboolean gst_edgetensor_sink_event(GstBaseSink* sink, GstEvent* event) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    end_stream(self, 3, FALSE);
    drain(self);
  }
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) self->ended = FALSE;
  return GST_BASE_SINK_CLASS(gst_edgetensor_sink_parent_class)->event(sink, event);
}

/* A free image of the copy pool into *out, through the publisher (which sizes each receiver's buffer table to
 * the pool). When every one is still held (by receivers, or frames in their sockets): under the drop policy
 * at once, under block after up to send-timeout, the frame is dropped: *out NULL, GST_FLOW_OK, counted in
 * stats.copy-drops. GST_FLOW_FLUSHING when unlocked while waiting; GST_FLOW_ERROR (posted) on failure. */
static GstFlowReturn copy_buffer(GstEdgetensorSink* self, et_tensor** out) {
  *out = NULL;
  GST_OBJECT_LOCK(self);
  const gboolean forever = self->policy != ET_CHANNEL_POLICY_DROP && self->send_timeout_ms < 0;
  const gint64 wait_us = self->policy == ET_CHANNEL_POLICY_DROP || forever ? 0 : (gint64)self->send_timeout_ms * 1000;
  GST_OBJECT_UNLOCK(self);
  const gint64 deadline = g_get_monotonic_time() + wait_us;
  for (;;) {
    const gint64 left_ms = forever ? COPY_WAIT_SLICE_MS : MAX(deadline - g_get_monotonic_time(), 0) / 1000;
    const et_status status = et_channel_publisher_acquire(self->publisher, self->copy_pool,
                                                          (int32_t)MIN(left_ms, COPY_WAIT_SLICE_MS), out);
    if (status == ET_OK) return GST_FLOW_OK;
    if (status != ET_BUSY) {
      GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("no buffer to copy a frame into: %s", et_last_error_message()), (NULL));
      return GST_FLOW_ERROR;
    }
    if (g_atomic_int_get(&self->unlocked)) return GST_FLOW_FLUSHING;
    if (left_ms == 0) break;
  }
  GST_OBJECT_LOCK(self);
  const guint64 drops = ++self->copy_drops;
  GST_OBJECT_UNLOCK(self);
  /* Logged at the first drop and every 100th: a consumer holding frames drops each frame from here on. */
  if (drops % 100 == 1)
    GST_WARNING_OBJECT(self, "frame dropped (%llu so far): every buffer of the copy pool is held by consumers; %s",
                       (unsigned long long)drops, et_last_error_message());
  return GST_FLOW_OK;
}

/* Copies `buffer`'s frame into `image` (a copy pool image: its CPU map is persistent, so no mmap or page
 * fault per frame). FALSE when GStreamer cannot map either side. */
static gboolean copy_frame(GstEdgetensorSink* self, GstBuffer* buffer, const et_tensor* image) {
  et_map* map = NULL;
  void* data = NULL;
  size_t size = 0;
  if (et_tensor_map_write(image, &map, &data, &size) != ET_OK) {
    GST_WARNING_OBJECT(self, "mapping a copy buffer: %s", et_last_error_message());
    return FALSE;
  }
  /* The image's bytes as a GstBuffer with its layout as GstVideoMeta, for gst_video_frame_copy. */
  GstBuffer* target = et_gst_buffer_new_image(gst_memory_new_wrapped(0, data, size, 0, size, NULL, NULL), &self->layout);
  GstVideoFrame from, to;
  gboolean copied = FALSE;
  if (gst_video_frame_map(&from, &self->info, buffer, GST_MAP_READ)) {
    if (gst_video_frame_map(&to, &self->info, target, GST_MAP_WRITE)) {
      copied = gst_video_frame_copy(&to, &from);
      gst_video_frame_unmap(&to);
    }
    gst_video_frame_unmap(&from);
  }
  gst_buffer_unref(target);
  et_map_release(map);
  return copied;
}

/* ---- Importing upstream's fd memory (docs/GSTREAMER.md, "Upstream fd memory") ---------------------- */

/* What an imported frame's release callback needs: the GstBuffer it keeps from going back to upstream's
 * pool, and the sink whose imports_held it counts (a reference: the callback may run after stop, on a
 * channel's release reader thread). */
typedef struct {
  GstBuffer* buffer;
  GstEdgetensorSink* sink;
} ImportHold;

static void import_hold_free(ImportHold* hold) {
  g_atomic_int_add(&hold->sink->imports_held, -1);
  gst_buffer_unref(hold->buffer);
  gst_object_unref(hold->sink);
  g_free(hold);
}

/* et_import_options.release_callback: the frame's last holder is gone (any thread). */
static void import_released(void* user_data) { import_hold_free((ImportHold*)user_data); }

static GQuark import_key_quark;

static void release_key_import(gpointer tensor) { et_tensor_release((et_tensor*)tensor); }

/* Keeps one plain import of `memory`'s fd for as long as upstream keeps the memory (qdata, as kmssink keeps
 * its framebuffers): while it lives, every frame's import of that fd has the same buffer key, so the
 * channel announces each upstream buffer once instead of once per frame (a released import's key is
 * retired with its last holder). No mapping: an import maps only when mapped. */
static void keep_buffer_key(GstMemory* memory, int fd) {
  if (gst_mini_object_get_qdata(GST_MINI_OBJECT(memory), import_key_quark) != NULL) return;
  const uint64_t one = 1;
  et_tensor* t = NULL;
  if (et_tensor_import_dup(fd, 1, &one, ET_DTYPE_U8, NULL, &t) == ET_OK)
    gst_mini_object_set_qdata(GST_MINI_OBJECT(memory), import_key_quark, t, release_key_import);
}

/* The frame layout of `buffer` in its fds: plane offsets and strides from its GstVideoMeta, else from the
 * caps' GstVideoInfo; each plane's offset found in the memory holding it and counted from the start of
 * that memory's fd. FALSE with the reason in `why` when the buffer is not all fd memory or its layout is
 * not one the sink can send as it is. */
static gboolean import_layout(GstEdgetensorSink* self, GstBuffer* buffer, et_image_layout* layout,
                              int32_t fds[ET_MAX_PLANES], char* why, size_t why_size) {
  const guint memories = gst_buffer_n_memory(buffer);
  if (memories == 0 || memories > ET_MAX_PLANES) {
    snprintf(why, why_size, "%u memories (1 to %u can be imported)", memories, (unsigned)ET_MAX_PLANES);
    return FALSE;
  }
  for (guint i = 0; i < memories; ++i) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, i);
    if (!gst_is_fd_memory(memory)) {
      snprintf(why, why_size, "memory %u is not fd memory (allocator %s)", i,
               memory->allocator != NULL ? GST_OBJECT_NAME(memory->allocator) : "none");
      return FALSE;
    }
  }
  const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
  const guint planes = self->layout.plane_count;
  if (meta != NULL && (meta->n_planes != planes || meta->width != self->layout.width ||
                       meta->height != self->layout.height || meta->format != GST_VIDEO_INFO_FORMAT(&self->info))) {
    snprintf(why, why_size, "its GstVideoMeta (%s %ux%u, %u planes) differs from the caps (%s %ux%u, %u planes)",
             gst_video_format_to_string(meta->format), meta->width, meta->height, meta->n_planes,
             gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&self->info)), self->layout.width, self->layout.height,
             planes);
    return FALSE;
  }
  *layout = self->layout;
  layout->modifier = 0;
  for (guint p = 0; p < planes; ++p) {
    const gsize offset = meta != NULL ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(&self->info, p);
    const gint stride = meta != NULL ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(&self->info, p);
    if (stride <= 0) {
      snprintf(why, why_size, "plane %u has stride %d (only positive strides are sent)", p, stride);
      return FALSE;
    }
    guint index = 0, length = 0;
    gsize skip = 0;
    if (!gst_buffer_find_memory(buffer, offset, 1, &index, &length, &skip)) {
      snprintf(why, why_size, "plane %u's offset %" G_GSIZE_FORMAT " B is past the buffer's %" G_GSIZE_FORMAT " B", p,
               offset, gst_buffer_get_size(buffer));
      return FALSE;
    }
    GstMemory* memory = gst_buffer_peek_memory(buffer, index);
    fds[p] = gst_fd_memory_get_fd(memory);
    if (fds[p] < 0) {
      snprintf(why, why_size, "memory %u has no fd", index);
      return FALSE;
    }
    layout->planes[p].offset_bytes = (uint64_t)memory->offset + skip;
    layout->planes[p].row_stride_bytes = (uint64_t)stride;
  }
  return TRUE;
}

/* Imported frames upstream's pool can spare: two of its max buffers stay with upstream (a capture keeps
 * buffers queued), so consumers that hold frames never starve it; no bound without a pool or a max. */
static guint import_limit(GstBuffer* buffer) {
  if (buffer->pool == NULL) return G_MAXUINT;
  GstStructure* config = gst_buffer_pool_get_config(buffer->pool);
  guint min = 0, max = 0;
  const gboolean known = gst_buffer_pool_config_get_params(config, NULL, NULL, &min, &max);
  gst_structure_free(config);
  if (!known || max == 0) return G_MAXUINT;
  return max > 2 ? max - 2 : 1;
}

static void log_fallback(GstEdgetensorSink* self, GstBuffer* buffer, const char* why) {
  GST_OBJECT_LOCK(self);
  const gboolean first = !self->fallback_logged;
  self->fallback_logged = TRUE;
  GST_OBJECT_UNLOCK(self);
  if (first)
    GST_INFO_OBJECT(self, "upstream's fd memory is copied, not imported: %s (logged once; %u memories)", why,
                    gst_buffer_n_memory(buffer));
  else
    GST_DEBUG_OBJECT(self, "copied, not imported: %s", why);
}

/* Imports `buffer`'s fd memory as a frame into *out, no copy: the frame's storages hold a reference of
 * `buffer` (its release callback drops it), so upstream's pool has it back only when the channel and
 * every receiver have released the frame. FALSE (reason logged) when the copy path must take it. */
static gboolean import_frame(GstEdgetensorSink* self, GstBuffer* buffer, et_frame** out) {
  *out = NULL;
  char why[320];
  et_image_layout layout;
  int32_t fds[ET_MAX_PLANES] = {-1, -1, -1, -1};
  if (!import_layout(self, buffer, &layout, fds, why, sizeof why)) {
    /* Not fd memory at all is the ordinary copy path (logged there); a layout the sink cannot send is logged here. */
    if (gst_is_fd_memory(gst_buffer_peek_memory(buffer, 0))) log_fallback(self, buffer, why);
    return FALSE;
  }
  /* The plane pool's buffers (plane-buffers=true) are the sink's own memory: zero copy, not imported, and no
   * import limit: as with the other pool, upstream's acquire waits while consumers hold every buffer. */
  const gboolean own_planes = buffer->pool != NULL && GST_IS_EDGETENSOR_PLANE_POOL(buffer->pool);
  const guint limit = own_planes ? G_MAXUINT : import_limit(buffer);
  if ((guint)g_atomic_int_get(&self->imports_held) >= limit) {
    snprintf(why, sizeof why, "consumers hold %d of its frames, all upstream's pool can spare (its max less 2)",
             g_atomic_int_get(&self->imports_held));
    log_fallback(self, buffer, why);
    return FALSE;
  }
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, i);
    keep_buffer_key(memory, gst_fd_memory_get_fd(memory));
  }
  ImportHold* hold = g_new(ImportHold, 1);
  hold->buffer = gst_buffer_ref(buffer);
  hold->sink = gst_object_ref(self);
  g_atomic_int_inc(&self->imports_held);
  et_import_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.release_callback = import_released;
  options.user_data = hold;
  if (et_frame_import_planes_dup(fds, layout.plane_count, &layout, &options, out) != ET_OK) {
    /* A failed import never calls the callback: the hold is still ours. */
    snprintf(why, sizeof why, "%s", et_last_error_message());
    import_hold_free(hold);
    log_fallback(self, buffer, why);
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  ++self->zero_copy;
  if (!own_planes) ++self->imported;
  const gboolean first = !own_planes && !self->import_logged;
  self->import_logged |= !own_planes;
  GST_OBJECT_UNLOCK(self);
  if (first) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
    GST_INFO_OBJECT(self, "importing upstream's fd memory without a copy (%u memories, allocator %s, %s): each "
                    "GstBuffer is held until every receiver has released its frame; counted in stats.imported, "
                    "logged once",
                    gst_buffer_n_memory(buffer), memory->allocator != NULL ? GST_OBJECT_NAME(memory->allocator) : "none",
                    gst_buffer_get_video_meta(buffer) != NULL ? "layout from GstVideoMeta" : "layout from the caps");
  }
  return TRUE;
}

/* The image to send for `buffer` into *out: its own memory when it is one of our images (zero copy), else a
 * copy of its frame into a copy pool image; NULL with GST_FLOW_OK when the frame is dropped (copy_buffer).
 * A new reference. */
static GstFlowReturn image_of(GstEdgetensorSink* self, GstBuffer* buffer, et_tensor** out) {
  *out = NULL;
  et_tensor* own = gst_buffer_n_memory(buffer) == 1 ? gst_edgetensor_memory_tensor(gst_buffer_peek_memory(buffer, 0)) : NULL;
  if (own != NULL) {
    GST_OBJECT_LOCK(self);
    ++self->zero_copy;
    GST_OBJECT_UNLOCK(self);
    *out = et_tensor_retain(own);
    return GST_FLOW_OK;
  }
  if (self->copy_pool == NULL) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("a frame before caps: no layout to copy it into"), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  et_tensor* image = NULL;
  const GstFlowReturn flow = copy_buffer(self, &image);
  if (flow != GST_FLOW_OK || image == NULL) return flow;
  if (!copy_frame(self, buffer, image)) {
    et_tensor_release(image);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("copying a frame into an edgetensor buffer failed"), (NULL));
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK(self);
  const gboolean first = !self->copy_logged;
  self->copy_logged = TRUE;
  ++self->copies;
  GST_OBJECT_UNLOCK(self);
  if (first) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
    GST_INFO_OBJECT(self, "copying frames: upstream's buffers are not edgetensor's (%u memories, allocator %s); "
                    "counted in stats.copies, logged once",
                    gst_buffer_n_memory(buffer), memory != NULL && memory->allocator != NULL
                                                     ? GST_OBJECT_NAME(memory->allocator) : "none");
  }
  *out = image;
  return GST_FLOW_OK;
}

/* pts on the pipeline clock (GStreamer's system clock is CLOCK_MONOTONIC): base time + running time, so
 * a consumer can compare it with its own CLOCK_MONOTONIC, and a source re-base it. */
static void timing_of(GstEdgetensorSink* self, GstBuffer* buffer, et_channel_send_options* options) {
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->flags = GST_MINI_OBJECT_FLAGS(buffer);
  const GstClockTime pts = GST_BUFFER_PTS(buffer);
  if (GST_CLOCK_TIME_IS_VALID(pts)) {
    const GstClockTime running = gst_segment_to_running_time(&GST_BASE_SINK(self)->segment, GST_FORMAT_TIME, pts);
    if (GST_CLOCK_TIME_IS_VALID(running)) {
      options->pts_ns = (int64_t)(gst_element_get_base_time(GST_ELEMENT(self)) + running);
      options->has |= ET_CHANNEL_HAS_PTS;
    }
  }
  if (GST_CLOCK_TIME_IS_VALID(GST_BUFFER_DURATION(buffer))) {
    options->duration_ns = (int64_t)GST_BUFFER_DURATION(buffer);
    options->has |= ET_CHANNEL_HAS_DURATION;
  }
}

static gboolean gst_edgetensor_sink_unlock(GstBaseSink* sink) {
  g_atomic_int_set(&GST_EDGETENSOR_SINK(sink)->unlocked, 1);
  return TRUE;
}

static gboolean gst_edgetensor_sink_unlock_stop(GstBaseSink* sink) {
  g_atomic_int_set(&GST_EDGETENSOR_SINK(sink)->unlocked, 0);
  return TRUE;
}

/* Before the stream's first frame: waits until wait-receivers receivers are connected (every 5 ms, until
 * unlock). Later frames never wait: a receiver that leaves does not stall the pipeline. FALSE when unlocked. */
/* A warning when the publisher has refused more consumers (its accept thread refuses them: a uid or gid the
 * allow rule does not list, or past the receiver limit) since the last one. Streaming thread. */
static void note_refusals(GstEdgetensorSink* self, const et_channel_publisher_stats* stats) {
  if (stats->receivers_refused <= self->refused_logged) return;
  GST_WARNING_OBJECT(self, "%llu consumer%s refused so far (%llu since the last warning): a uid or primary gid that "
                     "allow-uids and allow-gids do not list (socket-mode let it reach the socket), or past the "
                     "receiver limit; each was told why",
                     (unsigned long long)stats->receivers_refused, stats->receivers_refused == 1 ? "" : "s",
                     (unsigned long long)(stats->receivers_refused - self->refused_logged));
  self->refused_logged = stats->receivers_refused;
}

/* Every REFUSAL_CHECK_FRAMES frames, note_refusals with the publisher's counters. */
#define REFUSAL_CHECK_FRAMES 30u
static void check_refusals(GstEdgetensorSink* self, guint64 frame) {
  if (frame % REFUSAL_CHECK_FRAMES != 0) return;
  et_channel_publisher_stats stats = {0};
  stats.struct_size = sizeof stats;
  if (et_channel_publisher_get_stats(self->publisher, &stats) == ET_OK) note_refusals(self, &stats);
}

static gboolean wait_for_receivers(GstEdgetensorSink* self) {
  if (self->waited) return TRUE;
  GST_OBJECT_LOCK(self);
  const guint wanted = self->wait_receivers;
  GST_OBJECT_UNLOCK(self);
  for (gboolean logged = FALSE;; logged = TRUE) {
    et_channel_publisher_stats stats = {0};
    stats.struct_size = sizeof stats;
    const gboolean read = et_channel_publisher_get_stats(self->publisher, &stats) == ET_OK;
    if (read) note_refusals(self, &stats);
    if (!read || stats.receivers >= wanted) {
      self->waited = TRUE;
      return TRUE;
    }
    if (g_atomic_int_get(&self->unlocked)) return FALSE;
    if (!logged) GST_INFO_OBJECT(self, "waiting for %u receivers (%llu connected)", wanted, (unsigned long long)stats.receivers);
    g_usleep(5000);
  }
}

static GstFlowReturn gst_edgetensor_sink_render(GstBaseSink* sink, GstBuffer* buffer) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  if (!wait_for_receivers(self)) return GST_FLOW_FLUSHING;
  GST_OBJECT_LOCK(self);
  const guint64 frame_number = ++self->frames;
  GST_OBJECT_UNLOCK(self);
  check_refusals(self, frame_number);
  et_frame* frame = NULL;
  et_status status = ET_OK;
  /* Our own pool's memory is fd memory too: image_of sends it as it is. Others' fd memory is imported. */
  const gboolean own =
      gst_buffer_n_memory(buffer) == 1 && gst_edgetensor_memory_tensor(gst_buffer_peek_memory(buffer, 0)) != NULL;
  if (!own && self->copy_pool != NULL) (void)import_frame(self, buffer, &frame);
  if (frame == NULL) {
    et_tensor* image = NULL;
    const GstFlowReturn flow = image_of(self, buffer, &image);
    if (flow != GST_FLOW_OK || image == NULL) return flow; /* NULL with OK: dropped, counted */
    status = et_frame_from_tensor(image, &frame);
    et_tensor_release(image);
  }
  et_channel_send_options options;
  timing_of(self, buffer, &options);
  et_channel_publish_result result = {0};
  result.struct_size = sizeof result;
  if (status == ET_OK) {
    (void)et_channel_set_wait_check(sink_unlocked, self); /* a flush or state change ends a wait for a receiver */
    status = et_channel_publisher_send_frame(self->publisher, frame, &options, &result);
    const gboolean stopped = status == ET_BUSY && et_last_error_errno() == ECANCELED;
    (void)et_channel_set_wait_check(NULL, NULL);
    if (stopped) {
      et_frame_release(frame);
      GST_DEBUG_OBJECT(self, "unlocked while waiting for a receiver: %s", et_last_error_message());
      return GST_FLOW_FLUSHING;
    }
  }
  /* An imported frame no receiver took (drop policy, or none connected) gives its GstBuffer back here. */
  et_frame_release(frame);
  if (status != ET_OK) {
    GST_OBJECT_LOCK(self);
    ++self->send_errors;
    GST_OBJECT_UNLOCK(self);
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("publishing a frame: %s", et_last_error_message()), (NULL));
    return GST_FLOW_ERROR;
  }
  if (result.removed > 0)
    GST_INFO_OBJECT(self, "%llu receivers left (closed or died) before frame %llu", (unsigned long long)result.removed,
                    (unsigned long long)result.sequence);
  /* A receiver at its limit gets nothing until it releases: once a streak of skipped frames is long enough to be
   * no burst, say so, once per streak (the counts are in stats.drops). */
  self->skipped_streak = result.dropped > 0 ? self->skipped_streak + 1 : 0;
  if (self->skipped_streak == SKIPPED_WARN_FRAMES)
    GST_WARNING_OBJECT(self, "frames %llu to %llu: %llu receivers skipped each one, holding their frame limit "
                       "(max-frames-out %u) or every buffer of their buffer table (its max_buffers, 32 by default; a "
                       "frame in several buffers takes one entry each), or not reading (their socket full); the drop "
                       "policy, or block after its wait. Such a receiver gets frames again once it releases one. A "
                       "GstBaseSink after edgetensorsrc keeps its last frame (enable-last-sample): there, use "
                       "max-frames-out of 2 or more",
                       (unsigned long long)(result.sequence + 1 - SKIPPED_WARN_FRAMES),
                       (unsigned long long)result.sequence, (unsigned long long)result.dropped, self->max_frames_out);
  GST_LOG_OBJECT(self, "frame %llu to %llu receivers (%llu dropped)", (unsigned long long)result.sequence,
                 (unsigned long long)result.delivered, (unsigned long long)result.dropped);
  return GST_FLOW_OK;
}

static void gst_edgetensor_sink_class_init(GstEdgetensorSinkClass* klass) {
  GObjectClass* object_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSinkClass* base_class = GST_BASE_SINK_CLASS(klass);
  GST_DEBUG_CATEGORY_INIT(gst_edgetensor_sink_debug, "edgetensorsink", 0, "edgetensor sink");
  import_key_quark = g_quark_from_static_string("edgetensorsink-buffer-key");

  object_class->set_property = gst_edgetensor_sink_set_property;
  object_class->get_property = gst_edgetensor_sink_get_property;
  object_class->finalize = gst_edgetensor_sink_finalize;
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  g_object_class_install_property(
      object_class, PROP_SOCKET_PATH,
      g_param_spec_string("socket-path", "Socket path",
                          "Named AF_UNIX socket consumers connect to ('@' first: an abstract name)", NULL, rw));
  g_object_class_install_property(
      object_class, PROP_POLICY,
      g_param_spec_enum("policy", "Policy", "Default policy of each receiver at its frame limit",
                        GST_TYPE_EDGETENSOR_POLICY, DEFAULT_POLICY, rw));
  g_object_class_install_property(
      object_class, PROP_MAX_FRAMES_OUT,
      g_param_spec_uint("max-frames-out", "Max frames out",
                        "Frames a receiver may hold before its policy applies (0: no limit but the buffer table)", 0,
                        1u << 20, DEFAULT_MAX_FRAMES_OUT, rw));
  g_object_class_install_property(
      object_class, PROP_POOL_SIZE,
      g_param_spec_uint("pool-size", "Pool size",
                        "Buffers consumers may hold plus one: the least the copy pool holds, the min of the pool "
                        "proposed upstream, and what it adds to upstream's own buffers", 2, 1024,
                        DEFAULT_POOL_SIZE, rw));
  g_object_class_install_property(
      object_class, PROP_WAIT_RECEIVERS,
      g_param_spec_uint("wait-receivers", "Wait for receivers",
                        "Hold the stream's first frame until this many receivers are connected (0: publish at once; "
                        "a frame published to no receiver is not kept)",
                        0, 1024, DEFAULT_WAIT_RECEIVERS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property(
      object_class, PROP_DRAIN_TIMEOUT,
      g_param_spec_uint("drain-timeout", "Drain timeout",
                        "At EOS, after the end of stream: milliseconds to wait for receivers to release every frame "
                        "(0: none)",
                        0, G_MAXINT32, DEFAULT_DRAIN_TIMEOUT_MS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property(
      object_class, PROP_SEND_TIMEOUT,
      g_param_spec_int("send-timeout", "Send timeout",
                       "policy=block: milliseconds a frame waits for a receiver at its limit (a release, room in its "
                       "socket) before that receiver skips it (-1: until it releases; a flush or state change still "
                       "ends the wait). Also the longest wait for a copy buffer",
                       -1, G_MAXINT32, DEFAULT_SEND_TIMEOUT_MS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property(
      object_class, PROP_SOCKET_MODE,
      g_param_spec_uint("socket-mode", "Socket mode",
                        "Permission bits of the socket file (connect needs write permission: 0660 lets the file's "
                        "group in, 0666 anyone the allow rule passes); unused for an abstract name",
                        0, 0777, DEFAULT_SOCKET_MODE, rw));
  g_object_class_install_property(
      object_class, PROP_ALLOW_UIDS,
      g_param_spec_string("allow-uids", "Allowed uids",
                          "Comma-separated uids whose consumers are accepted besides this process's own uid "
                          "(SO_PEERCRED at accept; others are refused, told why, counted in stats.receivers-refused "
                          "and warned about), e.g. \"1000,1001\"",
                          NULL, rw));
  g_object_class_install_property(
      object_class, PROP_ALLOW_GIDS,
      g_param_spec_string("allow-gids", "Allowed gids",
                          "Comma-separated gids: consumers whose primary gid is one of them are accepted", NULL, rw));
  g_object_class_install_property(
      object_class, PROP_PLANE_BUFFERS,
      g_param_spec_boolean("plane-buffers", "One buffer per plane",
                           "The pool proposed upstream gives each plane a buffer of its own (a DMA-BUF per plane where "
                           "a dma-heap serves, else a memfd; one GstMemory each), as a V4L2 multi-planar format "
                           "(NV12M, YUV420M) needs under v4l2src io-mode=dmabuf-import; otherwise every plane lies in "
                           "one buffer. Packed formats are one buffer either way",
                           FALSE, rw));
  g_object_class_install_property(
      object_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Frames published, zero-copy and copied frames, copy buffers and drops, receivers",
                         GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  GstCaps* caps = et_gst_template_caps();
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  gst_element_class_set_static_metadata(element_class, "edgetensor sink", "Sink/Video",
                                        "Publishes raw video frames to edgetensor consumers over a named socket, "
                                        "zero-copy (the frame channel)",
                                        "edgetensor");
  base_class->set_caps = gst_edgetensor_sink_set_caps;
  base_class->render = gst_edgetensor_sink_render;
  base_class->propose_allocation = gst_edgetensor_sink_propose_allocation;
  base_class->start = gst_edgetensor_sink_start;
  base_class->stop = gst_edgetensor_sink_stop;
  base_class->event = gst_edgetensor_sink_event;
  base_class->unlock = gst_edgetensor_sink_unlock;
  base_class->unlock_stop = gst_edgetensor_sink_unlock_stop;
  gst_type_mark_as_plugin_api(GST_TYPE_EDGETENSOR_POLICY, 0);
}

static void gst_edgetensor_sink_init(GstEdgetensorSink* self) {
  self->policy = DEFAULT_POLICY;
  self->max_frames_out = DEFAULT_MAX_FRAMES_OUT;
  self->pool_size = DEFAULT_POOL_SIZE;
  self->drain_timeout_ms = DEFAULT_DRAIN_TIMEOUT_MS;
  self->send_timeout_ms = DEFAULT_SEND_TIMEOUT_MS;
  self->socket_mode = DEFAULT_SOCKET_MODE;
  self->memory = ET_MEMORY_UNSET_;
  gst_video_info_init(&self->info);
}
