/* SPDX-License-Identifier: Apache-2.0 */
/* The buffer pool edgetensorsink proposes upstream: each buffer is an edgetensor image (DMA-BUF when a
 * dma-heap serves, memfd otherwise) wrapped as GstDmaBufMemory / GstFdMemory with GstVideoMeta, so upstream
 * writes straight into memory the frame channel shares. docs/GSTREAMER.md, "The sink's pool". */
#ifndef ET_GST_POOL_H
#define ET_GST_POOL_H

#include <edgetensor/c/edgetensor_c.h>
#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_EDGETENSOR_BUFFER_POOL (gst_edgetensor_buffer_pool_get_type())
G_DECLARE_FINAL_TYPE(GstEdgetensorBufferPool, gst_edgetensor_buffer_pool, GST, EDGETENSOR_BUFFER_POOL, GstBufferPool)

/* A pool whose buffers are images of `memory` (ET_MEMORY_DMABUF or ET_MEMORY_SHM) from a C image pool
 * (et_pool_create_image_layout, GStreamer's layout of the config's caps), configured with
 * gst_buffer_pool_config_set_params. The C pool holds the config's max buffers, or, for max 0 (no limit),
 * its min plus `consumer_buffers` (what the sink's consumers may hold). A buffer acquired again is the same
 * memory once every holder (GStreamer and each consumer) has released it; acquire waits for one (until
 * the pool flushes; GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT: GST_FLOW_EOS at once). */
GstBufferPool* gst_edgetensor_buffer_pool_new(int32_t memory, guint consumer_buffers);

#define GST_TYPE_EDGETENSOR_PLANE_POOL (gst_edgetensor_plane_pool_get_type())
G_DECLARE_FINAL_TYPE(GstEdgetensorPlanePool, gst_edgetensor_plane_pool, GST, EDGETENSOR_PLANE_POOL, GstBufferPool)

/* The sink's pool with plane-buffers=true: each GstBuffer holds one GstMemory per plane of GStreamer's layout
 * of the config's caps, each memory a buffer of its own of `memory` (ET_MEMORY_DMABUF: GstDmaBufMemory, one
 * DMA-BUF per plane; ET_MEMORY_SHM: GstFdMemory, one memfd per plane) exactly as large as its plane, with
 * GstVideoMeta whose offsets count across the memories. That is the buffer a V4L2 multi-planar format (NV12M,
 * YUV420M, ...) needs under v4l2src io-mode=dmabuf-import, which hands each memory's DMA-BUF to the driver as
 * one V4L2 plane (gst_v4l2_allocator_import_dmabuf in gst-plugins-good 1.22 wants as many memories as the
 * format has V4L2 planes). The sink sends such a buffer as a frame of one buffer per plane
 * (et_frame_import_planes_dup), holding the GstBuffer until every receiver released it: the pool hands it out
 * again only then (no import limit: upstream waits while consumers hold every buffer). Buffers are allocated on
 * demand up to the config's max, or, for max 0, its min plus `consumer_buffers` but no more frames than a
 * receiver's default buffer table (32) holds planes (10 of three planes, 16 of two), never below the config's
 * min; acquire waits for a free one (GstBufferPool's own wait, ended by flushing). */
GstBufferPool* gst_edgetensor_plane_pool_new(int32_t memory, guint consumer_buffers);

/* Frames of `planes` planes (at least 1) whose buffers fit a receiver's default buffer table (32 entries,
 * et_channel_receiver_options.max_buffers 0): the plane pool's bound for max 0, and the sink's for pool-size. */
guint gst_edgetensor_plane_pool_table_frames(guint planes);

/* The edgetensor image behind `memory` when it is one of these pools' (borrowed: valid while `memory`
 * lives); NULL otherwise. */
et_tensor* gst_edgetensor_memory_tensor(GstMemory* memory);

/* The memory kind that serves images here: ET_MEMORY_DMABUF when a dma-heap allocates one of `info`,
 * else ET_MEMORY_SHM (memfd). */
int32_t gst_edgetensor_probe_memory(const et_image_layout* layout);

G_END_DECLS

#endif /* ET_GST_POOL_H */
