# Build options. Each optional backend only adds its folder's sources and sets ET_HAVE_X in the
# private generated config.h (read by src/registry/backend_registry.cpp alone).
include(CheckIncludeFileCXX)

set(ET_IS_LINUX OFF)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(ET_IS_LINUX ON)
endif()
option(ET_WITH_DMABUF "Build the DMA-BUF backend (dma-heap, udmabuf, imported fds)" ${ET_IS_LINUX})
check_include_file_cxx(EGL/egl.h ET_EGL_HEADERS_FOUND)
option(ET_WITH_EGL "Build the GL PBO backend (EGL/GLES loaded at run time; needs the headers only)" ${ET_EGL_HEADERS_FOUND})

option(ET_BUILD_TESTS "Build the tests" ${ET_MASTER_PROJECT})
option(ET_BUILD_TOOLS "Build the edgetensor CLI" ${ET_MASTER_PROJECT})
option(ET_BUILD_BENCH "Build the benchmarks" ${ET_MASTER_PROJECT})
# The Python module (python/): built when pybind11 and the Python 3 headers are found (Debian:
# pybind11-dev, python3-dev); in cross builds also the target's pyconfig.h and sysconfig data
# (libpython3-dev:<arch>, scripts/deps-arm.sh), for the build machine's CPython version.
option(ET_BUILD_PYTHON "Build the Python module when pybind11 and the Python 3 headers are found" ${ET_MASTER_PROJECT})
option(ET_REQUIRE_PYTHON "Fail the configure when the Python module or its test tools are missing (CI)" OFF)
option(ET_WERROR "Treat warnings as errors" OFF)
# The GStreamer plugin (gst/: edgetensorsink, edgetensorsrc; C on the C API): built when pkg-config finds
# GStreamer 1.x's development files (Debian: libgstreamer1.0-dev, libgstreamer-plugins-base1.0-dev).
# ET_REQUIRE_GSTREAMER (CI) fails the configure instead of leaving it out, and needs gst-launch-1.0 and
# gst-inspect-1.0 (gstreamer1.0-tools) for its tests.
option(ET_WITH_GSTREAMER "Build the GStreamer plugin when GStreamer 1.x development files are found" ${ET_MASTER_PROJECT})
option(ET_REQUIRE_GSTREAMER "Fail the configure when the GStreamer plugin or its test tools cannot be built (CI)" OFF)
if(ET_REQUIRE_GSTREAMER AND NOT ET_WITH_GSTREAMER)
  message(FATAL_ERROR "ET_REQUIRE_GSTREAMER=ON needs ET_WITH_GSTREAMER=ON")
endif()
set(ET_SANITIZE "" CACHE STRING "Sanitizers: '', 'address,undefined' or 'thread'")
# libFuzzer targets (tests/fuzz): clang only; everything is compiled with coverage for libFuzzer
# (-fsanitize=fuzzer-no-link). Pair it with ET_SANITIZE=address,undefined (tests/fuzz/README.md).
option(ET_BUILD_FUZZ "Build the libFuzzer targets (clang)" OFF)
if(ET_BUILD_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ET_BUILD_FUZZ=ON needs clang (libFuzzer): CC=clang-15 CXX=clang++-15 (tests/fuzz/README.md)")
endif()
if(ET_BUILD_FUZZ AND NOT ET_BUILD_TESTS)
  message(FATAL_ERROR "ET_BUILD_FUZZ=ON needs ET_BUILD_TESTS=ON (the targets live in tests/fuzz)")
endif()

# Unity builds (CMake UNITY_BUILD, batches of ET_UNITY_BUILD_BATCH files): the library's modules and the
# unit test binary compile as a few large files instead of many small ones. On 2 cores this halves their
# CPU time (docs/TESTING.md, "Time": the library 288 s -> 141 s, the unit tests 281 s -> 117 s), because
# each file's share of <fmt>, gtest and the standard library is generated once per batch. What it can hide,
# a file that compiles only after another one in its batch, is caught by CI's TSan tree, which builds with
# ET_UNITY_BUILD=OFF. Files that must stay alone say so with SKIP_UNITY_BUILD_INCLUSION.
option(ET_UNITY_BUILD "Compile the library's modules and the unit test binary as unity batches" ON)
set(ET_UNITY_BUILD_BATCH 8 CACHE STRING "Source files per unity batch (ET_UNITY_BUILD)")

# Test options (read by tests/ only).
# Which unit tests the unit binary holds (docs/TESTING.md, "Test scopes"): `all` (the default), or a
# subset for a CI lane that needs no more. `32bit`: the files where 32-bit size_t, pointers and a 64-bit
# off_t change the code's path (the armhf lane), with no layering or header-compile checks (they read
# the sources, the same on every architecture). `concurrency`: the files with multi-thread and
# multi-process tests (the TSan lane). Every other test binary is built in every scope.
set(ET_TEST_SCOPE "all" CACHE STRING "Unit tests built: all, 32bit (armhf lane) or concurrency (TSan lane)")
set_property(CACHE ET_TEST_SCOPE PROPERTY STRINGS all 32bit concurrency)
if(NOT ET_TEST_SCOPE MATCHES "^(all|32bit|concurrency)$")
  message(FATAL_ERROR "ET_TEST_SCOPE='${ET_TEST_SCOPE}': expected all, 32bit or concurrency")
endif()
# GL tests fail instead of skipping when no headless EGL context can be made (CI). ctest gives the GL
# tests EDGETENSOR_REQUIRE_GL=1 and et_test::gl_required() (tests/support/env.h) answers true.
option(ET_REQUIRE_GL "GL tests fail (instead of skipping) when no headless EGL context can be created" OFF)
if(ET_REQUIRE_GL AND NOT ET_WITH_EGL)
  message(FATAL_ERROR "ET_REQUIRE_GL=ON needs ET_WITH_EGL=ON (EGL/GLES headers: libegl-dev, libgles-dev)")
endif()
set(ET_CUDA_TOOLKIT_INCLUDE "/usr/local/cuda/include" CACHE PATH
    "CUDA toolkit headers, used only by the CUDA test double and the layout checks (never by the library)")
