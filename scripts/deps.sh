#!/usr/bin/env bash
# Installs what edgetensor needs to build and test on Debian 12 (as root, or with sudo). Idempotent:
# apt runs only when a package is missing. Every package comes from Debian's own archive.
#   scripts/deps.sh          build (README command 1), the C++ tests, the Python module and its stub check
#   scripts/deps.sh --test   also numpy and torch (about 180 MB), the consumers the Python tests need
#                            (README command 2, CI)
#   scripts/deps.sh --package  also what the packages need (docs/PACKAGING.md): dpkg-shlibdeps for
#                            scripts/package.sh, file for its tests; Debian's build, setuptools, wheel and
#                            venv for the wheel (CI)
#   scripts/deps.sh --wheel  only what the wheel's build needs (pyproject.toml, setup.py: the library, its
#                            Python module and CLI; no tests, benchmarks or GStreamer plugin), about a tenth
#                            of the rest; alone, not with the other options
set -euo pipefail
with_test=0
with_package=0
with_wheel_only=0
for arg in "$@"; do
  case "$arg" in
    --test) with_test=1 ;;
    --package) with_package=1 ;;
    --wheel) with_wheel_only=1 ;;
    *) echo "usage: $0 [--test] [--package] | --wheel" >&2; exit 2 ;;
  esac
done
if ((with_wheel_only && (with_test || with_package))); then
  echo "deps: --wheel stands alone (it installs less than the others, not more)" >&2
  exit 2
fi

packages=(
  cmake ninja-build g++ pkg-config
  libexpected-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # GL backend: headers to build it; Mesa's EGL/GLES (llvmpipe) to run it headless.
  libegl-dev libgles-dev libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri
  # Kernel lane / tests: drop privileges, inspect fds.
  util-linux
  # ABI check (scripts/abi-check.sh, ctest abi.matches_baseline): abidw, abidiff.
  abigail-tools
  # Test-only: DRM_FORMAT_* macros for the pixel format table test; GStreamer as the image layout oracle
  # (tests/oracle, built only when pkg-config finds gstreamer-video-1.0).
  libdrm-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  # The GStreamer plugin (gst/, built where those -dev packages are found) and its pipeline tests (ctest -L
  # gstreamer): gst-launch-1.0, gst-inspect-1.0, videotestsrc, videoconvert, appsink, the check sinks.
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  # Test-only: Debian's DLPack 0.6 header, an independent check of our legacy DLManagedTensor
  # (tests/unit/dlpack; built only where <dlpack/dlpack.h> is found). One plain C header with no
  # architecture-specific content: the ARM cross builds use this host copy from /usr/include, as the
  # cross gcc searches it (scripts/deps-arm.sh needs no :arm64/:armhf package).
  libdlpack-dev
  # The Python module (python/; built when these are present, required by CI) and its test tools.
  pybind11-dev python3-dev python3-pytest python3-mypy
  # The clang build and the libFuzzer targets (tests/fuzz): clang-15 and its runtimes (libFuzzer, ASan, UBSan).
  clang-15 libclang-common-15-dev
)
if ((with_wheel_only)); then
  packages=(
    cmake ninja-build g++ pkg-config
    libexpected-dev libfmt-dev libcli11-dev nlohmann-json3-dev
    libegl-dev libgles-dev  # the GL backend's headers (the wheel loads libEGL at run time, as every build)
    pybind11-dev python3-dev python3-build python3-setuptools python3-wheel python3-venv
  )
fi
if ((with_test)); then
  # The Python tests' DLPack consumers (numpy 1.24, torch 1.13 CPU).
  packages+=(python3-numpy python3-torch)
fi
if ((with_package)); then
  packages+=(dpkg-dev file python3-build python3-setuptools python3-wheel python3-venv)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
