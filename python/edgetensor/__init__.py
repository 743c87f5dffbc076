# SPDX-License-Identifier: Apache-2.0
"""edgetensor: zero-copy tensor memory for edge-AI pipelines.

Tensors over DMA-BUF, shared memory, the heap or GL PBOs; CPU maps with the buffer protocol; fds and
Unix-socket IPC between processes; DLPack for numpy and PyTorch. The C++ API (edgetensor/*.h) is the
reference for every rule; this package binds it (edgetensor._edgetensor) and adds info().

    import edgetensor, numpy
    t = edgetensor.allocate((480, 640, 3), "uint8", memory="shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = 128          # zero-copy, writable
"""

import json as _json
import os as _os
import subprocess as _subprocess
import sys as _sys

from . import _edgetensor
from ._edgetensor import *  # noqa: F401,F403
from ._edgetensor import __version__, cuda, gl, ipc, shm  # noqa: F401

# `import edgetensor.ipc` (and cuda, gl, shm) finds the native submodules.
for _name in ("ipc", "cuda", "gl", "shm"):
    _sys.modules[__name__ + "." + _name] = getattr(_edgetensor, _name)
del _name

#: Environment variable naming the `edgetensor` CLI that info() runs (overrides the one found next to
#: this package).
CLI_ENV = "EDGETENSOR_CLI"


def _cli_path() -> str:
    from . import _paths

    override = _os.environ.get(CLI_ENV)
    if override:
        return override
    if _paths.CLI is None:
        raise FileNotFoundError(
            "edgetensor was built without its CLI (ET_BUILD_TOOLS=OFF): set " + CLI_ENV + " to an `edgetensor` binary"
        )
    if _paths.CLI_IS_RELATIVE:
        return _os.path.normpath(_os.path.join(_os.path.dirname(__file__), _paths.CLI))
    return str(_paths.CLI)


def info() -> dict:
    """Runs `edgetensor info --json` and returns the parsed report (schema "edgetensor.info/1").

    The CLI is the one installed with this package (<prefix>/bin/edgetensor; in the build tree, the built
    one), or the file named by $EDGETENSOR_CLI. It probes this machine for real: backends, devices and
    cross-process round trips (about a second). Raises FileNotFoundError when the CLI is missing and
    subprocess.CalledProcessError when it fails (its stderr in the exception's message).
    """
    cli = _cli_path()
    if not _os.path.exists(cli):
        raise FileNotFoundError("edgetensor CLI not found at " + cli + " (set " + CLI_ENV + " to override)")
    done = _subprocess.run([cli, "info", "--json"], capture_output=True, text=True)
    report = None
    try:
        report = _json.loads(done.stdout)
    except ValueError:
        pass
    # Exit 1 means the heap probe failed; the report still says why. Anything else without JSON is an error.
    if report is None:
        raise _subprocess.CalledProcessError(done.returncode, [cli, "info", "--json"], done.stdout, done.stderr)
    return report


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
