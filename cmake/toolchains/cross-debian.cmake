# Shared part of the Debian cross toolchain files (aarch64-linux-gnu.cmake, arm-linux-gnueabihf.cmake):
# set ET_CROSS_TRIPLET, ET_CROSS_PROCESSOR and ET_CROSS_QEMU, then include this file.
#
# Compilers: Debian's cross toolchain (crossbuild-essential-<arch>). Libraries: Debian multiarch
# (dpkg --add-architecture <arch>; the -dev packages of scripts/deps-arm.sh), found through
# CMAKE_LIBRARY_ARCHITECTURE in /usr/lib/<triplet>; header-only packages (Architecture: all) come from
# /usr/share and /usr/include as for a native build. Debian's cross gcc already searches
# /usr/include/<triplet>, /usr/include and /usr/lib/<triplet>.
#
# Test binaries run under QEMU user-mode emulation: CMAKE_CROSSCOMPILING_EMULATOR prefixes every
# add_test command and gtest_discover_tests' listing run; processes a test execs (peers, the CLI) start
# through the kernel's binfmt_misc entry for the architecture (scripts/qemu-binfmt.sh). Both find the
# target's loader and libraries through Debian multiarch (/lib/ld-linux-*.so, /usr/lib/<triplet>; the
# multiarch -dev packages bring libc6:<arch>). No -L /usr/<triplet>: with QEMU 7.2 (Debian 12) that
# prefix redirects every path lookup, and tests that fork then unshare a mount namespace hang under it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${ET_CROSS_PROCESSOR})
set(CMAKE_LIBRARY_ARCHITECTURE ${ET_CROSS_TRIPLET})

find_program(ET_CROSS_CC ${ET_CROSS_TRIPLET}-gcc)
find_program(ET_CROSS_CXX ${ET_CROSS_TRIPLET}-g++)
if(NOT ET_CROSS_CC OR NOT ET_CROSS_CXX)
  message(FATAL_ERROR "${ET_CROSS_TRIPLET}-gcc/g++ not found: run scripts/deps-arm.sh (Debian: crossbuild-essential)")
endif()
set(CMAKE_C_COMPILER ${ET_CROSS_CC})
set(CMAKE_CXX_COMPILER ${ET_CROSS_CXX})

# pkg-config answers for the target architecture (Debian's cross wrapper reads /usr/lib/<triplet>/pkgconfig).
find_program(ET_CROSS_PKG_CONFIG ${ET_CROSS_TRIPLET}-pkg-config)
if(ET_CROSS_PKG_CONFIG)
  set(PKG_CONFIG_EXECUTABLE ${ET_CROSS_PKG_CONFIG} CACHE FILEPATH "pkg-config for ${ET_CROSS_TRIPLET}")
endif()

# Debian 12's libgstreamer-plugins-base1.0-dev is not Multi-Arch: same: scripts/deps-arm.sh unpacks the
# target's copy here (pkg-config files, headers, lib*.so links to the installed runtime libraries);
# FindPkgConfig searches <prefix>/lib/<triplet>/pkgconfig of every CMAKE_PREFIX_PATH entry.
set(ET_CROSS_DEV_ROOT /opt/edgetensor-cross/${ET_CROSS_TRIPLET})
if(IS_DIRECTORY ${ET_CROSS_DEV_ROOT})
  list(APPEND CMAKE_PREFIX_PATH ${ET_CROSS_DEV_ROOT})
endif()

# Programs (cmake, the host's tools) come from the host; libraries and packages only for the target:
# the multiarch directory is searched before the host's, and the host's lib/x86_64-linux-gnu never
# matches CMAKE_LIBRARY_ARCHITECTURE.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

find_program(ET_CROSS_QEMU_PATH ${ET_CROSS_QEMU})
if(ET_CROSS_QEMU_PATH)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ET_CROSS_QEMU_PATH})
else()
  message(WARNING "${ET_CROSS_QEMU} not found (Debian: qemu-user): the tests can be built but not run here")
endif()
