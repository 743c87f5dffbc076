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

/* The longest single wait of an acquire on the C pool: the flushing flag is checked between waits. */
#define ACQUIRE_SLICE_NS (50 * 1000 * 1000)
/* Most buffers a C pool holds (the channel's buffer table holds at most 1024). */
#define MAX_POOL_BUFFERS 1024u
/* A receiver's buffer table by default (et_channel_receiver_options.max_buffers 0, C++ ReceiverOptions). */
#define CHANNEL_TABLE_BUFFERS 32u

/* One C pool image's GStreamer side, idle (back from GStreamer), kept by the image's buffer key: the C pool
 * hands the same images out again, and each keeps its fd memory (KEEP_MAPPED: mapped once, never
 * re-faulted). Either the whole GstBuffer came back (with its GstVideoMeta), or only its memory: the buffer
 * went back while a copy of it (gst_buffer_copy, as videorate or identity make) still shared the memory, and
 * the memory came back when that copy let go of it (recycle_memory). Exactly one of the two is set. */
typedef struct {
  uint64_t buffer_key;
  GstBuffer* buffer;
  GstMemory* memory;
} IdleBuffer;

/* Set on each memory this pool wraps (qdata): where recycle_memory takes it back. */
typedef struct {
  GWeakRef pool;       /* the GstEdgetensorBufferPool: the memory may outlive it */
  guint generation;    /* the pool's start count when it was wrapped: a later start's C pool has other keys */
  uint64_t buffer_key;
} MemoryHome;

/* What both pools keep of their config (read_config). */
typedef struct {
  GstVideoInfo info;
  et_image_layout layout;          /* GStreamer's layout of the config's caps */
  guint min_buffers, max_buffers;  /* the config's */
  guint refused_size;              /* a buffer size asked for above the layout's (set_config refused it), else 0 */
  gsize refused_layout_size;       /* that config's layout size */
} PoolConfig;

struct _GstEdgetensorBufferPool {
  GstBufferPool parent;
  int32_t memory;          /* ET_MEMORY_DMABUF or ET_MEMORY_SHM */
  guint consumer_buffers;  /* added to the config's min when its max is 0 */
  GstAllocator* allocator; /* dmabuf or fd allocator, by `memory` */
  PoolConfig config;
  /* Between start and stop. The lock guards both: acquire and release run on any thread. */
  GMutex lock;
  et_pool* pool;
  GArray* idle;            /* IdleBuffer, at most one per C pool image */
  guint generation;        /* counts starts (MemoryHome) */
};

G_DEFINE_TYPE(GstEdgetensorBufferPool, gst_edgetensor_buffer_pool, GST_TYPE_BUFFER_POOL)

static GQuark tensor_quark(void) {
  static GQuark quark = 0;
  if (quark == 0) quark = g_quark_from_static_string("edgetensor-tensor");
  return quark;
}

static GQuark home_quark(void) {
  static GQuark quark = 0;
  if (quark == 0) quark = g_quark_from_static_string("edgetensor-memory-home");
  return quark;
}

static void free_home(gpointer data) {
  MemoryHome* home = data;
  g_weak_ref_clear(&home->pool);
  g_free(home);
}

/* Drops an idle entry's GStreamer objects (its memory is freed: the pool is stopped by then). */
static void drop_idle(IdleBuffer* idle) {
  if (idle->buffer != NULL) gst_buffer_unref(idle->buffer);
  if (idle->memory != NULL) gst_memory_unref(idle->memory);
}

et_tensor* gst_edgetensor_memory_tensor(GstMemory* memory) {
  return memory == NULL ? NULL : gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(memory), tensor_quark());
}

int32_t gst_edgetensor_probe_memory(const et_image_layout* layout) {
  init_debug();
  et_image_options image = {0};
  image.struct_size = sizeof image;
  image.row_alignment_bytes = 4; /* GStreamer's default layout (gst.formats.* checks it) */
  et_allocate_options allocate = {0};
  allocate.struct_size = sizeof allocate;
  allocate.memory = ET_MEMORY_DMABUF;
  allocate.name = "edgetensorsink";
  et_tensor* probe = NULL;
  if (et_tensor_allocate_image(layout->width, layout->height, layout->format, &image, &allocate, &probe) == ET_OK) {
    et_tensor_release(probe);
    return ET_MEMORY_DMABUF;
  }
  GST_INFO("no DMA-BUF for %s %ux%u (%s): memfd buffers", et_pixel_format_name(layout->format), layout->width,
           layout->height, et_last_error_message());
  return ET_MEMORY_SHM;
}

/* Reads `config` into *out: its caps' GstVideoInfo and GStreamer's layout of them, min and max. The buffers hold
 * that layout and are that large: a larger size (a V4L2 driver's sizeimage with padding past the last plane,
 * which v4l2src io-mode=dmabuf-import sets) would get buffers shorter than it writes. Such a config is refused,
 * naming both sizes, and remembered (refused_size: start refuses it too, as GstBufferPool keeps a refused
 * config); a smaller size grows to the layout's. FALSE (logged) when refused. */
static gboolean read_config(GstBufferPool* pool, GstStructure* config, PoolConfig* out) {
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
  if (size > info.size) {
    GST_WARNING_OBJECT(pool, "buffers of %u bytes asked for, more than the %" G_GSIZE_FORMAT " bytes of %s %dx%d in "
                       "GStreamer's layout: this pool's buffers hold that layout exactly (upstream may keep its own "
                       "buffers: the sink imports fd memory, e.g. v4l2src io-mode=dmabuf)",
                       size, info.size, GST_VIDEO_INFO_NAME(&info), GST_VIDEO_INFO_WIDTH(&info),
                       GST_VIDEO_INFO_HEIGHT(&info));
    out->refused_size = size;
    out->refused_layout_size = info.size;
    return FALSE;
  }
  out->refused_size = 0;
  out->info = info;
  out->layout = layout;
  out->min_buffers = min;
  out->max_buffers = max;
  gst_buffer_pool_config_set_params(config, caps, (guint)info.size, min, max);
  return TRUE;
}

/* FALSE (logged) when the last config was refused for its size (read_config). */
static gboolean config_startable(GstBufferPool* pool, const PoolConfig* config) {
  if (config->refused_size == 0) return TRUE;
  GST_ERROR_OBJECT(pool, "not started: its last config asked for buffers of %u bytes, more than the %" G_GSIZE_FORMAT
                   " bytes of the caps' layout", config->refused_size, config->refused_layout_size);
  return FALSE;
}

/* Buffers a pool holds at most: the config's max, or for max 0 (no limit) its min plus what consumers may hold. */
static guint pool_capacity(const PoolConfig* config, guint consumer_buffers) {
  guint max = config->max_buffers;
  if (max == 0) max = MAX(config->min_buffers, 1u) + consumer_buffers;
  return MIN(max, MAX_POOL_BUFFERS);
}

static gboolean pool_set_config(GstBufferPool* pool, GstStructure* config) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  if (!read_config(pool, config, &self->config)) return FALSE;
  return GST_BUFFER_POOL_CLASS(gst_edgetensor_buffer_pool_parent_class)->set_config(pool, config);
}

static const gchar** pool_get_options(GstBufferPool* pool) {
  (void)pool;
  static const gchar* options[] = {GST_BUFFER_POOL_OPTION_VIDEO_META, NULL};
  return options;
}

/* The C pool of the config: images of its layout, allocated on demand (none before the first acquire). */
static gboolean pool_start(GstBufferPool* pool) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  if (!config_startable(pool, &self->config)) return FALSE;
  const guint max = pool_capacity(&self->config, self->consumer_buffers);
  et_allocate_options allocate = {0};
  allocate.struct_size = sizeof allocate;
  allocate.memory = self->memory;
  et_pool_options options = {0};
  options.struct_size = sizeof options;
  options.max_buffers = max;
  options.name = "edgetensorsink";
  options.allocate = &allocate;
  et_pool* c_pool = NULL;
  if (et_pool_create_image_layout(&self->config.layout, &options, &c_pool) != ET_OK) {
    GST_ERROR_OBJECT(pool, "creating a pool of %u %s %s images: %s", max, et_memory_kind_name(self->memory),
                     et_pixel_format_name(self->config.layout.format), et_last_error_message());
    return FALSE;
  }
  GST_DEBUG_OBJECT(pool, "at most %u %s images of %ux%u %s", max, et_memory_kind_name(self->memory),
                   self->config.layout.width, self->config.layout.height, et_pixel_format_name(self->config.layout.format));
  g_mutex_lock(&self->lock);
  self->pool = c_pool;
  ++self->generation;
  g_mutex_unlock(&self->lock);
  return TRUE;
}

/* Drops the idle buffers and the C pool (buffers still out stay valid: each holds its image). */
static gboolean pool_stop(GstBufferPool* pool) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  g_mutex_lock(&self->lock);
  et_pool* c_pool = self->pool;
  self->pool = NULL;
  GArray* idle = self->idle;
  self->idle = g_array_new(FALSE, TRUE, sizeof(IdleBuffer));
  g_mutex_unlock(&self->lock);
  for (guint i = 0; i < idle->len; ++i) drop_idle(&g_array_index(idle, IdleBuffer, i));
  g_array_unref(idle);
  et_pool_release(c_pool);
  return TRUE;
}

/* A new GstBuffer over `memory` (one C pool image), GstVideoMeta from `layout`, marked as a pool's own. */
static GstBuffer* pooled_buffer(GstMemory* memory, const et_image_layout* layout) {
  GstBuffer* buffer = et_gst_buffer_new_image(memory, layout);
  et_gst_buffer_mark_pooled(buffer);
  return buffer;
}

/* The memory's dispose (GstMiniObject): its last holder let go of it. While the pool runs with the C pool it
 * came from, it stays alive as its image's idle entry, mapped, and lets go of the image; otherwise it is freed
 * as usual (TRUE). Any thread. */
static gboolean recycle_memory(GstMiniObject* object) {
  GstMemory* memory = (GstMemory*)object;
  MemoryHome* home = gst_mini_object_get_qdata(object, home_quark());
  GstEdgetensorBufferPool* self = home == NULL ? NULL : g_weak_ref_get(&home->pool);
  if (self == NULL) return TRUE;
  gboolean kept = FALSE;
  if (memory->offset == 0 && memory->size == memory->maxsize && !GST_MEMORY_IS_READONLY(memory)) {
    g_mutex_lock(&self->lock);
    if (self->pool != NULL && self->generation == home->generation) {
      IdleBuffer idle = {home->buffer_key, NULL, gst_memory_ref(memory)};
      g_array_append_val(self->idle, idle);
      /* Under the lock: whoever gets the image from the C pool next finds this entry. */
      gst_mini_object_set_qdata(object, tensor_quark(), NULL, NULL);
      kept = TRUE;
    }
    g_mutex_unlock(&self->lock);
  }
  gst_object_unref(self);
  return !kept;
}

/* A new GstBuffer over `tensor`'s buffer: an fd of it wrapped as one fd memory of `size` bytes that comes back
 * to this pool when its last holder goes (recycle_memory), GstVideoMeta from `layout`. NULL on failure
 * (logged). */
static GstBuffer* wrap_image(GstEdgetensorBufferPool* self, const et_tensor* tensor, uint64_t buffer_key, gsize size,
                             const et_image_layout* layout) {
  int32_t fd = -1;
  if (et_tensor_export_fd(tensor, &fd) != ET_OK) {
    GST_ERROR_OBJECT(self, "exporting a pool image's fd: %s", et_last_error_message());
    return NULL;
  }
  /* The allocator owns `fd` from here (closed with the memory). */
  GstMemory* memory = gst_fd_allocator_alloc(self->allocator, fd, size, GST_FD_MEMORY_FLAG_KEEP_MAPPED);
  if (memory == NULL) {
    GST_ERROR_OBJECT(self, "wrapping fd %d of %" G_GSIZE_FORMAT " bytes as GstFdMemory", fd, size);
    return NULL;
  }
  MemoryHome* home = g_new0(MemoryHome, 1);
  g_weak_ref_init(&home->pool, self);
  g_mutex_lock(&self->lock);
  home->generation = self->generation;
  g_mutex_unlock(&self->lock);
  home->buffer_key = buffer_key;
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(memory), home_quark(), home, free_home);
  GST_MINI_OBJECT_CAST(memory)->dispose = recycle_memory; /* a GstMemory has no dispose of its own */
  return pooled_buffer(memory, layout);
}

/* The next free C pool image as a GstBuffer (its idle buffer, a new buffer over its idle memory, or a new
 * wrap), its memory holding the image: the C pool has it back once that memory and every consumer's frame are
 * gone. Waits for a free image in slices, so that flushing ends the wait. */
static GstFlowReturn pool_acquire_buffer(GstBufferPool* pool, GstBuffer** out, GstBufferPoolAcquireParams* params) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  const gboolean dont_wait = params != NULL && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT) != 0;
  et_tensor* tensor = NULL;
  for (;;) {
    if (GST_BUFFER_POOL_IS_FLUSHING(pool)) return GST_FLOW_FLUSHING;
    g_mutex_lock(&self->lock);
    et_pool* c_pool = et_pool_retain(self->pool);
    g_mutex_unlock(&self->lock);
    if (c_pool == NULL) return GST_FLOW_FLUSHING; /* stopped */
    const et_status status = et_pool_acquire(c_pool, dont_wait ? 0 : ACQUIRE_SLICE_NS, &tensor);
    et_pool_release(c_pool);
    if (status == ET_OK) break;
    if (status != ET_BUSY) {
      GST_ERROR_OBJECT(pool, "acquiring an image: %s", et_last_error_message());
      return GST_FLOW_ERROR;
    }
    if (dont_wait) return GST_FLOW_EOS;
  }
  et_tensor_info info = {0};
  info.struct_size = sizeof info;
  if (et_tensor_get_info(tensor, &info) != ET_OK) {
    GST_ERROR_OBJECT(pool, "describing a pool image: %s", et_last_error_message());
    et_tensor_release(tensor);
    return GST_FLOW_ERROR;
  }
  IdleBuffer idle = {0, NULL, NULL};
  g_mutex_lock(&self->lock);
  for (guint i = 0; i < self->idle->len; ++i) {
    if (g_array_index(self->idle, IdleBuffer, i).buffer_key == info.buffer_key) {
      idle = g_array_index(self->idle, IdleBuffer, i);
      g_array_remove_index_fast(self->idle, i);
      break;
    }
  }
  g_mutex_unlock(&self->lock);
  GstBuffer* buffer = idle.buffer;
  if (buffer == NULL) {
    et_image_layout layout = {0};
    layout.struct_size = sizeof layout;
    if (et_tensor_get_image_layout(tensor, &layout) != ET_OK) {
      GST_ERROR_OBJECT(pool, "reading a pool image's layout: %s", et_last_error_message());
      if (idle.memory != NULL) gst_memory_unref(idle.memory);
      et_tensor_release(tensor);
      return GST_FLOW_ERROR;
    }
    /* GStreamer's size of the image where the buffer holds it (the C pool's image ends with its last byte). */
    buffer = idle.memory != NULL ? pooled_buffer(idle.memory, &layout)
                                 : wrap_image(self, tensor, info.buffer_key,
                                              (gsize)MIN((uint64_t)self->config.info.size, info.buffer_bytes), &layout);
    if (buffer == NULL) {
      et_tensor_release(tensor);
      return GST_FLOW_ERROR;
    }
  }
  /* The image lives as long as the memory holds it: a frame sent from it keeps its own reference. */
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buffer, 0)), tensor_quark(), tensor,
                            (GDestroyNotify)et_tensor_release);
  *out = buffer;
  return GST_FLOW_OK;
}

/* A buffer back from GStreamer lets go of its image (the C pool has it back once consumers have released
 * their frames of it too, which a GstBufferPool's queue could not see) and waits, idle, for the C pool to
 * hand that image out again. A buffer whose memory was replaced, resized or is still shared (a copy of the
 * buffer lives on) is freed instead: its memory keeps the image until its last holder is gone, and then comes
 * back alone (recycle_memory). */
static void pool_release_buffer(GstBufferPool* pool, GstBuffer* buffer) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(pool);
  GstMemory* memory = gst_buffer_n_memory(buffer) == 1 ? gst_buffer_peek_memory(buffer, 0) : NULL;
  et_tensor* tensor = gst_edgetensor_memory_tensor(memory);
  /* Its image's buffer key, kept with the memory since it was wrapped. */
  const MemoryHome* home = memory == NULL ? NULL : gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(memory), home_quark());
  const gboolean reusable = tensor != NULL && home != NULL && !GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_TAG_MEMORY) &&
                            gst_memory_is_writable(memory) && GST_MINI_OBJECT_REFCOUNT_VALUE(memory) == 1 &&
                            memory->offset == 0 && memory->size == memory->maxsize;
  if (reusable) {
    g_mutex_lock(&self->lock);
    if (self->pool != NULL && self->generation == home->generation) {
      IdleBuffer idle = {home->buffer_key, buffer, NULL};
      g_array_append_val(self->idle, idle);
      /* Under the lock: whoever gets the image from the C pool next finds this entry. */
      gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(memory), tensor_quark(), NULL, NULL);
      buffer = NULL;
    }
    g_mutex_unlock(&self->lock);
  }
  if (buffer != NULL) gst_buffer_unref(buffer); /* buffer->pool is already NULL: this frees it */
}

static void pool_finalize(GObject* object) {
  GstEdgetensorBufferPool* self = GST_EDGETENSOR_BUFFER_POOL(object);
  pool_stop(GST_BUFFER_POOL(object)); /* nothing left when the base class stopped it */
  g_array_unref(self->idle);
  g_mutex_clear(&self->lock);
  gst_object_unref(self->allocator);
  G_OBJECT_CLASS(gst_edgetensor_buffer_pool_parent_class)->finalize(object);
}

static void gst_edgetensor_buffer_pool_class_init(GstEdgetensorBufferPoolClass* klass) {
  init_debug();
  G_OBJECT_CLASS(klass)->finalize = pool_finalize;
  GstBufferPoolClass* pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = pool_set_config;
  pool_class->get_options = pool_get_options;
  pool_class->acquire_buffer = pool_acquire_buffer;
  pool_class->release_buffer = pool_release_buffer;
  pool_class->start = pool_start;
  pool_class->stop = pool_stop;
}

static void gst_edgetensor_buffer_pool_init(GstEdgetensorBufferPool* self) {
  self->memory = ET_MEMORY_SHM;
  gst_video_info_init(&self->config.info);
  g_mutex_init(&self->lock);
  self->idle = g_array_new(FALSE, TRUE, sizeof(IdleBuffer));
}

GstBufferPool* gst_edgetensor_buffer_pool_new(int32_t memory, guint consumer_buffers) {
  GstEdgetensorBufferPool* self = g_object_new(GST_TYPE_EDGETENSOR_BUFFER_POOL, NULL);
  gst_object_ref_sink(self);
  self->memory = memory;
  self->consumer_buffers = consumer_buffers;
  self->allocator = memory == ET_MEMORY_DMABUF ? gst_dmabuf_allocator_new() : gst_fd_allocator_new();
  return GST_BUFFER_POOL(self);
}

/* ---- The plane pool (plane-buffers=true): one buffer per plane ----------------------------------------- */

struct _GstEdgetensorPlanePool {
  GstBufferPool parent;
  int32_t memory;          /* ET_MEMORY_DMABUF or ET_MEMORY_SHM */
  guint consumer_buffers;  /* added to the config's min when its max is 0 */
  GstAllocator* allocator; /* dmabuf or fd allocator, by `memory` */
  PoolConfig config;
};

G_DEFINE_TYPE(GstEdgetensorPlanePool, gst_edgetensor_plane_pool, GST_TYPE_BUFFER_POOL)

/* Bytes of plane `p` in the config's layout: up to the next plane's offset, the last one up to the image's end
 * (GStreamer's layouts keep the planes in order). */
static gsize plane_bytes(const PoolConfig* config, guint p) {
  const GstVideoInfo* info = &config->info;
  const gsize end = p + 1 < GST_VIDEO_INFO_N_PLANES(info) ? GST_VIDEO_INFO_PLANE_OFFSET(info, p + 1) : info->size;
  return end - GST_VIDEO_INFO_PLANE_OFFSET(info, p);
}

guint gst_edgetensor_plane_pool_table_frames(guint planes) { return CHANNEL_TABLE_BUFFERS / MAX(planes, 1u); }

/* The config with its max set to what the pool holds: with max 0, GstBufferPool would allocate without limit
 * while consumers hold frames. For max 0 the pool also stays within a receiver's default buffer table
 * (CHANNEL_TABLE_BUFFERS, counting each plane's buffer): past it the channel would evict buffers still alive and
 * announce them again, an fd, an import and a mapping per plane and frame; never below the config's min. */
static gboolean plane_pool_set_config(GstBufferPool* pool, GstStructure* config) {
  GstEdgetensorPlanePool* self = GST_EDGETENSOR_PLANE_POOL(pool);
  if (!read_config(pool, config, &self->config)) return FALSE;
  GstCaps* caps = NULL;
  guint size = 0;
  gst_buffer_pool_config_get_params(config, &caps, &size, NULL, NULL);
  guint max = pool_capacity(&self->config, self->consumer_buffers);
  const guint table_frames = gst_edgetensor_plane_pool_table_frames(self->config.layout.plane_count);
  if (self->config.max_buffers == 0 && max > table_frames) max = MAX(table_frames, self->config.min_buffers);
  GST_DEBUG_OBJECT(pool, "at most %u buffers of %u planes each (config min %u, max %u)", max,
                   self->config.layout.plane_count, self->config.min_buffers, self->config.max_buffers);
  gst_buffer_pool_config_set_params(config, caps, size, MIN(self->config.min_buffers, max), max);
  return GST_BUFFER_POOL_CLASS(gst_edgetensor_plane_pool_parent_class)->set_config(pool, config);
}

static gboolean plane_pool_start(GstBufferPool* pool) {
  GstEdgetensorPlanePool* self = GST_EDGETENSOR_PLANE_POOL(pool);
  if (!config_startable(pool, &self->config)) return FALSE;
  return GST_BUFFER_POOL_CLASS(gst_edgetensor_plane_pool_parent_class)->start(pool);
}

/* A new buffer of `bytes` of the pool's memory kind as one fd memory (KEEP_MAPPED), NULL (logged) on failure.
 * The memory's fd is the buffer's only holder (the tensor is released once its fd is exported). */
static GstMemory* plane_memory(GstEdgetensorPlanePool* self, guint plane, gsize bytes) {
  et_allocate_options allocate = {0};
  allocate.struct_size = sizeof allocate;
  allocate.memory = self->memory;
  allocate.name = "edgetensorsink plane";
  const uint64_t shape = bytes;
  et_tensor* tensor = NULL;
  int32_t fd = -1;
  if (et_tensor_allocate(1, &shape, ET_DTYPE_U8, &allocate, &tensor) != ET_OK ||
      et_tensor_export_fd(tensor, &fd) != ET_OK) {
    GST_ERROR_OBJECT(self, "allocating plane %u (%" G_GSIZE_FORMAT " bytes of %s): %s", plane, bytes,
                     et_memory_kind_name(self->memory), et_last_error_message());
    et_tensor_release(tensor);
    return NULL;
  }
  et_tensor_release(tensor);
  GstMemory* memory = gst_fd_allocator_alloc(self->allocator, fd, bytes, GST_FD_MEMORY_FLAG_KEEP_MAPPED);
  if (memory == NULL) GST_ERROR_OBJECT(self, "wrapping fd %d of %" G_GSIZE_FORMAT " bytes as GstFdMemory", fd, bytes);
  return memory;
}

/* One buffer per plane, GstVideoMeta of the layout (its offsets count across the memories, which hold the planes
 * in order and each exactly its plane). GstBufferPool marks the meta pooled. */
static GstFlowReturn plane_pool_alloc_buffer(GstBufferPool* pool, GstBuffer** out, GstBufferPoolAcquireParams* params) {
  (void)params;
  GstEdgetensorPlanePool* self = GST_EDGETENSOR_PLANE_POOL(pool);
  const et_image_layout* layout = &self->config.layout;
  GstMemory* memories[GST_VIDEO_MAX_PLANES] = {NULL};
  for (guint p = 0; p < layout->plane_count; ++p) {
    memories[p] = plane_memory(self, p, plane_bytes(&self->config, p));
    if (memories[p] == NULL) {
      for (guint q = 0; q < p; ++q) gst_memory_unref(memories[q]);
      return GST_FLOW_ERROR;
    }
  }
  *out = et_gst_buffer_new_video(memories, layout->plane_count, GST_VIDEO_INFO_FORMAT(&self->config.info), layout);
  return GST_FLOW_OK;
}

static void plane_pool_finalize(GObject* object) {
  gst_object_unref(GST_EDGETENSOR_PLANE_POOL(object)->allocator);
  G_OBJECT_CLASS(gst_edgetensor_plane_pool_parent_class)->finalize(object);
}

static void gst_edgetensor_plane_pool_class_init(GstEdgetensorPlanePoolClass* klass) {
  init_debug();
  G_OBJECT_CLASS(klass)->finalize = plane_pool_finalize;
  GstBufferPoolClass* pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = plane_pool_set_config;
  pool_class->get_options = pool_get_options;
  pool_class->start = plane_pool_start;
  pool_class->alloc_buffer = plane_pool_alloc_buffer;
}

static void gst_edgetensor_plane_pool_init(GstEdgetensorPlanePool* self) {
  self->memory = ET_MEMORY_SHM;
  gst_video_info_init(&self->config.info);
}

GstBufferPool* gst_edgetensor_plane_pool_new(int32_t memory, guint consumer_buffers) {
  GstEdgetensorPlanePool* self = g_object_new(GST_TYPE_EDGETENSOR_PLANE_POOL, NULL);
  gst_object_ref_sink(self);
  self->memory = memory;
  self->consumer_buffers = consumer_buffers;
  self->allocator = memory == ET_MEMORY_DMABUF ? gst_dmabuf_allocator_new() : gst_fd_allocator_new();
  return GST_BUFFER_POOL(self);
}
