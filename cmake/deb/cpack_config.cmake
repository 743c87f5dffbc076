# CPACK_PROJECT_CONFIG_FILE of the Debian packages (cmake/packaging.cmake), read by cpack before it
# packages: refuses a tree that is not configured for Debian's layout, and prepares dpkg-shlibdeps.
if(NOT CPACK_ET_DEB_ARCH)
  message(FATAL_ERROR "edgetensor packages: no Debian architecture for the target triplet '${CPACK_ET_TRIPLET}'")
endif()
if(NOT CPACK_ET_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "edgetensor packages: the tree is configured for CMAKE_INSTALL_PREFIX='${CPACK_ET_INSTALL_PREFIX}', "
                      "so its libraries would not land in /usr/lib/<multiarch>; configure it with "
                      "-DCMAKE_INSTALL_PREFIX=/usr (scripts/package.sh does)")
endif()
if(NOT CPACK_ET_LIBDIR STREQUAL "lib/${CPACK_ET_TRIPLET}")
  message(FATAL_ERROR "edgetensor packages: CMAKE_INSTALL_LIBDIR is '${CPACK_ET_LIBDIR}', not Debian's multiarch "
                      "lib/${CPACK_ET_TRIPLET}; configure it with -DCMAKE_INSTALL_LIBDIR=lib/${CPACK_ET_TRIPLET} "
                      "(scripts/package.sh does)")
endif()
if(CPACK_ET_HAS_PYTHON AND NOT CPACK_ET_PYTHON_INSTALL_DIR STREQUAL "lib/python3/dist-packages")
  message(FATAL_ERROR "edgetensor packages: ET_PYTHON_INSTALL_DIR is '${CPACK_ET_PYTHON_INSTALL_DIR}', not Debian's "
                      "lib/python3/dist-packages; configure it with -DET_PYTHON_INSTALL_DIR=lib/python3/dist-packages "
                      "(scripts/package.sh does)")
endif()
# dpkg-shlibdeps runs in each component's staging directory. The libraries of the other packages are not
# installed on this machine: it finds them in their own staging directories (no package owns them there,
# so they give no dependency of their own: the component dependencies, = this version, stand for them).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ../runtime/usr/${CPACK_ET_LIBDIR} ../c_runtime/usr/${CPACK_ET_LIBDIR})
# The target's architecture, for dpkg-shlibdeps' library search (/usr/lib/<triplet>, the packages of that
# architecture) and its choice of objdump in cross trees.
set(ENV{DEB_HOST_ARCH} ${CPACK_ET_DEB_ARCH})
