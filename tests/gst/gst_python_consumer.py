# SPDX-License-Identifier: Apache-2.0
"""The Python consumer of gstreamer.sink_feeds_c_cpp_python_consumers (gst_pipelines_test.c), on the module:

    python3 gst_python_consumer.py <socket-path> <reference-file> <frames>

Connects to the edgetensorsink on <socket-path> (retrying for 20 s while it is not up), receives until the end
of stream, and checks each frame: its sequence is the next one, and the SHA-256 of its NV12 planes' rows (each
row's width bytes, Y then UV, strides skipped) equals line <sequence> of <reference-file> (GStreamer's own
rendering of the pattern). Exits 0 when all <frames> frames matched and the end came, printing one line; 1
otherwise, naming the first frame that differed."""

import hashlib
import sys
import time

import numpy

import edgetensor as et
from edgetensor import channel


def frame_digest(frame):
    """SHA-256 of the frame's planes, tight rows (numpy drops the row padding: a copy only where there is some)."""
    digest = hashlib.sha256()
    for plane in frame.planes:
        with plane.map_read() as m:
            digest.update(numpy.ascontiguousarray(numpy.asarray(m)).data)
    return digest.hexdigest()


def connect(path):
    deadline = time.monotonic() + 20
    while True:
        try:
            return channel.connect(path, timeout=1)
        except et.Error:  # the sink does not listen yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def main():
    path, reference_file, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(reference_file) as f:
        reference = f.read().split()
    if len(reference) != frames:
        print(f"python consumer: {reference_file} holds {len(reference)} digests, not {frames}", file=sys.stderr)
        return 1
    with connect(path) as sock:
        receiver = channel.Receiver(sock, name="python-consumer")
    received = right = 0
    with receiver:
        while True:
            d = receiver.receive(timeout=10)
            if d.end_of_stream:
                break
            digest = frame_digest(d.frame) if d.frame is not None and d.frame.plane_count == 2 else ""
            expected = reference[received] if received < frames else "(none: too many frames)"
            good = d.sequence == received and digest == expected
            if not good:
                print(f"python consumer: frame {received} (sequence {d.sequence}): digest {digest}, the reference's "
                      f"{expected}", file=sys.stderr)
            right += good
            received += 1
            del d
    print(f"Python consumer: {received} frames, {right} equal to the reference, then the end of stream")
    return 0 if received == frames and right == frames else 1


if __name__ == "__main__":
    sys.exit(main())
