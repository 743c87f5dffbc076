include(CMakePackageConfigHelpers)
set(ET_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgetensor)

install(DIRECTORY include/edgetensor DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${ET_GENERATED_INCLUDE_DIR}/edgetensor/abi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/edgetensor)
# The headers cite these documents (the wire format of every IPC message, the test lanes).
install(FILES README.md docs/WIRE.md docs/ARCHITECTURE.md docs/TESTING.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(TARGETS edgetensor edgetensor_static edgetensor_c EXPORT edgetensorTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT edgetensorTargets NAMESPACE edgetensor:: DESTINATION ${ET_CMAKE_DIR})
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
        DESTINATION ${ET_CMAKE_DIR})
# The .pc file finds its prefix relative to itself, so `cmake --install --prefix X` works anywhere.
file(RELATIVE_PATH ET_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" ET_PC_TO_PREFIX "${ET_PC_TO_PREFIX}")
configure_file(cmake/edgetensor.pc.in ${CMAKE_CURRENT_BINARY_DIR}/edgetensor.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/edgetensor.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# The C API's own .pc (no static C library ships: src/CMakeLists.txt says why, so no Libs.private).
configure_file(cmake/edgetensor-c.pc.in ${CMAKE_CURRENT_BINARY_DIR}/edgetensor-c.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/edgetensor-c.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
