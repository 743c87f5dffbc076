# SPDX-License-Identifier: Apache-2.0
"""Tensor: allocation (dtype and memory spellings), description, views, identity, fds, named shm."""

import os

import numpy
import pytest

import edgetensor as et

NUMPY_NAMES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16", "float32",
               "float64"]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_dtype_spellings_agree(name):
    want = numpy.dtype(name)
    for spelling in (name, want, want.type, getattr(et.DType, name.upper())):
        t = et.allocate((2, 3), spelling, "heap")
        assert t.dtype == want
        assert t.dtype_name == name
        assert t.itemsize == want.itemsize
        assert t.nbytes == 6 * want.itemsize


def test_dtype_our_names_and_numpy_strings():
    assert et.allocate((1,), "f32").dtype == numpy.float32
    assert et.allocate((1,), "bf16").dtype_name == "bfloat16"
    assert et.allocate((1,), "<f4").dtype == numpy.float32
    assert et.allocate((1,), float).dtype == numpy.float64


def test_bfloat16_is_a_struct_of_its_bits():
    t = et.allocate((2, 2), "bfloat16")
    assert t.dtype == numpy.dtype([("bf16", "<u2")])
    assert t.dtype != numpy.uint16
    assert et.allocate((1,), t.dtype).dtype_name == "bfloat16"  # and back


@pytest.mark.parametrize("bad, error, words", [
    ("float128", ValueError, "float128"),
    (numpy.bool_, ValueError, "bool"),
    (">f4", ValueError, "big-endian"),
    (numpy.complex64, ValueError, "complex64"),
    ("no such type", et.InvalidArgumentError, "unknown dtype 'no such type'"),
])
def test_bad_dtypes_are_named(bad, error, words):
    with pytest.raises(error, match=words):
        et.allocate((1,), bad)


def test_memory_kind_by_name_or_enum():
    assert et.allocate((4,), "u8", "heap").memory == et.MemoryKind.HEAP
    assert et.allocate((4,), "u8", et.MemoryKind.SHM).memory == et.MemoryKind.SHM
    assert et.allocate((4,), "u8", memory="shm").memory_detail == "memfd"
    with pytest.raises(ValueError, match="unknown memory kind 'gpu'"):
        et.allocate((4,), "u8", "gpu")
    with pytest.raises(TypeError, match="memory must be"):
        et.allocate((4,), "u8", 3)


def test_bad_shapes():
    with pytest.raises(ValueError, match=r"shape\[1\] = -2 is negative"):
        et.allocate((3, -2), "u8")
    with pytest.raises(TypeError, match=r"shape\[0\] must be an int"):
        et.allocate((1.5,), "u8")
    with pytest.raises(TypeError):
        et.allocate("12", "u8")
    with pytest.raises(et.InvalidArgumentError, match="rank"):
        et.allocate((1,) * 9, "u8")
    assert et.allocate(5, "u8").shape == (5,)  # an int is a rank-1 shape
    assert et.allocate(numpy.array([2, 3]), "u8").shape == (2, 3)  # numpy ints index


def test_description():
    t = et.allocate((2, 3, 4), "float32", "shm", name="cube")
    assert (t.shape, t.strides, t.ndim, t.size, len(t)) == ((2, 3, 4), (48, 16, 4), 3, 24, 2)
    assert (t.nbytes, t.extent_bytes, t.offset_bytes) == (96, 96, 0)
    assert t.buffer_bytes >= 96
    assert t.is_contiguous and not t.read_only and not t.is_empty_handle
    assert t.name == "cube"
    t.name = "renamed"
    assert t.name == "renamed"
    assert "shape=(2, 3, 4)" in repr(t) and "float32" in repr(t)
    scalar = et.allocate((), "f64")
    assert scalar.shape == () and scalar.size == 1
    with pytest.raises(TypeError):
        len(scalar)


def test_views_batch_reshape_slice():
    t = et.allocate((4, 6), "int16", "shm")
    b = t.batch(2)
    assert (b.shape, b.offset_bytes, b.strides) == ((6,), 24, (2,))
    s = t.slice(1, 2, 5)
    assert (s.shape, s.strides, s.offset_bytes, s.is_contiguous) == ((4, 3), (12, 2), 4, False)
    assert t.reshape(3, 8).shape == (3, 8) and t.reshape((24,)).shape == (24,)
    v = t.view(12, (2, 2), (24, 4))
    assert (v.shape, v.strides, v.offset_bytes) == ((2, 2), (24, 4), 12)
    for view in (b, s, v):
        assert view.identity == t.identity and view.same_buffer(t)
    with pytest.raises(et.OutOfRangeError):
        t.batch(4)
    with pytest.raises(et.FailedPreconditionError):
        s.reshape(12)
    with pytest.raises(et.OutOfRangeError):
        t.view(0, (5, 6))
    with pytest.raises(et.InvalidArgumentError):
        t.reshape(5, 5)


def test_identity_is_weak():
    t = et.allocate((8,), "u8", "heap")
    ident = t.identity
    assert ident.alive and ident.id != 0 and hash(ident) == hash(t.batch(0).identity)
    other = et.allocate((8,), "u8", "heap")
    assert other.identity != ident and not other.same_buffer(t)
    del t
    assert not ident.alive


def test_export_and_import_fd_ownership(pattern):
    t = et.allocate((16, 16), "uint8", "shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = pattern(256).reshape(16, 16)
    fd = t.export_fd()  # ours to close
    try:
        view = et.import_fd(fd, (4, 16), "uint8", offset_bytes=32, name="imported")
        assert view.same_buffer(t) and view.identity != t.identity
        assert view.name == "imported" and view.offset_bytes == 32
        with view.map_read() as m:
            assert (numpy.asarray(m).ravel() == pattern(256)[32:96]).all()
        strided = et.import_fd(fd, (4,), "uint8", strides=(16,))
        with strided.map_read() as m:
            assert list(numpy.asarray(m)) == list(pattern(256)[0:64:16])
    finally:
        os.close(fd)
    # The import holds its own dup: closing ours changed nothing.
    with view.map_read() as m:
        assert numpy.asarray(m)[0, 0] == pattern(256)[32]
    with pytest.raises(et.InvalidArgumentError):
        et.import_fd(fd, (1,), "uint8")  # closed now
    with pytest.raises(et.OutOfRangeError):
        fd2 = t.export_fd()
        try:
            et.import_fd(fd2, (1024,), "uint8")
        finally:
            os.close(fd2)


def test_import_fd_accepts_objects_with_fileno():
    t = et.allocate((64,), "uint8", "shm")
    fd = t.export_fd()
    with os.fdopen(fd, "rb", buffering=0) as f:
        assert et.import_fd(f, (64,), "u8").same_buffer(t)
    with pytest.raises(TypeError, match="fileno"):
        et.import_fd("3", (1,), "u8")


def test_export_fd_errors():
    with pytest.raises(et.UnsupportedError, match="heap"):
        et.allocate((4,), "u8", "heap").export_fd()
    with pytest.raises(et.FailedPreconditionError, match="zero elements"):
        et.allocate((0, 3), "u8", "shm").export_fd()


def test_named_shm_lifecycle():
    name = "/et-pytest-%d" % os.getpid()
    t = et.allocate((8,), "uint32", "shm", shm_name=name)
    try:
        assert name[1:] in os.listdir("/dev/shm")
        assert t.memory_detail == "posix shm " + name
        with pytest.raises(et.AlreadyExistsError) as e:
            et.allocate((8,), "uint32", "shm", shm_name=name)
        assert isinstance(e.value, FileExistsError)
        with pytest.raises(et.InvalidArgumentError, match="allow_shrinkable"):
            et.shm.open(name, (8,), "uint32")
        with t.map_write() as m:
            numpy.asarray(m)[:] = numpy.arange(8)
        other = et.shm.open(name, (8,), "uint32", allow_shrinkable=True)
        with other.map_read() as m:
            assert list(numpy.asarray(m)) == list(range(8))
        ro = et.shm.open(name, (8,), "uint32", True, allow_shrinkable=True)
        assert ro.read_only
        with pytest.raises(et.PermissionDeniedError):
            ro.map_write()
    finally:
        et.shm.remove(name)
    assert name[1:] not in os.listdir("/dev/shm")
    with pytest.raises(et.NotFoundError) as e:
        et.shm.remove(name)
    assert isinstance(e.value, FileNotFoundError) and e.value.errno == 2


def test_backend_status():
    s = et.backend_status("heap")
    assert s.kind == et.MemoryKind.HEAP and s.built and s.available
    assert et.backend_status(et.MemoryKind.SHM).available


def test_numpy_style_indices_and_reshape_inference():
    t = et.allocate((4, 6), "float32", "shm")
    assert t.reshape(-1, 3).shape == (8, 3) and t.reshape((2, -1)).shape == (2, 12)
    assert t.slice(1, -2, 6).shape == (4, 2) and t.slice(-1, 0, 2).shape == (4, 2)
    assert t.batch(-1).offset_bytes == t.batch(3).offset_bytes
    with pytest.raises(et.InvalidArgumentError, match="more than one dimension is -1"):
        t.reshape(-1, -1)
    with pytest.raises(et.InvalidArgumentError, match="24 elements are not a multiple of .* 5"):
        t.reshape(-1, 5)
    with pytest.raises(et.OutOfRangeError, match="begin -9 is before the start of dim 1 of size 6"):
        t.slice(1, -9, 2)
    with pytest.raises(et.OutOfRangeError, match="n 4 is out of range for dim 0 of size 4"):
        t.batch(4)
    with pytest.raises(et.InvalidArgumentError, match="dim 2 is out of range for rank 2"):
        t.slice(2, 0, 1)  # InvalidArgument, as TensorDyn::slice (tensor.h)
    with pytest.raises(OverflowError, match=r"shape\[0\] = 18446744073709551616 does not fit"):
        et.allocate((2**64,), "uint8")


def test_torch_dtypes_are_accepted():
    torch = pytest.importorskip("torch")
    for d, name in [(torch.float32, "float32"), (torch.bfloat16, "bfloat16"), (torch.uint8, "uint8"),
                    (torch.int64, "int64"), (torch.float16, "float16")]:
        assert et.allocate((2,), d).dtype_name == name
    with pytest.raises(et.InvalidArgumentError, match="torch dtype torch.complex64 has no edgetensor dtype"):
        et.allocate((2,), torch.complex64)


def test_buffer_key_names_the_buffer_object():
    t = et.allocate((4, 4), "uint8", "shm")
    k = t.buffer_key()
    assert isinstance(k, int) and k != 0
    assert t.batch(1).buffer_key() == k and t.reshape(-1).buffer_key() == k  # views: same object
    fd = t.export_fd()
    try:
        imported = et.import_fd(fd, (16,), "uint8")  # a separate import of the same memfd
    finally:
        os.close(fd)
    assert imported.buffer_key() == k
    other = et.allocate((4, 4), "uint8", "shm")
    assert other.buffer_key() != k
    assert et.allocate((2,), "uint8", "heap").buffer_key() not in (0, k)


def test_unsqueeze_numpy_axes():
    t = et.allocate((3, 4, 5), "float32", "shm")
    assert t.unsqueeze(0).shape == (1, 3, 4, 5)
    assert t.unsqueeze(3).shape == (3, 4, 5, 1)
    assert t.unsqueeze(-1).shape == (3, 4, 5, 1)  # numpy.expand_dims(a, -1)
    assert t.unsqueeze(-4).shape == (1, 3, 4, 5)
    for dim in range(-4, 4):
        assert t.unsqueeze(dim).shape == numpy.expand_dims(numpy.zeros((3, 4, 5)), dim).shape
    u = t.unsqueeze(1)
    assert u.identity == t.identity and u.strides[0] == t.strides[0]
    s = t.slice(2, 1, 3).unsqueeze(0)  # a strided view
    assert s.shape == (1, 3, 4, 2) and s.strides[1:] == t.strides
    with pytest.raises(et.InvalidArgumentError, match="dim -5 is out of range for rank 3"):
        t.unsqueeze(-5)
    with pytest.raises(et.InvalidArgumentError):
        t.unsqueeze(4)
    with pytest.raises(et.InvalidArgumentError):
        et.allocate((1,) * 8, "uint8", "heap").unsqueeze(0)


def test_copy_to_and_contiguous():
    t = et.allocate((4, 6), "int16", "shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = numpy.arange(24, dtype=numpy.int16).reshape(4, 6)
    s = t.slice(1, 1, 4)  # strided
    out = numpy.zeros((4, 3), numpy.int16)
    s.copy_to(out)
    assert (out == numpy.arange(24).reshape(4, 6)[:, 1:4]).all()
    buf = bytearray(s.nbytes + 2)
    s.copy_to(buf)  # into the start; the rest untouched
    assert bytes(buf[-2:]) == b"\0\0"
    with pytest.raises(et.OutOfRangeError):
        s.copy_to(bytearray(s.nbytes - 1))
    with pytest.raises((BufferError, TypeError)):
        s.copy_to(bytes(s.nbytes))  # read-only
    c = s.contiguous("heap")
    assert c.is_contiguous and c.memory == et.MemoryKind.HEAP and c.shape == (4, 3)
    assert c.identity != t.identity
    with c.map_read() as m:
        assert (numpy.asarray(m) == out).all()
    assert s.contiguous().shape == (4, 3)
