# Cross build for 32-bit ARM hard-float (armhf: Raspberry Pi OS 32-bit images, ARMv7) with Debian's
# cross toolchain and multiarch libraries; tests run under qemu-arm. Setup: scripts/deps-arm.sh armhf.
#   cmake -S . -B build-armhf -G Ninja --toolchain cmake/toolchains/arm-linux-gnueabihf.cmake
set(ET_CROSS_TRIPLET arm-linux-gnueabihf)
set(ET_CROSS_PROCESSOR armv7l)
set(ET_CROSS_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/cross-debian.cmake)
