/* SPDX-License-Identifier: Apache-2.0 */
#include "edgetensorpool.h"

#include "formats.h"

#include <gst/allocators/allocators.h>

GST_DEBUG_CATEGORY_STATIC(et_gst_pool_debug);
#define GST_CAT_DEFAULT et_gst_pool_debug

/* The category, made once: the memory probe may log before the pool's class exists. */
static void init_debug(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(et_gst_pool_debug, "edgetensorpool", 0, "edgetensor buffer pool");
    g_once_init_leave(&done, 1);
  }
}

struct _GstEdgetensorBufferPool {
  GstBufferPool parent;
  int32_t memory;          /* ET_MEMORY_DMABUF or ET_MEMORY_SHM */
  GstAllocator* allocator; /* dmabuf or fd allocator, by `memory` */
  GstVideoInfo info;
  et_image_layout layout;
};

G_DEFINE_TYPE(GstEdgetensorBufferPool, gst_edgetensor_buffer_pool, GST_TYPE_BUFFER_POOL)

static GQuark tensor_quark(void) {
  static GQuark quark = 0;
  if (quark == 0) quark = g_quark_from_static_string("edgetensor-tensor");
  return quark;
}

et_tensor* gst_edgetensor_memory_tensor(GstMemory* memory) {
  return memory == NULL ? NULL : gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(memory), tensor_quark());
}

static et_status allocate_image(const et_image_layout* layout, int32_t memory, et_tensor** out) {
  et_image_options image = {0};
  image.struct_size = sizeof image;
  image.row_alignment_bytes = 4; /* GStreamer's default layout (gst.formats.* checks it) */
  et_allocate_options allocate = {0};
  allocate.struct_size = sizeof allocate;
  allocate.memory = memory;
  allocate.name = "edgetensorsink";
  return et_tensor_allocate_image(layout->width, layout->height, layout->format, &image, &allocate, out);
}

int32_t gst_edgetensor_probe_memory(const et_image_layout* layout) {
  init_debug();
  et_tensor* probe = NULL;
  if (allocate_image(layout, ET_MEMORY_DMABUF, &probe) == ET_OK) {
    et_tensor_release(probe);
    return ET_MEMORY_DMABUF;
  }
  GST_INFO("no DMA-BUF for %s %ux%u (%s): memfd buffers", et_pixel_format_name(layout->format), layout->width,
           layout->height, et_last_error_message());
  return ET_MEMORY_SHM;
}

static gboolean pool_set_config(GstBufferPool* pool, GstStructure* config) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  GstCaps* caps = NULL;
  guint size = 0, min = 0, max = 0;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min, &max) || caps == NULL) return FALSE;
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) {
    GST_WARNING_OBJECT(pool, "caps are no raw video: %" GST_PTR_FORMAT, (void*)caps);
    return FALSE;
  }
  char* message = NULL;
  et_image_layout layout;
  if (!et_gst_layout_from_info(&info, &layout, &message)) {
    GST_WARNING_OBJECT(pool, "%s", message);
    g_free(message);
    return FALSE;
  }
  self->info = info;
  self->layout = layout;
  /* The images have GStreamer's default layout; the buffers are that large. */
  gst_buffer_pool_config_set_params(config, caps, (guint)info.size, min, max);
  return GST_BUFFER_POOL_CLASS(gst_edgetensor_buffer_pool_parent_class)->set_config(pool, config);
}

static const gchar** pool_get_options(GstBufferPool* pool) {
  (void)pool;
  static const gchar* options[] = {GST_BUFFER_POOL_OPTION_VIDEO_META, NULL};
  return options;
}

/* A new image wrapped as one fd memory of the image's bytes, with GstVideoMeta from its layout. */
static GstFlowReturn pool_alloc_buffer(GstBufferPool* pool, GstBuffer** out, GstBufferPoolAcquireParams* params) {
  (void)params;
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  et_tensor* tensor = NULL;
  if (allocate_image(&self->layout, self->memory, &tensor) != ET_OK) {
    GST_ERROR_OBJECT(pool, "allocating a %s image: %s", et_memory_kind_name(self->memory), et_last_error_message());
    return GST_FLOW_ERROR;
  }
  et_image_layout layout = {0};
  layout.struct_size = sizeof layout;
  et_tensor_info info = {0};
  info.struct_size = sizeof info;
  int32_t fd = -1;
  if (et_tensor_get_image_layout(tensor, &layout) != ET_OK || et_tensor_get_info(tensor, &info) != ET_OK ||
      et_tensor_export_fd(tensor, &fd) != ET_OK) {
    GST_ERROR_OBJECT(pool, "describing a new image: %s", et_last_error_message());
    et_tensor_release(tensor);
    return GST_FLOW_ERROR;
  }
  /* The allocator owns `fd` from here (closed with the memory); GStreamer maps it on its own. */
  GstMemory* memory = self->memory == ET_MEMORY_DMABUF
                          ? gst_dmabuf_allocator_alloc(self->allocator, fd, (gsize)info.packed_bytes)
                          : gst_fd_allocator_alloc(self->allocator, fd, (gsize)info.packed_bytes, GST_FD_MEMORY_FLAG_NONE);
  if (memory == NULL) {
    GST_ERROR_OBJECT(pool, "wrapping fd %d of %llu bytes as GstFdMemory", fd, (unsigned long long)info.packed_bytes);
    et_tensor_release(tensor);
    return GST_FLOW_ERROR;
  }
  /* The tensor lives as long as the memory: a frame sent from it keeps its own reference in the channel. */
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(memory), tensor_quark(), tensor, (GDestroyNotify)et_tensor_release);
  *out = et_gst_buffer_new_image(memory, &layout);
  return GST_FLOW_OK;
}

/* Every acquire is a new image and every release frees it: a buffer sent on the channel is held there
 * until each receiver releases it, which a GstBufferPool cannot see, so none is ever handed out again
 * while a consumer may read it. (A pool of images acquired through the publisher would reuse them;
 * docs/GSTREAMER.md, "The sink's pool".) */
static GstFlowReturn pool_acquire_buffer(GstBufferPool* pool, GstBuffer** out, GstBufferPoolAcquireParams* params) {
  return pool_alloc_buffer(pool, out, params);
}

static void pool_release_buffer(GstBufferPool* pool, GstBuffer* buffer) {
  (void)pool;
  gst_buffer_unref(buffer); /* buffer->pool is already NULL: this frees it */
}

static gboolean pool_start(GstBufferPool* pool) {
  (void)pool;
  return TRUE; /* nothing preallocated: each acquire allocates */
}

static void pool_finalize(GObject* object) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(object);
  gst_object_unref(self->allocator);
  G_OBJECT_CLASS(gst_edgetensor_buffer_pool_parent_class)->finalize(object);
}

static void gst_edgetensor_buffer_pool_class_init(GstEdgetensorBufferPoolClass* klass) {
  init_debug();
  G_OBJECT_CLASS(klass)->finalize = pool_finalize;
  GstBufferPoolClass* pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = pool_set_config;
  pool_class->get_options = pool_get_options;
  pool_class->alloc_buffer = pool_alloc_buffer;
  pool_class->acquire_buffer = pool_acquire_buffer;
  pool_class->release_buffer = pool_release_buffer;
  pool_class->start = pool_start;
}

static void gst_edgetensor_buffer_pool_init(GstEdgetensorBufferPool* self) {
  self->memory = ET_MEMORY_SHM;
  gst_video_info_init(&self->info);
}

GstBufferPool* gst_edgetensor_buffer_pool_new(int32_t memory) {
  GstEdgetensorBufferPool* self = g_object_new(GST_TYPE_EDGETENSOR_BUFFER_POOL, NULL);
  gst_object_ref_sink(self);
  self->memory = memory;
  self->allocator = memory == ET_MEMORY_DMABUF ? gst_dmabuf_allocator_new() : gst_fd_allocator_new();
  return GST_BUFFER_POOL(self);
}
