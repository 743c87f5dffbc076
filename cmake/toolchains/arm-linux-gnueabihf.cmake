# Cross build for 32-bit ARM hard-float (armhf: Raspberry Pi OS 32-bit images, ARMv7) with Debian's
# cross toolchain and multiarch libraries; tests run under qemu-arm. Setup: scripts/deps-arm.sh armhf.
#   cmake -S . -B build-armhf -G Ninja --toolchain cmake/toolchains/arm-linux-gnueabihf.cmake
set(ET_CROSS_TRIPLET arm-linux-gnueabihf)
set(ET_CROSS_PROCESSOR armv7l)
set(ET_CROSS_QEMU qemu-arm)
# GCC's "parameter passing for argument of type ... changed in GCC 7.1" notes (-Wpsabi) concern linking
# with objects from GCC < 7; everything here, Debian's libraries included, is built by GCC 12.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
include(${CMAKE_CURRENT_LIST_DIR}/cross-debian.cmake)
