# Every rule names its install component. `cmake --install` installs them all; each Debian package
# (cmake/packaging.cmake, docs/PACKAGING.md) holds one component:
#   runtime    libedgetensor.so.<SOVERSION>                                     libedgetensor<SOVERSION>
#   dev        the C++ headers, the .so link, the static library, edgetensor.pc,
#              the CMake config and C++ targets, the documents the headers cite   libedgetensor-dev
#   c_runtime  libedgetensor-c.so.<ET_C_SOVERSION>                              libedgetensor-c<ET_C_SOVERSION>
#   c_dev      <edgetensor/c/edgetensor_c.h>, its .so link, edgetensor-c.pc,
#              the C target's CMake file                                        libedgetensor-c-dev
#   tools, python, gstreamer: the CLI, the Python package, the plugin (in their own CMakeLists.txt).
include(CMakePackageConfigHelpers)
set(ET_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgetensor)

install(DIRECTORY include/edgetensor DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev PATTERN c EXCLUDE)
install(DIRECTORY include/edgetensor/c DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/edgetensor COMPONENT c_dev)
install(FILES ${ET_GENERATED_INCLUDE_DIR}/edgetensor/abi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/edgetensor
        COMPONENT dev)
# README and every document it and the headers cite (docs/*.md: the wire format, the C API, the channel,
# CUDA, sync, the packages, the test lanes), so the installed README's links lead somewhere.
file(GLOB et_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${et_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
install(TARGETS edgetensor edgetensor_static EXPORT edgetensorTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT edgetensorTargets NAMESPACE edgetensor:: DESTINATION ${ET_CMAKE_DIR} COMPONENT dev)
# The C target has an export file of its own, so that the C++ development package does not need the C
# library (edgetensorConfig.cmake includes it when it is there).
install(TARGETS edgetensor_c EXPORT edgetensor-cTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT c_runtime NAMELINK_COMPONENT c_dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT edgetensor-cTargets NAMESPACE edgetensor:: DESTINATION ${ET_CMAKE_DIR} COMPONENT c_dev)
configure_package_config_file(cmake/edgetensorConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/edgetensorConfig.cmake
                              INSTALL_DESTINATION ${ET_CMAKE_DIR})
# README, "ABI policy": a compatible release keeps the SOVERSION, so find_package(edgetensor X.Y)
# accepts the same 0.<minor> (0.x) or the same major (>= 1), at X.Y or newer.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ET_PACKAGE_COMPATIBILITY SameMinorVersion)
else()
  set(ET_PACKAGE_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/edgetensorConfigVersion.cmake
                                 COMPATIBILITY ${ET_PACKAGE_COMPATIBILITY})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/edgetensorConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/edgetensorConfigVersion.cmake
        DESTINATION ${ET_CMAKE_DIR} COMPONENT dev)
# The .pc files find their prefix relative to themselves, so `cmake --install --prefix X` works anywhere. Installed
# under a system prefix (/usr: the Debian packages; /usr/local), they name the prefix itself instead, decided at
# install time (cmake/install_pc.cmake): pkg-config then sees -I/usr/include and -L/usr/lib/<multiarch> as the
# system directories it leaves out, rather than "<libdir>/pkgconfig/../../.." ahead of the user's own -L.
file(RELATIVE_PATH et_pc_to_prefix /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" et_pc_to_prefix "${et_pc_to_prefix}")
set(ET_PC_PREFIX "\${pcfiledir}/${et_pc_to_prefix}")
# The C API's own .pc has no Libs.private: no static C library ships (src/CMakeLists.txt says why).
foreach(et_pc IN ITEMS edgetensor:dev edgetensor-c:c_dev)
  string(REPLACE ":" ";" et_pc "${et_pc}")
  list(GET et_pc 0 et_pc_name)
  list(GET et_pc 1 et_pc_component)
  configure_file(cmake/${et_pc_name}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${et_pc_name}.pc @ONLY)
  install(CODE "set(ET_PC_FILE \"${CMAKE_CURRENT_BINARY_DIR}/${et_pc_name}.pc\")
set(ET_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
include(\"${PROJECT_SOURCE_DIR}/cmake/install_pc.cmake\")" COMPONENT ${et_pc_component})
endforeach()
