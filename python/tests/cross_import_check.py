# SPDX-License-Identifier: Apache-2.0
"""Run in cross builds by the target's own CPython under QEMU (target_python.c), PYTHONPATH=<build>/python:
the cross-built package imports with its native module, named for the target's extension suffix, and the
build tree's libedgetensor; a shm tensor is written through a map and read back; info() probes."""

import sys
import sysconfig

expected_dir = sys.argv[1]
import edgetensor  # noqa: E402
from edgetensor import _edgetensor  # noqa: E402

suffix = sysconfig.get_config_var("EXT_SUFFIX")
assert _edgetensor.__file__ == "%s/edgetensor/_edgetensor%s" % (expected_dir, suffix), (_edgetensor.__file__, suffix)
with open("/proc/self/maps") as f:
    libs = {line.split()[-1] for line in f if "libedgetensor.so" in line}
assert len(libs) == 1, libs
t = edgetensor.allocate((48, 64), "uint8", memory="shm")
with t.map_write() as m:
    memoryview(m).cast("B")[:] = bytes(range(64)) * 48
with t.map_read() as m:
    assert bytes(memoryview(m).cast("B")[:64]) == bytes(range(64))
report = edgetensor.info()
assert [s["status"] for s in report["sections"] if s["name"] == "heap"] == ["ok"], report
print("python %s (%s) imported edgetensor %s, %s; shm tensor %s written and read back" % (
    sys.version.split()[0], sysconfig.get_config_var("MULTIARCH"), edgetensor.__version__,
    _edgetensor.__file__.rsplit("/", 1)[-1], t.shape))
