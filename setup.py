# SPDX-License-Identifier: Apache-2.0
"""The wheel's build (pyproject.toml; docs/PACKAGING.md, "The wheel"): setuptools' build_ext runs CMake.

A Release tree with the Python module and the CLI (no tests, benches or GStreamer plugin) is configured in
build-wheel/ and built; the wheel's package edgetensor/ gets the extension module, libedgetensor.so.<SOVERSION>
beside it (one shared copy: the module and the CLI both load it, and a process that also loads another
libedgetensor of that SONAME keeps one copy), the CLI as edgetensor/bin/edgetensor, the pure-Python files and
the stubs. Each binary is stripped and its runpath set to find the bundled library ($ORIGIN).

Environment:
  ET_WHEEL_BUILD_DIR    an existing tree (configured for this interpreter, with the Python module and the
                        CLI) to take the binaries from instead of configuring build-wheel/cmake: CI reuses its
                        README tree so the wheel costs no second compile. It is built (a no-op when current).
  CMAKE_ARGS            more arguments for the configure step (build-wheel/cmake only).
  CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_<LANG>_COMPILER_LAUNCHER   as CMake reads them.
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*edgetensor\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        sys.exit("setup.py: no project(edgetensor VERSION x.y.z) in CMakeLists.txt")
    return m.group(1)


def run(cmd, **kwargs):
    print("setup.py: " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def cache_value(tree, name):
    with open(os.path.join(tree, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return ""


class CMakeExtension(Extension):
    """The extension edgetensor._edgetensor, built by CMake (python/CMakeLists.txt), not by setuptools."""

    def __init__(self):
        super().__init__("edgetensor._edgetensor", sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        tree = os.environ.get("ET_WHEEL_BUILD_DIR")
        if tree:
            tree = os.path.abspath(tree)
            if not os.path.isfile(os.path.join(tree, "CMakeCache.txt")):
                sys.exit("setup.py: ET_WHEEL_BUILD_DIR=%s is not a configured CMake tree" % tree)
        else:
            tree = os.path.join(os.path.abspath(self.build_temp), "cmake")
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            run(["cmake", "-S", ROOT, "-B", tree] + generator + [
                "-DCMAKE_BUILD_TYPE=Release", "-DPython3_EXECUTABLE=" + sys.executable,
                "-DET_BUILD_PYTHON=ON", "-DET_REQUIRE_PYTHON=ON", "-DET_BUILD_TOOLS=ON",
                "-DET_BUILD_TESTS=OFF", "-DET_BUILD_BENCH=OFF", "-DET_WITH_GSTREAMER=OFF",
            ] + shlex.split(os.environ.get("CMAKE_ARGS", "")))
        run(["cmake", "--build", tree, "--target", "_edgetensor", "edgetensor_cli"])

        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        module = os.path.join(tree, "python", "edgetensor", "_edgetensor" + suffix)
        cli = os.path.join(tree, "tools", "edgetensor", "edgetensor")
        for f in (module, cli):
            if not os.path.isfile(f):
                sys.exit("setup.py: %s has no %s (a tree for %s with the Python module and the CLI?)"
                         % (tree, f, sys.executable))
        # The SONAME link of the library (libedgetensor.so.0.7 -> libedgetensor.so.0.7.8): a wheel holds no
        # links, so the one file goes in under the SONAME's name, the name the loader looks for.
        links = [p for p in glob.glob(os.path.join(tree, "src", "libedgetensor.so.*")) if os.path.islink(p)]
        if len(links) != 1:
            sys.exit("setup.py: expected one SONAME link libedgetensor.so.* in %s/src, found %s" % (tree, links))
        library = links[0]

        package = os.path.join(os.path.abspath(self.build_lib), "edgetensor")
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        targets = {
            module: (os.path.join(package, os.path.basename(module)), "$ORIGIN"),
            library: (os.path.join(package, os.path.basename(library)), None),
            cli: (os.path.join(package, "bin", "edgetensor"), "$ORIGIN/.."),
        }
        strip = cache_value(tree, "CMAKE_STRIP") or "strip"
        for source, (dest, runpath) in targets.items():
            if os.path.exists(dest):
                os.remove(dest)
            shutil.copy2(os.path.realpath(source), dest)
            run([strip, "--strip-unneeded", dest])
            if runpath:
                # CMake rewrites the build tree's runpath in place (file(RPATH_SET), CMake 3.21).
                run(["cmake", "-DFILE=" + dest, "-DRUNPATH=" + runpath, "-P",
                     os.path.join(ROOT, "python", "wheel", "set_runpath.cmake")])
        shutil.copy2(os.path.join(ROOT, "python", "wheel", "_cli.py"), os.path.join(package, "_cli.py"))


# setuptools writes edgetensor.egg-info into egg_base, which must exist.
os.makedirs(os.path.join(ROOT, "build-wheel"), exist_ok=True)
setup(
    version=project_version(),
    packages=["edgetensor"],
    package_dir={"edgetensor": "python/edgetensor"},
    package_data={"edgetensor": ["*.pyi", "py.typed"]},
    ext_modules=[CMakeExtension()],
    cmdclass={"build_ext": CMakeBuild},
    # Not build/: that is README's CMake tree.
    options={"build": {"build_base": "build-wheel"}, "egg_info": {"egg_base": "build-wheel"}},
    zip_safe=False,
)
