# SPDX-License-Identifier: Apache-2.0
"""Maps: context managers with the buffer protocol (PEP 3118), zero-copy numpy views; close() and the end
of a `with` block never raise: the CPU access ends when the last export goes."""

import gc
import hashlib
import io

import numpy
import pytest

import edgetensor as et

FORMATS = {"uint8": "B", "int8": "b", "uint16": "H", "int16": "h", "uint32": "I", "int32": "i", "uint64": "Q",
           "int64": "q", "float16": "e", "float32": "f", "float64": "d", "bfloat16": "T{H:bf16:}"}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_shape_strides_per_dtype(name):
    t = et.allocate((3, 5), name, "shm")
    with t.map_read() as m:
        mv = memoryview(m)
        assert mv.format == FORMATS[name] == m.format
        assert (mv.shape, mv.strides, mv.readonly, mv.itemsize) == ((3, 5), t.strides, True, t.itemsize)
        a = numpy.asarray(m)
        assert a.dtype == t.dtype and a.shape == (3, 5) and a.strides == t.strides
        del a, mv


def test_map_write_is_zero_copy_and_writable(pattern):
    t = et.allocate((4, 8), "uint8", "shm")
    a = numpy.asarray(t.map_write())
    assert a.flags.writeable and not a.flags.owndata
    a[:] = pattern(32).reshape(4, 8)
    del a  # the map goes with the array
    with t.map_read() as m:
        assert (numpy.asarray(m).ravel() == pattern(32)).all()
    with t.map_read_write() as m:
        numpy.asarray(m)[0, 0] = 7
    with t.map_read() as m:
        assert numpy.asarray(m)[0, 0] == 7


def test_strided_and_offset_views_map_their_elements():
    t = et.allocate((6, 8), "float32", "shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = numpy.arange(48, dtype=numpy.float32).reshape(6, 8)
    s = t.slice(1, 2, 5).slice(0, 1, 4)  # rows 1..3, cols 2..4
    with s.map_read_write() as m:
        a = numpy.asarray(m)
        assert a.strides == (32, 4)
        assert (a == numpy.arange(48).reshape(6, 8)[1:4, 2:5]).all()
        del a
        # A consumer that cannot take strides (hashlib makes a simple request) is refused.
        with pytest.raises(BufferError, match="strided"):
            hashlib.sha256(m)
    with t.map_read() as m:
        assert len(hashlib.sha256(m).digest()) == 32  # contiguous: fine
    with t.map_read() as m:
        assert numpy.frombuffer(m, dtype=numpy.float32).size == 48  # contiguous: fine


def test_read_map_refuses_writable_exports():
    t = et.allocate((4,), "u8", "shm")
    with t.map_read() as m:
        a = numpy.asarray(m)
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 1
        del a
        with pytest.raises(TypeError, match="read-only|read-write"):
            memoryview(m)[0] = 1
        with pytest.raises(TypeError, match="read-only|read-write"):
            io.BytesIO(b"\x09").readinto(m)  # asks for a writable buffer
    with t.map_write() as m:
        assert io.BytesIO(b"\x09").readinto(m) == 1
    with t.map_read() as m:
        assert numpy.asarray(m)[0] == 9


def test_close_with_live_export_defers_the_unmap_to_the_last_export():
    t = et.allocate((16,), "uint8", "shm")
    m = t.map_write()
    a = numpy.asarray(m)
    b = memoryview(m)
    assert m.exports == 2
    m.close()  # never raises
    assert m.closed and m.mapped and m.extent_bytes == 16
    assert "mapped until its exports go" in repr(m)
    with pytest.raises(BufferError, match="closed"):
        memoryview(m)  # no new export from a closed map
    with pytest.raises(BufferError, match="closed"):
        numpy.asarray(m)  # not a 0-d object array holding the Map (Map.__array__)
    a[:] = 3  # still valid
    del a
    assert m.mapped and m.exports == 1
    b.release()  # the last export: the CPU access ends here
    assert m.exports == 0 and not m.mapped and m.extent_bytes == 0
    m.close()  # idempotent
    with t.map_read() as r:
        assert numpy.asarray(r).tolist() == [3] * 16


def test_with_block_end_with_live_array_does_not_raise_and_writes_land():
    # The case: raised BufferError at the end of the block, after the write had happened.
    t = et.allocate((4,), "uint8", "shm")
    with t.map_write() as m:
        a = numpy.asarray(m)
        a[:] = 7
    assert m.closed and m.mapped  # closed for new exports, mapped while `a` lives
    a[1] = 9  # after the block, through the live array: lands in the tensor
    with t.map_read() as r:
        assert numpy.asarray(r).tolist() == [7, 9, 7, 7]
    ident = t.identity
    del t
    assert ident.alive  # the array holds the map, the map the storage
    del a
    assert not m.mapped and not ident.alive


def test_a_later_conflicting_map_follows_the_cpp_rules_until_the_array_dies(gl_context):
    # A PBO allows one CPU map at a time (map.h): the array made inside the block keeps it mapped.
    t = et.allocate((16,), "uint8", "gl_pbo", gl_context=gl_context)
    with t.map_write() as m:
        a = numpy.asarray(m)
        a[:] = 5
    with pytest.raises(et.BusyError, match="mapped"):
        t.map_read()  # the first map is still open: a's export holds it
    a[0] = 6
    del a
    gc.collect()
    assert not m.mapped
    with t.map_read() as r:  # now free, and both writes landed
        assert numpy.asarray(r).tolist() == [6] + [5] * 15


def test_an_exception_in_the_block_is_not_hidden_and_the_map_ends_with_the_array():
    t = et.allocate((4,), "uint8", "shm")
    with pytest.raises(ZeroDivisionError):
        with t.map_write() as m:
            a = numpy.asarray(m)  # noqa: F841 - alive while the exception propagates
            1 / 0
    assert m.closed and m.mapped
    del a
    assert not m.mapped


def test_map_timeout_keyword():
    t = et.allocate((4,), "uint8", "shm")
    for timeout in (0, 0.5, 2, None):  # shm never waits: every timeout maps at once
        with t.map_read(timeout=timeout) as m, t.map_write(timeout=timeout) as w, \
                t.map_read_write(timeout=timeout) as rw:
            assert m.mapped and w.mapped and rw.mapped
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        t.map_read(timeout=-1)
    with pytest.raises(et.InvalidArgumentError, match="nan is not a number"):
        t.map_write(timeout=float("nan"))
    with pytest.raises(TypeError, match="timeout"):
        t.map_read(timeout="1")
    with pytest.raises(TypeError):
        t.map_read(1.0)  # keyword only


def test_write_map_of_read_only_storage_is_permission_denied():
    t = et.allocate((4,), "uint8", "shm")
    fd = t.export_fd()
    import os

    ro_fd = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)
    try:
        ro = et.import_fd(ro_fd, (4,), "uint8")
    finally:
        os.close(ro_fd)
        os.close(fd)
    assert ro.read_only
    with pytest.raises(et.PermissionDeniedError) as e:
        ro.map_write()
    assert isinstance(e.value, PermissionError)
    with ro.map_read() as m:
        assert numpy.asarray(m).tolist() == [0, 0, 0, 0]


def test_zero_element_and_rank_zero_maps():
    empty = et.allocate((0, 3), "float32", "shm")
    with empty.map_write() as m:
        a = numpy.asarray(m)
        assert a.shape == (0, 3) and a.size == 0
        del a
    scalar = et.allocate((), "float64", "shm")
    with scalar.map_write() as m:
        a = numpy.asarray(m)
        assert a.shape == ()
        a[()] = 2.5
        del a
    with scalar.map_read() as m:
        assert float(numpy.asarray(m)) == 2.5


def test_map_outlives_tensor_object():
    t = et.allocate((8,), "int32", "heap")
    m = t.map_write()
    ident = t.identity
    del t
    assert ident.alive  # the map holds the storage
    numpy.asarray(m)[:] = 5
    m.close()
    assert not ident.alive


def test_map_properties():
    t = et.allocate((2, 3), "int16", "shm")
    m = t.map_read_write()
    assert (m.mode, m.readonly, m.shape, m.strides, m.dtype) == ("read_write", False, (2, 3), (6, 2), numpy.int16)
    assert "read_write" in repr(m)
    m.close()
    assert t.map_write().mode == "write" and t.map_read().readonly


def test_array_protocol_of_an_open_map_is_zero_copy_and_takes_a_dtype():
    t = et.allocate((4,), "uint8", "shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = 7
        view = m.__array__()
        view[0] = 9  # the same bytes
        assert numpy.asarray(m, dtype=numpy.float32).tolist() == [9.0, 7.0, 7.0, 7.0]
        copied = m.__array__(copy=True)
        copied[1] = 1  # a copy: the map keeps 7
        assert numpy.asarray(m).tolist() == [9, 7, 7, 7]
        del view
