/* SPDX-License-Identifier: Apache-2.0 */
#include "formats.h"

#include <string.h>

/* The library's formats are numbered 1 .. ET_PIXEL_FORMAT_BAYER_GBRG8; et_pixel_format_to_gst names those
 * GStreamer has. */
#define ET_GST_LAST_PIXEL_FORMAT ET_PIXEL_FORMAT_BAYER_GBRG8

static gpointer build_format_list(gpointer unused) {
  (void)unused;
  GString* list = g_string_new("{ ");
  gboolean first = TRUE;
  for (int32_t f = 1; f <= ET_GST_LAST_PIXEL_FORMAT; ++f) {
    const char* name = NULL;
    if (et_pixel_format_to_gst(f, &name) != ET_OK || name == NULL) continue;
    g_string_append_printf(list, "%s%s", first ? "" : ", ", name);
    first = FALSE;
  }
  g_string_append(list, " }");
  return g_string_free(list, FALSE); /* kept for the process's life, as GStreamer keeps template caps */
}

const char* et_gst_format_list(void) {
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, build_format_list, NULL);
}

GstCaps* et_gst_template_caps(void) {
  char* text = g_strdup_printf("video/x-raw, format=(string)%s, width=(int)[ 1, max ], height=(int)[ 1, max ], "
                               "framerate=(fraction)[ 0/1, max ]",
                               et_gst_format_list());
  GstCaps* caps = gst_caps_from_string(text);
  g_free(text);
  return caps;
}

gboolean et_gst_pixel_format(GstVideoFormat format, int32_t* out) {
  *out = ET_PIXEL_FORMAT_UNKNOWN;
  const char* name = gst_video_format_to_string(format);
  if (format == GST_VIDEO_FORMAT_UNKNOWN || name == NULL) return FALSE;
  return et_pixel_format_from_gst(name, out) == ET_OK;
}

gboolean et_gst_layout_from_info(const GstVideoInfo* info, et_image_layout* out, char** message) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  int32_t format = ET_PIXEL_FORMAT_UNKNOWN;
  if (!et_gst_pixel_format(GST_VIDEO_INFO_FORMAT(info), &format)) {
    *message = g_strdup_printf("video format %s has no edgetensor pixel format (supported: %s)",
                               gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(info)), et_gst_format_list());
    return FALSE;
  }
  out->format = format;
  out->width = (uint32_t)GST_VIDEO_INFO_WIDTH(info);
  out->height = (uint32_t)GST_VIDEO_INFO_HEIGHT(info);
  out->plane_count = GST_VIDEO_INFO_N_PLANES(info);
  for (guint p = 0; p < out->plane_count && p < ET_MAX_PLANES; ++p) {
    out->planes[p].offset_bytes = GST_VIDEO_INFO_PLANE_OFFSET(info, p);
    out->planes[p].row_stride_bytes = (uint64_t)GST_VIDEO_INFO_PLANE_STRIDE(info, p);
  }
  return TRUE;
}

gboolean et_gst_info_from_layout(const et_image_layout* layout, uint64_t buffer_bytes, GstVideoInfo* info,
                                 char** message) {
  const char* name = NULL;
  if (et_pixel_format_to_gst(layout->format, &name) != ET_OK || name == NULL) {
    *message = g_strdup_printf("pixel format %s has no GStreamer video format", et_pixel_format_name(layout->format));
    return FALSE;
  }
  gst_video_info_init(info);
  if (!gst_video_info_set_format(info, gst_video_format_from_string(name), layout->width, layout->height)) {
    *message = g_strdup_printf("GStreamer refuses %s %ux%u", name, layout->width, layout->height);
    return FALSE;
  }
  if (GST_VIDEO_INFO_N_PLANES(info) != layout->plane_count) {
    *message = g_strdup_printf("%s: the layout has %u planes, GStreamer %u", name, layout->plane_count,
                               GST_VIDEO_INFO_N_PLANES(info));
    return FALSE;
  }
  /* The image's extent: one past the last byte of the plane that ends last (a buffer may be larger). */
  uint64_t extent = 0;
  for (guint p = 0; p < layout->plane_count; ++p) {
    info->offset[p] = (gsize)layout->planes[p].offset_bytes;
    info->stride[p] = (gint)layout->planes[p].row_stride_bytes;
    gint components[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(info->finfo, p, components);
    const uint64_t rows = (uint64_t)GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(info->finfo, components[0], layout->height);
    const uint64_t end = layout->planes[p].offset_bytes + rows * layout->planes[p].row_stride_bytes;
    if (end > extent) extent = end;
  }
  if (extent > buffer_bytes) {
    *message = g_strdup_printf("%s %ux%u: the planes end at byte %llu, past the buffer's %llu", name, layout->width,
                               layout->height, (unsigned long long)extent, (unsigned long long)buffer_bytes);
    return FALSE;
  }
  info->size = (gsize)extent;
  return TRUE;
}

GstBuffer* et_gst_buffer_new_image(GstMemory* memory, const et_image_layout* layout) {
  const char* name = NULL;
  const GstVideoFormat format = et_pixel_format_to_gst(layout->format, &name) == ET_OK && name != NULL
                                    ? gst_video_format_from_string(name)
                                    : GST_VIDEO_FORMAT_UNKNOWN;
  return et_gst_buffer_new_video(&memory, 1, format, layout);
}

GstBuffer* et_gst_buffer_new_video(GstMemory* const* memories, guint count, GstVideoFormat format,
                                   const et_image_layout* layout) {
  GstBuffer* buffer = gst_buffer_new();
  for (guint i = 0; i < count; ++i) gst_buffer_append_memory(buffer, memories[i]);
  if (format == GST_VIDEO_FORMAT_UNKNOWN) return buffer;
  gsize offsets[GST_VIDEO_MAX_PLANES] = {0};
  gint strides[GST_VIDEO_MAX_PLANES] = {0};
  for (guint p = 0; p < layout->plane_count && p < GST_VIDEO_MAX_PLANES; ++p) {
    offsets[p] = (gsize)layout->planes[p].offset_bytes;
    strides[p] = (gint)layout->planes[p].row_stride_bytes;
  }
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, format, layout->width, layout->height,
                                 layout->plane_count, offsets, strides);
  return buffer;
}

static gboolean mark_meta_pooled(GstBuffer* buffer, GstMeta** meta, gpointer data) {
  (void)buffer;
  (void)data;
  GST_META_FLAG_SET(*meta, GST_META_FLAG_POOLED);
  GST_META_FLAG_SET(*meta, GST_META_FLAG_LOCKED);
  return TRUE;
}

void et_gst_buffer_mark_pooled(GstBuffer* buffer) {
  gst_buffer_foreach_meta(buffer, mark_meta_pooled, NULL);
  GST_BUFFER_FLAG_UNSET(buffer, GST_BUFFER_FLAG_TAG_MEMORY);
}
