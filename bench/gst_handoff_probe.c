/* SPDX-License-Identifier: Apache-2.0 */
/* One side of bench/gst_handoff_bench.py: runs a GStreamer pipeline (gst-launch-1.0 syntax) that holds an element
 * named `probe` (an identity), and measures at that element's src pad.
 *
 *   edgetensor_gst_handoff_probe --stamp [--warmup N] PIPELINE...
 *     writes the CLOCK_MONOTONIC time (ns, int64, host order) into the first 8 bytes of each buffer as it passes
 *     (the producer side: just before the sink that hands the frame off);
 *   edgetensor_gst_handoff_probe --read [--frames N] [--warmup N] PIPELINE...
 *     reads that stamp as each buffer passes and records now - stamp (the consumer side: just after the source
 *     that received it); stops after N frames (shmsrc never sees EOS) or at EOS.
 *
 * Either way it stops at EOS, an error, or 10 s without a buffer once one came, and prints one JSON line:
 *   {"frames": n, "cpu_ns": c, "wall_ns": w, "start_ns": s, "latency_ns": [...]}
 * cpu_ns is the process's CPU (every thread: CLOCK_PROCESS_CPUTIME_ID) from the buffer after the first
 * `warmup` (default 10) to the last one, wall_ns the time between them, so start-up (registry, connect, the
 * first mappings) is not counted; per frame = cpu_ns / (frames - warmup - 1). start_ns: CLOCK_MONOTONIC at the
 * first of them, so other processes' CPU (a PipeWire daemon's) can be counted over the same window. Latencies:
 * the frames after the warm-up. Asserts nothing; exits 1 on an error (named on stderr). */
#define _POSIX_C_SOURCE 200809L
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct probe {
  int stamp;               /* 1: write the stamp; 0: read it */
  int warmup, max_frames;  /* max_frames 0: until EOS */
  gint frames;             /* buffers seen (atomic: the streaming thread counts, the main thread reads) */
  int64_t last_buffer_ns;  /* CLOCK_MONOTONIC of the last buffer (under lock) */
  GMutex lock;
  int64_t cpu0, cpu1, wall0, wall1;
  GArray* latencies;       /* int64 ns */
  int map_failed;
};

/* ET_PROBE_THREADS=1: each thread's CPU (schedstat run time) between the first counted buffer and the main
 * loop's end, by thread, on stderr: where a process's per-frame CPU goes. A thread that ended before (the
 * feed's) is missing there; the feed prints its own, by part (acquire, map and stamp, push). */
enum { kMaxThreads = 64 };
struct thread_cpu {
  int count;
  int tid[kMaxThreads];
  char name[kMaxThreads][20];
  long long ns[kMaxThreads];
};
static struct thread_cpu g_threads0;
static int g_thread_report;

static void snapshot_threads(struct thread_cpu* t) {
  t->count = 0;
  GDir* dir = g_dir_open("/proc/self/task", 0, NULL);
  if (dir == NULL) return;
  const char* entry;
  while ((entry = g_dir_read_name(dir)) != NULL && t->count < kMaxThreads) {
    char path[96], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", entry);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;
    long long ns = 0;
    if (fscanf(f, "%lld", &ns) != 1) ns = 0;
    fclose(f);
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry);
    f = fopen(path, "r");
    buf[0] = '\0';
    if (f != NULL) {
      if (fgets(buf, sizeof buf, f) == NULL) buf[0] = '\0';
      fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    const int i = t->count++;
    t->tid[i] = atoi(entry);
    snprintf(t->name[i], sizeof t->name[i], "%s", buf);
    t->ns[i] = ns;
  }
  g_dir_close(dir);
}

static void report_threads(int frames) {
  struct thread_cpu now;
  snapshot_threads(&now);
  for (int i = 0; i < now.count; ++i) {
    long long before = 0;
    for (int j = 0; j < g_threads0.count; ++j)
      if (g_threads0.tid[j] == now.tid[i]) before = g_threads0.ns[j];
    fprintf(stderr, "thread %d %-16s %8.1f us/frame\n", now.tid[i], now.name[i],
            (double)(now.ns[i] - before) / 1000.0 / (frames > 0 ? frames : 1));
  }
}

static GstPadProbeReturn on_buffer(GstPad* pad, GstPadProbeInfo* info, gpointer data) {
  (void)pad;
  struct probe* p = data;
  GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  const int64_t now = clock_ns(CLOCK_MONOTONIC);
  GstMapInfo map;
  if (p->stamp == 2) {
    /* --feed: the feed stamped it before the push. */
  } else if (p->stamp) {
    buffer = gst_buffer_make_writable(buffer); /* no copy: the push holds the only reference */
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    if (gst_buffer_map(buffer, &map, GST_MAP_WRITE)) {
      memcpy(map.data, &now, sizeof now);
      gst_buffer_unmap(buffer, &map);
    } else {
      p->map_failed = 1;
    }
  } else if (gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    int64_t stamp = 0;
    memcpy(&stamp, map.data, sizeof stamp);
    gst_buffer_unmap(buffer, &map);
    if (g_atomic_int_get(&p->frames) > p->warmup) g_array_append_val(p->latencies, (int64_t){now - stamp});
  } else {
    p->map_failed = 1;
  }
  const gint n = g_atomic_int_add(&p->frames, 1) + 1;
  if (n == p->warmup + 1) {
    if (g_thread_report) snapshot_threads(&g_threads0);
    p->cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    p->wall0 = now;
  }
  if (n > p->warmup + 1) {
    p->cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    p->wall1 = now;
  }
  g_mutex_lock(&p->lock);
  p->last_buffer_ns = now;
  g_mutex_unlock(&p->lock);
  return GST_PAD_PROBE_OK;
}

/* --feed N: an upstream that writes nothing. The pipeline's `appsrc name=feed` (is-live, format=time, caps set)
 * asks downstream for allocation as a GstBaseSrc's default decide_allocation does (negotiated_pool) and, at 30
 * fps, acquires each frame from that pool, writes the stamp and pushes it, so the process's CPU is the hand-off
 * alone, without videotestsrc's copy of its pattern (a cold 3 MB memmove per 1080p frame whose cost swings
 * with the machine's memory traffic). Then end of stream.
 * The push gives appsrc the only reference (gst_app_src_push_buffer), as a GstBaseSrc pushes what it filled:
 * the "push-buffer" signal keeps the caller's reference until it returns, so a downstream element making the
 * buffer writable meanwhile (identity, appsrc's do-timestamp) copied it, and the copy's memory kept the pool
 * from taking that buffer back (a new GstMemory, mapped and faulted afresh, for about one frame in three). */
struct feed {
  GstElement* appsrc;
  int frames;
  int failed;
};

/* The pool this feed writes into, as a GstBaseSrc's default decide_allocation gets it: the ALLOCATION query's
 * first pool (the sink's), else a plain GstBufferPool on its first allocator (shmsink's), configured for the
 * caps and active; NULL on failure (named on stderr). */
static GstBufferPool* negotiated_pool(GstElement* appsrc) {
  GstCaps* caps = NULL;
  g_object_get(appsrc, "caps", &caps, NULL);
  GstVideoInfo info;
  if (caps == NULL || !gst_video_info_from_caps(&info, caps)) {
    fprintf(stderr, "feed: the appsrc needs raw video caps\n");
    if (caps != NULL) gst_caps_unref(caps);
    return NULL;
  }
  GstQuery* query = gst_query_new_allocation(caps, TRUE);
  GstPad* pad = gst_element_get_static_pad(appsrc, "src");
  const gboolean answered = gst_pad_peer_query(pad, query);
  gst_object_unref(pad);
  GstBufferPool* pool = NULL;
  guint size = (guint)info.size, min = 2, max = 0;
  if (answered && gst_query_get_n_allocation_pools(query) > 0)
    gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
  if (pool == NULL) pool = gst_buffer_pool_new();
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, MAX(size, (guint)info.size), min, max);
  if (answered && gst_query_get_n_allocation_params(query) > 0) {
    GstAllocator* allocator = NULL;
    GstAllocationParams params;
    gst_query_parse_nth_allocation_param(query, 0, &allocator, &params);
    gst_buffer_pool_config_set_allocator(config, allocator, &params);
    if (allocator != NULL) gst_object_unref(allocator);
  }
  gst_query_unref(query);
  gst_caps_unref(caps);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    fprintf(stderr, "feed: the negotiated pool did not start\n");
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}

static gpointer feed_frames(gpointer data) {
  struct feed* f = data;
  GstBufferPool* pool = negotiated_pool(f->appsrc);
  GstFlowReturn flow = GST_FLOW_OK;
  if (pool == NULL) {
    f->failed = 1;
    g_signal_emit_by_name(f->appsrc, "end-of-stream", &flow);
    return NULL;
  }
  const int64_t interval = 1000000000 / 30;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  int64_t t_acquire = 0, t_map = 0, t_push = 0, t_all0 = 0, t_all1 = 0;
  for (int n = 0; n < f->frames; ++n) {
    GstBuffer* buffer = NULL;
    /* ET_PROBE_THREADS: this thread's CPU by part (4 clock reads a frame, only then). */
    const int64_t c0 = g_thread_report ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    if (n == 11) t_all0 = c0;
    if (gst_buffer_pool_acquire_buffer(pool, &buffer, NULL) != GST_FLOW_OK) {
      fprintf(stderr, "feed: acquiring frame %d from the negotiated pool failed\n", n);
      f->failed = 1;
      break;
    }
    const int64_t c1 = g_thread_report ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    GST_BUFFER_PTS(buffer) = (GstClockTime)n * (GstClockTime)interval;
    GST_BUFFER_DURATION(buffer) = (GstClockTime)interval;
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_WRITE)) {
      fprintf(stderr, "feed: mapping frame %d for its stamp failed\n", n);
      gst_buffer_unref(buffer);
      f->failed = 1;
      break;
    }
    const int64_t stamp = clock_ns(CLOCK_MONOTONIC);
    memcpy(map.data, &stamp, sizeof stamp);
    gst_buffer_unmap(buffer, &map);
    const int64_t c2 = g_thread_report ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    flow = gst_app_src_push_buffer(GST_APP_SRC(f->appsrc), buffer); /* takes our reference */
    const int64_t c3 = g_thread_report ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    if (n >= 11) {
      t_acquire += c1 - c0;
      t_map += c2 - c1;
      t_push += c3 - c2;
      t_all1 = c3;
    }
    if (flow != GST_FLOW_OK) break; /* flushing: stopped */
    next.tv_nsec += interval;
    if (next.tv_nsec >= 1000000000) {
      next.tv_nsec -= 1000000000;
      ++next.tv_sec;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  if (g_thread_report && f->frames > 12) {
    const double k = 1000.0 * (f->frames - 11);
    fprintf(stderr, "thread feed: acquire %.1f, map+stamp %.1f, push %.1f, all %.1f us/frame\n", t_acquire / k,
            t_map / k, t_push / k, (t_all1 - t_all0) / k);
  }
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  g_signal_emit_by_name(f->appsrc, "end-of-stream", &flow);
  return NULL;
}

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  struct probe p = {.warmup = 10, .stamp = -1};
  struct feed feed = {NULL, 0, 0};
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; ++i) {
    if (strcmp(argv[i], "--stamp") == 0) p.stamp = 1;
    else if (strcmp(argv[i], "--read") == 0) p.stamp = 0;
    else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) p.max_frames = atoi(argv[++i]);
    else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) p.warmup = atoi(argv[++i]);
    else if (strcmp(argv[i], "--feed") == 0 && i + 1 < argc) feed.frames = atoi(argv[++i]);
    else break;
  }
  if (p.stamp < 0 || i >= argc || p.warmup < 0 || p.max_frames < 0 || feed.frames < 0) {
    fprintf(stderr, "usage: %s (--stamp [--feed N] | --read [--frames N]) [--warmup N] PIPELINE...\n", argv[0]);
    return 2;
  }
  GError* error = NULL;
  GstElement* pipeline = gst_parse_launchv((const gchar**)&argv[i], &error);
  if (pipeline == NULL) {
    fprintf(stderr, "pipeline: %s\n", error->message);
    return 1;
  }
  GstElement* element = gst_bin_get_by_name(GST_BIN(pipeline), "probe");
  if (element == NULL) {
    fprintf(stderr, "the pipeline has no element named probe\n");
    return 1;
  }
  g_thread_report = getenv("ET_PROBE_THREADS") != NULL;
  g_mutex_init(&p.lock);
  p.latencies = g_array_new(FALSE, FALSE, sizeof(int64_t));
  GstPad* pad = gst_element_get_static_pad(element, "src");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &p, NULL);
  gst_object_unref(pad);
  gst_object_unref(element);
  GThread* feeder = NULL;
  if (feed.frames > 0) {
    if (p.stamp != 1) {
      fprintf(stderr, "--feed goes with --stamp\n");
      return 2;
    }
    p.stamp = 2;
    feed.appsrc = gst_bin_get_by_name(GST_BIN(pipeline), "feed");
    if (feed.appsrc == NULL || !GST_IS_APP_SRC(feed.appsrc)) {
      fprintf(stderr, "--feed: the pipeline has no appsrc named feed\n");
      return 1;
    }
  }
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    fprintf(stderr, "the pipeline did not start\n");
    return 1;
  }
  if (feed.frames > 0) feeder = g_thread_new("feed", feed_frames, &feed);
  GstBus* bus = gst_element_get_bus(pipeline);
  int rc = 0;
  for (;;) {
    GstMessage* message = gst_bus_timed_pop_filtered(bus, 100 * GST_MSECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (message != NULL) {
      if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
        GError* e = NULL;
        gst_message_parse_error(message, &e, NULL);
        fprintf(stderr, "error from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(message)), e->message);
        g_error_free(e);
        rc = 1;
      }
      gst_message_unref(message);
      break;
    }
    const gint frames = g_atomic_int_get(&p.frames);
    if (p.max_frames > 0 && frames >= p.max_frames) break;
    g_mutex_lock(&p.lock);
    const int64_t last = p.last_buffer_ns;
    g_mutex_unlock(&p.lock);
    if (frames > 0 && clock_ns(CLOCK_MONOTONIC) - last > 10 * (int64_t)1000000000) {
      fprintf(stderr, "no buffer for 10 s after %d\n", frames);
      rc = 1;
      break;
    }
  }
  gst_object_unref(bus);
  if (g_thread_report) report_threads(g_atomic_int_get(&p.frames) - p.warmup - 1);
  if (feeder != NULL) {
    if (rc != 0) gst_element_set_state(pipeline, GST_STATE_NULL); /* ends a push the feed waits in */
    g_thread_join(feeder);
    if (feed.failed) rc = 1;
    gst_object_unref(feed.appsrc);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  if (p.map_failed) {
    fprintf(stderr, "a buffer could not be mapped for its stamp\n");
    rc = 1;
  }
  printf("{\"frames\": %d, \"cpu_ns\": %lld, \"wall_ns\": %lld, \"start_ns\": %lld, \"latency_ns\": [",
         g_atomic_int_get(&p.frames), (long long)(p.cpu1 - p.cpu0), (long long)(p.wall1 - p.wall0), (long long)p.wall0);
  for (guint k = 0; k < p.latencies->len; ++k)
    printf("%s%lld", k == 0 ? "" : ", ", (long long)g_array_index(p.latencies, int64_t, k));
  printf("]}\n");
  g_array_free(p.latencies, TRUE);
  return rc;
}
