# SPDX-License-Identifier: Apache-2.0
"""The awaitable receives of edgetensor.channel.Receiver: loop.add_reader on fileno(), no thread."""

import asyncio
import errno

from . import _edgetensor  # type: ignore[attr-defined]  # the native module has no stub

#: While a receive waits, releases queued because the socket was full are looked for this often (they
#: then go out when the socket turns writable: loop.add_writer).
_RECHECK_S = 0.1


async def _wait(receiver, take, timeout):
    if timeout is not None and (not isinstance(timeout, (int, float)) or not timeout >= 0):
        take(timeout=timeout)  # raises what receive() raises for it (TypeError, InvalidArgumentError)
    if receiver._awaiting:
        raise RuntimeError("edgetensor.channel.Receiver: another receive_async() is waiting on this receiver")
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    receiver._awaiting = True
    try:
        while True:
            try:
                return take(timeout=0)  # sends queued releases first; BusyError: no frame has arrived
            except _edgetensor.BusyError:
                pass
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                name = " '%s'" % receiver.name if receiver.name else ""
                _edgetensor._raise_error(_edgetensor.ErrorCode.BUSY,
                                         "channel%s: no frame within %d ms" % (name, round(timeout * 1000)),
                                         errno.ETIMEDOUT)
            fd = receiver.fileno()
            woke = loop.create_future()

            def wake():
                if not woke.done():
                    woke.set_result(None)

            loop.add_reader(fd, wake)
            writer = receiver.stats().releases_queued > 0
            if writer:
                loop.add_writer(fd, wake)
            try:
                await asyncio.wait({woke}, timeout=_RECHECK_S if left is None else min(left, _RECHECK_S))
            finally:
                loop.remove_reader(fd)
                if writer:
                    loop.remove_writer(fd)
    finally:
        receiver._awaiting = False


async def receive_async(self, timeout=None):
    """await receiver.receive_async(timeout=None): the next Delivery, as receive(), without blocking the
    event loop: it waits with loop.add_reader on fileno() (and add_writer while releases are queued). One
    awaiting receive per receiver at a time (RuntimeError otherwise). TimeoutError after `timeout` seconds;
    cancelling the task ends the wait."""
    return await _wait(self, self.receive, timeout)


async def receive_latest_async(self, timeout=None):
    """await receiver.receive_latest_async(timeout=None): receive_latest() without blocking the event loop."""
    return await _wait(self, self.receive_latest, timeout)


_edgetensor.channel.Receiver.receive_async = receive_async
_edgetensor.channel.Receiver.receive_latest_async = receive_latest_async
