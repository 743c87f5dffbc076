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
# The headers cite these documents (the wire format of every IPC message, the test lanes).
install(FILES README.md docs/WIRE.md docs/ARCHITECTURE.md docs/TESTING.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT dev)
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
# The .pc file finds its prefix relative to itself, so `cmake --install --prefix X` works anywhere.
file(RELATIVE_PATH ET_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" ET_PC_TO_PREFIX "${ET_PC_TO_PREFIX}")
configure_file(cmake/edgetensor.pc.in ${CMAKE_CURRENT_BINARY_DIR}/edgetensor.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/edgetensor.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
# The C API's own .pc (no static C library ships: src/CMakeLists.txt says why, so no Libs.private).
configure_file(cmake/edgetensor-c.pc.in ${CMAKE_CURRENT_BINARY_DIR}/edgetensor-c.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/edgetensor-c.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT c_dev)
