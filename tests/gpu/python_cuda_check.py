# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/run.sh's Python step: Tensor.__dlpack__(dl_device=(kDLCUDA, 0)) on a real GPU.

The capsule's device pointer is read and written with the real libcudart's cudaMemcpy (the file edgetensor loaded,
through ctypes): the bytes a CPU map wrote arrive on the device, and bytes the device writes arrive in
the next CPU map. Also: the legacy form, the stream argument, from_dlpack's refusal of device memory, and
every export's deleter run exactly once. torch is used when it has CUDA (Debian's has not).
Needs no numpy. Exit 0: passed; 1: a failure; 77: no usable GPU (every step SKIPPED)."""

import ctypes
import os
import struct
import sys

import edgetensor as et
from edgetensor import _edgetensor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from dlpack_ctypes import DLTensor, Versioned, api  # noqa: E402

KDLCPU, KDLCUDA = 1, 2
results = {"passed": 0, "failed": 0, "skipped": 0}


def report(kind, step, detail=""):
    """kind: passed, failed, skipped (a GPU step that could not run), or note (an optional consumer absent)."""
    if kind in results:
        results[kind] += 1
    label = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIPPED", "note": "NOTE"}[kind]
    print("%-7s python %s%s" % (label, step, (": " + detail) if detail else ""), flush=True)


def pattern(n):
    return bytes((i * 7 + 3) % 251 for i in range(n))


def check(step, condition, detail=""):
    report("passed" if condition else "failed", step, detail)
    return condition


def main():
    runtime = et.cuda.report()
    print("cuda: " + runtime.summary(), flush=True)
    steps = ["kDLCUDA versioned export", "device reads the CPU's bytes", "CPU reads the device's bytes",
             "kDLCUDA legacy export", "stream argument", "from_dlpack refuses device memory", "deleters"]
    if not runtime.available:
        for s in steps:
            report("skipped", s, "no usable GPU: " + runtime.error)
        return
    cudart = ctypes.CDLL(runtime.runtime_file)
    memcpy, sync = cudart.cudaMemcpy, cudart.cudaDeviceSynchronize
    memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    exports_before = _edgetensor._live_export_count()

    for kind in ("shm", "heap"):
        shape = (480, 640, 3)
        n = 480 * 640 * 3
        t = et.allocate(shape, "uint8", kind)
        with t.map_write() as m:
            memoryview(m).cast("B")[:] = pattern(n)
        capsule = t.__dlpack__(max_version=(1, 1), dl_device=(KDLCUDA, 0))
        head = Versioned.from_address(api.PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
        dl = head.dl_tensor
        check("kDLCUDA versioned export (%s)" % kind,
              dl.device_type == KDLCUDA and dl.device_id == 0 and dl.data and dl.byte_offset == 0 and dl.ndim == 3
              and [dl.shape[i] for i in range(3)] == list(shape) and [dl.strides[i] for i in range(3)] == [1920, 3, 1],
              "device %d:%d data 0x%x" % (dl.device_type, dl.device_id, dl.data or 0))
        host = ctypes.create_string_buffer(n)
        rc = memcpy(host, dl.data, n, 2)  # cudaMemcpyDeviceToHost
        check("device reads the CPU's bytes (%s)" % kind, rc == 0 and host.raw == pattern(n), "cudaMemcpy rc %d" % rc)
        rc = memcpy(dl.data, b"\x5a" * 4096, 4096, 1)  # cudaMemcpyHostToDevice
        rc2 = sync()
        del head, dl, capsule  # the deleter releases the CUDA map
        with t.map_read() as m:
            got = bytes(memoryview(m).cast("B")[:4097])
        check("CPU reads the device's bytes (%s)" % kind, rc == 0 and rc2 == 0 and got == b"\x5a" * 4096 + pattern(4097)[4096:],
              "cudaMemcpy rc %d, sync rc %d" % (rc, rc2))

    t = et.allocate((64, 64), "float32", "shm")
    legacy = t.__dlpack__(dl_device=(KDLCUDA, 0))
    dl = DLTensor.from_address(api.PyCapsule_GetPointer(legacy, b"dltensor"))
    check("kDLCUDA legacy export", dl.device_type == KDLCUDA and dl.data != 0 and dl.code == 2 and dl.bits == 32)
    del dl, legacy
    ok = True
    for s in (None, -1, 1, 2):
        t.__dlpack__(max_version=(1, 1), dl_device=(KDLCUDA, 0), stream=s)
    try:
        t.__dlpack__(max_version=(1, 1), dl_device=(KDLCUDA, 0), stream=0)
        ok = False
    except ValueError:
        pass
    check("stream argument", ok, "None, -1, 1, 2 accepted; 0 refused")
    try:
        et.from_dlpack(t.__dlpack__(max_version=(1, 1), dl_device=(KDLCUDA, 0)))
        check("from_dlpack refuses device memory", False, "accepted a kDLCUDA capsule")
    except et.DLPackError as e:
        check("from_dlpack refuses device memory", "not CPU-addressable" in str(e), str(e))
    check("deleters", _edgetensor._live_export_count() == exports_before,
          "live exports %d, before %d" % (_edgetensor._live_export_count(), exports_before))
    try:
        import torch  # noqa: PLC0415

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        report("note", "torch.from_dlpack on CUDA", "not run: no torch with CUDA here")
        return
    t = et.allocate((1000,), "float32", "shm")
    with t.map_write() as m:
        memoryview(m).cast("B")[:] = struct.pack("1000f", *range(1000))
    x = torch.from_dlpack(t.__dlpack__(max_version=(1, 1), dl_device=(KDLCUDA, 0)))
    check("torch.from_dlpack on CUDA", x.is_cuda and float(x.sum().item()) == 499500.0, str(x.device))


if __name__ == "__main__":
    main()
    print("python_cuda_check: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % results)
    sys.exit(1 if results["failed"] else (77 if results["skipped"] else 0))
