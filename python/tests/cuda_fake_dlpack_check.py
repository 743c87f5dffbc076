# SPDX-License-Identifier: Apache-2.0
"""ctest python.cuda_fake_dlpack: __dlpack__(dl_device=(kDLCUDA, n)) through cuda::map, against the CUDA
test double (EDGETENSOR_CUDART = tests/support/fake_cudart, host memory standing in for the device, every
call recorded). Debian's torch is CPU-only: a real GPU consumer is tests/gpu/run.sh's business."""

import ctypes
import os
import sys

import numpy
import pytest

import edgetensor as et
from edgetensor import _edgetensor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from dlpack_ctypes import DLTensor, Versioned, api  # noqa: E402

fake = ctypes.CDLL(os.environ["EDGETENSOR_CUDART"])  # the same file the library dlopens: one state
fake.et_fake_cudart_count.argtypes = [ctypes.c_char_p]
fake.et_fake_cudart_live.argtypes = [ctypes.c_char_p]


def legacy_tensor(capsule):
    return DLTensor.from_address(api.PyCapsule_GetPointer(capsule, b"dltensor"))


def versioned(capsule):
    return Versioned.from_address(api.PyCapsule_GetPointer(capsule, b"dltensor_versioned"))


@pytest.fixture(autouse=True)
def available():
    r = et.cuda.report()
    assert r.available, r.summary()


def test_kdlcuda_capsules_come_from_cuda_map():
    t = et.allocate((4, 8), "float32", "shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = numpy.arange(32, dtype=numpy.float32).reshape(4, 8)
    exports = _edgetensor._live_export_count()
    registered = fake.et_fake_cudart_count(b"cudaHostRegister")
    view = t.slice(1, 2, 6).batch(1)  # offset 40 B, 4 elements
    c = view.__dlpack__(max_version=(1, 1), dl_device=(2, 0))
    assert api.PyCapsule_GetName(c) == b"dltensor_versioned"
    head = versioned(c)
    dl = head.dl_tensor
    assert (dl.device_type, dl.device_id, dl.ndim, dl.byte_offset) == (2, 0, 1, 0)
    assert (dl.shape[0], dl.strides[0], head.flags) == (4, 1, 0)
    # The fake's device pointer is the host address (cudaHostGetDevicePointer): the view's offset is in data.
    host = versioned(t.__dlpack__(max_version=(1, 1))).dl_tensor.data
    assert dl.data == host + 40
    assert fake.et_fake_cudart_count(b"cudaHostRegister") == registered + 1
    legacy = view.__dlpack__(dl_device=(2, 0))
    assert api.PyCapsule_GetName(legacy) == b"dltensor"
    assert (legacy_tensor(legacy).device_type, legacy_tensor(legacy).data) == (2, host + 40)
    assert fake.et_fake_cudart_count(b"cudaHostRegister") == registered + 1  # one registration per storage
    assert view.__dlpack_device__() == (1, 0)  # the tensor itself lives on the CPU
    del c, legacy
    assert _edgetensor._live_export_count() == exports
    assert fake.et_fake_cudart_violations() == 0


def test_stream_argument_as_the_array_api_says():
    t = et.allocate((16,), "uint8", "shm")
    for stream in (None, -1, 1, 2, 0x7F0000001000):  # legacy default, per-thread default, a cudaStream_t
        t.__dlpack__(dl_device=(2, 0), stream=stream)
    for bad in (0, -2):
        with pytest.raises(ValueError, match="stream"):
            t.__dlpack__(dl_device=(2, 0), stream=bad)


def test_zero_elements_and_unreachable_imports():
    empty = et.allocate((0, 4), "float32", "shm")
    c = empty.__dlpack__(max_version=(1, 1), dl_device=(2, 0))
    assert versioned(c).dl_tensor.device_type == 2 and versioned(c).dl_tensor.shape[0] == 0
    t = et.allocate((4,), "float32", "shm")
    with pytest.raises(et.DLPackError, match="kDLCUDA") as e:
        et.from_dlpack(t.__dlpack__(max_version=(1, 1), dl_device=(2, 0)))  # the CPU cannot reach it
    assert e.value.code == et.ErrorCode.UNSUPPORTED


def test_teardown_unregisters_once():
    live = fake.et_fake_cudart_live(b"host_register")
    t = et.allocate((64,), "uint8", "heap")
    caps = [t.__dlpack__(dl_device=(2, 0)) for _ in range(100)]
    assert fake.et_fake_cudart_live(b"host_register") == live + 1
    del caps, t
    assert fake.et_fake_cudart_live(b"host_register") == live
    assert fake.et_fake_cudart_violations() == 0
