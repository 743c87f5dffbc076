# SPDX-License-Identifier: Apache-2.0
"""The Python peer of capi_round_trip_test.c (ctest capi.round_trip_c_python_c): libedgetensor-c.so through
Python's ctypes only (et_ctypes.py, declared from the header's text; no edgetensor Python module).

Usage: python3 round_trip_python_peer.py <libedgetensor-c.so> --receive-fd <a> --send-fd <b>
Does what round_trip_cpp_peer.cpp does: receives frames on fd a until the end of stream; each one (a frame or
a tensor) must hold round_trip_byte(sequence, o) at each byte o of each plane row (o counted from the sent
image's or tensor's first byte); its copy, from a pool of the same layout, shape and dtype, holds each byte + 1
and goes back on fd b with the same sequence, pts, duration and flags. Then end of stream and drain. Exits 0,
or prints the first difference or error to stderr and exits 1."""
import os
import sys

sys.dont_write_bytecode = True  # et_ctypes sits in the source tree

import ctypes  # noqa: E402

from et_ctypes import (ET_CHANNEL_HAS_DURATION, ET_CHANNEL_HAS_PTS, ET_CHANNEL_HAS_SEQUENCE,  # noqa: E402
                       ET_MEMORY_SHM, AllocateOptions, CallError, ChannelDelivery, ChannelReceiverOptions,
                       ChannelSendOptions, ChannelSenderOptions, ImageLayout, PoolOptions, TensorInfo, check, load,
                       ptr, sized, u64)

WAIT_MS = 20000


def round_trip_byte(seq, o):
    """Byte `o` of frame `seq`: capi_round_trip_test.c's round_trip_byte."""
    return (seq * 37 + o * 11 + 5) & 0xff


class Mismatch(Exception):
    """A received byte that is not the pattern's."""


class Peer:
    def __init__(self, lib, receive_fd, send_fd):
        self.lib = lib
        self.receiver, self.sender, self.images, self.tensors = ptr(), ptr(), ptr(), ptr()
        ro = sized(ChannelReceiverOptions, name=b"c-to-python")
        status = lib.et_channel_receiver_create_adopt(receive_fd, ctypes.byref(ro), ctypes.byref(self.receiver))
        if status != 0:
            os.close(send_fd)  # the failed create closed receive_fd already
        check(lib, status, "et_channel_receiver_create_adopt")
        so = sized(ChannelSenderOptions, use_send_timeout=1, send_timeout_ms=WAIT_MS, name=b"python-to-c")
        check(lib, lib.et_channel_sender_create_adopt(send_fd, ctypes.byref(so), ctypes.byref(self.sender)),
              "et_channel_sender_create_adopt")
        self.allocate = sized(AllocateOptions, memory=ET_MEMORY_SHM)
        self.pool_options = sized(PoolOptions, max_buffers=2, name=b"python-round-trip",
                                  allocate=ctypes.pointer(self.allocate))

    def info(self, tensor):
        info = sized(TensorInfo)
        check(self.lib, self.lib.et_tensor_get_info(tensor, ctypes.byref(info)), "et_tensor_get_info")
        return info

    def copy_plus_one(self, src, dst, seq, first):
        """Checks `src`'s rows (dimension 0; the rest of each row contiguous) against frame `seq` from byte
        `first`, and writes each byte + 1 to the same place of `dst`'s rows."""
        lib, si, di = self.lib, self.info(src), self.info(dst)
        if si.rank == 0 or si.shape[0] == 0 or si.rank != di.rank or si.packed_bytes != di.packed_bytes:
            raise Mismatch(f"frame {seq}: the copy's shape differs")
        rows = si.shape[0]
        row_bytes, s_stride, d_stride = si.packed_bytes // rows, si.strides_bytes[0], di.strides_bytes[0]
        rmap, wmap, rdata, wdata, rsize, wsize = ptr(), ptr(), ptr(), ptr(), ctypes.c_size_t(), ctypes.c_size_t()
        check(lib, lib.et_tensor_map_read(src, ctypes.byref(rmap), ctypes.byref(rdata), ctypes.byref(rsize)),
              "et_tensor_map_read")
        try:
            check(lib, lib.et_tensor_map_write(dst, ctypes.byref(wmap), ctypes.byref(wdata), ctypes.byref(wsize)),
                  "et_tensor_map_write")
            try:
                got_all = (ctypes.c_uint8 * rsize.value).from_address(rdata.value)
                out_all = (ctypes.c_uint8 * wsize.value).from_address(wdata.value)
                for r in range(rows):
                    s0, d0 = r * s_stride, r * d_stride
                    got = bytes(got_all[s0:s0 + row_bytes])
                    want = bytes(round_trip_byte(seq, first + s0 + c) for c in range(row_bytes))
                    if got != want:
                        c = next(c for c in range(row_bytes) if got[c] != want[c])
                        raise Mismatch(f"frame {seq}: byte {first + s0 + c} is {got[c]}, expected {want[c]}")
                    out_all[d0:d0 + row_bytes] = [(b + 1) & 0xff for b in got]
            finally:
                lib.et_map_release(wmap)
        finally:
            lib.et_map_release(rmap)

    def answer(self, d):
        """Sends the copy of delivery `d` back."""
        lib = self.lib
        options = sized(ChannelSendOptions, flags=d.flags, sequence=d.sequence, pts_ns=d.pts_ns,
                        duration_ns=d.duration_ns,
                        has=ET_CHANNEL_HAS_SEQUENCE | (d.has & (ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION)))
        sent, copy = u64(), ptr()
        if d.frame:
            layout = sized(ImageLayout)
            check(lib, lib.et_frame_get_layout(d.frame, ctypes.byref(layout)), "et_frame_get_layout")
            if not self.images:
                check(lib, lib.et_pool_create_image_layout(ctypes.byref(layout), ctypes.byref(self.pool_options),
                                                           ctypes.byref(self.images)), "et_pool_create_image_layout")
            check(lib, lib.et_channel_sender_acquire(self.sender, self.images, WAIT_MS, ctypes.byref(copy)),
                  "et_channel_sender_acquire")
            frame = ptr()
            try:
                for p in range(layout.plane_count):
                    src, dst = ptr(), ptr()
                    try:
                        check(lib, lib.et_frame_plane(d.frame, p, ctypes.byref(src)), "et_frame_plane")
                        check(lib, lib.et_tensor_plane(copy, p, ctypes.byref(dst)), "et_tensor_plane")
                        self.copy_plus_one(src, dst, d.sequence, layout.planes[p].offset_bytes)
                    finally:
                        lib.et_tensor_release(dst)
                        lib.et_tensor_release(src)
                check(lib, lib.et_frame_from_tensor(copy, ctypes.byref(frame)), "et_frame_from_tensor")
                check(lib, lib.et_channel_sender_send_frame(self.sender, frame, ctypes.byref(options),
                                                            ctypes.byref(sent)), "et_channel_sender_send_frame")
            finally:
                lib.et_frame_release(frame)
                lib.et_tensor_release(copy)
        else:
            if not self.tensors:
                info = self.info(d.tensor)
                check(lib, lib.et_pool_create(info.rank, info.shape, info.dtype, ctypes.byref(self.pool_options),
                                              ctypes.byref(self.tensors)), "et_pool_create")
            check(lib, lib.et_channel_sender_acquire(self.sender, self.tensors, WAIT_MS, ctypes.byref(copy)),
                  "et_channel_sender_acquire")
            try:
                self.copy_plus_one(d.tensor, copy, d.sequence, 0)
                check(lib, lib.et_channel_sender_send(self.sender, copy, ctypes.byref(options), ctypes.byref(sent)),
                      "et_channel_sender_send")
            finally:
                lib.et_tensor_release(copy)

    def run(self):
        lib = self.lib
        while True:
            d = sized(ChannelDelivery)
            check(lib, lib.et_channel_receiver_receive(self.receiver, WAIT_MS, ctypes.byref(d)),
                  "et_channel_receiver_receive")
            if d.end_of_stream:
                break
            try:
                self.answer(d)
            finally:  # our frame goes back to the C side's pool
                lib.et_tensor_release(d.tensor)
                lib.et_frame_release(d.frame)
        check(lib, lib.et_channel_sender_end_stream(self.sender), "et_channel_sender_end_stream")
        check(lib, lib.et_channel_sender_drain(self.sender, WAIT_MS), "et_channel_sender_drain")

    def close(self):
        self.lib.et_channel_sender_release(self.sender)
        self.lib.et_channel_receiver_release(self.receiver)
        self.lib.et_pool_release(self.images)
        self.lib.et_pool_release(self.tensors)


def main(argv):
    fds = dict(zip(argv[2::2], argv[3::2]))
    if len(argv) != 6 or set(fds) != {"--receive-fd", "--send-fd"}:
        print(f"usage: {argv[0]} <libedgetensor-c.so> --receive-fd <fd> --send-fd <fd>", file=sys.stderr)
        return 2
    try:
        peer = Peer(load(argv[1]), int(fds["--receive-fd"]), int(fds["--send-fd"]))
        try:
            peer.run()
        finally:
            peer.close()
    except (CallError, Mismatch) as e:
        print(f"round_trip_python_peer: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
