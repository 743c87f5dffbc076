/* SPDX-License-Identifier: Apache-2.0 */
#include "framepool.h"

#include "formats.h"

#include <gst/allocators/allocators.h>

#include <string.h>

/* Idle buffers kept at most: the receiver's default buffer table (32 buffers) over frames of one or two. */
#define MAX_IDLE_BUFFERS 32u

/* An idle buffer with what it was made of (its memories' parents and sizes, its GstVideoMeta's fields as they
 * were when it came back). */
typedef struct {
  GstBuffer* buffer;
  GstMemory* parents[ET_MAX_PLANES];
  gsize sizes[ET_MAX_PLANES];
  guint count;
  GstVideoFormat format;
  guint width, height, n_planes;
  gsize offsets[GST_VIDEO_MAX_PLANES];
  gint strides[GST_VIDEO_MAX_PLANES];
} IdleFrameBuffer;

struct _GstEdgetensorFramePool {
  GstBufferPool parent;
  GMutex lock;         /* guards idle and stopped: buffers come back on any thread */
  GArray* idle;        /* IdleFrameBuffer, oldest first */
  gboolean stopped;
  /* Streaming thread: what the acquire in progress makes (gst_edgetensor_frame_pool_buffer). */
  const GstEdgetensorFrameParts* want;
  gboolean reused;  /* the acquire in progress found an idle buffer */
};

G_DEFINE_TYPE(GstEdgetensorFramePool, gst_edgetensor_frame_pool, GST_TYPE_BUFFER_POOL)

GQuark gst_edgetensor_frame_quark(void) {
  static GQuark quark = 0;
  if (quark == 0) quark = g_quark_from_static_string("edgetensor-frame");
  return quark;
}

static gboolean idle_is(const IdleFrameBuffer* idle, const GstEdgetensorFrameParts* want) {
  const et_image_layout* l = want->layout;
  if (idle->count != want->count || idle->format != want->format || idle->width != l->width ||
      idle->height != l->height || idle->n_planes != l->plane_count)
    return FALSE;
  for (guint b = 0; b < want->count; ++b)
    if (idle->parents[b] != want->parents[b] || idle->sizes[b] != want->sizes[b]) return FALSE;
  for (guint p = 0; p < l->plane_count && p < GST_VIDEO_MAX_PLANES; ++p)
    if (idle->offsets[p] != (gsize)l->planes[p].offset_bytes || idle->strides[p] != (gint)l->planes[p].row_stride_bytes)
      return FALSE;
  return TRUE;
}

static GstFlowReturn frame_pool_acquire(GstBufferPool* pool, GstBuffer** out, GstBufferPoolAcquireParams* params) {
  (void)params;
  GstEdgetensorFramePool* self = GST_EDGETENSOR_FRAME_POOL(pool);
  const GstEdgetensorFrameParts* want = self->want;
  if (want == NULL || want->count == 0 || want->count > ET_MAX_PLANES) return GST_FLOW_ERROR;
  g_mutex_lock(&self->lock);
  for (guint i = 0; i < self->idle->len; ++i) {
    const IdleFrameBuffer* idle = &g_array_index(self->idle, IdleFrameBuffer, i);
    if (idle_is(idle, want)) {
      *out = idle->buffer;
      self->reused = TRUE;
      g_array_remove_index(self->idle, i);
      g_mutex_unlock(&self->lock);
      return GST_FLOW_OK;
    }
  }
  g_mutex_unlock(&self->lock);
  GstMemory* memories[ET_MAX_PLANES] = {NULL};
  for (guint b = 0; b < want->count; ++b) memories[b] = gst_memory_share(want->parents[b], 0, (gssize)want->sizes[b]);
  GstBuffer* buffer = et_gst_buffer_new_video(memories, want->count, want->format, want->layout);
  et_gst_buffer_mark_pooled(buffer); /* TAG_MEMORY, set by adding the memories, from here means: replaced */
  *out = buffer;
  return GST_FLOW_OK;
}

static gboolean remove_unpooled(GstBuffer* buffer, GstMeta** meta, gpointer data) {
  (void)buffer;
  (void)data;
  if (!GST_META_FLAG_IS_SET(*meta, GST_META_FLAG_POOLED)) {
    GST_META_FLAG_UNSET(*meta, GST_META_FLAG_LOCKED);
    *meta = NULL;
  }
  return TRUE;
}

/* GstBufferPool's reset without its resize to the config's size (this pool has no config). */
static void frame_pool_reset(GstBufferPool* pool, GstBuffer* buffer) {
  (void)pool;
  GST_BUFFER_FLAGS(buffer) &= GST_BUFFER_FLAG_TAG_MEMORY;
  GST_BUFFER_PTS(buffer) = GST_BUFFER_DTS(buffer) = GST_BUFFER_DURATION(buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_OFFSET(buffer) = GST_BUFFER_OFFSET_END(buffer) = GST_BUFFER_OFFSET_NONE;
  gst_buffer_foreach_meta(buffer, remove_unpooled, NULL);
}

/* Any thread, the buffer's last holder gone (buffer->pool is NULL by now). */
static void frame_pool_release(GstBufferPool* pool, GstBuffer* buffer) {
  GstEdgetensorFramePool* self = GST_EDGETENSOR_FRAME_POOL(pool);
  IdleFrameBuffer idle;
  memset(&idle, 0, sizeof idle);
  idle.buffer = buffer;
  idle.count = gst_buffer_n_memory(buffer);
  GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
  /* Kept only as it was made: its own memories, each held by this buffer alone (no copy shares it), whole. */
  gboolean reusable = !GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_TAG_MEMORY) && idle.count >= 1 &&
                      idle.count <= ET_MAX_PLANES && meta != NULL;
  for (guint b = 0; reusable && b < idle.count; ++b) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, b);
    reusable = memory->parent != NULL && memory->offset == memory->parent->offset &&
               GST_MINI_OBJECT_REFCOUNT_VALUE(memory) == 1 &&
               gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(memory), gst_edgetensor_frame_quark()) != NULL;
    if (reusable) {
      idle.parents[b] = memory->parent;
      idle.sizes[b] = memory->size;
    }
  }
  if (reusable) {
    idle.format = meta->format;
    idle.width = meta->width;
    idle.height = meta->height;
    idle.n_planes = meta->n_planes;
    memcpy(idle.offsets, meta->offset, sizeof idle.offsets);
    memcpy(idle.strides, meta->stride, sizeof idle.strides);
    /* The frame goes now (its channel release), not when the memory does. */
    for (guint b = 0; b < idle.count; ++b)
      gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buffer, b)), gst_edgetensor_frame_quark(),
                                NULL, NULL);
  }
  GstBuffer* dropped = reusable ? NULL : buffer;
  if (reusable) {
    g_mutex_lock(&self->lock);
    if (self->stopped) {
      dropped = buffer;
    } else {
      if (self->idle->len >= MAX_IDLE_BUFFERS) {
        dropped = g_array_index(self->idle, IdleFrameBuffer, 0).buffer;
        g_array_remove_index(self->idle, 0);
      }
      g_array_append_val(self->idle, idle);
    }
    g_mutex_unlock(&self->lock);
  }
  if (dropped != NULL) gst_buffer_unref(dropped); /* no pool: freed; its memories hold their frame until they go */
}

GstBuffer* gst_edgetensor_frame_pool_buffer(GstBufferPool* pool, const GstEdgetensorFrameParts* parts,
                                            et_frame* frame, gboolean* reused) {
  GstEdgetensorFramePool* self = GST_EDGETENSOR_FRAME_POOL(pool);
  GstBuffer* buffer = NULL;
  self->want = parts;
  self->reused = FALSE;
  const GstFlowReturn flow = gst_buffer_pool_acquire_buffer(pool, &buffer, NULL);
  self->want = NULL;
  *reused = self->reused;
  if (flow != GST_FLOW_OK) return NULL;
  for (guint b = 0; b < parts->count; ++b)
    gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buffer, b)), gst_edgetensor_frame_quark(),
                              et_frame_retain(frame), (GDestroyNotify)et_frame_release);
  return buffer;
}

void gst_edgetensor_frame_pool_drop_idle(GstBufferPool* pool, gboolean stopping) {
  GstEdgetensorFramePool* self = GST_EDGETENSOR_FRAME_POOL(pool);
  g_mutex_lock(&self->lock);
  GArray* idle = self->idle;
  self->idle = g_array_new(FALSE, FALSE, sizeof(IdleFrameBuffer));
  if (stopping) self->stopped = TRUE;
  g_mutex_unlock(&self->lock);
  for (guint i = 0; i < idle->len; ++i) gst_buffer_unref(g_array_index(idle, IdleFrameBuffer, i).buffer);
  g_array_unref(idle);
}

static void frame_pool_finalize(GObject* object) {
  GstEdgetensorFramePool* self = GST_EDGETENSOR_FRAME_POOL(object);
  gst_edgetensor_frame_pool_drop_idle(GST_BUFFER_POOL(object), TRUE);
  g_array_unref(self->idle);
  g_mutex_clear(&self->lock);
  G_OBJECT_CLASS(gst_edgetensor_frame_pool_parent_class)->finalize(object);
}

static void gst_edgetensor_frame_pool_class_init(GstEdgetensorFramePoolClass* klass) {
  G_OBJECT_CLASS(klass)->finalize = frame_pool_finalize;
  GstBufferPoolClass* pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->acquire_buffer = frame_pool_acquire;
  pool_class->reset_buffer = frame_pool_reset;
  pool_class->release_buffer = frame_pool_release;
}

static void gst_edgetensor_frame_pool_init(GstEdgetensorFramePool* self) {
  g_mutex_init(&self->lock);
  self->idle = g_array_new(FALSE, FALSE, sizeof(IdleFrameBuffer));
}

GstBufferPool* gst_edgetensor_frame_pool_new(void) {
  GstBufferPool* pool = g_object_new(GST_TYPE_EDGETENSOR_FRAME_POOL, NULL);
  gst_object_ref_sink(pool);
  return pool;
}

/* GstFdMemory's share (saved from the first allocator made): its sub-memory's parent is the fd's first memory. */
static GstMemoryShareFunction fd_share;

/* A share whose parent is `memory` itself: the shares of a share keep it alive (its qdata, its frame). GstFdMemory
 * maps a sub-memory through its parent, recursively, so the bytes are the first memory's mapping either way. */
static GstMemory* share_of_memory(GstMemory* memory, gssize offset, gssize size) {
  GstMemory* sub = fd_share(memory, offset, size);
  if (sub == NULL || sub->parent == memory) return sub;
  GstMemory* first = sub->parent;
  gst_memory_lock(memory, GST_LOCK_FLAG_EXCLUSIVE);
  sub->parent = gst_memory_ref(memory);
  gst_memory_unlock(first, GST_LOCK_FLAG_EXCLUSIVE);
  gst_memory_unref(first);
  return sub;
}

static void keep_share(GstAllocator* allocator) {
  if (fd_share == NULL) fd_share = allocator->mem_share;
  allocator->mem_share = share_of_memory;
}

typedef struct {
  GstFdAllocator parent;
} GstEdgetensorFdAllocator;
typedef struct {
  GstFdAllocatorClass parent_class;
} GstEdgetensorFdAllocatorClass;
G_DEFINE_TYPE(GstEdgetensorFdAllocator, gst_edgetensor_fd_allocator, GST_TYPE_FD_ALLOCATOR)
static void gst_edgetensor_fd_allocator_class_init(GstEdgetensorFdAllocatorClass* klass) { (void)klass; }
static void gst_edgetensor_fd_allocator_init(GstEdgetensorFdAllocator* self) { keep_share(GST_ALLOCATOR(self)); }

typedef struct {
  GstDmaBufAllocator parent;
} GstEdgetensorDmaBufAllocator;
typedef struct {
  GstDmaBufAllocatorClass parent_class;
} GstEdgetensorDmaBufAllocatorClass;
G_DEFINE_TYPE(GstEdgetensorDmaBufAllocator, gst_edgetensor_dmabuf_allocator, GST_TYPE_DMABUF_ALLOCATOR)
static void gst_edgetensor_dmabuf_allocator_class_init(GstEdgetensorDmaBufAllocatorClass* klass) { (void)klass; }
static void gst_edgetensor_dmabuf_allocator_init(GstEdgetensorDmaBufAllocator* self) { keep_share(GST_ALLOCATOR(self)); }

GstAllocator* gst_edgetensor_frame_allocator_new(gboolean dmabuf) {
  GstAllocator* allocator = g_object_new(dmabuf ? gst_edgetensor_dmabuf_allocator_get_type()
                                                : gst_edgetensor_fd_allocator_get_type(), NULL);
  gst_object_ref_sink(allocator);
  return allocator;
}
