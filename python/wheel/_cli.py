# SPDX-License-Identifier: Apache-2.0
"""The `edgetensor` command of the wheel: runs the CLI bundled in the package (edgetensor/bin/edgetensor,
which finds the package's libedgetensor through its $ORIGIN runpath). Only the wheel holds this module
(setup.py); a Debian or `cmake --install` installation has the CLI in its bin directory instead."""

import os
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "edgetensor")
    if not os.access(exe, os.X_OK):
        sys.exit("edgetensor: the bundled CLI %s is missing or not executable" % exe)
    os.execv(exe, ["edgetensor"] + sys.argv[1:])
