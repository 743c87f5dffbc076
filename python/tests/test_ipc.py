# SPDX-License-Identifier: Apache-2.0
"""ipc: tensors and frames over AF_UNIX sockets (socket objects or int fds); the GIL is released while
blocked; two processes: Python producer -> C++ consumer (tests/ipc_peer.cpp) and the reverse."""

import errno
import os
import signal
import socket
import subprocess
import threading
import time

import numpy
import pytest

import edgetensor as et


def pair():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def test_send_receive_with_socket_objects_and_int_fds():
    a, b = pair()
    with a, b:
        t = et.allocate((3, 4), "float32", "shm", name="sent")
        with t.map_write() as m:
            numpy.asarray(m)[:] = numpy.arange(12).reshape(3, 4)
        t.colorimetry = et.Colorimetry(et.ColorPrimaries.BT709)
        et.ipc.send(a, t.slice(1, 1, 3))
        r = et.ipc.receive(b.fileno())
        assert (r.shape, r.strides, r.name, r.colorimetry.primaries) == ((3, 2), (16, 4), "sent", et.ColorPrimaries.BT709)
        assert r.same_buffer(t)
        with r.map_read() as m:
            assert (numpy.asarray(m) == numpy.arange(12).reshape(3, 4)[:, 1:3]).all()
        with pytest.raises(et.OutOfRangeError):
            et.ipc.send(a, t)
            et.ipc.receive(b, max_buffer_bytes=8)


def test_send_refusals():
    a, b = pair()
    with a, b:
        with pytest.raises(et.UnsupportedError, match="heap"):
            et.ipc.send(a, et.allocate((4,), "u8", "heap"))
    s1, s2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with s1, s2:
        with pytest.raises(et.InvalidArgumentError, match="SOCK_STREAM"):
            et.ipc.send(s1, et.allocate((4,), "u8", "shm"))
    with pytest.raises(TypeError):
        et.ipc.send("not a socket", et.allocate((4,), "u8", "shm"))


def test_sockets_the_library_refuses_are_refused_at_once_never_waited_on():
    # A closed socket.socket (fileno() -1), fd -1, a SOCK_STREAM or a non-Unix socket: the library's error,
    # at once (poll(2) ignores fd -1 and would wait forever; an idle stream socket is never readable).
    t = et.allocate((4,), "u8", "shm")
    a, b = pair()
    a.close()
    b.close()
    f = et.Frame.allocate(et.ImageLayout.make(32, 16, "nv12"), memory="shm")
    for call in (lambda: et.ipc.send(a, t), lambda: et.ipc.receive(b), lambda: et.ipc.send_frame(a, f),
                 lambda: et.ipc.receive_frame(b), lambda: et.ipc.receive(-1)):
        with pytest.raises(et.Error, match="fd -1") as e:
            call()
        assert e.value.errno == errno.EBADF
    s1, s2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with s1, s2:
        with pytest.raises(et.InvalidArgumentError, match="SOCK_STREAM"):
            et.ipc.receive(s2)
        with pytest.raises(et.InvalidArgumentError, match="SOCK_STREAM"):
            et.ipc.receive_frame(s2.fileno())
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        with pytest.raises(et.InvalidArgumentError):
            et.ipc.receive(udp)


def test_frames():
    a, b = pair()
    with a, b:
        f = et.Frame.allocate(et.ImageLayout.make(32, 16, "nv12"), memory="shm")
        f.colorimetry = et.Colorimetry(range=et.ColorRange.LIMITED)
        et.ipc.send_frame(a, f)
        g = et.ipc.receive_frame(b)
        assert g.layout == f.layout and g.colorimetry == f.colorimetry and g.buffer(0).same_buffer(f.buffer(0))


def test_receive_releases_the_gil():
    a, b = pair()
    with a, b:
        got = []
        thread = threading.Thread(target=lambda: got.append(et.ipc.receive(b)))
        thread.start()
        # While the thread is blocked in receive, this thread must run Python code.
        ticks = 0
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            ticks += 1
        assert ticks > 1000
        et.ipc.send(a, et.allocate((2,), "u8", "shm"))
        thread.join(10)
        assert not thread.is_alive() and got[0].shape == (2,)


# ---- Two processes ----------------------------------------------------------------------------------

def pattern(n, k, c):
    return ((numpy.arange(n, dtype=numpy.int64) * k + c) & 0xFF).astype(numpy.uint8)


def fill(t, k=13, c=5):
    """Pattern A over the packed byte index, written through a zero-copy map (views included)."""
    with t.map_write() as m:
        a = numpy.asarray(m)
        a[...] = pattern(t.nbytes, k, c).view(a.dtype).reshape(t.shape)
        del a


def packed_bytes(t):
    with t.map_read() as m:
        return numpy.ascontiguousarray(numpy.asarray(m)).view(numpy.uint8).ravel().copy()


@pytest.fixture
def peer():
    mine, theirs = pair()
    proc = subprocess.Popen([os.environ["ET_PY_IPC_PEER"], "--socket-fd", str(theirs.fileno())],
                            pass_fds=[theirs.fileno()])
    theirs.close()

    def command(text):
        mine.send(text.encode())

    def answer():
        return mine.recv(4096).decode()

    yield mine, command, answer
    command("exit")
    assert answer() == "ok bye"
    assert proc.wait(10) == 0
    mine.close()


CASES = [
    ("uint8", (16, 33), lambda t: t),
    ("float32", (4, 5, 6), lambda t: t.slice(2, 1, 5)),              # strided
    ("int16", (10, 8), lambda t: t.batch(3)),                        # at an offset
    ("float64", (6, 4), lambda t: t.view(8, (3, 2), (64, 16))),      # offset and strides
    ("bfloat16", (2, 3), lambda t: t),
    ("uint64", (5,), lambda t: t),
]


@pytest.mark.parametrize("dtype, shape, make_view", CASES, ids=[c[0] for c in CASES])
def test_python_producer_cpp_consumer_and_writes_back(peer, dtype, shape, make_view):
    sock, command, answer = peer
    t = make_view(et.allocate(shape, dtype, "shm"))
    fill(t)
    command("check-tensor")
    et.ipc.send(sock, t)
    reply = answer()
    assert reply.startswith("ok "), reply
    assert list(t.shape) == [int(x) for x in reply.split("[", 1)[1].rstrip("]").split(", ")]
    # The C++ consumer wrote pattern B through its own map of the same memory.
    assert (packed_bytes(t) == pattern(t.nbytes, 29, 11)).all()


def test_python_frame_to_cpp(peer):
    sock, command, answer = peer
    f = et.Frame.allocate(et.ImageLayout.make(40, 20, "nv12", row_align=64), memory="shm")
    for i in range(f.plane_count):
        fill(f.plane(i))
    command("check-frame")
    et.ipc.send_frame(sock, f)
    assert answer() == "ok nv12 1 buffer(s)"
    for i in range(f.plane_count):
        assert (packed_bytes(f.plane(i)) == pattern(f.plane(i).nbytes, 29, 11)).all()


@pytest.mark.parametrize("dtype, shape", [("u8", (7, 9)), ("f32", (3, 4, 5)), ("i64", (11,))])
def test_cpp_producer_python_consumer(peer, dtype, shape):
    sock, command, _ = peer
    command("produce-tensor %s %s" % (dtype, " ".join(map(str, shape))))
    t = et.ipc.receive(sock)
    assert t.shape == shape and t.name == "from-cpp" and t.memory == et.MemoryKind.SHM
    assert (packed_bytes(t) == pattern(t.nbytes, 13, 5)).all()


def test_cpp_frame_to_python(peer):
    sock, command, _ = peer
    command("produce-frame nv12 50 30")
    f = et.ipc.receive_frame(sock)
    assert f.layout == et.ImageLayout.make(50, 30, "nv12", row_align=64)
    for i in range(f.plane_count):
        assert (packed_bytes(f.plane(i)) == pattern(f.plane(i).nbytes, 13, 5)).all()


def test_receive_timeouts_follow_the_socket_and_the_keyword():
    p, q = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with p, q:
        q.settimeout(0.2)  # socket's own timeout: TimeoutError when it passes, as q.recv would
        start = time.monotonic()
        with pytest.raises(et.TimeoutError, match="timed out after 0.2 s"):
            et.ipc.receive(q)
        assert 0.15 <= time.monotonic() - start < 5
        q.settimeout(0.0)  # non-blocking: BlockingIOError (BusyError) at once
        with pytest.raises(BlockingIOError) as e:
            et.ipc.receive(q)
        assert isinstance(e.value, et.BusyError) and "timeout is 0" in str(e.value)
        q.settimeout(None)
        with pytest.raises(TimeoutError):
            et.ipc.receive_frame(q.fileno(), timeout=0.05)  # an int fd with timeout=
        with pytest.raises(et.InvalidArgumentError, match="negative"):
            et.ipc.receive(q, timeout=-1)
        with pytest.raises(TypeError, match="timeout"):
            et.ipc.receive(q, timeout="1")
        t = et.allocate((3,), "uint8", "shm")
        et.ipc.send(p, t, timeout=1)
        assert et.ipc.receive(q, timeout=1).same_buffer(t)


def test_a_signal_interrupts_a_blocking_receive():
    """Ctrl-C (SIGINT) in a receive with nothing coming: KeyboardInterrupt, as socket.recv gives."""
    p, q = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with p, q:
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            et.ipc.receive(q)
        timer.join()
        assert time.monotonic() - start < 5
        # A handler that does not raise: the wait goes on, and the message sent later arrives.
        old = signal.signal(signal.SIGUSR1, lambda *a: None)
        try:
            t = et.allocate((2,), "uint8", "shm")
            threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGUSR1)).start()
            threading.Timer(0.3, et.ipc.send, (p, t)).start()
            assert et.ipc.receive(q, timeout=5).same_buffer(t)
        finally:
            signal.signal(signal.SIGUSR1, old)
