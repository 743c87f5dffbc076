#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 27's performance case (a): CPU per 1080p NV12 frame at 30 fps for the hand-off between two
GStreamer processes, `videotestsrc` upstream, edgetensorsink -> edgetensorsrc against shmsink -> shmsrc;
and the hand-off latency (p50, p99). Measured, never judged: prints the figures and ratios, asserts nothing.

    bench/gst_handoff_bench.py [--build build] [--frames 300] [--rounds 1] [--source videotestsrc|feed]

Each process runs edgetensor_gst_handoff_probe (bench/gst_handoff_probe.c), which holds the pipeline and an
identity named `probe`:
  baseline    videotestsrc is-live=true pattern=black ! NV12 1920x1080 30/1 ! probe ! fakesink
  producer    videotestsrc ... ! probe (stamps CLOCK_MONOTONIC into the frame) ! edgetensorsink | shmsink
  consumer    edgetensorsrc | shmsrc ! probe (reads the stamp: latency) ! fakesink
--source feed replaces videotestsrc with the probe's own appsrc (`--feed`), which takes its frames from the pool
that downstream's ALLOCATION answer gives (the sink's pool, or a pool on shmsink's allocator), as videotestsrc
does, but writes only the stamp: no 3 MB pattern copy per frame, whose cost swings with the machine's memory
traffic (twice as much between runs here) and would bury the hand-off's own cost.
Each process's CPU (all threads) is counted from its 11th frame to its last, so start-up is left out.
Hand-off CPU per frame = producer + consumer - baseline (videotestsrc's own work); latency = the consumer's
probe time minus the producer's stamp, both CLOCK_MONOTONIC on this machine: the sink's hand-off, the socket
or shm transfer and the source's push. Rounds alternate the order of the two kinds."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CAPS = "video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"


def run_probe(probe, args, env, name):
    return subprocess.Popen([probe, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, name, timeout):
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise RuntimeError(f"{name}: still running after {timeout} s: killed; stderr: {err.strip()}")
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{name}: exit {process.returncode}, no result; stderr: {err.strip()}")
    result = json.loads(lines[-1])
    result["rc"] = process.returncode
    result["stderr"] = err.strip()
    return result


def per_frame_us(result, warmup):
    counted = result["frames"] - warmup - 1
    return result["cpu_ns"] / counted / 1000 if counted > 0 else float("nan")


def wait_for(path, seconds):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {seconds} s")
        time.sleep(0.02)


def upstream(source, frames, warmup):
    """The producer's probe arguments up to (and including) the probe element, then "!"."""
    if source == "feed":
        return ["--stamp", "--feed", str(frames), "--warmup", str(warmup), "appsrc", "name=feed", "is-live=true",
                "format=time", f"caps={CAPS}", "!", "identity", "name=probe", "!"]
    return ["--stamp", "--warmup", str(warmup), "videotestsrc", "is-live=true", f"num-buffers={frames}",
            "pattern=black", "!", CAPS, "!", "identity", "name=probe", "!"]


def pair(kind, probe, env, frames, warmup, directory, source):
    """Producer and consumer of one kind; returns (producer result, consumer result)."""
    sock = os.path.join(directory, f"{kind}.sock")
    stamp = upstream(source, frames, warmup)
    read = ["--read", "--frames", str(frames), "--warmup", str(warmup)]
    if kind == "edgetensor":
        sink = ["edgetensorsink", f"socket-path={sock}", "wait-receivers=1", "sync=false"]
        source = ["edgetensorsrc", f"socket-path={sock}", "connect-timeout=20000"]
    else:
        sink = ["shmsink", f"socket-path={sock}", "wait-for-connection=true", "sync=false", "shm-size=67108864"]
        source = ["shmsrc", f"socket-path={sock}", "is-live=true", "!", CAPS]
    producer = run_probe(probe, stamp + sink, env, "producer")
    try:
        wait_for(sock, 20)
    except RuntimeError:
        producer.kill()
        raise
    consumer = run_probe(probe, read + source + ["!", "identity", "name=probe", "!", "fakesink", "sync=false"], env,
                         "consumer")
    timeout = frames / 30 + 60
    made = finish(producer, f"{kind} producer", timeout)
    got = finish(consumer, f"{kind} consumer", timeout)
    return made, got


def percentile(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the build tree (default: build)")
    parser.add_argument("--frames", type=int, default=300, help="frames per run (default 300: 10 s at 30 fps)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=10, help="frames not counted at the start (default 10)")
    parser.add_argument("--source", choices=["videotestsrc", "feed"], default="videotestsrc",
                        help="upstream: videotestsrc (fills each frame) or feed (writes the stamp only)")
    options = parser.parse_args()
    probe = os.path.join(options.build, "bench", "edgetensor_gst_handoff_probe")
    if not os.access(probe, os.X_OK):
        sys.exit(f"{probe} not built (it is built with the GStreamer plugin)")
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.abspath(os.path.join(options.build, "gst")))
    directory = tempfile.mkdtemp(prefix="et-gst-bench-")
    env["GST_REGISTRY"] = os.path.join(directory, "registry.bin")
    kinds = ["edgetensor"]
    inspect = shutil.which("gst-inspect-1.0")
    if inspect and subprocess.run([inspect, "shmsink"], env=env, capture_output=True).returncode == 0:
        kinds.append("shm")
    else:
        print("shmsink not found (Debian: gstreamer1.0-plugins-bad): edgetensor only")
    print(f"{options.frames} frames of 1080p NV12 at 30 fps per run from {options.source}, the first "
          f"{options.warmup} not counted; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    every = []  # each round's figures
    try:
        for round_ in range(options.rounds):
            base = finish(run_probe(probe, upstream(options.source, options.frames, options.warmup) +
                                    ["fakesink", "sync=false"], env, "baseline"),
                          "baseline", options.frames / 30 + 60)
            baseline = per_frame_us(base, options.warmup)
            figures = {}
            order = kinds if round_ % 2 == 0 else list(reversed(kinds))
            for kind in order:
                made, got = pair(kind, probe, env, options.frames, options.warmup, directory, options.source)
                producer_us, consumer_us = per_frame_us(made, options.warmup), per_frame_us(got, options.warmup)
                lat = got["latency_ns"]
                figures[kind] = {
                    "producer": producer_us, "consumer": consumer_us,
                    "handoff": producer_us + consumer_us - baseline,
                    "p50": percentile(lat, 50) / 1e6, "p99": percentile(lat, 99) / 1e6,
                    "frames": (made["frames"], got["frames"]), "rc": (made["rc"], got["rc"]),
                }
            every.append(figures)
            print(f"round {round_ + 1}: baseline ({options.source} ! fakesink) {baseline:.0f} us/frame")
            for kind in kinds:
                f = figures[kind]
                note = "" if f["rc"] == (0, 0) else f" (exit {f['rc'][0]}/{f['rc'][1]})"
                print(f"  {kind:10s} producer {f['producer']:7.0f} us/frame, consumer {f['consumer']:6.0f} us/frame, "
                      f"hand-off {f['handoff']:6.0f} us/frame; latency p50 {f['p50']:.3f} ms, p99 {f['p99']:.3f} ms; "
                      f"frames {f['frames'][0]} sent, {f['frames'][1]} received{note}")
            if "shm" in figures and figures["shm"]["handoff"] > 0:
                e, s = figures["edgetensor"], figures["shm"]
                print(f"  ratio edgetensor/shm: hand-off CPU {e['handoff'] / s['handoff']:.2f}, "
                      f"producer+consumer CPU {(e['producer'] + e['consumer']) / (s['producer'] + s['consumer']):.2f}, "
                      f"latency p50 {e['p50'] / s['p50']:.2f}, p99 {e['p99'] / s['p99']:.2f}")
        if len(every) > 1 and all("shm" in f for f in every):
            def median(kind, key):
                return statistics.median(f[kind][key] for f in every)
            print(f"median of {len(every)} rounds:")
            for kind in kinds:
                print(f"  {kind:10s} hand-off {median(kind, 'handoff'):6.0f} us/frame, producer "
                      f"{median(kind, 'producer'):6.0f}, consumer {median(kind, 'consumer'):6.0f}; latency p50 "
                      f"{median(kind, 'p50'):.3f} ms, p99 {median(kind, 'p99'):.3f} ms")
            ratios = sorted(f["edgetensor"]["handoff"] / f["shm"]["handoff"] for f in every if f["shm"]["handoff"] > 0)
            if ratios:
                print(f"  ratio edgetensor/shm hand-off CPU: median {statistics.median(ratios):.2f} "
                      f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
