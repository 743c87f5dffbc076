# Cross build for 64-bit ARM (arm64: Jetson, i.MX 8/9, Raspberry Pi 4/5) with Debian's cross toolchain
# and multiarch libraries; tests run under qemu-aarch64. Setup: scripts/deps-arm.sh arm64.
#   cmake -S . -B build-arm64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
set(ET_CROSS_TRIPLET aarch64-linux-gnu)
set(ET_CROSS_PROCESSOR aarch64)
set(ET_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-debian.cmake)
