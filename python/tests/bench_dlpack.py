# SPDX-License-Identifier: Apache-2.0
"""ctest python.bench_dlpack: the cost of a DLPack hand-over, same run, against numpy's own round trip
numpy.from_dlpack(ndarray). Target: edgetensor.from_dlpack(ndarray) and numpy.from_dlpack(tensor)
each <= 3x the baseline. Prints the figures and ratios; asserts nothing (timings are not tests)."""

import timeit

import numpy

import edgetensor as et


def per_call_ns(fn, number=20000, repeat=7):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def main():
    a = numpy.zeros((480, 640, 3), dtype=numpy.uint8)
    t = et.allocate((480, 640, 3), "uint8", "shm")
    base = per_call_ns(lambda: numpy.from_dlpack(a))
    rows = [
        ("edgetensor.from_dlpack(ndarray)", per_call_ns(lambda: et.from_dlpack(a))),
        ("numpy.from_dlpack(edgetensor.Tensor)", per_call_ns(lambda: numpy.from_dlpack(t))),
        ("edgetensor.from_dlpack(edgetensor.Tensor)", per_call_ns(lambda: et.from_dlpack(t))),
        ("Tensor.__dlpack__() (capsule dropped unconsumed)", per_call_ns(lambda: t.__dlpack__())),
    ]
    print("baseline numpy.from_dlpack(ndarray): %.0f ns" % base)
    for what, ns in rows:
        print("%-50s %7.0f ns  %.2fx baseline" % (what, ns, ns / base))
    print("target: the first two <= 3.00x (printed, not asserted)")


if __name__ == "__main__":
    main()
