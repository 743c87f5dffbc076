/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 27's pipeline 4: a real V4L2 driver, vivid (the kernel's virtual camera), feeding edgetensorsink
 * (C11; the C API and GStreamer only). It runs where vivid capture nodes exist, one single-planar and one
 * multi-planar: in the kernel lane (tests/kernel/gst_v4l2_lane.sh), or on a host with
 * `modprobe vivid n_devs=2 multiplanar=1,2 node_types=0x1,0x1`; elsewhere it skips (77) naming why, unless
 * ET_V4L2_REQUIRE_DEVICES=1 (the lane), which makes a missing node a failure.
 *
 * Every pipeline captures NV12 640x360 from vivid's webcam input with its per-frame OSD text off
 * (extra-controls "c,osd_text_mode=2"): vivid then draws the same test pattern (75 % colour bars) into
 * every frame, so the frames of one capture are equal to each other and to those of any other capture.
 *   mmap_reference_frames_are_identical   v4l2src io-mode=mmap ! appsink: the reference. Every frame is
 *                                         byte-equal to the first, which is not blank (colour bars).
 *   dmabuf_import_writes_into_the_sink_pool
 *                                         v4l2src io-mode=dmabuf-import ! edgetensorsink: vivid writes into
 *                                         the sink's proposed pool (DMA-BUF memory from the dma-heap); every
 *                                         frame a C consumer receives equals the reference; the sink counts
 *                                         zero-copy = frames, copies = 0, imported = 0, memory dmabuf.
 *   dmabuf_is_imported_by_the_sink        v4l2src io-mode=dmabuf ! edgetensorsink: v4l2src pushes its own
 *                                         exported V4L2 buffers; the sink imports them (imported = frames,
 *                                         copies = 0); every received frame equals the reference.
 * On the multi-planar node, where v4l2src captures NV12 caps as NV12M (each plane a V4L2 plane of its own):
 *   mplane_mmap_reference_frames_are_identical
 *                                         the same reference, captured there (buffers of two memories).
 *   mplane_dmabuf_import_writes_one_buffer_per_plane
 *                                         v4l2src io-mode=dmabuf-import ! edgetensorsink plane-buffers=true:
 *                                         vivid writes each plane into a DMA-BUF of its own from the sink's
 *                                         plane pool; every frame equals that node's reference and reaches the
 *                                         consumer in two buffers; zero-copy = frames, copies = 0, imported = 0.
 *   mplane_dmabuf_import_needs_plane_buffers
 *                                         the same without plane-buffers: v4l2src cannot import one memory
 *                                         for two V4L2 planes and fails; the pipeline errors, nothing hangs.
 *   mplane_dmabuf_is_imported_by_the_sink v4l2src io-mode=dmabuf: buffers of two DMA-BUF memories, imported
 *                                         as frames of two buffers (imported = frames, copies = 0).
 *   mplane_i420_dmabuf_import_writes_three_buffers
 *                                         I420 caps, captured as YUV420M (three V4L2 planes), into the plane
 *                                         pool: three DMA-BUFs a frame, each plane buffer announced once.
 * In the sink cases, a probe on the sink's pad checks that every buffer's memories are all DMA-BUF memory (one,
 * or two on the multi-planar node), and the consumer that each received plane is a DMA-BUF import.
 *
 * usage: et_gst_vivid_tests [--device /dev/videoN] [--mplane-device /dev/videoN] [--frames N] [CASE]
 *   Without them, the first nodes whose VIDIOC_QUERYCAP driver is "vivid" with single-planar (multi-planar)
 *   capture and streaming. */
#define _GNU_SOURCE
#include "../capi/capi_check.h"

#include <gst/allocators/allocators.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum { kWidth = 640, kHeight = 360 };
#define kFrameBytes ((size_t)kWidth * kHeight * 3 / 2) /* NV12 or I420 without padding, plane after plane */
#define CAPS_FORMAT "video/x-raw,width=640,height=360,format="
#define CONTROLS "extra-controls=\"c,osd_text_mode=2\""

static char g_device[64];        /* single-planar capture */
static char g_mplane_device[64]; /* multi-planar capture ("" when none) */
static int g_frames = 30;
/* Set by a case whose v4l2src, failing, kept the sink's proposed pool alive past the case (run_vivid_cases). */
static int g_sink_pool_kept_by_v4l2src;

/* ---- Finding vivid ----------------------------------------------------------------------------------- */

/* 1 when `path` is a vivid node with `capture` (V4L2_CAP_VIDEO_CAPTURE: single-planar, or
 * V4L2_CAP_VIDEO_CAPTURE_MPLANE) and streaming; `why` says what it is otherwise. */
static int is_vivid_capture(const char* path, uint32_t capture, char* why, size_t why_size) {
  const int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_size, "%s: %s", path, strerror(errno));
    return 0;
  }
  struct v4l2_capability cap;
  memset(&cap, 0, sizeof cap);
  const int rc = ioctl(fd, VIDIOC_QUERYCAP, &cap);
  const int saved = errno;
  close(fd);
  if (rc != 0) {
    snprintf(why, why_size, "%s: VIDIOC_QUERYCAP: %s", path, strerror(saved));
    return 0;
  }
  const uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
  const uint32_t wanted = capture | V4L2_CAP_STREAMING;
  if (strcmp((const char*)cap.driver, "vivid") != 0 || (caps & wanted) != wanted) {
    snprintf(why, why_size, "%s: driver '%s', device caps 0x%08x (wanted vivid with %s|STREAMING 0x%08x)", path,
             (const char*)cap.driver, caps,
             capture == V4L2_CAP_VIDEO_CAPTURE_MPLANE ? "VIDEO_CAPTURE_MPLANE" : "VIDEO_CAPTURE", wanted);
    return 0;
  }
  return 1;
}

/* Sets `device` to the first vivid node of `capture` (is_vivid_capture) from /dev/video0 to /dev/video63. */
static int find_vivid(uint32_t capture, char* device, size_t device_size, char* why, size_t why_size) {
  snprintf(why, why_size, "no /dev/video* node");
  for (int i = 0; i < 64; ++i) {
    char path[32];
    snprintf(path, sizeof path, "/dev/video%d", i);
    if (access(path, F_OK) != 0) continue;
    char reason[256];
    if (is_vivid_capture(path, capture, reason, sizeof reason)) {
      snprintf(device, device_size, "%s", path);
      return 1;
    }
    snprintf(why, why_size, "no vivid %s capture node (last seen: %s)",
             capture == V4L2_CAP_VIDEO_CAPTURE_MPLANE ? "multi-planar" : "single-planar", reason);
  }
  return 0;
}

/* ---- Frames ------------------------------------------------------------------------------------------ */

/* A reference: a node's mmap capture, its frames packed (each row kWidth bytes). Captured once per process and
 * node: g_reference for g_device, g_mplane_reference for g_mplane_device. */
typedef struct {
  const char* format; /* "NV12" or "I420" */
  uint8_t* frames;
  int count;
} Reference;
static Reference g_reference = {"NV12", NULL, 0}, g_mplane_reference = {"NV12", NULL, 0},
                 g_mplane_i420_reference = {"I420", NULL, 0};

/* A frame of `format` kWidth x kHeight packed: each plane's rows without padding, plane after plane. */
typedef struct {
  unsigned planes;
  unsigned rows[GST_VIDEO_MAX_PLANES], row_bytes[GST_VIDEO_MAX_PLANES];
  size_t offset[GST_VIDEO_MAX_PLANES];
} Packed;

static Packed packed_of(const char* format) {
  Packed k;
  memset(&k, 0, sizeof k);
  GstVideoInfo info;
  gst_video_info_set_format(&info, gst_video_format_from_string(format), kWidth, kHeight);
  k.planes = GST_VIDEO_INFO_N_PLANES(&info);
  size_t offset = 0;
  for (unsigned p = 0; p < k.planes; ++p) {
    gint components[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(info.finfo, p, components);
    const gint c = components[0]; /* the plane's first component: its rows and, with its pixel stride, row bytes */
    k.rows[p] = (unsigned)GST_VIDEO_INFO_COMP_HEIGHT(&info, c);
    k.row_bytes[p] = (unsigned)(GST_VIDEO_INFO_COMP_WIDTH(&info, c) * GST_VIDEO_INFO_COMP_PSTRIDE(&info, c));
    k.offset[p] = offset;
    offset += (size_t)k.rows[p] * k.row_bytes[p];
  }
  return k;
}

/* Copies `frame`'s planes (of `format`), row by row, into `out` (kFrameBytes). */
static void pack_frame(const GstVideoFrame* frame, const char* format, uint8_t* out) {
  const Packed k = packed_of(format);
  for (unsigned p = 0; p < k.planes; ++p) {
    const uint8_t* data = GST_VIDEO_FRAME_PLANE_DATA(frame, p);
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(frame, p);
    for (unsigned r = 0; r < k.rows[p]; ++r)
      memcpy(out + k.offset[p] + (size_t)r * k.row_bytes[p], data + (size_t)r * (size_t)stride, k.row_bytes[p]);
  }
}

/* Waits up to 30 s for `pipeline` to reach EOS; FALSE (printed) on an error message or a timeout. */
static gboolean wait_eos(GstElement* pipeline, const char* what) {
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gst_object_unref(bus);
  gboolean ok = message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS;
  if (message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    GError* error = NULL;
    char* debug = NULL;
    gst_message_parse_error(message, &error, &debug);
    fprintf(stderr, "%s: error from %s: %s (%s)\n", what, GST_OBJECT_NAME(GST_MESSAGE_SRC(message)), error->message,
            debug != NULL ? debug : "no details");
    g_error_free(error);
    g_free(debug);
  } else if (message == NULL) {
    fprintf(stderr, "%s: no EOS within 30 s\n", what);
  }
  if (message != NULL) gst_message_unref(message);
  return ok;
}

/* Checks that the v4l2src named "cam" of `pipeline` has osd_text_mode=2 in its extra-controls. */
static int controls_arrived(GstElement* pipeline) {
  GstElement* cam = gst_bin_get_by_name(GST_BIN(pipeline), "cam");
  CHECK(cam != NULL);
  GstStructure* controls = NULL;
  g_object_get(cam, "extra-controls", &controls, NULL);
  gst_object_unref(cam);
  gint mode = -1;
  const gboolean found = controls != NULL && gst_structure_get_int(controls, "osd_text_mode", &mode);
  if (controls != NULL) gst_structure_free(controls);
  CHECK(found && mode == 2);
  return 0;
}

/* `v4l2src device=<device> io-mode=mmap ! <reference's format> 640x360 ! appsink`: g_frames frames into
 * *reference (once). */
static int capture_reference(const char* device, Reference* reference) {
  if (reference->frames != NULL) return 0;
  char* text = g_strdup_printf("v4l2src name=cam device=%s io-mode=mmap num-buffers=%d " CONTROLS " ! " CAPS_FORMAT
                               "%s ! appsink name=out sync=false enable-last-sample=false max-buffers=%d",
                               device, g_frames, reference->format, g_frames + 1);
  GError* error = NULL;
  GstElement* pipeline = gst_parse_launch(text, &error);
  g_free(text);
  if (pipeline == NULL) fprintf(stderr, "reference pipeline: %s\n", error != NULL ? error->message : "?");
  g_clear_error(&error);
  CHECK(pipeline != NULL);
  CHECK(controls_arrived(pipeline) == 0);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  uint8_t* frames = g_malloc0(kFrameBytes * (size_t)g_frames);
  int count = 0;
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  for (;;) {
    GstSample* sample = NULL;
    g_signal_emit_by_name(sink, "try-pull-sample", (GstClockTime)(10 * GST_SECOND), &sample);
    if (sample == NULL) break; /* EOS, error or timeout: the bus says which */
    GstVideoInfo info;
    GstVideoFrame frame;
    const gboolean mapped = count < g_frames && gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
                            gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ);
    if (mapped) {
      pack_frame(&frame, reference->format, frames + kFrameBytes * (size_t)count);
      gst_video_frame_unmap(&frame);
      ++count;
    } else {
      fprintf(stderr, "reference: cannot map sample %d\n", count);
    }
    gst_sample_unref(sample);
  }
  const gboolean eos = wait_eos(pipeline, "reference");
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  if (!eos || count != g_frames) {
    fprintf(stderr, "reference: %d of %d frames, %s\n", count, g_frames, eos ? "EOS" : "no EOS");
    g_free(frames);
    return 1;
  }
  reference->frames = frames;
  reference->count = count;
  return 0;
}

/* Bytes of `a` and `b` (kFrameBytes each) that differ; the first one's offset into *first. */
static size_t differing_bytes(const uint8_t* a, const uint8_t* b, size_t* first) {
  size_t bad = 0;
  *first = 0;
  for (size_t i = 0; i < kFrameBytes; ++i) {
    if (a[i] != b[i] && bad++ == 0) *first = i;
  }
  return bad;
}

/* ---- Case a: the reference ---------------------------------------------------------------------------- */

/* `device`'s reference frames are all equal to its first, which is not blank. */
static int reference_case(const char* what, const char* device, Reference* reference) {
  CHECK(capture_reference(device, reference) == 0);
  int identical = 0;
  for (int i = 0; i < reference->count; ++i) {
    size_t first = 0;
    const size_t bad = differing_bytes(reference->frames, reference->frames + kFrameBytes * (size_t)i, &first);
    if (bad != 0)
      fprintf(stderr, "%s frame %d: %zu bytes differ from frame 0 (the first at byte %zu)\n", what, i, bad, first);
    identical += bad == 0;
  }
  /* Not a blank frame: the colour bars give several luma levels. */
  int seen[256] = {0}, levels = 0;
  for (size_t i = 0; i < (size_t)kWidth * kHeight; ++i) levels += seen[reference->frames[i]]++ == 0;
  printf("%s: %s, %d frames, %d identical to frame 0, %d luma levels in frame 0\n", what, device, reference->count,
         identical, levels);
  CHECK(identical == reference->count);
  CHECK(levels >= 4);
  return 0;
}

static int case_mmap_reference_frames_are_identical(void) {
  return reference_case("mmap reference", g_device, &g_reference);
}

/* ---- Cases b and c: into edgetensorsink -------------------------------------------------------------- */

/* What a probe on the sink's pad saw. */
typedef struct {
  gint buffers;
  gint dmabuf;         /* buffers whose every memory is a DMA-BUF */
  gint two_memories;   /* buffers of two memories */
  gint three_memories; /* buffers of three memories */
  gint pool_size, pool_min, pool_max; /* the first buffer's pool config (-1: no pool) */
} PadCounts;

static GstPadProbeReturn count_buffer(GstPad* pad, GstPadProbeInfo* info, gpointer data) {
  (void)pad;
  PadCounts* counts = data;
  GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  if (g_atomic_int_add(&counts->buffers, 1) == 0) {
    guint size = 0, min = 0, max = 0;
    if (buffer->pool != NULL) {
      GstStructure* config = gst_buffer_pool_get_config(buffer->pool);
      gst_buffer_pool_config_get_params(config, NULL, &size, &min, &max);
      gst_structure_free(config);
    }
    const gboolean pooled = buffer->pool != NULL;
    g_atomic_int_set(&counts->pool_size, pooled ? (gint)size : -1);
    g_atomic_int_set(&counts->pool_min, pooled ? (gint)min : -1);
    g_atomic_int_set(&counts->pool_max, pooled ? (gint)max : -1);
  }
  const guint memories = gst_buffer_n_memory(buffer);
  gboolean dmabuf = memories > 0;
  for (guint i = 0; i < memories; ++i) dmabuf &= gst_is_dmabuf_memory(gst_buffer_peek_memory(buffer, i));
  if (dmabuf) g_atomic_int_inc(&counts->dmabuf);
  if (memories == 2) g_atomic_int_inc(&counts->two_memories);
  if (memories == 3) g_atomic_int_inc(&counts->three_memories);
  return GST_PAD_PROBE_OK;
}

/* Bytes of `frame`'s planes (of `format`) that differ from `expected` (packed); -1 when it cannot be read.
 * *dmabuf is cleared when a plane is not a DMA-BUF import. */
static long frame_mismatches(const et_frame* frame, const char* format, const uint8_t* expected, int* dmabuf) {
  const Packed k = packed_of(format);
  long bad = 0;
  for (unsigned p = 0; p < k.planes; ++p) {
    et_tensor* plane = NULL;
    if (et_frame_plane(frame, p, &plane) != ET_OK) return -1;
    et_tensor_info info = {0};
    info.struct_size = sizeof info;
    et_map* map = NULL;
    const void* data = NULL;
    size_t size = 0;
    if (et_tensor_get_info(plane, &info) != ET_OK || et_tensor_map_read(plane, &map, &data, &size) != ET_OK) {
      et_tensor_release(plane);
      return -1;
    }
    if (info.memory != ET_MEMORY_DMABUF) *dmabuf = 0;
    const uint8_t* bytes = data;
    const uint8_t* want = expected + k.offset[p];
    for (unsigned r = 0; r < k.rows[p]; ++r) {
      const uint8_t* row = bytes + (size_t)r * (size_t)info.strides_bytes[0];
      for (unsigned c = 0; c < k.row_bytes[p]; ++c) bad += row[c] != want[(size_t)r * k.row_bytes[p] + c];
    }
    et_map_release(map);
    et_tensor_release(plane);
  }
  return bad;
}

static guint64 stat_of(const GstStructure* stats, const char* name) {
  guint64 v = 0;
  gst_structure_get_uint64(stats, name, &v);
  return v;
}

typedef struct {
  int received, equal, dmabuf_frames, split_frames; /* split: in as many buffers as planes (more than one) */
  PadCounts pad;
  guint64 zero_copy, imported, copies, frames;
  guint64 announces; /* buffers announced to the consumer (each import of an fd) */
  char memory[16];
} SinkRun;

/* `v4l2src device=<device> io-mode=<io_mode> ! <reference's format> 640x360 ! edgetensorsink <properties>` with a C
 * consumer in this process that compares every frame with `reference` and releases it at once. */
static int run_into_sink(const char* device, const char* io_mode, const char* properties, const Reference* reference,
                         SinkRun* r) {
  memset(r, 0, sizeof *r);
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-vivid-test-%d-%s", (int)getpid(), io_mode);
  char* text = g_strdup_printf("v4l2src name=cam device=%s io-mode=%s num-buffers=%d " CONTROLS " ! " CAPS_FORMAT
                               "%s ! edgetensorsink name=sink socket-path=%s wait-receivers=1 sync=false %s",
                               device, io_mode, g_frames, reference->format, path, properties);
  GError* error = NULL;
  GstElement* pipeline = gst_parse_launch(text, &error);
  g_free(text);
  if (pipeline == NULL) fprintf(stderr, "%s pipeline: %s\n", io_mode, error != NULL ? error->message : "?");
  g_clear_error(&error);
  CHECK(pipeline != NULL);
  CHECK(controls_arrived(pipeline) == 0);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  r->pad.pool_size = r->pad.pool_min = r->pad.pool_max = -2;
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_buffer, &r->pad, NULL);
  gst_object_unref(pad);
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  int32_t fd = -1;
  for (int tries = 0; tries < 500 && et_channel_connect(path, 1000, &fd) != ET_OK; ++tries) g_usleep(10000);
  CHECK(fd >= 0);
  et_channel_receiver* receiver = NULL;
  CHECK_OK(et_channel_receiver_create_adopt(fd, NULL, &receiver));
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 20000, &d) != ET_OK) {
      fprintf(stderr, "%s: receive: %s\n", io_mode, et_last_error_message());
      break;
    }
    if (d.end_of_stream) break;
    int dmabuf = 1;
    const long bad = d.frame == NULL ? -1 : frame_mismatches(d.frame, reference->format, reference->frames, &dmabuf);
    uint32_t buffers = 0, plane_buffers[ET_MAX_PLANES];
    if (d.frame != NULL && et_frame_get_buffers(d.frame, &buffers, plane_buffers) == ET_OK && buffers > 1 &&
        buffers == packed_of(reference->format).planes)
      ++r->split_frames;
    if (bad != 0) fprintf(stderr, "%s: frame %llu: %ld bytes differ from the reference\n", io_mode,
                          (unsigned long long)d.sequence, bad);
    r->equal += bad == 0;
    r->dmabuf_frames += dmabuf && bad >= 0;
    ++r->received;
    et_frame_release(d.frame);
  }
  et_channel_receiver_stats receiver_stats = {0};
  receiver_stats.struct_size = sizeof receiver_stats;
  if (et_channel_receiver_get_stats(receiver, &receiver_stats) == ET_OK) r->announces = receiver_stats.announces;
  et_channel_receiver_release(receiver);
  const gboolean eos = wait_eos(pipeline, io_mode);
  GstStructure* stats = NULL;
  g_object_get(sink, "stats", &stats, NULL);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  CHECK(stats != NULL);
  r->frames = stat_of(stats, "frames");
  r->zero_copy = stat_of(stats, "zero-copy");
  r->imported = stat_of(stats, "imported");
  r->copies = stat_of(stats, "copies");
  const char* memory = gst_structure_get_string(stats, "memory");
  snprintf(r->memory, sizeof r->memory, "%s", memory != NULL ? memory : "?");
  char* s = gst_structure_to_string(stats);
  fprintf(stderr, "%s %s%s: sink stats %s\n", device, io_mode, properties[0] != '\0' ? " (properties set)" : "", s);
  g_free(s);
  gst_structure_free(stats);
  CHECK(eos);
  return 0;
}

/* b: vivid writes into the sink's own pool (DMA-BUF memory); the sink sends it as it is. */
static int case_dmabuf_import_writes_into_the_sink_pool(void) {
  CHECK(capture_reference(g_device, &g_reference) == 0);
  SinkRun r;
  CHECK(run_into_sink(g_device, "dmabuf-import", "", &g_reference, &r) == 0);
  printf("dmabuf-import: %d frames, %d equal to the mmap reference, zero-copy=%llu, copies=%llu, imported=%llu, "
         "sink pool memory=%s (size %d, min %d, max %d as v4l2src configured it), %d of %d buffers one DMA-BUF memory, "
         "%d received as DMA-BUF\n",
         r.received, r.equal, (unsigned long long)r.zero_copy, (unsigned long long)r.copies,
         (unsigned long long)r.imported, r.memory, r.pad.pool_size, r.pad.pool_min, r.pad.pool_max, r.pad.dmabuf,
         r.pad.buffers, r.dmabuf_frames);
  const guint64 n = (guint64)g_frames;
  CHECK(r.received == g_frames && r.equal == g_frames);
  CHECK(r.frames == n && r.zero_copy == n && r.copies == 0 && r.imported == 0);
  CHECK(strcmp(r.memory, et_memory_kind_name(ET_MEMORY_DMABUF)) == 0);
  /* v4l2src set the driver's sizeimage (NV12 640x360 unpadded: GStreamer's size) on the sink's pool. */
  CHECK(r.pad.pool_size == (gint)kFrameBytes);
  CHECK(r.pad.buffers == g_frames && r.pad.dmabuf == g_frames && r.dmabuf_frames == g_frames);
  CHECK(r.pad.two_memories == 0 && r.split_frames == 0);
  return 0;
}

/* c: v4l2src pushes its own exported buffers; the sink imports each (upstream's pool can spare its max less 2
 * at once: docs/GSTREAMER.md, "Upstream fd memory"; the consumer releases every frame at once). */
static int case_dmabuf_is_imported_by_the_sink(void) {
  CHECK(capture_reference(g_device, &g_reference) == 0);
  SinkRun r;
  CHECK(run_into_sink(g_device, "dmabuf", "", &g_reference, &r) == 0);
  printf("dmabuf: %d frames, %d equal to the mmap reference, imported=%llu, zero-copy=%llu, copies=%llu, "
         "v4l2src pool max %d (import limit: max - 2), %d of %d buffers one DMA-BUF memory, %d received as DMA-BUF\n",
         r.received, r.equal, (unsigned long long)r.imported, (unsigned long long)r.zero_copy,
         (unsigned long long)r.copies, r.pad.pool_max, r.pad.dmabuf, r.pad.buffers, r.dmabuf_frames);
  const guint64 n = (guint64)g_frames;
  CHECK(r.received == g_frames && r.equal == g_frames);
  CHECK(r.frames == n && r.imported == n && r.zero_copy == n && r.copies == 0);
  CHECK(r.pad.buffers == g_frames && r.pad.dmabuf == g_frames && r.dmabuf_frames == g_frames);
  CHECK(r.pad.two_memories == 0 && r.split_frames == 0);
  return 0;
}

/* ---- The multi-planar node: NV12M ---------------------------------------------------------------------- */

/* Fails naming why when there is no multi-planar node (main found none and the lane requires one). */
static int need_mplane(void) {
  if (g_mplane_device[0] != '\0') return 0;
  fprintf(stderr, "no vivid multi-planar capture node (vivid multiplanar=2)\n");
  return 1;
}

static int case_mplane_mmap_reference_frames_are_identical(void) {
  CHECK(need_mplane() == 0);
  CHECK(reference_case("mplane mmap reference", g_mplane_device, &g_mplane_reference) == 0);
  /* For the record: the two nodes draw the same pattern (not required; each case compares with its own node). */
  if (capture_reference(g_device, &g_reference) == 0) {
    size_t first = 0;
    printf("mplane mmap reference: frame 0 differs from the single-planar node's in %zu bytes\n",
           differing_bytes(g_reference.frames, g_mplane_reference.frames, &first));
  }
  return 0;
}

/* vivid writes NV12M's two planes into two DMA-BUFs of the sink's plane pool; the sink sends them as they are. */
static int case_mplane_dmabuf_import_writes_one_buffer_per_plane(void) {
  CHECK(need_mplane() == 0);
  CHECK(capture_reference(g_mplane_device, &g_mplane_reference) == 0);
  SinkRun r;
  CHECK(run_into_sink(g_mplane_device, "dmabuf-import", "plane-buffers=true", &g_mplane_reference, &r) == 0);
  printf("mplane dmabuf-import plane-buffers=true: %d frames, %d equal to the mmap reference, %d received in two "
         "buffers, zero-copy=%llu, copies=%llu, imported=%llu, sink pool memory=%s (size %d, min %d, max %d as v4l2src "
         "configured it), %d of %d buffers two memories, %d all DMA-BUF, %d received as DMA-BUF, %llu buffers announced\n",
         r.received, r.equal, r.split_frames, (unsigned long long)r.zero_copy, (unsigned long long)r.copies,
         (unsigned long long)r.imported, r.memory, r.pad.pool_size, r.pad.pool_min, r.pad.pool_max,
         r.pad.two_memories, r.pad.buffers, r.pad.dmabuf, r.dmabuf_frames, (unsigned long long)r.announces);
  const guint64 n = (guint64)g_frames;
  CHECK(r.received == g_frames && r.equal == g_frames && r.split_frames == g_frames);
  CHECK(r.frames == n && r.zero_copy == n && r.copies == 0 && r.imported == 0);
  CHECK(strcmp(r.memory, et_memory_kind_name(ET_MEMORY_DMABUF)) == 0);
  CHECK(r.pad.pool_size == (gint)kFrameBytes);
  CHECK(r.pad.buffers == g_frames && r.pad.two_memories == g_frames && r.pad.dmabuf == g_frames &&
        r.dmabuf_frames == g_frames);
  /* Each plane buffer announced once: the pool's buffers, two each, within the receiver's table of 32. */
  CHECK(r.announces >= 2 && r.announces <= 2u * (guint64)r.pad.pool_max && r.announces <= 32);
  return 0;
}

/* Without plane-buffers the sink's buffers hold both planes in one DMA-BUF, which v4l2src cannot hand to a
 * driver wanting two: the pipeline fails with v4l2src's error (no frame, no hang). */
static int case_mplane_dmabuf_import_needs_plane_buffers(void) {
  CHECK(need_mplane() == 0);
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-vivid-test-%d-one-buffer", (int)getpid());
  char* text = g_strdup_printf("v4l2src name=cam device=%s io-mode=dmabuf-import num-buffers=%d " CONTROLS " ! "
                               CAPS_FORMAT "NV12 ! edgetensorsink name=sink socket-path=%s sync=false",
                               g_mplane_device, g_frames, path);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  CHECK(pipeline != NULL);
  GstElement* cam = gst_bin_get_by_name(GST_BIN(pipeline), "cam");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gst_object_unref(bus);
  const gboolean error = message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR;
  if (error) {
    GError* e = NULL;
    char* debug = NULL;
    gst_message_parse_error(message, &e, &debug);
    printf("mplane dmabuf-import without plane-buffers: error from %s: %s (%s)\n",
           GST_OBJECT_NAME(GST_MESSAGE_SRC(message)), e->message, debug != NULL ? debug : "no details");
    g_error_free(e);
    g_free(debug);
  } else {
    fprintf(stderr, "mplane dmabuf-import without plane-buffers: %s\n", message == NULL ? "no message in 30 s" : "EOS");
  }
  if (message != NULL) gst_message_unref(message);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  /* After this error GStreamer 1.22's v4l2src outlives its pipeline (references of its own) and keeps the sink's
   * pool it imports from, with that pool's buffers and GstPoll: the runner then allows what that pool holds. */
  const gint kept = GST_OBJECT_REFCOUNT_VALUE(cam) - 1;
  gst_object_unref(cam);
  if (kept > 0) {
    g_sink_pool_kept_by_v4l2src = 1;
    printf("note: v4l2src kept %d references of its own after its pipeline, and with them the sink's pool\n", kept);
  }
  CHECK(error);
  return 0;
}

/* v4l2src pushes its own NV12M buffers (two DMA-BUF memories); the sink imports each as a frame of two buffers. */
static int case_mplane_dmabuf_is_imported_by_the_sink(void) {
  CHECK(need_mplane() == 0);
  CHECK(capture_reference(g_mplane_device, &g_mplane_reference) == 0);
  SinkRun r;
  CHECK(run_into_sink(g_mplane_device, "dmabuf", "", &g_mplane_reference, &r) == 0);
  printf("mplane dmabuf: %d frames, %d equal to the mmap reference, %d received in two buffers, imported=%llu, "
         "zero-copy=%llu, copies=%llu, %d of %d buffers two memories, %d all DMA-BUF, %d received as DMA-BUF, %llu "
         "buffers announced\n",
         r.received, r.equal, r.split_frames, (unsigned long long)r.imported, (unsigned long long)r.zero_copy,
         (unsigned long long)r.copies, r.pad.two_memories, r.pad.buffers, r.pad.dmabuf, r.dmabuf_frames,
         (unsigned long long)r.announces);
  const guint64 n = (guint64)g_frames;
  CHECK(r.received == g_frames && r.equal == g_frames && r.split_frames == g_frames);
  CHECK(r.frames == n && r.imported == n && r.zero_copy == n && r.copies == 0);
  CHECK(r.pad.buffers == g_frames && r.pad.two_memories == g_frames && r.pad.dmabuf == g_frames &&
        r.dmabuf_frames == g_frames);
  CHECK(r.announces >= 2 && r.announces <= 32); /* v4l2src's buffers, two each, each announced once */
  return 0;
}

/* I420 on the multi-planar node is YUV420M, three V4L2 planes: vivid writes each into a DMA-BUF of its own from
 * the plane pool, which holds at most 10 frames (30 buffers within a receiver's table of 32). */
static int case_mplane_i420_dmabuf_import_writes_three_buffers(void) {
  CHECK(need_mplane() == 0);
  CHECK(reference_case("mplane I420 mmap reference", g_mplane_device, &g_mplane_i420_reference) == 0);
  SinkRun r;
  CHECK(run_into_sink(g_mplane_device, "dmabuf-import", "plane-buffers=true", &g_mplane_i420_reference, &r) == 0);
  printf("mplane I420 dmabuf-import plane-buffers=true: %d frames, %d equal to the mmap reference, %d received in "
         "three buffers, zero-copy=%llu, copies=%llu, imported=%llu, sink pool (size %d, min %d, max %d as v4l2src "
         "configured it), %d of %d buffers three memories, %d all DMA-BUF, %d received as DMA-BUF, %llu buffers "
         "announced\n",
         r.received, r.equal, r.split_frames, (unsigned long long)r.zero_copy, (unsigned long long)r.copies,
         (unsigned long long)r.imported, r.pad.pool_size, r.pad.pool_min, r.pad.pool_max, r.pad.three_memories,
         r.pad.buffers, r.pad.dmabuf, r.dmabuf_frames, (unsigned long long)r.announces);
  const guint64 n = (guint64)g_frames;
  CHECK(r.received == g_frames && r.equal == g_frames && r.split_frames == g_frames);
  CHECK(r.frames == n && r.zero_copy == n && r.copies == 0 && r.imported == 0);
  CHECK(strcmp(r.memory, et_memory_kind_name(ET_MEMORY_DMABUF)) == 0);
  CHECK(r.pad.pool_size == (gint)kFrameBytes && r.pad.pool_max <= 10);
  CHECK(r.pad.buffers == g_frames && r.pad.three_memories == g_frames && r.pad.dmabuf == g_frames &&
        r.dmabuf_frames == g_frames);
  CHECK(r.announces >= 3 && r.announces <= 3u * (guint64)r.pad.pool_max);
  return 0;
}

/* ---- The runner ---------------------------------------------------------------------------------------- */

/* This process's open fds by kind (/proc/self/fd). */
typedef struct {
  int dmabuf, video, socket, heap, other;
} FdKinds;

static int count_fds(FdKinds* k) {
  memset(k, 0, sizeof *k);
  DIR* dir = opendir("/proc/self/fd");
  if (dir == NULL) return -1;
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(dir)) continue;
    char path[300], link[256] = {0};
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    if (readlink(path, link, sizeof link - 1) < 0) continue;
    if (strncmp(link, "/dmabuf:", 8) == 0 || strncmp(link, "anon_inode:dmabuf", 17) == 0) ++k->dmabuf;
    else if (strncmp(link, "/dev/video", 10) == 0) ++k->video;
    else if (strncmp(link, "socket:", 7) == 0) ++k->socket;
    else if (strncmp(link, "/dev/dma_heap/", 14) == 0) ++k->heap;
    else ++k->other;
  }
  closedir(dir);
  return 0;
}

/* Runs the cases (the one named `only`, or all), each with a check of the fds it leaves open: no DMA-BUF fd,
 * nothing but what GStreamer 1.22's v4l2src keeps when it outlives its pipeline, and at most the one dma-heap
 * fd the library keeps open for the process. Measured in the lane: v4l2src orphans its V4L2 buffer pool at
 * stop (vb2 supports orphaned buffers), and the element stays alive with two more references after the
 * pipeline is gone, its device fd and two GstPoll socket pairs open: one /dev/videoN fd and 4 sockets each.
 * With GST_V4L2_FORCE_DRAIN=1, which turns the orphaning off, no fd is left. 0 when every case passed. */
static int run_vivid_cases(const struct test_case* cases, size_t count, const char* only) {
  int failed = 0, ran = 0;
  for (size_t i = 0; i < count; ++i) {
    if (only != NULL && strcmp(only, cases[i].name) != 0) continue;
    ++ran;
    FdKinds before, after;
    if (count_fds(&before) != 0) return 1;
    g_sink_pool_kept_by_v4l2src = 0;
    const int rc = cases[i].fn();
    if (count_fds(&after) != 0) return 1;
    const int video = after.video - before.video, sockets = after.socket - before.socket;
    /* A kept sink pool (a GstBufferPool: one GstPoll socket pair) holds its DMA-BUF buffers open. */
    const int kept = g_sink_pool_kept_by_v4l2src;
    const gboolean fds_ok = (kept ? after.dmabuf >= before.dmabuf : after.dmabuf == before.dmabuf) &&
                            after.other == before.other && after.heap <= 1 && video >= 0 &&
                            sockets == 4 * video + 2 * kept;
    if (rc != 0) {
      fprintf(stderr, "FAILED %s\n", cases[i].name);
      ++failed;
    } else if (!fds_ok) {
      fprintf(stderr, "FAILED %s: fds left open: %d DMA-BUF, %d /dev/video, %d sockets, %d other (dma-heap: %d open)\n",
              cases[i].name, after.dmabuf - before.dmabuf, video, sockets, after.other - before.other, after.heap);
      ++failed;
    } else {
      if (video > 0) printf("note: v4l2src kept %d device fd and %d sockets open after its pipeline\n", video, sockets);
      if (kept) printf("note: the sink pool v4l2src kept holds %d DMA-BUF fds\n", after.dmabuf - before.dmabuf);
      printf("ok %s\n", cases[i].name);
    }
  }
  if (ran == 0) {
    fprintf(stderr, "no case named '%s'\n", only != NULL ? only : "");
    return 1;
  }
  return failed != 0;
}

/* Fails (1) where ET_V4L2_REQUIRE_DEVICES or EDGETENSOR_REQUIRE_GSTREAMER says so, else skips (77). */
static int unavailable(const char* require, const char* why) {
  const char* value = getenv(require);
  if (value != NULL && strcmp(value, "1") == 0) {
    fprintf(stderr, "FAILED: %s (required: %s=1)\n", why, require);
    return 1;
  }
  printf("SKIP: %s\n", why);
  return CASE_SKIPPED;
}

int main(int argc, char** argv) {
  int arg = 1;
  while (arg + 1 < argc && argv[arg][0] == '-') {
    if (strcmp(argv[arg], "--device") == 0) {
      snprintf(g_device, sizeof g_device, "%s", argv[arg + 1]);
    } else if (strcmp(argv[arg], "--mplane-device") == 0) {
      snprintf(g_mplane_device, sizeof g_mplane_device, "%s", argv[arg + 1]);
    } else if (strcmp(argv[arg], "--frames") == 0) {
      g_frames = atoi(argv[arg + 1]);
      if (g_frames < 1 || g_frames > 300) {
        fprintf(stderr, "--frames '%s': from 1 to 300\n", argv[arg + 1]);
        return 1;
      }
    } else {
      break;
    }
    arg += 2;
  }
  if (arg < argc && argv[arg][0] == '-') {
    fprintf(stderr, "usage: %s [--device /dev/videoN] [--mplane-device /dev/videoN] [--frames N] [CASE]\n", argv[0]);
    return 1;
  }
  gst_init(NULL, NULL);
  static const char* elements[] = {"v4l2src", "appsink", "capsfilter", "edgetensorsink"};
  for (size_t i = 0; i < sizeof elements / sizeof *elements; ++i) {
    GstElementFactory* factory = gst_element_factory_find(elements[i]);
    if (factory == NULL) {
      char why[160];
      snprintf(why, sizeof why, "GStreamer element %s missing (GST_PLUGIN_PATH, gstreamer1.0-plugins-good/-base)",
               elements[i]);
      return unavailable("EDGETENSOR_REQUIRE_GSTREAMER", why);
    }
    gst_object_unref(factory);
  }
  char why[320];
  if (g_device[0] != '\0') {
    if (!is_vivid_capture(g_device, V4L2_CAP_VIDEO_CAPTURE, why, sizeof why))
      return unavailable("ET_V4L2_REQUIRE_DEVICES", why);
  } else if (!find_vivid(V4L2_CAP_VIDEO_CAPTURE, g_device, sizeof g_device, why, sizeof why)) {
    return unavailable("ET_V4L2_REQUIRE_DEVICES", why);
  }
  if (g_mplane_device[0] != '\0') {
    if (!is_vivid_capture(g_mplane_device, V4L2_CAP_VIDEO_CAPTURE_MPLANE, why, sizeof why))
      return unavailable("ET_V4L2_REQUIRE_DEVICES", why);
  } else if (!find_vivid(V4L2_CAP_VIDEO_CAPTURE_MPLANE, g_mplane_device, sizeof g_mplane_device, why, sizeof why)) {
    g_mplane_device[0] = '\0';
    const char* required = getenv("ET_V4L2_REQUIRE_DEVICES");
    if (required != NULL && strcmp(required, "1") == 0) return unavailable("ET_V4L2_REQUIRE_DEVICES", why);
    printf("note: %s: the mplane cases fail (vivid multiplanar=2 makes one)\n", why);
  }
  printf("vivid capture nodes: single-planar %s, multi-planar %s; %d frames per pipeline\n", g_device,
         g_mplane_device[0] != '\0' ? g_mplane_device : "none", g_frames);
  static const struct test_case cases[] = {
      {"mmap_reference_frames_are_identical", case_mmap_reference_frames_are_identical},
      {"dmabuf_import_writes_into_the_sink_pool", case_dmabuf_import_writes_into_the_sink_pool},
      {"dmabuf_is_imported_by_the_sink", case_dmabuf_is_imported_by_the_sink},
      {"mplane_mmap_reference_frames_are_identical", case_mplane_mmap_reference_frames_are_identical},
      {"mplane_dmabuf_import_writes_one_buffer_per_plane", case_mplane_dmabuf_import_writes_one_buffer_per_plane},
      {"mplane_dmabuf_import_needs_plane_buffers", case_mplane_dmabuf_import_needs_plane_buffers},
      {"mplane_dmabuf_is_imported_by_the_sink", case_mplane_dmabuf_is_imported_by_the_sink},
      {"mplane_i420_dmabuf_import_writes_three_buffers", case_mplane_i420_dmabuf_import_writes_three_buffers},
  };
  const int rc = run_vivid_cases(cases, sizeof cases / sizeof *cases, arg < argc ? argv[arg] : NULL);
  g_free(g_reference.frames);
  g_free(g_mplane_reference.frames);
  return rc;
}
