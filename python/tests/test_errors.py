# SPDX-License-Identifier: Apache-2.0
"""Errors: edgetensor.Error (an OSError) with .code and .errno, one subclass per ErrorCode that is also
the built-in a Python caller expects; messages are the library's."""

import errno
import os
import socket

import pytest

import edgetensor as et
from edgetensor import _edgetensor

# ErrorCode -> (class, built-in it must also be; None: Error only).
TABLE = [
    (et.ErrorCode.INVALID_ARGUMENT, et.InvalidArgumentError, ValueError),
    (et.ErrorCode.OUT_OF_RANGE, et.OutOfRangeError, ValueError),
    (et.ErrorCode.NOT_FOUND, et.NotFoundError, FileNotFoundError),
    (et.ErrorCode.ALREADY_EXISTS, et.AlreadyExistsError, FileExistsError),
    (et.ErrorCode.PERMISSION_DENIED, et.PermissionDeniedError, PermissionError),
    (et.ErrorCode.OUT_OF_MEMORY, et.OutOfMemoryError, MemoryError),
    (et.ErrorCode.BUSY, et.BusyError, BlockingIOError),
    (et.ErrorCode.UNAVAILABLE, et.UnavailableError, None),
    (et.ErrorCode.UNSUPPORTED, et.UnsupportedError, None),
    (et.ErrorCode.FAILED_PRECONDITION, et.FailedPreconditionError, None),
    (et.ErrorCode.INTERNAL, et.InternalError, None),
    (et.ErrorCode.TIMEOUT, et.TimeoutError, TimeoutError),
]


def test_every_code_has_its_class():
    assert len(TABLE) == len(et.ErrorCode.__members__)
    for code, cls, builtin in TABLE:
        with pytest.raises(cls) as e:
            _edgetensor._raise_error(code, "message for %s" % code.name, errno.EIO)
        err = e.value
        assert isinstance(err, et.Error) and isinstance(err, OSError)
        if builtin is not None:
            assert isinstance(err, builtin)
        assert err.code == code and err.errno == errno.EIO
        assert str(err) == "message for %s" % code.name
        assert type(err).__module__ == "edgetensor"
    with pytest.raises(et.Error) as e:
        _edgetensor._raise_error(et.ErrorCode.INTERNAL, "no errno", 0)
    assert e.value.errno is None


def test_dlpack_error_is_a_buffer_error():
    assert issubclass(et.DLPackError, et.Error) and issubclass(et.DLPackError, BufferError)


def test_real_errors_carry_code_errno_and_the_library_message():
    t = et.allocate((4, 4), "uint8", "shm")
    with pytest.raises(et.OutOfRangeError) as e:
        t.view(0, (5, 4))
    assert e.value.code == et.ErrorCode.OUT_OF_RANGE and e.value.errno is None
    assert "20 B" in str(e.value) and "16 B" in str(e.value)  # names the values and the limit
    with pytest.raises(et.NotFoundError) as e:
        et.shm.open("/et-pytest-missing-%d" % os.getpid(), (1,), "u8", allow_shrinkable=True)
    assert e.value.errno == errno.ENOENT and "does not exist" in str(e.value)
    with pytest.raises(et.InvalidArgumentError) as e:
        et.import_fd(-1, (1,), "u8")
    assert isinstance(e.value, ValueError)


def test_out_of_memory():
    name = "/et-pytest-oom-%d" % os.getpid()
    with pytest.raises(et.OutOfMemoryError) as e:
        et.allocate((1 << 40,), "uint8", "shm", shm_name=name)  # 1 TiB reserved in /dev/shm: ENOSPC
    assert isinstance(e.value, MemoryError) and e.value.errno == errno.ENOSPC
    assert name[1:] not in os.listdir("/dev/shm")


def test_unavailable_when_the_peer_is_gone():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.close()
    with pytest.raises(et.UnavailableError):
        et.ipc.receive(b)
    b.close()


def test_busy_is_blocking_io_error(gl_context):
    ctx = gl_context
    t = et.allocate((16,), "uint8", "gl_pbo", gl_context=ctx)
    assert t.memory == et.MemoryKind.GL_PBO
    with t.map_write():
        with pytest.raises(et.BusyError) as e:
            t.map_read()  # one CPU map of a PBO at a time
        assert isinstance(e.value, BlockingIOError) and "mapped" in str(e.value)
    assert "Mesa" in ctx.info.vendor or ctx.info.renderer
