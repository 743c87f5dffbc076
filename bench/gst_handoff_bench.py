#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 27's performance case (a): CPU per 1080p NV12 frame at 30 fps for the hand-off between two
GStreamer processes, `videotestsrc` upstream, edgetensorsink -> edgetensorsrc against shmsink -> shmsrc;
and the hand-off latency (p50, p99). Measured, never judged: prints the figures and ratios, asserts nothing.

    bench/gst_handoff_bench.py [--build build] [--frames 300] [--rounds 1] [--source videotestsrc|feed]
                               [--kinds edgetensor,shm[,pipewire]]

Each process runs edgetensor_gst_handoff_probe (bench/gst_handoff_probe.c), which holds the pipeline and an
identity named `probe`:
  baseline    videotestsrc is-live=true pattern=black ! NV12 1920x1080 30/1 ! probe ! fakesink
  producer    videotestsrc ... ! probe (stamps CLOCK_MONOTONIC into the frame) ! edgetensorsink | shmsink
  consumer    edgetensorsrc | shmsrc ! probe (reads the stamp: latency) ! fakesink
The pipewire kind (off by default: --kinds edgetensor,shm,pipewire; videotestsrc only) runs
pipewiresink mode=provide -> pipewiresrc target-object=... through a private pipewire daemon and wireplumber
session manager, started in the bench's temporary directory (no D-Bus, no devices) and stopped at the end; their
CPU over the consumer's counted window (/proc/PID/task/*/schedstat, sampled every 20 ms) is part of its hand-off.
--source feed replaces videotestsrc with the probe's own appsrc (`--feed`), which takes its frames from the pool
that downstream's ALLOCATION answer gives (the sink's pool, or a pool on shmsink's allocator), as videotestsrc
does, but writes only the stamp: no 3 MB pattern copy per frame, whose cost swings with the machine's memory
traffic (twice as much between runs here) and would bury the hand-off's own cost.
Each process's CPU (all threads) is counted from its 11th frame to its last, so start-up is left out.
Hand-off CPU per frame = producer + consumer - baseline (videotestsrc's own work); latency = the consumer's
probe time minus the producer's stamp, both CLOCK_MONOTONIC on this machine: the sink's hand-off, the socket
or shm transfer and the source's push. Rounds alternate the order of the kinds."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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


def pair(kind, probe, env, frames, warmup, directory, source, pipewire=None):
    """Producer and consumer of one kind; returns (producer result, consumer result)."""
    if kind == "pipewire":
        return pipewire_pair(probe, env, frames, warmup, source, pipewire)
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


# A session manager that links streams and nothing else: Debian's WirePlumber 0.4 main and policy parts without
# the device monitors, the flatpak portal or bluetooth, which need D-Bus (wireplumber exits without one).
WIREPLUMBER_CONF = """context.properties = { log.level = 2, wireplumber.script-engine = lua-scripting }
context.spa-libs = { support.* = support/libspa-support }
context.modules = [
  { name = libpipewire-module-protocol-native }
  { name = libpipewire-module-client-node }
  { name = libpipewire-module-client-device }
  { name = libpipewire-module-adapter }
  { name = libpipewire-module-metadata }
  { name = libpipewire-module-session-manager }
]
wireplumber.components = [
  { name = libwireplumber-module-lua-scripting, type = module }
  { name = main.lua, type = config/lua }
  { name = policy.lua, type = config/lua }
]
"""
WIREPLUMBER_SHARE = "/usr/share/wireplumber"


def task_cpu_ns(pid):
    """CPU time of every thread of pid so far (ns, /proc/PID/task/*/schedstat); 0 once it is gone."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


class PipeWire:
    """A private pipewire daemon and wireplumber in directory, for the pipewire kind. start() raises RuntimeError
    naming what is missing or what did not come up; stop() ends both; cpu samples their CPU while a pair runs."""

    def __init__(self, directory):
        self.directory = directory
        self.env = {}
        self.daemons = {}  # name -> Popen
        self.samples = []  # (CLOCK_MONOTONIC ns, {name: cpu ns})
        self.sampling = None

    def start(self, seconds=10):
        missing = [name for name in ("pipewire", "wireplumber", "pw-cli") if shutil.which(name) is None]
        if missing:
            raise RuntimeError(f"pipewire kind: {', '.join(missing)} not found (Debian: pipewire-bin wireplumber "
                               "gstreamer1.0-pipewire)")
        if not os.path.isdir(os.path.join(WIREPLUMBER_SHARE, "main.lua.d")):
            raise RuntimeError(f"pipewire kind: {WIREPLUMBER_SHARE}/main.lua.d not found (WirePlumber 0.4's lua "
                               "configuration)")
        root = os.path.join(self.directory, "pipewire")
        run, config = os.path.join(root, "run"), os.path.join(root, "wireplumber")
        os.makedirs(run, mode=0o700)
        for part in ("main.lua.d", "policy.lua.d"):
            shutil.copytree(os.path.join(WIREPLUMBER_SHARE, part), os.path.join(config, part))
        with open(os.path.join(config, "wireplumber.conf"), "w") as f:
            f.write(WIREPLUMBER_CONF)
        with open(os.path.join(config, "main.lua.d", "90-enable-all.lua"), "w") as f:
            f.write('load_module("metadata")\ndefault_access.enable()\nstream_defaults.enable()\n')
        with open(os.path.join(config, "main.lua.d", "51-no-portal.lua"), "w") as f:
            f.write('default_access.properties["enable-flatpak-portal"] = false\n')
        self.env = {"XDG_RUNTIME_DIR": run, "PIPEWIRE_RUNTIME_DIR": run, "PIPEWIRE_REMOTE": "pipewire-0",
                    "XDG_CONFIG_HOME": os.path.join(root, "config"), "XDG_STATE_HOME": os.path.join(root, "state"),
                    "WIREPLUMBER_CONFIG_DIR": config}
        env = dict(os.environ, **self.env)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        self.env_all = env
        for name in ("pipewire", "wireplumber"):
            log = open(os.path.join(root, f"{name}.log"), "w")
            self.daemons[name] = subprocess.Popen([name], env=env, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL)
            log.close()
            deadline = time.monotonic() + seconds
            while not self.ready(name):
                if self.daemons[name].poll() is not None or time.monotonic() > deadline:
                    state = (f"exited with {self.daemons[name].returncode}" if self.daemons[name].poll() is not None
                             else f"not up within {seconds} s")
                    with open(os.path.join(root, f"{name}.log")) as f:
                        tail = f.read()[-600:].strip()
                    raise RuntimeError(f"pipewire kind: {name} {state}; its log: {tail}")
                time.sleep(0.05)

    def ready(self, name):
        if name == "pipewire":
            return os.path.exists(os.path.join(self.env["XDG_RUNTIME_DIR"], "pipewire-0"))
        return "WirePlumber" in self.pw_cli("ls", "Client")

    def pw_cli(self, *args):
        done = subprocess.run(["pw-cli", *args], env=self.env_all, capture_output=True, text=True, timeout=10)
        return done.stdout

    def wait_for_node(self, node, seconds):
        deadline = time.monotonic() + seconds
        while f'node.name = "{node}"' not in self.pw_cli("ls", "Node"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"pipewire node {node} did not appear within {seconds} s")
            time.sleep(0.05)

    def sample(self):
        self.samples.append((time.monotonic_ns(), {n: task_cpu_ns(p.pid) for n, p in self.daemons.items()}))

    def begin(self):
        """Samples the daemons' CPU every 20 ms until end()."""
        self.samples = []
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                self.sample()
                stop.wait(0.02)
        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self.sampling = (stop, thread)

    def end(self):
        stop, thread = self.sampling
        stop.set()
        thread.join()
        self.sample()

    def cpu_between(self, t0, t1):
        """Each daemon's CPU (ns) between CLOCK_MONOTONIC t0 and t1, interpolated between the samples."""
        def at(t, name):
            before = [s for s in self.samples if s[0] <= t]
            after = [s for s in self.samples if s[0] >= t]
            if not before or not after:
                raise RuntimeError("the daemons' CPU was not sampled over the consumer's window")
            (ta, a), (tb, b) = before[-1], after[0]
            return a[name] if tb == ta else a[name] + (b[name] - a[name]) * (t - ta) / (tb - ta)
        return {name: at(t1, name) - at(t0, name) for name in self.daemons}

    def stop(self):
        for process in self.daemons.values():
            if process.poll() is None:
                process.terminate()
        for process in self.daemons.values():
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def pipewire_pair(probe, env, frames, warmup, source, pipewire):
    """pipewiresink mode=provide (a Video/Source node, driving the graph) -> pipewiresrc linked to it by
    wireplumber; the consumer starts once the node is there (wireplumber drops a stream whose target is not)."""
    node = f"et-bench-{os.getpid()}"
    env = dict(env, **pipewire.env)
    sink = ["pipewiresink", "mode=provide", "sync=false",
            f"stream-properties=props,node.name={node},media.class=Video/Source,media.type=Video"]
    source_ = ["pipewiresrc", f"target-object={node}", "stream-properties=props,media.type=Video"]
    read = ["--read", "--frames", str(frames), "--warmup", str(warmup)]
    pipewire.begin()
    try:
        producer = run_probe(probe, upstream(source, frames, warmup) + sink, env, "producer")
        try:
            pipewire.wait_for_node(node, 20)
        except RuntimeError:
            producer.kill()
            raise
        consumer = run_probe(probe, read + source_ + ["!", "identity", "name=probe", "!", "fakesink", "sync=false"],
                             env, "consumer")
        timeout = frames / 30 + 60
        made = finish(producer, "pipewire producer", timeout)
        got = finish(consumer, "pipewire consumer", timeout)
    finally:
        pipewire.end()
    got["daemons_ns"] = pipewire.cpu_between(got["start_ns"], got["start_ns"] + got["wall_ns"])
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
    parser.add_argument("--kinds", default="edgetensor,shm",
                        help="comma-separated, of edgetensor, shm, pipewire (default edgetensor,shm; pipewire "
                             "starts a private pipewire daemon and wireplumber)")
    options = parser.parse_args()
    known = ("edgetensor", "shm", "pipewire")
    kinds = [kind for kind in options.kinds.split(",") if kind]
    unknown = [kind for kind in kinds if kind not in known]
    if unknown or not kinds or len(set(kinds)) != len(kinds):
        sys.exit(f"--kinds {options.kinds}: each of {', '.join(known)} at most once, at least one")
    if "pipewire" in kinds and options.source == "feed":
        sys.exit("--kinds pipewire goes with --source videotestsrc: pipewiresink (0.3.65) offers one pool of its "
                 "own to every ALLOCATION query, without a size; the feed's appsrc makes its own allocation before "
                 "it has caps and starts that pool at size 0, before the sink connects its stream, and the pool "
                 "then hands out frames of 0 bytes")
    probe = os.path.join(options.build, "bench", "edgetensor_gst_handoff_probe")
    if not os.access(probe, os.X_OK):
        sys.exit(f"{probe} not built (it is built with the GStreamer plugin)")
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.abspath(os.path.join(options.build, "gst")))
    directory = tempfile.mkdtemp(prefix="et-gst-bench-")
    env["GST_REGISTRY"] = os.path.join(directory, "registry.bin")
    inspect = shutil.which("gst-inspect-1.0")

    def have(element):
        return inspect and subprocess.run([inspect, element], env=env, capture_output=True).returncode == 0
    if "shm" in kinds and not have("shmsink"):
        print("shmsink not found (Debian: gstreamer1.0-plugins-bad): shm left out")
        kinds.remove("shm")
    pipewire = None
    try:
        if "pipewire" in kinds:
            if not (have("pipewiresink") and have("pipewiresrc")):
                raise RuntimeError("pipewire kind: pipewiresink or pipewiresrc not found (Debian: "
                                   "gstreamer1.0-pipewire)")
            pipewire = PipeWire(directory)
            pipewire.start()
        if not kinds:
            raise RuntimeError("no kind left to measure")
        return measure(options, kinds, probe, env, directory, pipewire)
    except RuntimeError as error:
        sys.exit(str(error))
    finally:
        if pipewire is not None:
            pipewire.stop()
        shutil.rmtree(directory, ignore_errors=True)


def measure(options, kinds, probe, env, directory, pipewire):
    print(f"{options.frames} frames of 1080p NV12 at 30 fps per run from {options.source}, the first "
          f"{options.warmup} not counted; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    every = []  # each round's figures
    for round_ in range(options.rounds):
        base = finish(run_probe(probe, upstream(options.source, options.frames, options.warmup) +
                                ["fakesink", "sync=false"], env, "baseline"),
                      "baseline", options.frames / 30 + 60)
        baseline = per_frame_us(base, options.warmup)
        figures = {}
        order = kinds if round_ % 2 == 0 else list(reversed(kinds))
        for kind in order:
            made, got = pair(kind, probe, env, options.frames, options.warmup, directory, options.source, pipewire)
            producer_us, consumer_us = per_frame_us(made, options.warmup), per_frame_us(got, options.warmup)
            daemons = {name: per_frame_us(dict(got, cpu_ns=ns), options.warmup)
                       for name, ns in got.get("daemons_ns", {}).items()}
            lat = got["latency_ns"]
            figures[kind] = {
                "producer": producer_us, "consumer": consumer_us, "daemons": daemons,
                "handoff": producer_us + consumer_us + sum(daemons.values()) - baseline,
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
            if f["daemons"]:
                total = sum(f["daemons"].values())
                parts = ", ".join(f"{name} {us:.0f}" for name, us in f["daemons"].items())
                print(f"  {'':10s} daemons {total:6.0f} us/frame ({parts}), in the hand-off above; without them "
                      f"{f['handoff'] - total:6.0f} us/frame")
        for other in ("shm", "pipewire"):
            if other in figures and "edgetensor" in figures and figures[other]["handoff"] > 0:
                e, o = figures["edgetensor"], figures[other]
                print(f"  ratio edgetensor/{other}: hand-off CPU {e['handoff'] / o['handoff']:.2f}, "
                      f"producer+consumer CPU {(e['producer'] + e['consumer']) / (o['producer'] + o['consumer']):.2f}"
                      f", latency p50 {e['p50'] / o['p50']:.2f}, p99 {e['p99'] / o['p99']:.2f}")
    if len(every) > 1:
        def median(kind, key):
            return statistics.median(f[kind][key] for f in every)
        print(f"median of {len(every)} rounds:")
        for kind in kinds:
            daemons = ""
            if every[0][kind]["daemons"]:
                daemons = (f", daemons {statistics.median(sum(f[kind]['daemons'].values()) for f in every):.0f} "
                           "(in the hand-off)")
            print(f"  {kind:10s} hand-off {median(kind, 'handoff'):6.0f} us/frame, producer "
                  f"{median(kind, 'producer'):6.0f}, consumer {median(kind, 'consumer'):6.0f}{daemons}; latency p50 "
                  f"{median(kind, 'p50'):.3f} ms, p99 {median(kind, 'p99'):.3f} ms")
        for other in ("shm", "pipewire"):
            if other not in kinds or "edgetensor" not in kinds:
                continue
            ratios = sorted(f["edgetensor"]["handoff"] / f[other]["handoff"] for f in every
                            if f[other]["handoff"] > 0)
            if ratios:
                print(f"  ratio edgetensor/{other} hand-off CPU: median {statistics.median(ratios):.2f} "
                      f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
