# SPDX-License-Identifier: Apache-2.0
"""edgetensor.channel: socket pairs and named sockets, Sender and Receiver in one process and across two
(a C++ producer and a Python one), pixels checked, frames held through a 50 ms "inference" never
overwritten, end of stream, receive_latest, the drop policy, asyncio, Ctrl-C, and bad input."""

import asyncio
import errno
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy
import pytest

import edgetensor as et
from edgetensor import channel

from conftest import open_fds, settle

W, H = 64, 48


def shm_pool(max_buffers=2, shape=(4, 8)):
    return et.Pool.create(shape, "uint8", name="py-chan", max_buffers=max_buffers, memory="shm")


def pair(**sender_options):
    a, b = channel.socket_pair()
    with a, b:  # each end is duplicated: these copies can go at once
        return channel.Sender(a, name="t", **sender_options), channel.Receiver(b, name="t")


def frame_bytes(seq, n):
    """What channel_peer.cpp writes into frame `seq`: byte o = (13 o + seq) & 0xff."""
    return ((numpy.arange(n, dtype=numpy.int64) * 13 + seq) & 0xFF).astype(numpy.uint8)


def receive_frame(r, timeout=5.0):
    d = r.receive(timeout=timeout)
    assert not d.end_of_stream
    return d


# ---- one process ---------------------------------------------------------------------------------

def test_tensor_round_trip_with_timing_fields_and_release_to_the_pool():
    s, r = pair()
    p = shm_pool()
    t = s.acquire(p, timeout=1)
    with t.map_write() as m:
        numpy.asarray(m)[:] = numpy.arange(32, dtype=numpy.uint8).reshape(4, 8)
    assert s.send(t, pts_ns=-5, duration_ns=33, flags=7) == 0
    assert s.send(t, sequence=10, timestamp_ns=123) == 10
    del t, m
    d0 = r.receive(timeout=1)
    d1 = r.receive(timeout=1)
    assert (d0.sequence, d0.pts_ns, d0.duration_ns, d0.flags, d0.end_of_stream) == (0, -5, 33, 7, False)
    assert (d1.sequence, d1.timestamp_ns, d1.pts_ns, d1.duration_ns, d1.frame) == (10, 123, None, None, None)
    assert d0.timestamp_ns > 0
    assert numpy.asarray(d0.tensor).tolist() == numpy.arange(32).reshape(4, 8).tolist()
    assert r.stats().frames_received == 2 and r.stats().frames_missing == 9
    assert "sequence 10" in repr(d1)
    assert p.stats().in_use == 1  # the sender holds the buffer while the receiver holds the frames
    del d0, d1
    settle()
    s.drain(timeout=2)  # both released: the pool has its buffer back
    assert p.stats().in_use == 0 and s.stats().releases == 2
    s.close()
    with pytest.raises(et.UnavailableError):
        r.receive(timeout=1)


def test_frame_with_planes_travels():
    s, r = pair()
    layout = et.ImageLayout.make(W, H, "nv12")
    f = et.Frame.allocate(layout, memory="shm")
    y, uv = f.planes
    assert (y.shape, uv.shape) == ((H, W), (H // 2, W // 2, 2))
    with y.map_write() as m:
        numpy.asarray(m)[:] = 16
    with uv.map_write() as m:
        numpy.asarray(m)[:] = 128
    s.send_frame(f)
    d = r.receive(timeout=1)
    assert d.tensor is None and d.frame is not None
    g = d.frame
    assert g.layout == layout and g.layout.format == et.PixelFormat.NV12
    assert g.layout.planes[1].offset_bytes == layout.planes[1].offset_bytes
    assert g.layout.planes[0].row_stride_bytes == layout.planes[0].row_stride_bytes
    assert (numpy.asarray(g.plane(0)) == 16).all() and (numpy.asarray(g.planes[1]) == 128).all()


def test_the_channel_owns_a_duplicate_of_the_socket():
    t = et.allocate((4,), "uint8", memory="shm")
    a, b = channel.socket_pair()
    before = open_fds()
    s = channel.Sender(a.fileno())  # an int: duplicated, the caller still owns it
    r = channel.Receiver(b)
    a.close()
    b.close()  # closing the caller's copies changes nothing
    s.send(t)
    assert r.receive(timeout=1).sequence == 0
    assert r.fileno() >= 0
    r.close()
    s.close()
    settle()
    assert open_fds() == before - 2  # a and b; the channel closed its duplicates and its import
    assert r.closed and s.closed and r.fileno() == -1
    with pytest.raises(et.FailedPreconditionError, match="Receiver is closed"):
        r.receive(timeout=0)
    with pytest.raises(et.FailedPreconditionError, match="closed"):
        s.send(t)


def test_end_of_stream_is_not_an_error_and_repeats_and_drain_does_not_stall():
    s, r = pair()
    p = shm_pool(max_buffers=3)
    for _ in range(3):
        s.send(s.acquire(p, timeout=1))
    held = [r.receive(timeout=1) for _ in range(2)]  # a consumer that keeps its last frames
    s.end_stream()
    s.end_stream()  # again: nothing
    with pytest.raises(et.FailedPreconditionError, match="ended"):
        s.send(et.allocate((4,), "uint8", memory="shm"))
    with pytest.raises(et.TimeoutError, match="not released by the receiver"):
        s.acquire(p, timeout=0.06)  # all three out: the error names the channel's frames
    assert r.receive(timeout=1).sequence == 2
    end = r.receive(timeout=1)
    assert end.end_of_stream and end.sequence == 3 and end.tensor is None
    assert r.receive(timeout=0).end_of_stream and r.stats().end_of_stream
    del held, end
    settle()
    start = time.monotonic()
    s.drain(timeout=5)
    assert time.monotonic() - start < 1


def test_receive_latest_skips_to_the_newest():
    s, r = pair()
    p = shm_pool(max_buffers=4)
    for _ in range(4):
        s.send(s.acquire(p, timeout=1))
    time.sleep(0.05)
    d = r.receive_latest(timeout=1)
    assert d.sequence == 3 and r.stats().frames_skipped == 3
    settle()
    deadline = time.monotonic() + 2
    while p.stats().in_use != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert p.stats().in_use == 1  # the three skipped are back in the pool at once


def test_drop_policy_counts_drops_and_never_waits():
    s, r = pair(policy="drop", max_frames_out=1)
    p = shm_pool(max_buffers=3)  # max_frames_out x 1 + the one being filled + one spare
    start = time.monotonic()
    for _ in range(5):
        t = s.acquire(p, timeout=1)
        s.send(t)
        del t
    assert time.monotonic() - start < 0.5
    assert s.stats().frames_dropped == 4 and s.stats().frames_sent == 1
    d = r.receive(timeout=1)
    assert d.sequence == 0
    del d
    settle()
    s.drain(timeout=2)
    s.send(s.acquire(p, timeout=1))  # released: the receiver gets frames again
    d = r.receive(timeout=1)
    assert d.sequence == 5 and r.stats().frames_missing == 4
    assert channel.Sender(socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)[0],
                          policy=channel.ReceiverPolicy.DROP).stats().frames_dropped == 0


def test_drain_times_out_naming_the_whole_wait():
    s, r = pair()
    s.send(et.allocate((4,), "uint8", memory="shm"))
    d = r.receive(timeout=1)
    start = time.monotonic()
    with pytest.raises(et.TimeoutError, match="1 frame buffer still out after 120 ms"):
        s.drain(timeout=0.12)
    assert time.monotonic() - start >= 0.11
    with pytest.raises(et.BusyError):
        s.drain(timeout=0)
    with pytest.raises(et.TimeoutError, match="no frame within 130 ms"):
        r.receive(timeout=0.13)
    del d


def test_a_send_waits_in_slices_for_a_release_and_times_out_naming_send_timeout():
    """A send_timeout past 50 ms waits in slices (so Ctrl-C ends it, below): a release within it lets the
    send through; none raises TimeoutError naming the caller's send_timeout, not a slice's."""
    s, r = pair(send_timeout=0.12, max_frames_out=1)
    s.send(et.allocate((4,), "uint8", memory="shm"))
    start = time.monotonic()
    with pytest.raises(et.TimeoutError, match=r"max_frames_out 1\) \(waited send_timeout, 120 ms\)") as e:
        s.send(et.allocate((4,), "uint8", memory="shm"))
    assert time.monotonic() - start >= 0.11 and e.value.errno == errno.ETIMEDOUT
    assert s.stats().frames_sent == 1 and s.status() is None  # nothing sent, the channel open
    s2, r2 = pair(send_timeout=5, max_frames_out=1)
    s2.send(et.allocate((4,), "uint8", memory="shm"))
    held = [r2.receive(timeout=1)]

    def release_later():
        time.sleep(0.2)  # the send below waits through a few slices first
        held.clear()  # the Delivery's last holder: released from this thread

    releaser = threading.Thread(target=release_later)
    start = time.monotonic()
    releaser.start()
    assert s2.send(et.allocate((4,), "uint8", memory="shm")) == 1
    assert 0.15 <= time.monotonic() - start < 4
    releaser.join()
    assert r2.receive(timeout=1).sequence == 1 and s2.stats().frames_sent == 2


def test_a_held_frame_keeps_its_buffer_through_every_holder(torch):
    s, r = pair()
    p = shm_pool(max_buffers=1)
    s.send(s.acquire(p, timeout=1))
    d = r.receive(timeout=1)
    holders = [d.tensor.reshape(-1), numpy.from_dlpack(d.tensor), torch.from_dlpack(d.tensor), d.tensor.map_read()]
    del d
    while holders:  # each holder alone keeps the frame out; the last one gone releases it
        settle()
        assert s.stats().frames_out == 1
        with pytest.raises(et.BusyError):
            p.try_acquire()
        holders.pop()
    settle()
    s.drain(timeout=2)
    assert p.stats().in_use == 0 and s.stats().frames_out == 0


# ---- two processes -------------------------------------------------------------------------------

def cpp_peer(sock, *args):
    exe = os.environ["ET_PY_CHANNEL_PEER"]
    fd = sock.fileno()
    proc = subprocess.Popen([exe, "--socket-fd", str(fd), *map(str, args)], pass_fds=[fd],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sock.close()  # the child has it now: its death ends the channel here
    return proc


def consume_holding_two(r):
    """Receives until the end of stream, keeping the last two frames through each 50 ms "inference" and
    checking their bytes before and after it. Returns the sequences seen; holds nothing when it returns."""
    held = []
    sequences = []
    while True:
        d = r.receive(timeout=10)
        if d.end_of_stream:
            return sequences
        f = d.frame
        assert f.layout.format == et.PixelFormat.NV12 and (f.layout.width, f.layout.height) == (W, H)
        n = f.buffer(0).nbytes
        whole = numpy.asarray(f.buffer(0))
        assert (whole == frame_bytes(d.sequence, n)).all(), "frame %d" % d.sequence
        y = numpy.asarray(f.plane(0))  # the Y plane as a model takes it, through DLPack
        off, stride = f.layout.planes[0].offset_bytes, f.layout.planes[0].row_stride_bytes
        assert (y == frame_bytes(d.sequence, n)[off:off + H * stride].reshape(H, stride)[:, :W]).all()
        x = y.astype(numpy.float32) / 255.0  # the conversion a model does
        assert x.shape == (H, W) and (d.pts_ns, d.duration_ns, d.flags) == (1000 * d.sequence, 33, d.sequence)
        held = (held + [(d.sequence, whole)])[-2:]  # the arrays alone hold their frames
        sequences.append(d.sequence)
        del d, f, whole, y, x
        time.sleep(0.05)  # "inference"
        for seq, arr in held:
            assert (arr == frame_bytes(seq, n)).all(), "frame %d overwritten while held" % seq


def test_cpp_producer_frames_held_during_inference_are_never_overwritten():
    """The trial of issue 26: a camera producer with a small Pool (3 buffers) and a Python consumer that
    keeps its last two frames through a 50 ms "inference" and re-checks their bytes afterwards."""
    a, b = channel.socket_pair()
    r = channel.Receiver(b, name="consumer")
    b.close()
    proc = cpp_peer(a, "--frames", 12, "--pool", 3, "--width", W, "--height", H)
    sequences = consume_holding_two(r)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out.startswith("ok sent 12 dropped 0")
    assert sequences == list(range(12))


PY_PRODUCER = textwrap.dedent("""
    import sys, numpy, edgetensor as et
    from edgetensor import channel
    fd = int(sys.argv[1])
    s = channel.Sender(fd, name="py-cam", send_timeout=10)
    pool = et.Pool.create((32, 32), "uint8", name="py-cam", max_buffers=2, memory="shm")
    for i in range(8):
        t = s.acquire(pool, timeout=10)
        with t.map_write() as m:
            numpy.asarray(m)[:] = i * 3 + 1
        s.send(t, pts_ns=i)
        del t, m
    s.end_stream()
    s.drain(timeout=10)
    print("ok", s.stats().frames_sent)
""")


def test_python_producer_in_another_process():
    a, b = channel.socket_pair()
    proc = subprocess.Popen([sys.executable, "-c", PY_PRODUCER, str(a.fileno())], pass_fds=[a.fileno()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    a.close()
    got = []
    with channel.Receiver(b) as r:
        b.close()
        while True:
            d = r.receive(timeout=20)
            if d.end_of_stream:
                break
            a_ = numpy.asarray(d.tensor)
            assert a_.shape == (32, 32) and (a_ == d.sequence * 3 + 1).all() and d.pts_ns == d.sequence
            got.append(d.sequence)
            del d, a_
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out.strip() == "ok 8" and got == list(range(8))


def test_the_sender_dying_ends_the_channel():
    a, b = channel.socket_pair()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"], pass_fds=[a.fileno()])
    r = channel.Receiver(b)
    a.close()
    b.close()
    proc.wait()
    with pytest.raises(et.UnavailableError, match="closed the channel or died"):
        r.receive(timeout=5)
    with pytest.raises(et.Error):
        r.status()


# ---- named sockets -------------------------------------------------------------------------------

def test_listener_connect_accept_and_stats():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cam.sock")
        with channel.Listener(path, mode=0o600) as ls:
            assert ls.path == path and ls.fileno() >= 0
            assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
            c = channel.connect(path, timeout=1)
            assert isinstance(c, socket.socket) and c.type == socket.SOCK_SEQPACKET
            peer = ls.accept(timeout=1)
            s = channel.Sender(peer)
            r = channel.Receiver(c)
            peer.close()
            c.close()
            s.send(et.allocate((4,), "uint8", memory="shm"))
            assert r.receive(timeout=1).sequence == 0
            st = ls.stats()
            assert (st.accepted, st.refused, st.last_refused) == (1, 0, None)
            with pytest.raises(et.BusyError):
                ls.accept(timeout=0)
            with pytest.raises(et.TimeoutError, match="within 80 ms"):
                ls.accept(timeout=0.08)
            with pytest.raises(et.AlreadyExistsError):
                channel.Listener(path)
        assert not os.path.exists(path)  # removed at close
        with pytest.raises(et.NotFoundError):
            channel.connect(path)
        abstract = "@edgetensor-test-%d" % os.getpid()
        with channel.Listener(abstract, allow=channel.AllowRule(same_uid=True, uids=[0])) as ls:
            c = channel.connect(abstract)
            ls.accept(timeout=1).close()
            c.close()


def test_a_refused_receiver_is_told_why():
    """A listener whose allow rule refuses this process tells the peer why before closing (docs/WIRE.md,
    refuse): receive raises PermissionDeniedError (a PermissionError) naming the uid and the path."""
    path = "@et-refuse-%d" % os.getpid()
    with channel.Listener(path, allow=channel.AllowRule(same_uid=False)) as ls:
        c = channel.connect(path)
        r = channel.Receiver(c)
        c.close()
        with pytest.raises(et.TimeoutError):
            ls.accept(timeout=0.05)  # refuses the peer, then finds no allowed one
        assert ls.stats().refused == 1
        with pytest.raises(et.PermissionDeniedError,
                           match=r"refused this end and closed the channel: uid %d \(gid %d\) is not allowed to "
                                 r"connect to '%s'" % (os.geteuid(), os.getegid(), path)) as caught:
            r.receive(timeout=1)
        assert isinstance(caught.value, PermissionError)


# ---- asyncio -------------------------------------------------------------------------------------

def test_connect_to_a_full_queue_times_out_as_every_wait():
    """A listener that does not accept: once its queue is full, connect waits `timeout` and raises
    edgetensor.TimeoutError (a built-in TimeoutError), BusyError for 0, as accept and receive do."""
    with channel.Listener("@et-full-queue-%d" % os.getpid(), backlog=1) as ls:
        queued = []
        with pytest.raises(et.TimeoutError, match="accept queue stayed full for 60 ms") as e:
            for _ in range(8):  # Linux queues backlog + 1 peers
                queued.append(channel.connect(ls.path, timeout=0.06))
        assert 1 <= len(queued) < 8 and e.value.errno == errno.ETIMEDOUT and isinstance(e.value, TimeoutError)
        with pytest.raises(et.BusyError):
            channel.connect(ls.path, timeout=0)
        ls.accept(timeout=1).close()  # room for one more
        queued.append(channel.connect(ls.path, timeout=1))
        for c in queued:
            c.close()


def test_asyncio_receive_uses_the_event_loop():
    s, r = pair()
    p = shm_pool(max_buffers=2)

    def produce():
        for _ in range(3):
            time.sleep(0.03)
            s.send(s.acquire(p, timeout=2))
        s.end_stream()

    async def main():
        ticks = 0

        async def ticker():  # the loop keeps running while receives wait
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        tick = asyncio.create_task(ticker())
        th = threading.Thread(target=produce)
        th.start()
        seqs = []
        while True:
            d = await r.receive_async(timeout=5)
            if d.end_of_stream:
                break
            seqs.append(d.sequence)
            del d
        th.join()
        s2, r2 = pair()
        with pytest.raises(et.TimeoutError, match="channel 't': no frame within 50 ms"):
            await r2.receive_async(timeout=0.05)
        tick.cancel()
        return seqs, ticks

    seqs, ticks = asyncio.run(main())
    assert seqs == [0, 1, 2] and ticks >= 5


def test_asyncio_receive_latest_one_waiter_and_cancel():
    s, r = pair()

    async def main():
        first = asyncio.create_task(r.receive_async())
        await asyncio.sleep(0.02)
        with pytest.raises(RuntimeError, match="another receive_async"):
            await r.receive_async(timeout=1)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not r._awaiting  # the reader is gone with the cancelled wait
        for _ in range(3):
            s.send(et.allocate((4,), "uint8", memory="shm"))
        await asyncio.sleep(0.05)
        d = await r.receive_latest_async(timeout=1)
        return d.sequence

    assert asyncio.run(main()) == 2
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        asyncio.run(r.receive_async(timeout=-1))


# ---- Ctrl-C --------------------------------------------------------------------------------------

CTRL_C = textwrap.dedent("""
    import sys, time, edgetensor as et
    from edgetensor import channel
    what = sys.argv[1]
    a, b = channel.socket_pair()
    s, r = channel.Sender(a), channel.Receiver(b)
    pool = et.Pool.create((4,), "uint8", max_buffers=1, memory="shm")
    held = pool.acquire()
    if what == "drain":
        s.send(et.allocate((4,), "uint8", memory="shm"))
        d = r.receive(timeout=1)
    if what == "send":  # the receiver holds its one frame: the next send waits for it, without bound
        c, d = channel.socket_pair()
        s, r = channel.Sender(c, send_timeout=None, max_frames_out=1), channel.Receiver(d)
        s.send(et.allocate((4,), "uint8", memory="shm"))
    if what == "publisher_send":  # its one receiver holds its one frame, no bound: the next send waits for it
        c, d = channel.socket_pair()
        publisher = channel.Publisher(send_timeout=None, max_frames_out=1)
        publisher.add_receiver(c)
        r = channel.Receiver(d)
        publisher.send(et.allocate((4,), "uint8", memory="shm"))
        first = r.receive(timeout=1)
    def connect_to_a_full_queue():  # a listener that never accepts: connect waits for room, without bound
        ls = channel.Listener("@et-ctrl-c-full-%d" % id(s), backlog=1)
        queued = []
        try:
            while True:
                queued.append(channel.connect(ls.path, timeout=0))
        except et.BusyError:
            pass
        channel.connect(ls.path, timeout=None)
    calls = {"receive": lambda: r.receive(),
             "receive_latest": lambda: r.receive_latest(timeout=60),
             "pool": lambda: pool.acquire(),
             "sender_acquire": lambda: s.acquire(pool, timeout=60),
             "drain": lambda: s.drain(),
             "send": lambda: s.send(et.allocate((4,), "uint8", memory="shm")),
             "publisher_send": lambda: publisher.send(et.allocate((4,), "uint8", memory="shm")),
             "accept": lambda: channel.Listener("@et-ctrl-c-%d" % id(s)).accept(),
             "connect": connect_to_a_full_queue}
    print("waiting", flush=True)
    start = time.monotonic()
    try:
        calls[what]()
    except KeyboardInterrupt:
        print("interrupted %.3f" % (time.monotonic() - start), flush=True)
    if what == "publisher_send":  # in step: the channel stays open, and the next frame gets through
        del first
        r.flush()
        result = publisher.send(et.allocate((4,), "uint8", memory="shm"))
        print("after: delivered %d, sequence %d" % (result.delivered, r.receive(timeout=1).sequence), flush=True)
""")


@pytest.mark.parametrize("what", ["receive", "receive_latest", "pool", "sender_acquire", "drain", "send", "accept",
                                  "connect", "publisher_send"])
def test_ctrl_c_interrupts_a_waiting_call(what):
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C, what], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.2)  # inside the wait
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        proc.kill()  # a wait Ctrl-C did not end ("pool", "send" and "connect" before their fixes) has no bound
        proc.wait()
    assert proc.returncode == 0, err
    assert out.startswith("interrupted"), (out, err)
    assert took < 1.0  # KeyboardInterrupt within a slice (50 ms), plus the interpreter's exit
    if what == "publisher_send":
        assert "after: delivered 1, sequence 2" in out, (out, err)  # frame 1 was stopped: its sequence is used


# ---- bad input -----------------------------------------------------------------------------------

def test_bad_input_raises_clear_errors():
    with pytest.raises(TypeError, match="fd must be an int or have fileno"):
        channel.Receiver("not a socket")
    with pytest.raises(et.InvalidArgumentError, match="not an open socket"):
        channel.Sender(-1)
    a, b = channel.socket_pair()
    fd = a.fileno()
    a.close()
    with pytest.raises(et.Error, match="Sender"):
        channel.Sender(fd)  # a closed fd
    x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with x, y, pytest.raises(et.InvalidArgumentError, match="SEQPACKET|STREAM|stream"):
        channel.Receiver(x)
    with tempfile.TemporaryFile() as f:
        with pytest.raises(et.InvalidArgumentError):
            channel.Receiver(f)
    with pytest.raises(et.InvalidArgumentError, match="policy"):
        channel.Sender(b, policy="sometimes")
    with pytest.raises(TypeError, match="policy"):
        channel.Sender(b, policy=3)
    with pytest.raises(et.InvalidArgumentError, match="max_buffers"):
        channel.Receiver(b, max_buffers=0)
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        channel.Sender(b, send_timeout=-1)
    s, r = pair()
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        r.receive(timeout=-0.5)
    with pytest.raises(TypeError, match="timeout"):
        r.receive(timeout="soon")
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        s.drain(timeout=-1)
    with pytest.raises(et.UnsupportedError):
        s.send(et.allocate((4,), "uint8", memory="heap"))
    with pytest.raises(et.InvalidArgumentError, match="duration"):
        s.send(et.allocate((4,), "uint8", memory="shm"), duration_ns=-1)
    with pytest.raises(TypeError):
        s.send(numpy.zeros(4))
    r.status()  # open: None
    s.close()
    with pytest.raises(et.FailedPreconditionError, match="Sender 't' is closed"):
        s.status()
    with pytest.raises(et.InvalidArgumentError, match="longer|sun_path"):
        channel.Listener("/tmp/" + "x" * 200)
    b.close()


@pytest.mark.parametrize("call, message", [
    (lambda b, s, t, p: channel.Sender(b, max_buffers=-1), r"max_buffers = -1 is outside 0\.\.18446744073709551615"),
    (lambda b, s, t, p: channel.Receiver(b, max_frames_out=-5), r"max_frames_out = -5 is outside 0\.\."),
    (lambda b, s, t, p: channel.Receiver(b, max_buffer_bytes=-1), r"max_buffer_bytes = -1 is outside 0\.\."),
    (lambda b, s, t, p: channel.Publisher(max_receivers=-1), r"max_receivers = -1 is outside 0\.\."),
    (lambda b, s, t, p: s.send(t, sequence=-1), r"sequence = -1 is outside 0\.\."),
    (lambda b, s, t, p: s.send(t, flags=-1), r"flags = -1 is outside 0\.\.4294967295"),
    (lambda b, s, t, p: s.send(t, flags=2**40), r"flags = 1099511627776 is outside 0\.\.4294967295"),
    (lambda b, s, t, p: s.send(t, timestamp_ns=2**70),
     r"timestamp_ns = 1180591620717411303424 is outside -9223372036854775808\.\.9223372036854775807"),
    (lambda b, s, t, p: p.send(t, pts_ns=-2**63 - 1), r"pts_ns = -9223372036854775809 is outside"),
    (lambda b, s, t, p: p.disconnect(-1), r"id = -1 is outside 0\.\."),
    (lambda b, s, t, p: p.add_receiver(b, max_frames_out=-1), r"max_frames_out = -1 is outside 0\.\."),
    (lambda b, s, t, p: et.ImageLayout.make(2**33, 2, "nv12"), r"width = 8589934592 is outside 0\.\.4294967295"),
    (lambda b, s, t, p: et.ImageLayout.make(64, -2, "nv12"), r"height = -2 is outside 0\.\.4294967295"),
    (lambda b, s, t, p: et.ImageLayout("nv12", 64, 32, modifier=-1), r"modifier = -1 is outside 0\.\."),
])
def test_an_int_out_of_its_range_is_an_overflow_error_naming_it(call, message):
    a, b = channel.socket_pair()
    s, r = pair()
    t = et.allocate((4,), "uint8", memory="shm")
    with a, b, channel.Publisher() as p, pytest.raises(OverflowError, match=message):
        call(b, s, t, p)


def test_an_int_argument_of_another_type_is_a_type_error_naming_it():
    s, r = pair()
    t = et.allocate((4,), "uint8", memory="shm")
    with pytest.raises(TypeError, match="flags must be an int, not float"):
        s.send(t, flags=1.5)
    with pytest.raises(TypeError, match="max_buffers must be an int, not str"):
        channel.Receiver(channel.socket_pair()[0], max_buffers="32")
    assert s.send(t, flags=numpy.uint8(3)) == 0  # anything with __index__ is an int
    d = r.receive(timeout=5)
    assert d.flags == 3


def test_nan_timeout_and_zero_max_buffer_bytes_are_refused_by_name():
    s, r = pair()
    with pytest.raises(et.InvalidArgumentError, match="timeout nan is not a number"):
        r.receive(timeout=float("nan"))
    with pytest.raises(et.InvalidArgumentError, match="max_buffer_bytes 0 would refuse every buffer"):
        channel.Receiver(channel.socket_pair()[1], max_buffer_bytes=0)


def test_no_sequence_follows_the_largest():
    t = et.allocate((4,), "uint8", memory="shm")
    s, r = pair()
    assert s.send(t, sequence=2**64 - 1) == 2**64 - 1
    with pytest.raises(et.OutOfRangeError, match="no sequence follows 18446744073709551615"):
        s.send(t)
    s.end_stream()  # the way out the message names
    with channel.Publisher() as p:
        p.send(t, sequence=2**64 - 1)
        with pytest.raises(et.OutOfRangeError, match="no sequence follows 18446744073709551615"):
            p.send(t)


# ---- Publisher (fan-out) -------------------------------------------------------------------------

def wait_for(cond, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_publisher_serves_a_fast_and_a_dropping_receiver():
    pub = channel.Publisher(name="cam")
    fast_end, fast_sock = channel.socket_pair()
    slow_end, slow_sock = channel.socket_pair()
    fast = channel.Receiver(fast_sock, name="fast")
    slow = channel.Receiver(slow_sock, name="slow")
    fast_id = pub.add_receiver(fast_end)
    slow_id = pub.add_receiver(slow_end, policy="drop", max_frames_out=1)
    for s in (fast_end, slow_end, fast_sock, slow_sock):
        s.close()
    pool = shm_pool(max_buffers=3)  # 1 (the slow one's limit) + 1 being filled + 1 the fast one holds
    held = None
    for i in range(4):
        t = pub.acquire(pool, timeout=2)
        with t.map_write() as m:
            numpy.asarray(m)[:] = i
        res = pub.send(t, pts_ns=i)
        del t, m
        assert res.sequence == i and res.delivered + res.dropped == 2
        d = fast.receive(timeout=1)
        assert (numpy.asarray(d.tensor) == i).all() and d.pts_ns == i
        del d
        if held is None:
            held = slow.receive(timeout=1)  # the slow receiver keeps its first frame
    infos = {r.id: r for r in pub.receivers()}
    assert infos[slow_id].policy == channel.ReceiverPolicy.DROP and infos[slow_id].stats.frames_dropped == 3
    assert infos[fast_id].policy == channel.ReceiverPolicy.BLOCK and infos[fast_id].stats.frames_dropped == 0
    st = pub.stats()
    assert (st.frames_published, st.deliveries, st.drops, st.receivers) == (4, 5, 3, 2)
    assert (numpy.asarray(held.tensor) == 0).all()  # never overwritten while held
    pub.end_stream()
    assert fast.receive(timeout=1).end_of_stream and slow.receive(timeout=1).end_of_stream
    with pytest.raises(et.TimeoutError, match="still out"):
        pub.drain(timeout=0.1)
    del held
    settle()
    pub.drain(timeout=2)
    pub.disconnect(slow_id)
    with pytest.raises(et.NotFoundError):
        pub.disconnect(slow_id)
    assert [r.id for r in pub.receivers()] == [fast_id]
    pub.close()
    with pytest.raises(et.FailedPreconditionError, match="Publisher 'cam' is closed"):
        pub.send(et.allocate((4,), "uint8", memory="shm"))


def test_publisher_listens_for_late_joiners_and_grants_a_receiver_its_policy():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pub.sock")
        with channel.Publisher(path, name="live") as pub:
            assert pub.path == path
            first = channel.Receiver(channel.connect(path), policy="drop", max_frames_out=2)
            wait_for(lambda: pub.stats().receivers == 1)
            t = et.allocate((4,), "uint8", memory="shm")
            pub.send(t)
            assert first.receive(timeout=1).sequence == 0
            late = channel.Receiver(channel.connect(path))
            wait_for(lambda: pub.stats().receivers == 2)
            res = pub.send(t)
            assert (res.sequence, res.delivered) == (1, 2)
            assert first.receive(timeout=1).sequence == 1 and late.receive(timeout=1).sequence == 1
            # Its own request, in force once the publisher's reader has read its hello.
            wait_for(lambda: pub.receivers()[0].policy == channel.ReceiverPolicy.DROP)
            info = pub.receivers()[0]
            assert info.max_frames_out == 2
            assert info.peer is not None and info.peer.pid == os.getpid()
            pub.end_stream()
            after = channel.Receiver(channel.connect(path))  # joins after the end: told at once
            assert after.receive(timeout=2).end_of_stream
            assert first.receive(timeout=1).end_of_stream


PY_CONSUMER = textwrap.dedent("""
    import sys, numpy
    from edgetensor import channel
    r = channel.Receiver(channel.connect(sys.argv[1]))
    seen = []
    while not (d := r.receive(timeout=10)).end_of_stream:
        assert (numpy.asarray(d.tensor) == d.sequence + 1).all()
        seen.append(d.sequence)
        del d
    print("ok", len(seen))
""")


def test_publisher_feeds_consumers_in_two_other_processes():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pub.sock")
        with channel.Publisher(path, name="pub2") as pub:
            procs = [subprocess.Popen([sys.executable, "-c", PY_CONSUMER, path], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(2)]
            try:
                wait_for(lambda: pub.stats().receivers == 2, 20)
                pool = shm_pool(max_buffers=4)
                for i in range(6):
                    t = pub.acquire(pool, timeout=5)
                    with t.map_write() as m:
                        numpy.asarray(m)[:] = i + 1
                    assert pub.send(t).delivered == 2
                    del t, m
                pub.end_stream()
                pub.drain(timeout=10)
                results = [p.communicate(timeout=20) for p in procs]
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            for p, (out, err) in zip(procs, results):
                assert p.returncode == 0, err
                assert out.strip() == "ok 6"
