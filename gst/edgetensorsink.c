/* SPDX-License-Identifier: Apache-2.0 */
#include "edgetensorsink.h"

#include "edgetensorpool.h"
#include "formats.h"

#include <edgetensor/c/edgetensor_c.h>
#include <gst/video/video.h>

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
  PROP_STATS,
};

#define DEFAULT_POLICY 0
#define DEFAULT_MAX_FRAMES_OUT 0
#define DEFAULT_POOL_SIZE 6
#define DEFAULT_WAIT_RECEIVERS 0
#define DEFAULT_DRAIN_TIMEOUT_MS 1000
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
  gint unlocked;            /* atomic: unlock() asked render to stop waiting for receivers */
  gboolean waited;          /* wait-receivers was met (once per stream) */
  /* Between start and stop (the publisher's calls are thread-safe). */
  et_channel_publisher* publisher;
  /* Streaming thread only, set in set_caps. */
  GstVideoInfo info;
  et_image_layout layout;
  int32_t memory;           /* what the pool allocates: ET_MEMORY_DMABUF or ET_MEMORY_SHM */
  GstBufferPool* pool;      /* the pool of set_caps' caps: proposed upstream, and the copy path's */
  gboolean ended;           /* the end of stream was sent */
  /* Counters (object lock). */
  guint64 frames;           /* buffers rendered */
  guint64 zero_copy;        /* sent from the memory upstream wrote */
  guint64 copies;           /* copied into a pool buffer first */
  guint64 send_errors;      /* frames the publisher refused (logged) */
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
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

/* Object lock held. */
static GstStructure* sink_stats(GstEdgetensorSink* self) {
  et_channel_publisher_stats p = {0};
  p.struct_size = sizeof p;
  if (self->publisher != NULL && et_channel_publisher_get_stats(self->publisher, &p) != ET_OK) memset(&p, 0, sizeof p);
  return gst_structure_new("edgetensorsink-stats", "frames", G_TYPE_UINT64, self->frames, "zero-copy", G_TYPE_UINT64,
                           self->zero_copy, "copies", G_TYPE_UINT64, self->copies, "send-errors", G_TYPE_UINT64,
                           self->send_errors, "memory", G_TYPE_STRING, et_memory_kind_name(self->memory), "receivers",
                           G_TYPE_UINT64, p.receivers, "receivers-joined", G_TYPE_UINT64, p.receivers_joined,
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
    case PROP_STATS: g_value_take_boxed(value, sink_stats(self)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_edgetensor_sink_finalize(GObject* object) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(object);
  g_free(self->socket_path);
  G_OBJECT_CLASS(gst_edgetensor_sink_parent_class)->finalize(object);
}

static GstBufferPool* new_pool(GstEdgetensorSink* self, GstCaps* caps);

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
  GstBufferPool* pool = new_pool(self, caps);
  if (pool == NULL) return FALSE;
  GST_OBJECT_LOCK(self);
  GstBufferPool* old = self->pool;
  self->pool = pool;
  GST_OBJECT_UNLOCK(self);
  if (old != NULL) {
    gst_buffer_pool_set_active(old, FALSE);
    gst_object_unref(old);
  }
  GST_INFO_OBJECT(self, "caps %" GST_PTR_FORMAT ": edgetensor %s in %s buffers", (void*)caps,
                  et_pixel_format_name(self->layout.format), et_memory_kind_name(self->memory));
  return TRUE;
}

/* A new pool of `caps`' images (the sink's memory kind), configured; NULL (logged) on failure. */
static GstBufferPool* new_pool(GstEdgetensorSink* self, GstCaps* caps) {
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return NULL;
  GstBufferPool* pool = gst_edgetensor_buffer_pool_new(self->memory);
  GstStructure* config = gst_buffer_pool_get_config(pool);
  GST_OBJECT_LOCK(self);
  const guint min = self->pool_size;
  GST_OBJECT_UNLOCK(self);
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
    GST_OBJECT_LOCK(self);
    const guint min = self->pool_size;
    GST_OBJECT_UNLOCK(self);
    gst_query_add_allocation_pool(query, pool, (guint)info.size, min, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  return TRUE;
}

/* Publishes on socket-path, each receiver with the policy and frame limit of the properties. */
static gboolean gst_edgetensor_sink_start(GstBaseSink* sink) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  GST_OBJECT_LOCK(self);
  char* path = g_strdup(self->socket_path);
  et_channel_sender_options receiver = {0};
  receiver.struct_size = sizeof receiver;
  receiver.policy = self->policy;
  receiver.max_frames_out = self->max_frames_out;
  self->frames = self->zero_copy = self->copies = self->send_errors = 0;
  self->copy_logged = FALSE;
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
  const et_status status = et_channel_publisher_listen(path, NULL, &options, &publisher);
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
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

/* Ends the stream on every receiver (once): they see end of stream, not an error. A receiver whose socket
 * stays full makes each try wait the send timeout: `tries` bounds the wait. */
static void end_stream(GstEdgetensorSink* self, int tries) {
  if (self->publisher == NULL || self->ended) return;
  et_status status = ET_BUSY;
  for (int i = 0; i < tries && status == ET_BUSY; ++i) status = et_channel_publisher_end_stream(self->publisher);
  if (status != ET_OK) GST_WARNING_OBJECT(self, "ending the stream: %s", et_last_error_message());
  self->ended = TRUE;
}

/* Going to READY (and NULL): ends the stream if EOS did not, then closes every receiver without waiting
 * for their releases (frames they hold stay valid in their process). */
static gboolean gst_edgetensor_sink_stop(GstBaseSink* sink) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  end_stream(self, 1); /* stopping: one try, the receivers are closed next anyway */
  GST_OBJECT_LOCK(self);
  et_channel_publisher* publisher = self->publisher;
  self->publisher = NULL;
  GstBufferPool* pool = self->pool;
  self->pool = NULL;
  GST_OBJECT_UNLOCK(self);
  et_channel_publisher_release(publisher);
  if (pool != NULL) {
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
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
    end_stream(self, 3);
    drain(self);
  }
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) self->ended = FALSE;
  return GST_BASE_SINK_CLASS(gst_edgetensor_sink_parent_class)->event(sink, event);
}

/* The image to send for `buffer`: its own memory when it is one of our images (zero copy), else a copy of
 * its frame into a pool image. A new reference, or NULL (element error posted). */
static et_tensor* image_of(GstEdgetensorSink* self, GstBuffer* buffer) {
  et_tensor* own = gst_buffer_n_memory(buffer) == 1 ? gst_edgetensor_memory_tensor(gst_buffer_peek_memory(buffer, 0)) : NULL;
  if (own != NULL) {
    GST_OBJECT_LOCK(self);
    ++self->zero_copy;
    GST_OBJECT_UNLOCK(self);
    return et_tensor_retain(own);
  }
  if (self->pool == NULL || (!gst_buffer_pool_is_active(self->pool) && !gst_buffer_pool_set_active(self->pool, TRUE))) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("the edgetensor buffer pool could not start"), (NULL));
    return NULL;
  }
  GstBuffer* copy = NULL;
  if (gst_buffer_pool_acquire_buffer(self->pool, &copy, NULL) != GST_FLOW_OK) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("no edgetensor buffer for a copy"), (NULL));
    return NULL;
  }
  GstVideoFrame from, to;
  gboolean copied = FALSE;
  if (gst_video_frame_map(&from, &self->info, buffer, GST_MAP_READ)) {
    if (gst_video_frame_map(&to, &self->info, copy, GST_MAP_WRITE)) {
      copied = gst_video_frame_copy(&to, &from);
      gst_video_frame_unmap(&to);
    }
    gst_video_frame_unmap(&from);
  }
  et_tensor* image = copied ? et_tensor_retain(gst_edgetensor_memory_tensor(gst_buffer_peek_memory(copy, 0))) : NULL;
  gst_buffer_unref(copy);
  if (image == NULL) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("copying a frame into an edgetensor buffer failed"), (NULL));
    return NULL;
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
  return image;
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
static gboolean wait_for_receivers(GstEdgetensorSink* self) {
  if (self->waited) return TRUE;
  GST_OBJECT_LOCK(self);
  const guint wanted = self->wait_receivers;
  GST_OBJECT_UNLOCK(self);
  for (gboolean logged = FALSE;; logged = TRUE) {
    et_channel_publisher_stats stats = {0};
    stats.struct_size = sizeof stats;
    if (et_channel_publisher_get_stats(self->publisher, &stats) != ET_OK || stats.receivers >= wanted) {
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
  ++self->frames;
  GST_OBJECT_UNLOCK(self);
  et_tensor* image = image_of(self, buffer);
  if (image == NULL) return GST_FLOW_ERROR;
  et_frame* frame = NULL;
  et_channel_send_options options;
  timing_of(self, buffer, &options);
  et_channel_publish_result result = {0};
  result.struct_size = sizeof result;
  et_status status = et_frame_from_tensor(image, &frame);
  if (status == ET_OK) status = et_channel_publisher_send_frame(self->publisher, frame, &options, &result);
  et_frame_release(frame);
  et_tensor_release(image);
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
  GST_LOG_OBJECT(self, "frame %llu to %llu receivers (%llu dropped)", (unsigned long long)result.sequence,
                 (unsigned long long)result.delivered, (unsigned long long)result.dropped);
  return GST_FLOW_OK;
}

static void gst_edgetensor_sink_class_init(GstEdgetensorSinkClass* klass) {
  GObjectClass* object_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSinkClass* base_class = GST_BASE_SINK_CLASS(klass);
  GST_DEBUG_CATEGORY_INIT(gst_edgetensor_sink_debug, "edgetensorsink", 0, "edgetensor sink");

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
                        "Buffers of the pool proposed upstream (at least what consumers may hold plus one)", 2, 1024,
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
      object_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics", "Frames published, zero-copy and copied frames, receivers",
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
  self->memory = ET_MEMORY_UNSET_;
  gst_video_info_init(&self->info);
}
