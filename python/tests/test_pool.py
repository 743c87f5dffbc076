# SPDX-License-Identifier: Apache-2.0
"""edgetensor.Pool: create with options, acquire with a timeout, stats, and the return of a buffer when
its last Python holder goes (tensor, view, map, numpy array through the buffer protocol or DLPack, torch
tensor through DLPack)."""

import threading
import time

import numpy
import pytest

import edgetensor as et

from conftest import settle


def pool(max_buffers=1, **kw):
    return et.Pool.create((4, 8), "float32", name="py-pool", max_buffers=max_buffers, memory="shm", **kw)


def in_use(p):
    settle()
    return p.stats().in_use


def test_create_with_options_and_stats():
    p = et.Pool.create((4, 8), "float32", name="cam0", min_buffers=2, max_buffers=3, memory="shm")
    assert (p.name, p.max_buffers, p.packed_bytes) == ("cam0", 3, 4 * 8 * 4)
    s = p.stats()
    assert (s.allocated, s.free, s.in_use, s.acquired, s.waits, s.timeouts) == (2, 2, 0, 0, 0, 0)
    t = p.acquire()
    assert (t.shape, t.dtype_name, t.name, t.memory) == ((4, 8), "float32", "cam0", et.MemoryKind.SHM)
    assert p.stats().in_use == 1 and p.stats().acquired == 1
    assert "cam0" in repr(p) and "in_use=1" in repr(p.stats())


def test_bad_options_are_invalid_argument():
    with pytest.raises(et.InvalidArgumentError, match="max_buffers"):
        et.Pool.create((4,), "uint8", max_buffers=0)
    with pytest.raises(et.InvalidArgumentError, match="min_buffers"):
        et.Pool.create((4,), "uint8", min_buffers=3, max_buffers=2)
    with pytest.raises(et.InvalidArgumentError):
        et.Pool.create((0, 4), "uint8")  # zero elements: nothing to reuse
    with pytest.raises(et.InvalidArgumentError, match="memory kind"):
        et.Pool.create((4,), "uint8", memory="floppy")
    with pytest.raises(TypeError):
        et.Pool.create((4,), "uint8", 1)  # options are keyword-only


def test_acquire_timeout_raises_timeout_and_zero_busy_and_counts():
    p = pool()
    t = p.acquire()
    start = time.monotonic()
    with pytest.raises(et.TimeoutError, match="py-pool") as e:
        p.acquire(timeout=0.05)
    assert time.monotonic() - start >= 0.045
    assert isinstance(e.value, TimeoutError) and "max_buffers 1" in str(e.value)
    with pytest.raises(et.BusyError, match="does not wait"):
        p.try_acquire()
    with pytest.raises(et.BusyError):
        p.acquire(timeout=0)
    assert p.stats().timeouts == 3
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        p.acquire(timeout=-1)
    del t
    assert p.acquire(timeout=0).shape == (4, 8)


def test_buffer_is_reused_with_its_key_and_bytes():
    p = pool()
    t = p.acquire()
    key = t.buffer_key()
    with t.map_write() as m:
        numpy.asarray(m)[:] = 2.5
    del t, m
    u = p.acquire(timeout=0)
    assert u.buffer_key() == key  # the same buffer, kept mapped
    with u.map_read() as m:
        assert (numpy.asarray(m) == 2.5).all()  # what the last holder left (no zero_on_reuse)
    del u, m
    z = et.Pool.create((4,), "uint8", max_buffers=1, memory="shm", zero_on_reuse=True)
    v = z.acquire()
    with v.map_write() as m:
        numpy.asarray(m)[:] = 9
    del v, m
    with z.acquire().map_read() as m:
        assert numpy.asarray(m).tolist() == [0, 0, 0, 0]


def holders(kind, t, torch):
    """Something that holds t's buffer, made the way a user would make it, and t dropped by the caller."""
    if kind == "view":
        return t.batch(1)
    if kind == "reshape":
        return t.reshape(-1)
    if kind == "map":
        return t.map_read()
    if kind == "array from a map (buffer protocol)":
        with t.map_write() as m:  # the block ends; the array keeps the map (and the buffer)
            return numpy.asarray(m)
    if kind == "numpy.asarray (DLPack)":
        return numpy.asarray(t)
    if kind == "numpy.from_dlpack":
        return numpy.from_dlpack(t)
    if kind == "unconsumed capsule":
        return t.__dlpack__()
    if kind == "torch.from_dlpack":
        return torch.from_dlpack(t)
    raise AssertionError(kind)


KINDS = ["view", "reshape", "map", "array from a map (buffer protocol)", "numpy.asarray (DLPack)",
         "numpy.from_dlpack", "unconsumed capsule", "torch.from_dlpack"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_holder_keeps_the_buffer_out_until_it_goes(kind, torch):
    p = pool()
    t = p.acquire()
    h = holders(kind, t, torch)
    del t
    assert in_use(p) == 1  # the holder alone keeps it out
    with pytest.raises(et.BusyError):
        p.try_acquire()
    del h
    assert in_use(p) == 0  # the last holder gone: back in the pool
    assert p.acquire(timeout=0).shape == (4, 8)
    assert p.stats().allocated == 1  # reused, not a new buffer


def test_torch_tensor_of_a_numpy_array_chain_holds_the_buffer(torch):
    p = pool()
    t = p.acquire()
    x = torch.from_dlpack(t)[1:3]  # a torch view of the import
    a = numpy.asarray(t.map_read())
    del t
    assert in_use(p) == 1
    del a
    assert in_use(p) == 1  # x still holds it
    del x
    assert in_use(p) == 0


def test_acquire_waits_for_a_buffer_another_thread_drops():
    p = pool()
    t = p.acquire()
    ready = threading.Event()

    def drop_later():
        nonlocal t
        ready.wait()
        time.sleep(0.05)
        del t  # the last holder goes in another thread

    th = threading.Thread(target=drop_later)
    th.start()
    ready.set()
    u = p.acquire(timeout=5)  # the GIL is released while it waits, so the other thread can run
    th.join()
    assert u.shape == (4, 8) and p.stats().waits == 1


def test_image_pool_and_pool_collected_with_buffers_out():
    layout = et.ImageLayout.make(64, 48, "nv12")
    p = et.Pool.create_image(layout, name="img", max_buffers=2, memory="shm")
    t = p.acquire()
    assert t.image_layout == layout and t.pixel_format == et.PixelFormat.NV12
    y = t.plane(0)
    ident = t.identity
    del p, t
    settle()
    assert ident.alive  # the buffer outlives its pool while held
    with y.map_write() as m:
        numpy.asarray(m)[:] = 1
    del y, m
    assert not ident.alive
