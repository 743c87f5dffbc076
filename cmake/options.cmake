# Build options. Each optional backend only adds its folder's sources and sets ET_HAVE_X in the
# private generated config.h (read by src/core/backend_registry.cpp alone).
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
option(ET_WERROR "Treat warnings as errors" OFF)
set(ET_SANITIZE "" CACHE STRING "Sanitizers: '', 'address,undefined' or 'thread'")
