# SPDX-License-Identifier: Apache-2.0
"""DLPack: numpy 1.24 and torch 1.13 as consumers of every dtype they support (contiguous, strided, at an
offset, batches, zero elements), writes seen both ways, capsule names and rename-on-consume, versioned
flags read back, device and copy requests, and edgetensor.from_dlpack of numpy, torch and any producer."""

import ctypes
import gc
import subprocess
import sys
import threading
import weakref

import numpy
import pytest

import edgetensor as et

from conftest import mappings, open_fds, settle

NUMPY_DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16", "float32",
                "float64"]
TORCH_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
TORCH_REFUSED = ["uint16", "uint32", "uint64"]  # torch 1.13 has no such types

# Views of a [6, 5, 4] tensor: name -> (make view, the numpy index giving the same elements).
VIEWS = {
    "contiguous": (lambda t: t, numpy.s_[...]),
    "strided": (lambda t: t.slice(2, 1, 3), numpy.s_[:, :, 1:3]),
    "offset": (lambda t: t.slice(0, 2, 5), numpy.s_[2:5]),
    "batch": (lambda t: t.batch(4), numpy.s_[4]),
    "offset+strided": (lambda t: t.batch(3).slice(0, 1, 4).slice(1, 2, 4), numpy.s_[3, 1:4, 2:4]),
    "zero-element": (lambda t: t.slice(1, 2, 2), numpy.s_[:, 2:2]),
}

api = ctypes.pythonapi
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_name(capsule):
    return api.PyCapsule_GetName(capsule).decode()


class Versioned(ctypes.Structure):  # DLManagedTensorVersioned's head (dlpack.h 1.1, LP64)
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("data", ctypes.c_void_p),
                ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


def versioned_head(capsule):
    return Versioned.from_address(api.PyCapsule_GetPointer(capsule, b"dltensor_versioned"))


def reference(shape, dtype):
    """Distinct values for every element, as numpy holds them."""
    n = int(numpy.prod(shape))
    if dtype == "bfloat16":
        return None
    values = numpy.arange(n) % 120 + 1
    return values.astype(dtype).reshape(shape)


def filled(dtype, shape=(6, 5, 4)):
    t = et.allocate(shape, dtype, "shm")
    with t.map_write() as m:
        numpy.asarray(m)[...] = reference(shape, dtype)
    return t


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_from_dlpack(dtype, view):
    make, index = VIEWS[view]
    t = make(filled(dtype))
    a = numpy.from_dlpack(t)
    expected = reference((6, 5, 4), dtype)[index]
    assert a.dtype == numpy.dtype(dtype) and a.shape == expected.shape
    assert a.strides == t.strides or a.size == 0  # numpy zeroes the strides of empty arrays
    assert (a == expected).all()
    if a.size:
        # numpy 1.24 makes every from_dlpack array read-only (numpy writes go through numpy.asarray(map),
        # test_map.py); a write through a C++ map of the same storage is seen by the array.
        with t.map_write() as m:
            numpy.asarray(m).flat[-1] = 77
        assert a.flat[-1] == 77
        if a.flags.writeable:  # numpy >= 1.25
            a.flat[0] = 99
            with t.map_read() as m:
                assert numpy.asarray(m).flat[0] == 99


def test_numpy_refuses_bfloat16():
    with pytest.raises((TypeError, BufferError, RuntimeError)):
        numpy.from_dlpack(et.allocate((2,), "bfloat16"))


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_from_dlpack(torch, dtype, view):
    make, index = VIEWS[view]
    t = make(filled(dtype if dtype != "bfloat16" else "uint16"))
    if dtype == "bfloat16":  # the same bits seen as bfloat16 (torch reads kDLBfloat)
        t = make(et.allocate((6, 5, 4), "bfloat16", "shm"))
        with t.map_write() as m:
            numpy.asarray(m)["bf16"][...] = (numpy.arange(t.size) % 120 + 1).astype(numpy.float32).view(
                numpy.uint32).reshape(t.shape) >> 16
        expected = torch.tensor((numpy.arange(t.size) % 120 + 1).reshape(t.shape), dtype=torch.bfloat16)
    else:
        expected = torch.from_numpy(numpy.ascontiguousarray(reference((6, 5, 4), dtype)[index]))
    x = torch.from_dlpack(t)
    assert x.dtype == getattr(torch, dtype) and tuple(x.shape) == t.shape
    assert tuple(s * x.element_size() for s in x.stride()) == t.strides or x.numel() == 0
    assert torch.equal(x, expected)
    if x.numel():
        x[(0,) * x.dim()] = 42
        with t.map_read() as m:
            a = numpy.asarray(m)
            got = int((a["bf16"] if dtype == "bfloat16" else a)[(0,) * x.dim()])  # a struct scalar is a view
            del a
        assert got == (0x4228 if dtype == "bfloat16" else 42)
        with t.map_write() as m:
            a = numpy.asarray(m)
            (a["bf16"] if dtype == "bfloat16" else a)[(-1,) * x.dim()] = 0x4100 if dtype == "bfloat16" else 8
            del a
        assert float(x[(-1,) * x.dim()]) == 8


@pytest.mark.parametrize("dtype", TORCH_REFUSED)
def test_torch_refuses_unsigned_wider_than_8_bits(torch, dtype):
    with pytest.raises(RuntimeError, match="[Uu]nsupported"):
        torch.from_dlpack(et.allocate((3,), dtype))


def test_zero_element_view_given_to_torch_holds_no_memfd(torch):
    """Adversarial trial: a zero-element export passed data = NULL and held its storage, and torch
    before 2.3 never calls the deleter of a null-data tensor (pytorch issues 117058, 117273), so a 64 MiB
    memfd stayed open for the life of the process. Now the export holds nothing and torch deletes it."""
    from edgetensor import _edgetensor

    settle()
    fds, maps, exports = open_fds(), mappings(), _edgetensor._live_export_count()
    t = et.allocate((64 << 20,), "uint8", memory="shm")
    assert open_fds() == fds + 1
    x = torch.from_dlpack(t.slice(0, 100, 100))
    assert tuple(x.shape) == (0,)
    del t
    settle()
    assert (open_fds(), mappings()) == (fds, maps), "the memfd and its mapping are gone while x lives"
    del x
    settle()
    assert _edgetensor._live_export_count() == exports, "torch called the deleter"


def test_capsule_names_and_rename_on_consume():
    t = filled("float32")
    legacy = t.__dlpack__()
    assert capsule_name(legacy) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    versioned = t.__dlpack__(max_version=(1, 0))
    assert capsule_name(versioned) == "dltensor_versioned"
    head = versioned_head(versioned)
    assert (head.major, head.minor, head.flags, head.device_type, head.device_id) == (1, 1, 0, 1, 0)
    u = et.from_dlpack(versioned)
    assert capsule_name(versioned) == "used_dltensor_versioned"
    et.from_dlpack(legacy)
    assert capsule_name(legacy) == "used_dltensor"
    with pytest.raises(BufferError, match="used_dltensor"):
        et.from_dlpack(legacy)
    assert u.memory == et.MemoryKind.FOREIGN and u.shape == t.shape and u.strides == t.strides
    assert t.__dlpack_device__() == (1, 0)


def read_only_tensor():
    import os

    t = filled("int32")
    fd = t.export_fd()
    ro_fd = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)
    try:
        ro = et.import_fd(ro_fd, t.shape, "int32")
    finally:
        os.close(ro_fd)
        os.close(fd)
    assert ro.read_only
    return ro


def test_read_only_storage():
    ro = read_only_tensor()
    with pytest.raises(et.DLPackError, match="read-only") as e:
        ro.__dlpack__()  # the legacy form cannot say read-only
    assert isinstance(e.value, BufferError) and e.value.code == et.ErrorCode.PERMISSION_DENIED
    with pytest.raises(BufferError):
        numpy.from_dlpack(ro)
    capsule = ro.__dlpack__(max_version=(1, 1))
    assert versioned_head(capsule).flags & 1  # DLPACK_FLAG_BITMASK_READ_ONLY
    back = et.from_dlpack(capsule)  # a C++ consumer of the versioned form
    assert back.read_only
    with pytest.raises(et.PermissionDeniedError):
        back.map_write()


def test_dl_device_stream_and_copy():
    t = filled("float32")
    assert capsule_name(t.__dlpack__(dl_device=(1, 0))) == "dltensor"
    for bad in [(1, 1), (3, 0), (7, 0)]:
        with pytest.raises(BufferError, match="cannot be served"):
            t.__dlpack__(dl_device=bad)
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=5)
    t.__dlpack__(stream=None)
    c = t.__dlpack__(max_version=(1, 1), copy=True)
    head = versioned_head(c)
    assert head.flags & 2 and not head.flags & 1  # IS_COPIED
    original = versioned_head(t.__dlpack__(max_version=(1, 1)))
    assert head.data != original.data
    copied = et.from_dlpack(c)
    with copied.map_read() as m:
        assert (numpy.asarray(m) == reference((6, 5, 4), "float32")).all()
    strided_copy = numpy.from_dlpack(_Producer(t.slice(2, 1, 3), copy=True))
    assert strided_copy.flags.c_contiguous and (strided_copy == reference((6, 5, 4), "float32")[:, :, 1:3]).all()
    copy_false = t.__dlpack__(max_version=(1, 1), copy=False)
    assert versioned_head(copy_false).flags == 0


@pytest.mark.parametrize(
    "make, expect",
    [
        (lambda t: t.slice(0, 1, 4), lambda r: r[1:4]),  # one contiguous run
        (lambda t: t.slice(1, 1, 4), lambda r: r[:, 1:4]),  # runs of 3x4 elements
        (lambda t: t.slice(2, 1, 3), lambda r: r[:, :, 1:3]),  # runs of 2 elements
        (lambda t: t.slice(2, 1, 2), lambda r: r[:, :, 1:2]),  # runs of one element
        (lambda t: t.slice(0, 2, 3).slice(2, 0, 3), lambda r: r[2:3, :, 0:3]),  # a size-1 dim inside a run
        (lambda t: t.slice(1, 2, 2), lambda r: r[:, 2:2]),  # zero elements
        (lambda t: t.view(4, (3, 2), (40, 8)),  # byte strides: no dim is contiguous
         lambda r: numpy.lib.stride_tricks.as_strided(r.reshape(-1)[1:], (3, 2), (40, 8))),
    ],
    ids=["outer", "middle", "inner", "single", "size1", "empty", "view"],
)
def test_copy_true_of_strided_views(make, expect):
    t = filled("float32")
    view = make(t)
    copied = numpy.from_dlpack(_Producer(view, copy=True))
    want = expect(reference((6, 5, 4), "float32"))
    assert copied.shape == want.shape and copied.flags.c_contiguous
    assert (copied == want).all()


def test_cuda_device_request_without_cuda():
    t = filled("float32")
    if et.cuda.available():
        pytest.skip("a real CUDA device: tests/gpu/run.sh checks kDLCUDA exports")
    with pytest.raises(et.DLPackError) as e:
        t.__dlpack__(dl_device=(2, 0))
    assert e.value.code in (et.ErrorCode.UNAVAILABLE, et.ErrorCode.UNSUPPORTED)
    with pytest.raises(ValueError, match="ambiguous"):
        t.__dlpack__(dl_device=(2, 0), stream=0)
    with pytest.raises(BufferError, match="copy=True"):
        t.__dlpack__(dl_device=(2, 0), copy=True)


class _Producer:
    """A DLPack producer that forwards to an edgetensor tensor, with the keyword arguments it got."""

    def __init__(self, tensor, legacy_only=False, **fixed):
        self.tensor, self.legacy_only, self.fixed, self.calls = tensor, legacy_only, fixed, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if self.legacy_only and kwargs:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return self.tensor.__dlpack__(**{**kwargs, **self.fixed})

    def __dlpack_device__(self):
        return (1, 0)


def test_from_dlpack_asks_versioned_first_then_legacy():
    t = filled("int16")
    p = _Producer(t)
    assert et.from_dlpack(p).shape == t.shape and p.calls == [{"max_version": (1, 1)}]

    class Legacy(_Producer):
        pass

    q = Legacy(t, legacy_only=True)
    assert et.from_dlpack(q).shape == t.shape and q.calls == [{"max_version": (1, 1)}, {}]
    assert et.from_dlpack(q).shape == t.shape and q.calls[2:] == [{}]  # the refusal is remembered per type
    with pytest.raises(TypeError, match="no __dlpack__"):
        et.from_dlpack([1, 2, 3])


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_from_numpy_shares_and_keeps_the_array_alive(dtype):
    a = numpy.empty((4, 6), dtype=dtype)  # owns its memory (a reshape would be a view of the owner)
    a[...] = numpy.arange(24).reshape(4, 6)
    ref = weakref.ref(a)
    t = et.from_dlpack(a[1:3, ::2])  # offset and strided
    assert t.memory == et.MemoryKind.FOREIGN and t.shape == (2, 3) and t.strides == a[1:3, ::2].strides
    assert t.dtype == numpy.dtype(dtype)
    with t.map_write() as m:
        numpy.asarray(m)[0, 0] = 5
    assert a[1, 0] == 5
    a[2, 4] = 9
    with t.map_read() as m:
        assert numpy.asarray(m)[1, 2] == 9
    del a
    settle()
    assert ref() is not None  # the producer lives while the import does
    with pytest.raises(et.Error):
        t.export_fd()
    view = t.batch(1)
    del t
    settle()
    assert ref() is not None
    del view
    settle()
    assert ref() is None


def test_from_torch_shares_and_keeps_the_tensor_alive(torch):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = et.from_dlpack(x[:, 1:3])
    assert t.shape == (3, 2) and t.strides == (16, 4)
    with t.map_write() as m:
        numpy.asarray(m)[0, 0] = -1
    assert float(x[0, 1]) == -1
    del x
    settle()
    with t.map_read() as m:
        assert numpy.asarray(m).tolist() == [[-1, 2], [5, 6], [9, 10]]
    b = et.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    assert b.dtype_name == "bfloat16"


def test_from_dlpack_refusals_are_named():
    # numpy 1.24 refuses to export bool itself; complex reaches our refusal.
    with pytest.raises(BufferError):
        et.from_dlpack(numpy.zeros(3, dtype=bool))
    for bad, words in [(numpy.zeros(3, dtype=numpy.complex64), "omplex|code 5")]:
        with pytest.raises(BufferError, match=words):
            et.from_dlpack(bad)
    raw = numpy.zeros(17, dtype=numpy.uint8)
    misaligned = raw[1:].view(numpy.float32)
    with pytest.raises(BufferError, match="align"):
        et.from_dlpack(misaligned)
    with pytest.raises(BufferError):
        et.from_dlpack(numpy.arange(4)[::-1])  # negative strides (numpy or edgetensor refuses)


def test_foreign_deleter_runs_with_the_gil_from_another_thread():
    # numpy -> edgetensor -> a capsule whose deleter a C consumer calls on its own thread without the GIL
    # (ctypes releases it around foreign calls): the last view goes there, so numpy's deleter must take
    # the GIL itself (PyGILState_Ensure) before it drops the array.
    a = numpy.arange(8.0)
    ref = weakref.ref(a)
    t = et.from_dlpack(a)
    del a
    capsule = t.__dlpack__()
    del t
    managed = api.PyCapsule_GetPointer(capsule, b"dltensor")
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_SetName(capsule, b"used_dltensor")  # consumed: its destructor leaves it alone
    deleter_address = ctypes.c_void_p.from_address(managed + 48 + 8).value  # DLManagedTensor.deleter (LP64)
    deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(deleter_address)
    thread = threading.Thread(target=deleter, args=(managed,))
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    settle()
    assert ref() is None
    del capsule


def test_deleter_skipped_while_the_interpreter_finalizes():
    # A numpy subclass whose __del__ says when numpy's capsule deleter let it go: dropped while the
    # interpreter runs, the producer's deleter runs (under the GIL); dropped as the interpreter
    # finalizes (module globals), it is skipped (the array leaks at exit), and nothing hangs or crashes.
    code = ("import gc, sys, numpy, edgetensor\n"
            "class Sub(numpy.ndarray):\n"
            "    def __del__(self):\n"
            "        sys.stdout.write('freed ' + str(self.size) + '\\n'); sys.stdout.flush()\n"
            "early = edgetensor.from_dlpack(numpy.arange(5.0).view(Sub))\n"
            "del early; gc.collect()\n"
            "keep = [edgetensor.from_dlpack(numpy.arange(10.0).view(Sub)) for _ in range(3)]\n"
            "m = keep[0].map_read()\n"
            "sys.stdout.write('main done\\n')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == ["freed 5", "main done"], done.stdout


def test_round_trip_keeps_metadata_out_and_values_in():
    im = et.allocate_image(16, 8, "rgb", memory="shm")
    t = et.from_dlpack(im.image_view())
    assert t.shape == (8, 16, 3) and t.pixel_format == et.PixelFormat.UNKNOWN  # DLPack carries no metadata
    gc.collect()


def test_wrong_argument_types_are_type_errors_naming_the_parameter():
    t = filled("float32")
    for kw, words in [(dict(max_version=1), "max_version must be a tuple of two ints"),
                      (dict(max_version=(1,)), "max_version must be a tuple of two ints"),
                      (dict(copy="yes"), "copy must be None, True or False"),
                      (dict(dl_device=1), "dl_device must be a tuple of two ints"),
                      (dict(stream=object()), "stream must be None or an int")]:
        with pytest.raises(TypeError, match=words):
            t.__dlpack__(**kw)
    with pytest.raises(et.InvalidArgumentError, match="stream 5 for a kDLCPU export"):
        t.__dlpack__(stream=5)


def test_from_dlpack_array_api_keywords():
    a = numpy.arange(12, dtype=numpy.int32).reshape(3, 4)
    for device in (None, "cpu", (1, 0)):
        assert et.from_dlpack(a, device=device).memory == et.MemoryKind.FOREIGN
    with pytest.raises(et.DLPackError, match="device 'cuda'"):
        et.from_dlpack(a, device="cuda")
    copied = et.from_dlpack(a[:, 1:3], copy=True)
    assert copied.memory == et.MemoryKind.HEAP
    with copied.map_read() as m:
        assert (numpy.asarray(m) == a[:, 1:3]).all()
    assert et.from_dlpack(a, copy=False).memory == et.MemoryKind.FOREIGN
    with pytest.raises(TypeError, match="copy must be None, True or False"):
        et.from_dlpack(a, copy=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'stream'"):
        et.from_dlpack(a, stream=1)
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        et.from_dlpack()


def test_from_dlpack_names_a_producer_that_returns_no_capsule():
    class Bad:
        def __dlpack__(self, **kw):
            return 5

    with pytest.raises(TypeError, match="__dlpack__\\(\\) returned int, not a DLPack capsule"):
        et.from_dlpack(Bad())


def test_legacy_refusal_of_read_only_storage_says_how_to_ask_from_python():
    with pytest.raises(et.DLPackError, match=r"from Python: __dlpack__\(max_version=\(1, 0\)\)"):
        read_only_tensor().__dlpack__()


def test_numpy_asarray_of_a_tensor_is_a_dlpack_view():
    t = filled("float32")
    a = numpy.asarray(t)
    assert (a == reference((6, 5, 4), "float32")).all() and not a.flags.owndata
    with t.map_write() as m:
        numpy.asarray(m)[0, 0, 0] = -1
    assert a[0, 0, 0] == -1  # the same bytes
    assert numpy.asarray(t, dtype=numpy.float64).dtype == numpy.float64
    ro = read_only_tensor()  # the legacy form cannot say read-only: a copy read through a map
    b = numpy.asarray(ro)
    assert b.flags.owndata and (b == reference((6, 5, 4), "int32")).all()


def test_numpy_asarray_of_a_bfloat16_tensor_shows_its_bits_as_maps_do():
    # numpy has no bfloat16 (numpy.from_dlpack refuses kDLBfloat): a view through a read map, with the
    # structured dtype maps use; the bytes are the tensor's.
    t = et.allocate((2, 3), "bfloat16", "shm")
    with t.map_write() as m:
        numpy.asarray(m)["bf16"][:] = numpy.array([0x3F80, 0x4000, 0xBF80, 0, 1, 0x7F80], dtype=numpy.uint16).reshape(2, 3)
    a = numpy.asarray(t)
    assert a.dtype == numpy.dtype([("bf16", "<u2")]) and a.shape == (2, 3) and not a.flags.writeable
    assert a["bf16"].tolist() == [[0x3F80, 0x4000, 0xBF80], [0, 1, 0x7F80]]
    with t.map_write() as m:
        numpy.asarray(m)["bf16"][0, 0] = 0x4040
    assert a["bf16"][0, 0] == 0x4040  # a view, not a copy
    del a
    gc.collect()
    with t.map_write():  # the view's map is gone with it
        pass
