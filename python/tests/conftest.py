# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the Python lane (ctest label python; docs/TESTING.md, "Python lane")."""

import gc
import os

import pytest

#: Set by ctest in the ASan+UBSan build (sanitizer runtimes preloaded into the interpreter).
SANITIZED = os.environ.get("ET_PY_SANITIZED") == "1"


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def mappings():
    """Mappings of shared buffers (memfd, /dev/shm objects, DMA-BUFs) in /proc/self/maps. Anonymous
    mappings are left out: malloc makes and trims them as Python runs, whatever edgetensor does."""
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if "/memfd:" in line or "/dev/shm/" in line or "dmabuf" in line)


def shm_entries():
    """This process's named shm objects (the tests put the pid in every name): /dev/shm is shared with
    every other process on the machine, whose entries come and go."""
    pid = str(os.getpid())
    return {name for name in os.listdir("/dev/shm") if pid in name}


def settle():
    """Collects garbage until nothing more is freed (capsules and arrays in cycles)."""
    while gc.collect():
        pass


@pytest.fixture
def torch():
    """Debian's torch (1.13): a required consumer. Under the sanitizers it is best effort: torch's own
    libraries are not instrumented and some of their start-up trips ASan, so a failing import skips there
    (the fd and mapping counts of the lifetime tests still hold the lifetimes)."""
    try:
        import torch as t
    except Exception as e:  # noqa: BLE001 - any import failure
        if SANITIZED:
            pytest.skip("torch does not import under the sanitizers: %s" % e)
        raise
    return t


@pytest.fixture
def gl_context():
    """A headless edgetensor.gl.Context (Mesa here); skips without one unless EDGETENSOR_REQUIRE_GL=1 (CI)."""
    import edgetensor

    try:
        return edgetensor.gl.Context.create()
    except edgetensor.UnavailableError as e:
        if os.environ.get("EDGETENSOR_REQUIRE_GL") == "1":
            raise
        pytest.skip("no headless EGL context: %s" % e)


@pytest.fixture
def pattern():
    """pattern(n, k) -> n bytes (k * b + 5) & 0xff as a numpy uint8 array."""
    import numpy

    def make(n, k=13, c=5):
        return ((numpy.arange(n, dtype=numpy.int64) * k + c) & 0xFF).astype(numpy.uint8)

    return make
