# SPDX-License-Identifier: Apache-2.0
"""edgetensor.Fence and Tensor.export_fence / import_fence. This lane has no DMA-BUF and no driver that
makes sync_files: it checks the signalled fence, every refusal (with the C++ error text) and fd ownership;
real fences run in the kernel lane (C++ and C API tests, docs/SYNC.md)."""

import os
import select

import pytest

import edgetensor as et

from conftest import open_fds


def test_signalled_fence():
    f = et.Fence()
    assert f.is_signalled_without_fd and f.is_signalled() and f.fileno() == -1
    f.wait()  # no bound: returns at once
    f.wait(0)
    f.wait(timeout=0.5)
    s = f.status()
    assert (s.name, s.status, s.fences) == ("", 1, [])
    assert str(s) == "signalled" and "signalled" in repr(f)
    d = f.dup()
    assert d.is_signalled_without_fd
    m = et.Fence.merge(f, d, name="both")
    assert m.is_signalled_without_fd and m.is_signalled()
    assert f.release() == -1 and f.is_signalled_without_fd


def test_wait_timeout_arguments():
    f = et.Fence()
    with pytest.raises(et.InvalidArgumentError, match="negative"):
        f.wait(-1)
    with pytest.raises(TypeError, match="timeout"):
        f.wait("1")


def test_duplicate_minus_one_is_signalled_and_pipes_are_refused():
    assert et.Fence.duplicate(-1).is_signalled_without_fd
    r, w = os.pipe()
    try:
        before = open_fds()
        with pytest.raises(et.InvalidArgumentError, match="is not a sync_file") as e:
            et.Fence.duplicate(r)
        assert isinstance(e.value, ValueError)
        assert open_fds() == before  # the dup was closed; the caller's fd stays open
        os.fstat(r)
        with open(os.devnull) as f:  # an object with fileno()
            with pytest.raises(et.InvalidArgumentError, match="is not a sync_file"):
                et.Fence.duplicate(f)
    finally:
        os.close(r)
        os.close(w)


def test_adopt_takes_the_fd_even_on_error():
    r, w = os.pipe()
    os.close(w)
    with pytest.raises(et.InvalidArgumentError, match="Fence::adopt: fd %d.* is not a sync_file" % r):
        et.Fence.adopt(r)
    with pytest.raises(OSError):
        os.fstat(r)  # closed by the failed adopt, as fence.h says
    with pytest.raises(et.InvalidArgumentError, match="no fd"):
        et.Fence.adopt(-1)


def test_fence_access_names():
    assert et.FenceAccess.READ != et.FenceAccess.WRITE
    t = et.allocate((4,), "uint8", "shm")
    with pytest.raises(et.InvalidArgumentError, match="unknown fence access 'rw'"):
        t.export_fence("rw")
    with pytest.raises(TypeError, match="access"):
        t.export_fence(1)


@pytest.mark.parametrize("access", ["read", "write", et.FenceAccess.READ, et.FenceAccess.WRITE])
def test_fences_on_memory_without_dma_buf_are_refused_with_the_cpp_text(access):
    for memory, detail in (("shm", "memfd"), ("heap", "heap")):
        t = et.allocate((4,), "uint8", memory)
        with pytest.raises(et.UnsupportedError, match="export_fence: %s tensor \\(%s" % (memory, detail)) as e:
            t.export_fence(access)
        assert "fences attach to DMA-BUFs only" in str(e.value)
        with pytest.raises(et.UnsupportedError, match="import_fence: %s tensor .*DMA-BUFs only" % memory):
            t.import_fence(et.Fence(), access)


def test_dma_buf_fences_when_the_machine_has_one():
    try:
        t = et.allocate((4096,), "uint8", "dmabuf")
    except et.Error as e:
        pytest.skip("no DMA-BUF here: %s" % e)
    try:
        f = t.export_fence("write")
    except et.UnsupportedError as e:
        pytest.skip("kernel without DMA_BUF_IOCTL_EXPORT_SYNC_FILE: %s" % e)
    f.wait(1.0)  # an idle buffer's fences are signalled
    assert f.is_signalled() and f.status().status == 1 and f.fileno() >= 0
    assert select.select([f.fileno()], [], [], 0)[0] == [f.fileno()]
    t.import_fence(f, "read")
    d = f.dup()
    assert d.fileno() not in (-1, f.fileno())
    merged = et.Fence.merge(f, d, "py")
    assert merged.status().name == "py"
    fd = d.release()
    assert d.is_signalled_without_fd
    os.close(fd)
    with t.map_read(timeout=0) as m:
        assert m.mapped
