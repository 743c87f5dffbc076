# SPDX-License-Identifier: Apache-2.0
"""Run by install_test.cmake with PYTHONPATH=<prefix>/<python dir> only: the installed package, its native
module and the installed libedgetensor are the ones used, nothing from the build tree."""

import sys

prefix = sys.argv[1]
import edgetensor  # noqa: E402
from edgetensor import _edgetensor  # noqa: E402

assert edgetensor.__file__.startswith(prefix), edgetensor.__file__
assert _edgetensor.__file__.startswith(prefix), _edgetensor.__file__
with open("/proc/self/maps") as f:
    libs = {line.split()[-1] for line in f if "libedgetensor.so" in line}
assert libs and all(lib.startswith(prefix) for lib in libs), libs
report = edgetensor.info()
assert report["schema"] == "edgetensor.info/1", report
assert [s["status"] for s in report["sections"] if s["name"] == "heap"] == ["ok"], report
t = edgetensor.allocate((2, 3), "float32", "shm")
with t.map_write() as m:
    memoryview(m).cast("B")[0] = 1
print("installed edgetensor %s from %s: ok" % (edgetensor.__version__, edgetensor.__file__))
