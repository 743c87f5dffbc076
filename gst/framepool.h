/* SPDX-License-Identifier: Apache-2.0 */
/* edgetensorsrc's GstBuffers, recycled: a frame's GstBuffer (one GstMemory per received buffer, a share of the
 * src's cached memory of that buffer, and GstVideoMeta) goes back to this pool when GStreamer frees it; the pool
 * lets go of the frame then (its channel release goes out) and keeps the buffer, so that the next frame over the
 * same buffers with the same layout gets it again instead of a new GstBuffer, memories and meta. A buffer whose
 * memory is still shared (a copy of it lives on), replaced or resized is freed instead, and its memories hold
 * the frame until their last holder goes. docs/GSTREAMER.md, "edgetensorsrc". */
#ifndef ET_GST_FRAME_POOL_H
#define ET_GST_FRAME_POOL_H

#include <edgetensor/c/edgetensor_c.h>
#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_EDGETENSOR_FRAME_POOL (gst_edgetensor_frame_pool_get_type())
G_DECLARE_FINAL_TYPE(GstEdgetensorFramePool, gst_edgetensor_frame_pool, GST, EDGETENSOR_FRAME_POOL, GstBufferPool)

/* What a frame's GstBuffer holds: memory b is the first sizes[b] bytes of parents[b] (borrowed), for b below
 * count (1 to ET_MAX_PLANES); GstVideoMeta of `format` with `layout`'s size and planes, whose offsets count
 * across the memories. */
typedef struct {
  GstMemory* parents[ET_MAX_PLANES];
  gsize sizes[ET_MAX_PLANES];
  guint count;
  GstVideoFormat format;
  const et_image_layout* layout;
} GstEdgetensorFrameParts;

GstBufferPool* gst_edgetensor_frame_pool_new(void);

/* A GstBuffer of `parts` for `frame`: an idle one of the same parts, or a new one. Each of its memories holds a
 * reference to `frame` (qdata, gst_edgetensor_frame_quark) until the buffer comes back or, if the buffer is not
 * kept, until the memory is freed. *reused: whether it was an idle one. NULL on failure. Streaming thread only (one caller at a time); buffers come back on any
 * thread. */
GstBuffer* gst_edgetensor_frame_pool_buffer(GstBufferPool* pool, const GstEdgetensorFrameParts* parts,
                                            et_frame* frame, gboolean* reused);

/* Frees the idle buffers (the src reconnected: other buffers follow). With `stopping`, buffers that come back
 * later are freed too. */
void gst_edgetensor_frame_pool_drop_idle(GstBufferPool* pool, gboolean stopping);

/* The allocators of the src's received buffers (`dmabuf`: GstDmaBufMemory, else GstFdMemory): GStreamer's own,
 * but a memory shared from one of their memories (gst_memory_share, gst_buffer_copy_region of part of a buffer,
 * GstAdapter) keeps that memory alive, not only the first memory of the fd: the memory of a frame's GstBuffer,
 * which holds the frame, lives as long as any part of it does. (GstFdMemory's share in 1.22 makes every share a
 * child of the fd's first memory, so a part kept downstream held nothing of the frame: the producer wrote the
 * next frame into it while it was read.) */
GstAllocator* gst_edgetensor_frame_allocator_new(gboolean dmabuf);

/* The qdata key of the frame a memory holds. */
GQuark gst_edgetensor_frame_quark(void);

G_END_DECLS

#endif /* ET_GST_FRAME_POOL_H */
