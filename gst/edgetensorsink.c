/* SPDX-License-Identifier: Apache-2.0 */
#include "edgetensorsink.h"

#include "formats.h"

#include <edgetensor/c/edgetensor_c.h>
#include <gst/video/video.h>

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
  PROP_STATS,
};

#define DEFAULT_POLICY 0
#define DEFAULT_MAX_FRAMES_OUT 0
#define DEFAULT_POOL_SIZE 6

struct _GstEdgetensorSink {
  GstBaseSink parent;
  /* Properties (object lock). */
  char* socket_path;
  gint policy;
  guint max_frames_out;
  guint pool_size;
  /* Streaming thread only, set in set_caps. */
  GstVideoInfo info;
  et_image_layout layout;
  /* Counters (object lock). */
  guint64 frames;
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
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static GstStructure* sink_stats(GstEdgetensorSink* self) {
  return gst_structure_new("edgetensorsink-stats", "frames", G_TYPE_UINT64, self->frames, NULL);
}

static void gst_edgetensor_sink_get_property(GObject* object, guint id, GValue* value, GParamSpec* pspec) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(object);
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_SOCKET_PATH: g_value_set_string(value, self->socket_path); break;
    case PROP_POLICY: g_value_set_enum(value, self->policy); break;
    case PROP_MAX_FRAMES_OUT: g_value_set_uint(value, self->max_frames_out); break;
    case PROP_POOL_SIZE: g_value_set_uint(value, self->pool_size); break;
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
  GST_INFO_OBJECT(self, "caps %" GST_PTR_FORMAT ": edgetensor %s", (void*)caps, et_pixel_format_name(self->layout.format));
  return TRUE;
}

static GstFlowReturn gst_edgetensor_sink_render(GstBaseSink* sink, GstBuffer* buffer) {
  GstEdgetensorSink* self = GST_EDGETENSOR_SINK(sink);
  (void)buffer;
  GST_OBJECT_LOCK(self);
  ++self->frames;
  GST_OBJECT_UNLOCK(self);
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
  gst_type_mark_as_plugin_api(GST_TYPE_EDGETENSOR_POLICY, 0);
}

static void gst_edgetensor_sink_init(GstEdgetensorSink* self) {
  self->policy = DEFAULT_POLICY;
  self->max_frames_out = DEFAULT_MAX_FRAMES_OUT;
  self->pool_size = DEFAULT_POOL_SIZE;
  gst_video_info_init(&self->info);
}
