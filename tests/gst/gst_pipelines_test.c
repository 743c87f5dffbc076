/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 27's pipelines 1 and 5, each frame checked (C11; the C API, GStreamer and GLib):
 * - sink_feeds_c_cpp_python_consumers: `videotestsrc pattern=ball ! NV12 1920x1080 ! edgetensorsink` serves
 *   three consumers at once on one socket: a C consumer (this process, the C API), a C++ consumer
 *   (et_gst_cpp_consumer, edgetensor/channel.h) and a Python consumer (gst_python_consumer.py, the module).
 *   Each checks every frame's SHA-256 (its planes' rows, strides skipped) against the same pattern rendered to
 *   appsink by a reference pipeline, and the sink's stats show 0 copies and every frame delivered 3 times.
 * - rtp_leaves_the_machine: a sink-fed chain at 320x240 (`videotestsrc ! edgetensorsink`, then
 *   `edgetensorsrc ! videoconvert ! I420 ! rtpvrawpay ! udpsink host=127.0.0.1`) received by
 *   `udpsrc ! rtpvrawdepay ! appsink` in another pipeline; every received frame equals GStreamer's own I420
 *   conversion of the pattern sent, pixel by pixel. udpsrc binds port 0 (the kernel picks a free port) and
 *   the sender is told the port it got. Everything waits with a bound, so nothing hangs.
 * - vp8_rtp_leaves_the_machine: the same chain with README's compressing encoder (vp8enc ! rtpvp8pay, received by
 *   rtpjitterbuffer ! rtpvp8depay ! vp8dec): every frame decoded, each within 30 dB PSNR of the frame sent.
 * Both check that edgetensorsrc sends one caps event, its frames': no placeholder caps before the first frame,
 * which vp8enc would take as its size and then encode nothing. */
#define _POSIX_C_SOURCE 200809L /* waitpid, kill */
#include "../capi/capi_check.h"

#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kConsumerFrames = 30 };
#define CAPS_1080 "video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"

/* ---- pipeline 1: three consumers ---- */

/* SHA-256 (hex) of a mapped GStreamer frame's planes, each row's tight bytes (NV12: width bytes a row). */
static gchar* gst_frame_digest(const GstVideoFrame* frame) {
  GChecksum* sum = g_checksum_new(G_CHECKSUM_SHA256);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(frame); ++p) {
    const guint8* data = GST_VIDEO_FRAME_PLANE_DATA(frame, p);
    const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(frame, p);
    const int rows = GST_VIDEO_FRAME_COMP_HEIGHT(frame, p == 0 ? 0 : 1);
    for (int r = 0; r < rows; ++r) g_checksum_update(sum, data + (size_t)r * stride, GST_VIDEO_FRAME_WIDTH(frame));
  }
  gchar* digest = g_strdup(g_checksum_get_string(sum));
  g_checksum_free(sum);
  return digest;
}

/* The same digest of a delivered NV12 frame (NULL when a plane cannot be read). */
static gchar* et_frame_digest(const et_frame* frame) {
  et_image_layout layout = {0};
  layout.struct_size = sizeof layout;
  if (frame == NULL || et_frame_get_layout(frame, &layout) != ET_OK || layout.format != ET_PIXEL_FORMAT_NV12) return NULL;
  GChecksum* sum = g_checksum_new(G_CHECKSUM_SHA256);
  int ok = 1;
  for (unsigned p = 0; ok && p < 2; ++p) {
    et_tensor* plane = NULL;
    et_map* map = NULL;
    const void* data = NULL;
    size_t size = 0;
    et_tensor_info info = {0};
    info.struct_size = sizeof info;
    ok = et_frame_plane(frame, p, &plane) == ET_OK && et_tensor_get_info(plane, &info) == ET_OK &&
         et_tensor_map_read(plane, &map, &data, &size) == ET_OK;
    for (uint64_t r = 0; ok && r < info.shape[0]; ++r)
      g_checksum_update(sum, (const guint8*)data + r * (uint64_t)info.strides_bytes[0], layout.width);
    et_map_release(map);
    et_tensor_release(plane);
  }
  gchar* digest = ok ? g_strdup(g_checksum_get_string(sum)) : NULL;
  g_checksum_free(sum);
  return digest;
}

/* Renders `frames` frames of the pattern to appsink and writes one digest a line to `file`; returns the digests
 * (NULL-terminated, g_strfreev), or NULL when a frame did not come. */
static gchar** write_reference(const char* file, int frames) {
  gchar* text = g_strdup_printf("videotestsrc num-buffers=%d pattern=ball ! " CAPS_1080 " ! appsink name=out sync=false",
                                frames);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  if (pipeline == NULL) return NULL;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gchar** digests = g_new0(gchar*, (size_t)frames + 1);
  GString* lines = g_string_new(NULL);
  int got = 0;
  for (; got < frames; ++got) {
    GstSample* sample = NULL;
    g_signal_emit_by_name(sink, "try-pull-sample", (GstClockTime)(10 * GST_SECOND), &sample);
    if (sample == NULL) break;
    GstVideoInfo info;
    GstVideoFrame frame;
    if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
        gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
      digests[got] = gst_frame_digest(&frame);
      gst_video_frame_unmap(&frame);
    }
    gst_sample_unref(sample);
    if (digests[got] == NULL) break;
    g_string_append_printf(lines, "%s\n", digests[got]);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  const gboolean written = got == frames && g_file_set_contents(file, lines->str, (gssize)lines->len, NULL);
  g_string_free(lines, TRUE);
  if (!written) {
    g_strfreev(digests);
    return NULL;
  }
  return digests;
}

/* The C consumer: connects (retrying while the sink does not listen yet), receives until the end of stream and
 * counts frames in order whose digest is the reference's. */
struct c_consumer {
  const char* path;
  gchar** reference;
  int frames, received, right, ended;
  pthread_t thread;
};

static void* c_consume(void* arg) {
  struct c_consumer* c = arg;
  int32_t fd = -1;
  for (int tries = 0; tries < 2000 && et_channel_connect(c->path, 1000, &fd) != ET_OK; ++tries) g_usleep(10000);
  et_channel_receiver* receiver = NULL;
  if (fd < 0 || et_channel_receiver_create_adopt(fd, NULL, &receiver) != ET_OK) {
    fprintf(stderr, "C consumer: connect %s: %s\n", c->path, et_last_error_message());
    return NULL;
  }
  for (;;) {
    et_channel_delivery d = {0};
    d.struct_size = sizeof d;
    if (et_channel_receiver_receive(receiver, 10000, &d) != ET_OK) {
      fprintf(stderr, "C consumer: receive after %d frames: %s\n", c->received, et_last_error_message());
      break;
    }
    if (d.end_of_stream) {
      c->ended = 1;
      break;
    }
    gchar* digest = et_frame_digest(d.frame);
    const int good = d.sequence == (uint64_t)c->received && c->received < c->frames && digest != NULL &&
                     strcmp(digest, c->reference[c->received]) == 0;
    if (!good)
      fprintf(stderr, "C consumer: frame %d (sequence %llu): digest %s, the reference's %s\n", c->received,
              (unsigned long long)d.sequence, digest != NULL ? digest : "(unreadable)",
              c->received < c->frames ? c->reference[c->received] : "(none: too many frames)");
    c->right += good;
    ++c->received;
    g_free(digest);
    et_frame_release(d.frame);
    et_tensor_release(d.tensor);
  }
  et_channel_receiver_release(receiver);
  return NULL;
}

/* Waits at most `seconds` for child `pid`; kills it past that. Its exit status, or -1 when it was killed or did
 * not exit normally. */
static int wait_child(GPid pid, int seconds, const char* name) {
  int status = 0;
  for (int waited = 0; waited < seconds * 100; ++waited) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      fprintf(stderr, "%s ended by signal %d\n", name, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      return -1;
    }
    if (done < 0) return -1;
    g_usleep(10000);
  }
  fprintf(stderr, "%s still running after %d s: killed\n", name, seconds);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

static GPid spawn(char** argv) {
  GPid pid = 0;
  GError* error = NULL;
  if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error)) {
    fprintf(stderr, "spawn %s: %s\n", argv[0], error->message);
    g_error_free(error);
    return 0;
  }
  return pid;
}

static int case_sink_feeds_c_cpp_python_consumers(void) {
  const char* cpp_consumer = getenv("ET_GST_CPP_CONSUMER");
  const char* python = getenv("ET_GST_PYTHON");                   /* unset: no Python module in this build */
  const char* python_consumer = getenv("ET_GST_PYTHON_CONSUMER");
  CHECK(cpp_consumer != NULL);
  const int with_python = python != NULL && python[0] != '\0' && python_consumer != NULL;
  if (!with_python) printf("no Python module in this build (ET_GST_PYTHON unset): C and C++ consumers only\n");
  const int consumers = with_python ? 3 : 2;

  gchar* dir = g_dir_make_tmp("et-gst-consumers-XXXXXX", NULL);
  CHECK(dir != NULL);
  gchar* reference_file = g_build_filename(dir, "reference.sha256", NULL);
  gchar** reference = write_reference(reference_file, kConsumerFrames);
  CHECK(reference != NULL);
  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-consumers-%d", (int)getpid());
  /* wait-receivers: every consumer sees frame 0; block (the default): none misses one. */
  gchar* text = g_strdup_printf("videotestsrc num-buffers=%d pattern=ball ! " CAPS_1080 " ! edgetensorsink name=sink "
                                "socket-path=%s wait-receivers=%d sync=false", kConsumerFrames, path, consumers);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  CHECK(pipeline != NULL);
  CHECK(gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  char frames_arg[16];
  snprintf(frames_arg, sizeof frames_arg, "%d", kConsumerFrames);
  char* cpp_argv[] = {(char*)cpp_consumer, path, reference_file, frames_arg, NULL};
  char* python_argv[] = {(char*)python, (char*)python_consumer, path, reference_file, frames_arg, NULL};
  const GPid cpp_pid = spawn(cpp_argv);
  const GPid python_pid = with_python ? spawn(python_argv) : 0;
  struct c_consumer c = {.path = path, .reference = reference, .frames = kConsumerFrames};
  pthread_create(&c.thread, NULL, c_consume, &c);

  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const int eos = message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS;
  if (message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    GError* error = NULL;
    gst_message_parse_error(message, &error, NULL);
    fprintf(stderr, "sink pipeline: %s\n", error->message);
    g_error_free(error);
  }
  if (message != NULL) gst_message_unref(message);
  gst_object_unref(bus);
  const int cpp_status = cpp_pid != 0 ? wait_child(cpp_pid, 30, "et_gst_cpp_consumer") : -1;
  const int python_status = python_pid != 0 ? wait_child(python_pid, 30, "gst_python_consumer.py") : -1;
  if (!eos) gst_element_set_state(pipeline, GST_STATE_NULL); /* unblocks a C consumer still waiting */
  pthread_join(c.thread, NULL);

  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstStructure* stats = NULL;
  g_object_get(sink, "stats", &stats, NULL);
  gst_object_unref(sink);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  guint64 copies = 99, zero_copy = 0, deliveries = 0, joined = 0;
  if (stats != NULL) {
    gst_structure_get_uint64(stats, "copies", &copies);
    gst_structure_get_uint64(stats, "zero-copy", &zero_copy);
    gst_structure_get_uint64(stats, "deliveries", &deliveries);
    gst_structure_get_uint64(stats, "receivers-joined", &joined);
    gchar* stats_text = gst_structure_to_string(stats);
    printf("sink: %s\n", stats_text);
    g_free(stats_text);
    gst_structure_free(stats);
  }
  printf("C consumer: %d frames, %d equal to the reference, end of stream %d; C++ consumer exit %d; Python consumer "
         "exit %d%s; pipeline EOS %d\n", c.received, c.right, c.ended, cpp_status, python_status,
         with_python ? "" : " (not run)", eos);
  g_strfreev(reference);
  g_unlink(reference_file);
  g_rmdir(dir);
  g_free(reference_file);
  g_free(dir);
  CHECK(eos);
  CHECK(c.received == kConsumerFrames && c.right == kConsumerFrames && c.ended == 1);
  CHECK(cpp_status == 0);
  CHECK(!with_python || python_status == 0);
  CHECK(copies == 0 && zero_copy == kConsumerFrames);
  CHECK(joined == (guint64)consumers && deliveries == (guint64)consumers * kConsumerFrames);
  return 0;
}

/* ---- pipeline 5: leaving the machine ---- */

enum { kRtpFrames = 30 };
#define CAPS_SMALL "video/x-raw,format=NV12,width=320,height=240,framerate=30/1"
/* What rtpvrawpay announces for I420 320x240 (RFC 4175's fields): udpsrc cannot learn caps from the packets. */
#define RTP_CAPS                                                                                                   \
  "application/x-rtp,media=video,clock-rate=90000,encoding-name=RAW,sampling=YCbCr-4:2:0,depth=(string)8,"       \
  "width=(string)320,height=(string)240,colorimetry=(string)BT601-5,payload=96"

/* Bytes of two I420 samples that differ (-1: unreadable or another size), each row's tight bytes; *psnr gets
 * their peak signal-to-noise ratio in dB over every sample (1000 when equal). */
static long i420_mismatches(GstSample* a, GstSample* b, double* psnr) {
  *psnr = 0;
  GstVideoInfo ia, ib;
  GstVideoFrame fa, fb;
  if (!gst_video_info_from_caps(&ia, gst_sample_get_caps(a)) || !gst_video_info_from_caps(&ib, gst_sample_get_caps(b)) ||
      GST_VIDEO_INFO_FORMAT(&ia) != GST_VIDEO_FORMAT_I420 || GST_VIDEO_INFO_FORMAT(&ib) != GST_VIDEO_FORMAT_I420 ||
      ia.width != ib.width || ia.height != ib.height)
    return -1;
  if (!gst_video_frame_map(&fa, &ia, gst_sample_get_buffer(a), GST_MAP_READ)) return -1;
  if (!gst_video_frame_map(&fb, &ib, gst_sample_get_buffer(b), GST_MAP_READ)) {
    gst_video_frame_unmap(&fa);
    return -1;
  }
  long bad = 0;
  double squares = 0, samples = 0;
  for (guint p = 0; p < 3; ++p) {
    const guint8* da = GST_VIDEO_FRAME_PLANE_DATA(&fa, p);
    const guint8* db = GST_VIDEO_FRAME_PLANE_DATA(&fb, p);
    for (int r = 0; r < GST_VIDEO_FRAME_COMP_HEIGHT(&fa, p); ++r)
      for (int c = 0; c < GST_VIDEO_FRAME_COMP_WIDTH(&fa, p); ++c) {
        const int d = da[(size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(&fa, p) + c] -
                      db[(size_t)r * GST_VIDEO_FRAME_PLANE_STRIDE(&fb, p) + c];
        bad += d != 0;
        squares += (double)d * d;
        samples += 1;
      }
  }
  gst_video_frame_unmap(&fa);
  gst_video_frame_unmap(&fb);
  *psnr = squares == 0 ? 1000 : 10 * log10(255.0 * 255.0 * samples / squares);
  return bad;
}

/* The pattern's frames as GStreamer converts them to I420 (NULL-terminated; NULL when one did not come). */
static GstSample** reference_i420(int frames) {
  gchar* text = g_strdup_printf("videotestsrc num-buffers=%d pattern=ball ! " CAPS_SMALL " ! videoconvert ! "
                                "video/x-raw,format=I420 ! appsink name=out sync=false", frames);
  GstElement* pipeline = gst_parse_launch(text, NULL);
  g_free(text);
  if (pipeline == NULL) return NULL;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstSample** samples = g_new0(GstSample*, (size_t)frames + 1);
  int got = 0;
  while (got < frames) {
    g_signal_emit_by_name(sink, "try-pull-sample", (GstClockTime)(10 * GST_SECOND), &samples[got]);
    if (samples[got] == NULL) break;
    ++got;
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  if (got == frames) return samples;
  for (int i = 0; i < got; ++i) gst_sample_unref(samples[i]);
  g_free(samples);
  return NULL;
}

static void free_samples(GstSample** samples) {
  for (int i = 0; samples != NULL && samples[i] != NULL; ++i) gst_sample_unref(samples[i]);
  g_free(samples);
}

/* The first error on `pipeline`'s bus so far ("" when none). */
static void bus_error(GstElement* pipeline, char* out, size_t size) {
  out[0] = '\0';
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  if (message != NULL) {
    GError* error = NULL;
    gst_message_parse_error(message, &error, NULL);
    snprintf(out, size, "%s", error->message);
    g_error_free(error);
    gst_message_unref(message);
  }
  gst_object_unref(bus);
}

/* Counts CAPS events on a pad (pad probe). */
static GstPadProbeReturn count_caps(GstPad* pad, GstPadProbeInfo* info, gpointer data) {
  (void)pad;
  if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_CAPS) g_atomic_int_inc((gint*)data);
  return GST_PAD_PROBE_OK;
}

/* A sink-fed chain at 320x240 leaving through `pay ! udpsink`, received by `udpsrc caps=rtp_caps ! receive !
 * appsink`, every frame compared with GStreamer's I420 conversion of the pattern sent: equal (min_psnr 0), or
 * at least min_psnr dB (a lossy codec). The src sends one caps event: its frames', no placeholder first. */
static int rtp_case(const char* pay, const char* rtp_caps, const char* receive, double min_psnr) {
  GstSample** reference = reference_i420(kRtpFrames);
  CHECK(reference != NULL);
  /* The receiver first: udpsrc binds port 0 when it opens (NULL to READY) and its `port` then says which port the
   * kernel gave; packets sent from then on wait in its socket. */
  gchar* text = g_strdup_printf("udpsrc name=in address=127.0.0.1 port=0 buffer-size=4194304 caps=\"%s\" ! %s ! "
                                "appsink name=out sync=false", rtp_caps, receive);
  GstElement* receiver = gst_parse_launch(text, NULL);
  g_free(text);
  CHECK(receiver != NULL);
  CHECK(gst_element_set_state(receiver, GST_STATE_READY) == GST_STATE_CHANGE_SUCCESS);
  GstElement* in = gst_bin_get_by_name(GST_BIN(receiver), "in");
  gint port = 0;
  g_object_get(in, "port", &port, NULL);
  gst_object_unref(in);
  CHECK(port > 0);
  CHECK(gst_element_set_state(receiver, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  char path[108];
  snprintf(path, sizeof path, "@edgetensor-gst-rtp-%d", (int)getpid());
  /* A live source paces the frames (30 fps): 30 raw I420 frames of 115 KB each in 1 s never fill udpsrc's socket. */
  text = g_strdup_printf("videotestsrc is-live=true num-buffers=%d pattern=ball ! " CAPS_SMALL " ! "
                         "edgetensorsink name=sink socket-path=%s wait-receivers=1", kRtpFrames, path);
  GstElement* producer = gst_parse_launch(text, NULL);
  g_free(text);
  text = g_strdup_printf("edgetensorsrc name=src socket-path=%s connect-timeout=10000 ! videoconvert ! "
                         "video/x-raw,format=I420 ! %s ! udpsink host=127.0.0.1 port=%d sync=false", path, pay, port);
  GstElement* sender = gst_parse_launch(text, NULL);
  g_free(text);
  CHECK(producer != NULL && sender != NULL);
  gint caps_events = 0;
  GstElement* src = gst_bin_get_by_name(GST_BIN(sender), "src");
  GstPad* src_pad = gst_element_get_static_pad(src, "src");
  gst_pad_add_probe(src_pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, count_caps, &caps_events, NULL);
  gst_object_unref(src_pad);
  gst_object_unref(src);
  CHECK(gst_element_set_state(producer, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  CHECK(gst_element_set_state(sender, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  GstElement* out = gst_bin_get_by_name(GST_BIN(receiver), "out");
  int received = 0, right = 0;
  double worst = 1000;
  while (received < kRtpFrames) {
    GstSample* sample = NULL;
    g_signal_emit_by_name(out, "try-pull-sample", (GstClockTime)(5 * GST_SECOND), &sample);
    if (sample == NULL) break; /* nothing for 5 s: a frame lost, or the sender failed */
    double psnr = 0;
    const long bad = i420_mismatches(sample, reference[received], &psnr);
    const int good = min_psnr > 0 ? bad >= 0 && psnr >= min_psnr : bad == 0;
    if (!good) fprintf(stderr, "received frame %d: %ld bytes differ from the frame sent (PSNR %.1f dB)\n", received, bad, psnr);
    if (psnr < worst) worst = psnr;
    right += good;
    ++received;
    gst_sample_unref(sample);
  }
  gst_object_unref(out);
  /* The sender's end: EOS from edgetensorsrc once the sink ended its stream. */
  GstBus* bus = gst_element_get_bus(sender);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const int sender_eos = message != NULL && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS;
  if (message != NULL) gst_message_unref(message);
  gst_object_unref(bus);
  char sender_error[256], producer_error[256], receiver_error[256];
  bus_error(sender, sender_error, sizeof sender_error);
  bus_error(producer, producer_error, sizeof producer_error);
  bus_error(receiver, receiver_error, sizeof receiver_error);
  gst_element_set_state(sender, GST_STATE_NULL);
  gst_element_set_state(producer, GST_STATE_NULL);
  gst_element_set_state(receiver, GST_STATE_NULL);
  gst_object_unref(sender);
  gst_object_unref(producer);
  gst_object_unref(receiver);
  free_samples(reference);
  printf("edgetensorsrc ! videoconvert ! I420 ! %s ! udpsink 127.0.0.1:%d -> udpsrc ! %s ! appsink: %d of %d frames "
         "received, %d %s the frame sent (worst PSNR %.1f dB); %d caps events from the src; sender EOS %d; errors: "
         "sender '%s', producer '%s', receiver '%s'\n", pay, port, receive, received, kRtpFrames, right,
         min_psnr > 0 ? "close to" : "equal to", worst, caps_events, sender_eos, sender_error, producer_error,
         receiver_error);
  CHECK(received == kRtpFrames && right == kRtpFrames && caps_events == 1);
  CHECK(sender_eos && sender_error[0] == '\0' && producer_error[0] == '\0' && receiver_error[0] == '\0');
  return 0;
}

static int case_rtp_leaves_the_machine(void) { return rtp_case("rtpvrawpay", RTP_CAPS, "rtpvrawdepay", 0); }

/* README's way for a board: VP8 (Debian's gstreamer1.0-plugins-good) over RTP, decoded frames within 30 dB of
 * the frames sent. */
static int case_vp8_rtp_leaves_the_machine(void) {
  return rtp_case("vp8enc deadline=1 target-bitrate=4000000 ! rtpvp8pay",
                  "application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96",
                  "rtpjitterbuffer ! rtpvp8depay ! vp8dec ! videoconvert ! video/x-raw,format=I420", 30.0);
}

int main(int argc, char** argv) {
  gst_init(NULL, NULL);
  static const char* const needed[] = {"edgetensorsink", "edgetensorsrc", "videotestsrc", "videoconvert", "appsink",
                                       "rtpvrawpay", "rtpvrawdepay", "udpsrc", "udpsink", "vp8enc", "vp8dec",
                                       "rtpvp8pay", "rtpvp8depay", "rtpjitterbuffer"};
  for (size_t i = 0; i < sizeof needed / sizeof *needed; ++i)
    if (gst_element_factory_find(needed[i]) == NULL) {
      fprintf(stderr, "GStreamer element %s missing (GST_PLUGIN_PATH; gstreamer1.0-plugins-base, -good)\n", needed[i]);
      return getenv("EDGETENSOR_REQUIRE_GSTREAMER") != NULL ? 1 : 77;
    }
  static const struct test_case cases[] = {
      {"sink_feeds_c_cpp_python_consumers", case_sink_feeds_c_cpp_python_consumers},
      {"rtp_leaves_the_machine", case_rtp_leaves_the_machine},
      {"vp8_rtp_leaves_the_machine", case_vp8_rtp_leaves_the_machine},
  };
  return run_cases(cases, sizeof cases / sizeof *cases, argc, argv);
}
