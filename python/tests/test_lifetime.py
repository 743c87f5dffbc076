# SPDX-License-Identifier: Apache-2.0
"""Lifetimes: 10 000 capsules dropped unconsumed and 10 000 consumed by numpy, each deleter exactly once
(counted), with open fds, mappings (/proc/self/maps) and /dev/shm entries back to their baseline; the
producing tensor deleted while torch still holds the data."""

import os
import sys

import numpy
import pytest

import edgetensor as et
from edgetensor import _edgetensor

from conftest import mappings, open_fds, settle, shm_entries

N = 10_000


def baseline():
    """Open fds, shared-buffer mappings, this process's /dev/shm names, live exports, live imports."""
    settle()
    return open_fds(), mappings(), shm_entries(), _edgetensor._live_export_count(), _edgetensor._live_import_count()


@pytest.mark.parametrize("memory", ["shm", "heap", "named shm"])
def test_unconsumed_and_numpy_consumed_capsules(memory):
    before = baseline()
    name = "/et-pytest-life-%d" % os.getpid()
    if memory == "named shm":
        t = et.allocate((64, 64), "float32", "shm", shm_name=name)
        et.shm.remove(name)  # the object lives on in this process's mapping only
    else:
        t = et.allocate((64, 64), "float32", memory)
    exports0 = _edgetensor._live_export_count()

    capsules = [t.__dlpack__(max_version=(1, 1)) if i % 2 else t.__dlpack__() for i in range(N)]
    assert _edgetensor._live_export_count() == exports0 + N
    if memory != "heap":
        assert mappings() == before[1] + 1  # one mapping per storage, however many exports (gone below)
    del capsules  # unconsumed: each capsule's destructor calls its deleter once
    assert _edgetensor._live_export_count() == exports0

    arrays = [numpy.from_dlpack(t.slice(0, i % 64, 64)) for i in range(N)]
    assert _edgetensor._live_export_count() == exports0 + N
    with t.map_write() as m:
        numpy.asarray(m)[63, 0] = 3.5
    assert arrays[-1][-1, 0] == 3.5  # every slice ends at row 63
    del arrays  # numpy calls each deleter once
    settle()
    assert _edgetensor._live_export_count() == exports0
    del t
    assert baseline() == before


def test_numpy_producer_deleters_run_once_each():
    before = baseline()
    a = numpy.zeros((32, 32), dtype=numpy.uint8)
    refs = sys.getrefcount(a)
    imports = [et.from_dlpack(a) for _ in range(N)]
    assert _edgetensor._live_import_count() == before[4] + N
    assert sys.getrefcount(a) > refs  # each import holds the array through numpy's manager
    del imports
    settle()
    assert sys.getrefcount(a) == refs  # every deleter ran, none twice
    assert baseline() == before


def test_torch_consumed_and_producer_deleted_while_torch_holds_data(torch):
    before = baseline()
    t = et.allocate((128, 3), "float32", "shm")
    with t.map_write() as m:
        numpy.asarray(m)[:] = numpy.arange(384, dtype=numpy.float32).reshape(128, 3)
    ident = t.identity
    tensors = [torch.from_dlpack(t.batch(i % 128)) for i in range(1000)]
    x = torch.from_dlpack(t)
    del t, tensors
    settle()
    assert ident.alive  # torch still holds the data: the storage lives
    assert float(x[127, 2]) == 383.0 and float(x.sum()) == float(sum(range(384)))
    x[0, 0] = 7  # still writable memory
    del x
    settle()
    assert not ident.alive
    assert baseline() == before
