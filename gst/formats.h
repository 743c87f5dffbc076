/* SPDX-License-Identifier: Apache-2.0 */
/* GStreamer video formats <-> edgetensor pixel formats and image layouts. The mapping is the library's
 * pixel format table (et_pixel_format_to_gst / _from_gst): no second table lives here. */
#ifndef ET_GST_FORMATS_H
#define ET_GST_FORMATS_H

#include <edgetensor/c/edgetensor_c.h>
#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/* "video/x-raw, format={every GStreamer format the table maps}, width, height, framerate: any" (a new
 * reference; the format list is built once). */
GstCaps* et_gst_template_caps(void);
/* The GStreamer formats the table maps, as a GValue list string ("{ NV12, ... }"; static storage). */
const char* et_gst_format_list(void);

/* The edgetensor pixel format of `format` into *out; FALSE (and ET_PIXEL_FORMAT_UNKNOWN) when the table
 * has no row for it. */
gboolean et_gst_pixel_format(GstVideoFormat format, int32_t* out);

/* The image layout of `info` (its format, size, plane offsets and row strides) into *out (struct_size
 * set). FALSE with *message (g_free it) naming the format when the table has no row for it. */
gboolean et_gst_layout_from_info(const GstVideoInfo* info, et_image_layout* out, char** message);

/* `info` for a frame of `layout` in a buffer of `buffer_bytes`: format, size, offsets and strides from the
 * layout; info->size is the image's extent (one past the end of the plane that ends last). FALSE with
 * *message (g_free it) when GStreamer has no name for the layout's format or the planes pass the buffer. */
gboolean et_gst_info_from_layout(const et_image_layout* layout, uint64_t buffer_bytes, GstVideoInfo* info,
                                 char** message);

/* A buffer of `memory` (taken) with GstVideoMeta from `layout` (format, size, plane offsets and strides). */
GstBuffer* et_gst_buffer_new_image(GstMemory* memory, const et_image_layout* layout);
/* A buffer of `count` memories (taken, in order) with GstVideoMeta of `format` from `layout`, whose plane
 * offsets count from the start of the first memory across the ones before (GstVideoMeta's offsets in a
 * GstBuffer). No GstVideoMeta for GST_VIDEO_FORMAT_UNKNOWN. */
GstBuffer* et_gst_buffer_new_video(GstMemory* const* memories, guint count, GstVideoFormat format,
                                   const et_image_layout* layout);
/* Marks a new buffer's metas POOLED and LOCKED and its memory untagged, as GstBufferPool does for the buffers it
 * allocates: the GstVideoMeta stays across reuses, and a buffer whose memory was replaced is seen (its
 * GST_BUFFER_FLAG_TAG_MEMORY). The sink's pool and the src's recycled buffers. */
void et_gst_buffer_mark_pooled(GstBuffer* buffer);

G_END_DECLS

#endif /* ET_GST_FORMATS_H */
