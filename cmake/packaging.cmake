# Debian packages of what `cmake --install` puts in place, made by CPack's DEB generator from this build
# tree (docs/PACKAGING.md: why CPack, what each package holds, the cross packages). One package per
# install component (cmake/install.cmake), a -dbgsym package beside each package with ELF files (the
# debug info split off by build ID, the packaged files stripped), dependencies between the packages, and
# dependencies on Debian's libraries from dpkg-shlibdeps.
#
# The tree must be configured for Debian's layout: CMAKE_INSTALL_PREFIX=/usr (so GNUInstallDirs picks
# lib/<multiarch>) and, with the Python module, ET_PYTHON_INSTALL_DIR=lib/python3/dist-packages.
# scripts/package.sh does that (a reconfigure: nothing is recompiled, the targets whose install runpath
# changes are relinked) and runs cpack; cpack refuses a tree configured otherwise (cmake/deb/cpack_config.cmake).
# Only for edgetensor's own tree: a project that adds it with add_subdirectory packages itself.
if(NOT ET_MASTER_PROJECT OR NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
  return()
endif()

set(ET_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages (their version is <project version>-<this>)")
set(ET_DEB_MAINTAINER "edgetensor maintainers <maintainers@edgetensor.invalid>" CACHE STRING
    "Maintainer field of the Debian packages (a real address before publishing them)")
set(ET_DEB_VERSION ${PROJECT_VERSION}-${ET_DEB_RELEASE})

# Debian's name for the target's architecture, from the target's multiarch triplet (a cross tree's
# comes from its toolchain file).
set(et_deb_arch_x86_64-linux-gnu amd64)
set(et_deb_arch_aarch64-linux-gnu arm64)
set(et_deb_arch_arm-linux-gnueabihf armhf)
set(et_deb_arch_i386-linux-gnu i386)
set(et_deb_arch_riscv64-linux-gnu riscv64)
set(ET_DEB_ARCH "${et_deb_arch_${CMAKE_LIBRARY_ARCHITECTURE}}")
if(NOT ET_DEB_ARCH)
  message(STATUS "Debian packages: no Debian architecture known for the triplet '${CMAKE_LIBRARY_ARCHITECTURE}'; "
                 "cpack will refuse to package")
endif()

# The components this tree installs (a tree without the Python module or the GStreamer plugin has fewer).
set(ET_DEB_COMPONENTS runtime dev c_runtime c_dev)
if(TARGET edgetensor_cli)
  list(APPEND ET_DEB_COMPONENTS tools)
endif()
if(TARGET _edgetensor)
  list(APPEND ET_DEB_COMPONENTS python)
endif()
if(TARGET gstedgetensor)
  list(APPEND ET_DEB_COMPONENTS gstreamer)
endif()

# Package names: the runtime libraries carry their SONAME's version (Debian policy 8.1).
set(et_pkg_runtime libedgetensor${ET_SOVERSION})
set(et_pkg_dev libedgetensor-dev)
set(et_pkg_c_runtime libedgetensor-c${ET_C_SOVERSION})
set(et_pkg_c_dev libedgetensor-c-dev)
set(et_pkg_tools edgetensor-tools)
set(et_pkg_python python3-edgetensor)
set(et_pkg_gstreamer gstreamer1.0-edgetensor)

# Every package gets /usr/share/doc/<package>/copyright and changelog.Debian.gz. EXCLUDE_FROM_ALL: only a
# component's own install (cpack's) installs them, never a plain `cmake --install`.
set(et_deb_dir ${CMAKE_CURRENT_BINARY_DIR}/deb)
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/changelog.in ${et_deb_dir}/changelog @ONLY)
# gzip -9n: maximal compression, no name or time stamp in the header (lintian checks both).
execute_process(COMMAND gzip -9nc ${et_deb_dir}/changelog OUTPUT_FILE ${et_deb_dir}/changelog.Debian.gz
                RESULT_VARIABLE et_gzip_rc)
if(NOT et_gzip_rc EQUAL 0)
  message(FATAL_ERROR "gzip -9n ${et_deb_dir}/changelog failed (${et_gzip_rc})")
endif()
foreach(c IN LISTS ET_DEB_COMPONENTS)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/deb/copyright ${et_deb_dir}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${et_pkg_${c}} COMPONENT ${c} EXCLUDE_FROM_ALL)
endforeach()

# Packages not uploaded to Debian close no ITP bug: the one lintian tag that says otherwise is overridden.
file(WRITE ${et_deb_dir}/lintian-overrides "# Not uploaded to Debian: no ITP bug to close.\ninitial-upload-closes-no-bugs\n")
foreach(c IN LISTS ET_DEB_COMPONENTS)
  configure_file(${et_deb_dir}/lintian-overrides ${et_deb_dir}/overrides/${c}/${et_pkg_${c}} COPYONLY)
  install(FILES ${et_deb_dir}/overrides/${c}/${et_pkg_${c}} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
          COMPONENT ${c} EXCLUDE_FROM_ALL)
endforeach()

# The -dbgsym packages: objcopy compresses the debug info and links each one's doc directory to its
# package's (cmake/deb/objcopy.in).
set(ET_DEB_DOC_CASES "")
foreach(c IN LISTS ET_DEB_COMPONENTS)
  string(APPEND ET_DEB_DOC_CASES "    ${c}) package=${et_pkg_${c}} ;;\n")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/objcopy.in ${et_deb_dir}/objcopy @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME edgetensor)
set(CPACK_PACKAGE_VENDOR "the edgetensor authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Empty: CPackDeb would put a package-wide summary above each package's own synopsis (set below).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${ET_DEB_COMPONENTS})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${ET_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SOURCE edgetensor)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ET_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${ET_DEB_ARCH})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The library packages' shlibs files: a program built against libedgetensor.so.0.7 depends on
# libedgetensor0.7 (>= the version it was built with).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# xz, as Debian's packages; `cpack -D CPACK_DEBIAN_COMPRESSION_TYPE=gzip` (scripts/package.sh:
# ET_DEB_COMPRESSION=gzip) takes a third of the time, for packages about a third larger.
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_THREADS 0)
# cpack-time settings: the layout check, dpkg-shlibdeps' view of the other packages' libraries, the
# target architecture for dpkg-shlibdeps, the static library's debug info.
set(CPACK_ET_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_ET_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
set(CPACK_ET_PYTHON_INSTALL_DIR "${ET_PYTHON_INSTALL_DIR}")
set(CPACK_ET_HAS_PYTHON OFF)
if(TARGET _edgetensor)
  set(CPACK_ET_HAS_PYTHON ON)
endif()
set(CPACK_ET_DEB_ARCH "${ET_DEB_ARCH}")
set(CPACK_ET_TRIPLET "${CMAKE_LIBRARY_ARCHITECTURE}")
set(CPACK_ET_STRIP "${CMAKE_STRIP}")
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/deb/cpack_config.cmake)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb/strip_static.cmake)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb/fix_packages.cmake)
set(CPACK_OBJCOPY_EXECUTABLE ${et_deb_dir}/objcopy)

# Descriptions: the first line is the synopsis, the rest the extended description.
set(et_deb_about "edgetensor gives edge-AI pipelines one tensor type over DMA-BUF, shared memory
(memfd, POSIX shm), the heap or an OpenGL PBO, with CPU maps, fd export and
import between processes, buffer pools, a frame channel between processes, and
CUDA interop loaded at run time.")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${et_pkg_runtime})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# The GL PBO backend loads libEGL.so.1 and Mesa (or a vendor driver) at run time: edgetensor info says
# "gl_pbo unavailable" without them.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "libegl1, libgles2, libegl-mesa0")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (C++ library)
${et_deb_about}

This package holds the shared library libedgetensor.so.${ET_SOVERSION}.")
# The ldconfig trigger (cmake/deb/fix_packages.cmake removes CPack's postinst and postrm that call ldconfig).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/deb/triggers)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${et_pkg_dev})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
# The public headers use tl::expected (edgetensor::Result); the CMake config finds it.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libexpected-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (C++ development files)
${et_deb_about}

This package holds the C++ headers, the static library, the pkg-config file
edgetensor.pc and the CMake package (find_package(edgetensor)).")

set(CPACK_DEBIAN_C_RUNTIME_PACKAGE_NAME ${et_pkg_c_runtime})
set(CPACK_DEBIAN_C_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_C_RUNTIME_DEPENDS runtime)
set(CPACK_DEBIAN_C_RUNTIME_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (C library)
${et_deb_about}

This package holds the C API's shared library
libedgetensor-c.so.${ET_C_SOVERSION}.")
set(CPACK_DEBIAN_C_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/deb/triggers)

set(CPACK_DEBIAN_C_DEV_PACKAGE_NAME ${et_pkg_c_dev})
set(CPACK_DEBIAN_C_DEV_PACKAGE_SECTION libdevel)
# dev: the CMake package's config file (edgetensorConfig.cmake) and the C++ target the C target needs.
set(CPACK_COMPONENT_C_DEV_DEPENDS c_runtime dev)
set(CPACK_DEBIAN_C_DEV_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (C development files)
${et_deb_about}

This package holds the C11 header edgetensor/c/edgetensor_c.h, the pkg-config
file edgetensor-c.pc and the CMake target edgetensor::edgetensor-c.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${et_pkg_tools})
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (command-line tool)
${et_deb_about}

This package holds the edgetensor command: 'edgetensor info' probes the
machine (backends, devices, cross-process round trips), 'edgetensor bench'
measures pool reuse and the frame channel.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME ${et_pkg_python})
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
if(TARGET _edgetensor)
  # The extension module is built for one interpreter version (its ABI tag is in its file name).
  string(REPLACE "." ";" et_py_version "${ET_PYTHON_VERSION}")
  list(GET et_py_version 0 et_py_major)
  list(GET et_py_version 1 et_py_minor)
  math(EXPR et_py_next "${et_py_minor} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= ${ET_PYTHON_VERSION}), python3 (<< ${et_py_major}.${et_py_next})")
endif()
set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-numpy, python3-torch")
# py3compile at configure, py3clean before removal (what dh_python3 gives a Debian package).
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/python3-edgetensor.postinst ${et_deb_dir}/python/postinst COPYONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/python3-edgetensor.prerm ${et_deb_dir}/python/prerm COPYONLY)
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA ${et_deb_dir}/python/postinst ${et_deb_dir}/python/prerm)
set(CPACK_DEBIAN_PYTHON_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (Python 3 module)
${et_deb_about}

This package holds the Python 3 module edgetensor with its type stubs; numpy
and PyTorch arrays view its tensors through DLPack.")

set(CPACK_DEBIAN_GSTREAMER_PACKAGE_NAME ${et_pkg_gstreamer})
set(CPACK_DEBIAN_GSTREAMER_PACKAGE_SECTION video)
# gst-launch-1.0 and gst-inspect-1.0 (README's GStreamer lines), videotestsrc/videoconvert, autovideosink.
set(CPACK_DEBIAN_GSTREAMER_PACKAGE_SUGGESTS "gstreamer1.0-tools, gstreamer1.0-plugins-base, gstreamer1.0-plugins-good")
set(CPACK_COMPONENT_GSTREAMER_DEPENDS c_runtime)
set(CPACK_DEBIAN_GSTREAMER_DESCRIPTION "zero-copy tensor memory for edge-AI pipelines (GStreamer plugin)
${et_deb_about}

This package holds the GStreamer 1.0 plugin with the elements edgetensorsink
(frames of a pipeline to edgetensor consumers in other processes) and
edgetensorsrc (frames of an edgetensor producer into a pipeline).")

include(CPack)
