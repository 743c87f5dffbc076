#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The cost of a Python consumer on the frame channel against the C++ one (issue 26, "Cost").

A C++ producer (et_py_channel_peer, python/tests/channel_peer.cpp) sends 1080p NV12 frames at 30 fps from a
4-buffer shm Pool over a socket pair; one consumer process per run does, for every frame: receive, the Y plane
to float32 into one buffer kept across frames, release. Two conversions, each measured on its own:
- cast (the issue's "Y plane to float32"): C++ out[i] = y[i]; numpy.copyto(out, y); torch out.copy_(y).
- scale (y / 255, as many models want it): C++ out[i] = y[i] * (1.0f / 255) in one pass; numpy.multiply(y,
  float32(1 / 255), out=out, dtype=float32) (numpy casts chunks into a buffer and multiplies from it: its
  fastest single call); torch out.copy_(y) then out.mul_(1 / 255) (two passes: cheaper than torch.mul(y,
  1 / 255, out=out)).
The C++ consumer is the same peer (--role consume), built -O3 so its loops are vectorized as numpy's and
torch's are; y = numpy.from_dlpack(plane) or torch.from_dlpack(plane); torch runs one intra-op thread. Each
consumer runs in its own process started before the producer. Runs alternate: each round runs every consumer
once per conversion, in an order rotated per round, so the machine's noise falls on all of them.

Per consumer, over every frame but the first --warmup of each run: process CPU (CLOCK_PROCESS_CPUTIME_ID,
user + sys) per frame and as % of a core; this thread's CPU in receive and in the conversion (from the plane as
a tensor to the float32 result); the rest (the Delivery's fields, the plane view, the release, the loop); minor
page faults per frame; latency (the producer's send stamp, CLOCK_MONOTONIC, to the frame's release) p50 and
p99. Prints a table per conversion, then each Python consumer's CPU over the C++ one's (also the conversion
alone and the rest) and the difference of the p50s, against the targets (at most 1.5x, within 0.5 ms): printed,
not asserted (docs/TESTING.md: performance is measured in benchmarks). Exits non-zero only on an error (a
process failed, a frame was wrong).

  python_consumer_bench.py [--seconds S] [--rounds N] [--warmup K] [--convert cast,scale] [--no-torch]
                           [--peer PATH]

--seconds: per consumer and conversion, over all rounds (default 5); --rounds: default 3; --convert: default
both. The peer comes from --peer, else
$ET_PY_CHANNEL_PEER, else build/python/tests/et_py_channel_peer beside this file's checkout; the module from
PYTHONPATH (build/python).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

WIDTH, HEIGHT, FPS, POOL = 1920, 1080, 30, 4
CPU_TARGET, P50_TARGET_MS = 1.5, 0.5
CONVERSIONS = {"cast": "Y plane to float32 (cast)", "scale": "Y plane to float32 / 255 (scale)"}


# ---- the Python consumer (a child process: --consume numpy|torch) ----------------------------------

def consume(kind, fd, warmup, conversion):
    """Receives until the end of stream, converting each frame's Y plane; prints one "result" line as the
    C++ consumer does (channel_peer.cpp)."""
    import numpy
    from edgetensor import channel

    scaled = conversion == "scale"
    if kind == "torch":
        import torch

        torch.set_num_threads(1)  # one thread, as the C++ and numpy consumers
        scale = 1.0 / 255.0
        out = torch.empty((HEIGHT, WIDTH), dtype=torch.float32)

        def convert(plane):
            out.copy_(torch.from_dlpack(plane))
            if scaled:
                out.mul_(scale)  # a second pass: cheaper than torch.mul(y, scale, out=out)
            return float(out[0, 0])
    else:
        scale = numpy.float32(1.0 / 255.0)
        out = numpy.empty((HEIGHT, WIDTH), dtype=numpy.float32)

        def convert(plane):
            if scaled:  # one call; numpy casts in chunks into a buffer and multiplies from it
                numpy.multiply(numpy.from_dlpack(plane), scale, out=out, dtype=numpy.float32)
            else:
                numpy.copyto(out, numpy.from_dlpack(plane))
            return float(out[0, 0])

    r = channel.Receiver(fd, name="py-consumer")
    os.close(fd)
    print("ready", flush=True)
    latencies = []
    seen = 0
    cpu0 = cpu1 = wall0 = wall1 = receive_ns = convert_ns = faults0 = faults1 = 0
    while True:
        r0 = time.thread_time_ns()
        d = r.receive(timeout=10)
        if seen >= warmup:
            receive_ns += time.thread_time_ns() - r0
        if d.end_of_stream:
            break
        plane = d.frame.plane(0)
        c0 = time.thread_time_ns()
        first = convert(plane)
        if seen >= warmup:
            convert_ns += time.thread_time_ns() - c0
        sequence, stamp = d.sequence, d.timestamp_ns
        if round(first * (255.0 if scaled else 1.0)) != sequence & 0xFF:
            sys.exit("frame %d: Y[0, 0] is %r, not %d%s"
                     % (sequence, first, sequence & 0xFF, " / 255" if scaled else ""))
        del d, plane  # the last holders: the frame is released
        now = time.monotonic_ns()
        seen += 1
        if seen == warmup:
            cpu0, wall0, faults0 = time.process_time_ns(), now, resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        elif seen > warmup:
            latencies.append(now - stamp)
            cpu1, wall1, faults1 = time.process_time_ns(), now, resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    r.close()
    result = {"frames": len(latencies), "cpu_ns": cpu1 - cpu0, "wall_ns": wall1 - wall0, "receive_ns": receive_ns,
              "convert_ns": convert_ns, "minflt": faults1 - faults0, "latency_ns": latencies}
    print("result " + json.dumps(result), flush=True)


# ---- the bench --------------------------------------------------------------------------------------

def find_peer(given):
    if given:
        return given
    if os.environ.get("ET_PY_CHANNEL_PEER"):
        return os.environ["ET_PY_CHANNEL_PEER"]
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "build", "python", "tests",
                        "et_py_channel_peer")


def run_once(peer, kind, conversion, seconds, warmup):
    """One producer and one consumer for `seconds`; returns the consumer's result dict."""
    from edgetensor import channel

    a, b = channel.socket_pair()
    if kind == "C++":
        cmd = [peer, "--role", "consume", "--socket-fd", str(b.fileno()), "--warmup", str(warmup), "--convert",
               conversion]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--consume", kind, "--socket-fd", str(b.fileno()),
               "--warmup", str(warmup), "--convert", conversion]
    consumer = subprocess.Popen(cmd, pass_fds=[b.fileno()], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    b.close()
    producer = None
    try:
        # The producer starts once the consumer is ready (its imports done), so no frame waits on them.
        line = consumer.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError("%s consumer did not start: %r %s" % (kind, line, consumer.stderr.read()))
        frames = max(int(seconds * FPS), warmup + 2)
        producer = subprocess.Popen([peer, "--socket-fd", str(a.fileno()), "--frames", str(frames), "--pool",
                                     str(POOL), "--width", str(WIDTH), "--height", str(HEIGHT), "--fps", str(FPS)],
                                    pass_fds=[a.fileno()], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        a.close()
        p_out, p_err = producer.communicate(timeout=seconds + 60)
        c_out, c_err = consumer.communicate(timeout=60)
    finally:
        a.close()
        for p in (producer, consumer):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    if producer.returncode != 0 or not p_out.startswith("ok sent %d dropped 0" % frames):
        raise RuntimeError("producer failed (%s): %s %s" % (producer.returncode, p_out, p_err))
    results = [ln for ln in c_out.splitlines() if ln.startswith("result ")]
    if consumer.returncode != 0 or len(results) != 1:
        raise RuntimeError("%s consumer failed (%s): %s %s" % (kind, consumer.returncode, c_out, c_err))
    return json.loads(results[0][len("result "):])


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def summarize(runs):
    frames = sum(r["frames"] for r in runs)
    lat = sorted(x for r in runs for x in r["latency_ns"])
    if frames == 0:
        raise RuntimeError("no frame counted: raise --seconds or lower --warmup")
    return {
        "frames": frames,
        "cpu_us": sum(r["cpu_ns"] for r in runs) / frames / 1e3,
        "core_pct": 100.0 * sum(r["cpu_ns"] for r in runs) / max(1, sum(r["wall_ns"] for r in runs)),
        "receive_us": sum(r["receive_ns"] for r in runs) / frames / 1e3,
        "convert_us": sum(r["convert_ns"] for r in runs) / frames / 1e3,
        "faults": sum(r["minflt"] for r in runs) / frames,
        "p50_ms": percentile(lat, 0.50) / 1e6,
        "p99_ms": percentile(lat, 0.99) / 1e6,
    }


def report(conversion, kinds, s, rounds, per_run, warmup):
    load = os.getloadavg()
    print("\n%s: 1080p NV12 at %d fps, C++ producer, %d-buffer shm Pool; %d round(s) of %.1f s per consumer, %d "
          "warm-up frames per run; load average %.2f %.2f %.2f on %d CPUs"
          % (CONVERSIONS[conversion], FPS, POOL, rounds, per_run, warmup, load[0], load[1], load[2], os.cpu_count()))
    print("%-8s %6s %10s %7s %10s %10s %7s %7s %7s %7s" % ("consumer", "frames", "CPU us/fr", "% core", "receive us",
                                                            "convert us", "rest us", "minflt", "p50 ms", "p99 ms"))
    for k in kinds:
        v = s[k]
        print("%-8s %6d %10.0f %7.2f %10.0f %10.0f %7.0f %7.1f %7.2f %7.2f"
              % (k, v["frames"], v["cpu_us"], v["core_pct"], v["receive_us"], v["convert_us"],
                 v["cpu_us"] - v["receive_us"] - v["convert_us"], v["faults"], v["p50_ms"], v["p99_ms"]))
    base = s["C++"]
    for k in kinds[1:]:
        ratio = s[k]["cpu_us"] / base["cpu_us"]
        rest = (s[k]["cpu_us"] - s[k]["convert_us"]) / max(1e-9, base["cpu_us"] - base["convert_us"])
        conv = s[k]["convert_us"] / max(1e-9, base["convert_us"])
        diff = s[k]["p50_ms"] - base["p50_ms"]
        print("%s/C++ (%s): CPU %.2fx (target <= %.1fx: %s; the conversion alone %.2fx, the rest %.2fx), p50 %+.2f ms "
              "(target within %.1f ms: %s)" % (k, conversion, ratio, CPU_TARGET, "met" if ratio <= CPU_TARGET else
                                               "NOT met", conv, rest, diff, P50_TARGET_MS,
                                               "met" if abs(diff) <= P50_TARGET_MS else "NOT met"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="per consumer and conversion, over all rounds "
                    "(default 5)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10, help="frames not counted at the start of each run")
    ap.add_argument("--convert", default="cast,scale", help="conversions to run, comma-separated: cast (the "
                    "issue's 'Y plane to float32'), scale (y / 255); default both")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--peer")
    ap.add_argument("--consume", choices=["numpy", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--socket-fd", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    conversions = args.convert.split(",")
    if any(c not in CONVERSIONS for c in conversions):
        ap.error("--convert %r: each must be one of %s" % (args.convert, ", ".join(CONVERSIONS)))
    if args.consume:
        consume(args.consume, args.socket_fd, args.warmup, conversions[0])
        return 0
    if args.seconds <= 0 or args.rounds < 1 or args.warmup < 1:
        ap.error("--seconds must be > 0, --rounds >= 1, --warmup >= 1")
    peer = find_peer(args.peer)
    if not os.access(peer, os.X_OK):
        ap.error("no C++ peer at %s (build et_py_channel_peer, or give --peer / ET_PY_CHANNEL_PEER)" % peer)
    kinds = ["C++", "numpy"]
    if os.environ.get("ET_PY_SANITIZED"):  # python/tests/CMakeLists.txt: an ASan+UBSan tree
        print("sanitized build: the figures mean nothing; torch (not instrumented) is skipped")
    elif not args.no_torch:
        try:
            import torch  # noqa: F401
            kinds.append("torch")
        except Exception as e:  # noqa: BLE001 - any import failure
            print("torch does not import (%s): its consumer is skipped" % e)
    per_run = args.seconds / args.rounds
    runs = {(c, k): [] for c in conversions for k in kinds}
    for rnd in range(args.rounds):
        for conversion in conversions:
            order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]
            for kind in order:
                runs[(conversion, kind)].append(run_once(peer, kind, conversion, per_run, args.warmup))
    for conversion in conversions:
        report(conversion, kinds, {k: summarize(runs[(conversion, k)]) for k in kinds}, args.rounds, per_run,
               args.warmup)
    print("(printed, not asserted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
