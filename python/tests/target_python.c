/* SPDX-License-Identifier: Apache-2.0 */
/* A python3 for the target architecture in cross builds: CPython's own main, linked against the target's
 * libpython3.X (Debian multiarch, libpython3-dev:<arch>), run under QEMU user mode. Debian's python3:<arch>
 * cannot be installed beside the build machine's (Multi-Arch: allowed, not same); its library and stdlib
 * can. Used by python.cross_import (python/CMakeLists.txt). */
#include <Python.h>

int main(int argc, char** argv) { return Py_BytesMain(argc, argv); }
