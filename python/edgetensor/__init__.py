# SPDX-License-Identifier: Apache-2.0
"""edgetensor: zero-copy tensor memory for edge-AI pipelines.

Tensors over DMA-BUF, shared memory, the heap or GL PBOs; CPU maps with the buffer protocol; fds and
Unix-socket IPC between processes; DLPack for numpy and PyTorch. The C++ API (edgetensor/*.h) is the
reference for every rule; this package binds it (edgetensor._edgetensor); info() parses probe()'s JSON.

    import edgetensor, numpy
    t = edgetensor.allocate((480, 640, 3), "uint8", memory="shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = 128          # zero-copy, writable
"""

import json as _json
import sys as _sys

from . import _edgetensor
from ._edgetensor import *  # noqa: F401,F403
from ._edgetensor import __version__, channel, cuda, gl, ipc, shm  # noqa: F401
from . import _channel  # noqa: F401  (the awaitable receives of channel.Receiver)

# `import edgetensor.ipc` (and channel, cuda, gl, shm) finds the native submodules.
for _name in ("ipc", "channel", "cuda", "gl", "shm"):
    _sys.modules[__name__ + "." + _name] = getattr(_edgetensor, _name)
del _name


def info() -> dict:
    """The machine report of edgetensor::probe() (schema "edgetensor.info/1"), parsed: backends, devices,
    the system. It probes for real (allocations, a GL context, the CUDA runtime; about 0.1 s) within
    this process: the shareable sections check their memory here and say that no cross-process round
    trip ran (`edgetensor info` runs those). Never raises for what it finds: failures are sections
    whose "status" is "failed" or "unavailable"."""
    return _json.loads(_edgetensor._probe_json())


def _tensor_array(self, dtype=None, copy=None):
    """numpy.asarray(tensor): numpy.from_dlpack(tensor), a zero-copy view (read-only under numpy < 2.1,
    which cannot import a writable DLPack tensor: write through tensor.map_write()). Read-only storage,
    which the legacy DLPack form cannot describe, and copy=True give a copy read through a CPU map.
    bfloat16, which numpy has no type for, is a read-only view through a CPU map, as the structured
    dtype [('bf16', '<u2')] (its bits), as maps show it.
    The view holds a CPU map while it lives (a DMA-BUF stays inside one sync bracket, a PBO stays mapped)."""
    import numpy

    if copy is not True and self.dtype_name == "bfloat16":
        a = numpy.asarray(self.map_read())  # the array keeps the map (its buffer's exporter) open
    elif copy is not True and not self.read_only:
        a = numpy.from_dlpack(self)
    else:
        with self.map_read() as m:
            a = numpy.array(m, copy=True)
    return a if dtype is None else a.astype(dtype, copy=False)


Tensor.__array__ = _tensor_array  # type: ignore[name-defined]  # noqa: F405
