# The install route of README ("Install with cmake --install build"), as a user takes it: installs
# BUILD_DIR into a fresh prefix under WORK_DIR, then builds install_consumer/main.cpp against it with
# find_package(edgetensor 0.6) (shared and static) and with pkg-config, and install_consumer/main.c (the C
# API) with find_package's edgetensor::edgetensor-c and pkg-config edgetensor-c; runs each program.
# Inputs: BUILD_DIR, WORK_DIR, SOURCE_DIR (this directory's install_consumer), CXX, CC, GENERATOR.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/edgetensor/edgetensor.h include/edgetensor/abi.h include/edgetensor/image.h
        include/edgetensor/c/edgetensor_c.h
        share/doc/edgetensor/WIRE.md)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install left no ${f} in ${prefix}")
  endif()
endforeach()
file(GLOB libdirs LIST_DIRECTORIES true ${prefix}/lib ${prefix}/lib/*-linux-gnu*)
set(libdir "")
foreach(d IN LISTS libdirs)
  if(EXISTS ${d}/pkgconfig/edgetensor.pc)
    set(libdir ${d})
  endif()
endforeach()
if(libdir STREQUAL "")
  message(FATAL_ERROR "cmake --install left no edgetensor.pc under ${prefix}/lib")
endif()

# find_package, as README says.
run("configuring a find_package consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${prefix})
run("building the find_package consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
foreach(exe consumer_shared consumer_static consumer_c)
  run("running ${exe}" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/consumer/${exe})
  message(STATUS "${exe}: ${last_output}")
endforeach()

# pkg-config, as README says (the .pc file finds its prefix relative to itself).
find_program(PKG_CONFIG pkg-config REQUIRED)
run("pkg-config" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig ${PKG_CONFIG} --cflags --libs edgetensor)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compiling with pkg-config's flags" ${CXX} -std=c++20 -Wall -Wextra -Werror ${SOURCE_DIR}/main.cpp ${flags}
    -o ${WORK_DIR}/consumer_pkg_config)
run("running consumer_pkg_config" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/consumer_pkg_config)
message(STATUS "consumer_pkg_config: ${last_output}")
# The C API's .pc: -ledgetensor-c alone; the linker finds libedgetensor.so through its $ORIGIN runpath.
run("pkg-config edgetensor-c" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig ${PKG_CONFIG} --cflags --libs edgetensor-c)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compiling C with pkg-config edgetensor-c's flags" ${CC} -std=c11 -Wall -Wextra -Wpedantic -Werror
    ${SOURCE_DIR}/main.c ${flags} -o ${WORK_DIR}/consumer_c_pkg_config)
run("running consumer_c_pkg_config" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/consumer_c_pkg_config)
message(STATUS "consumer_c_pkg_config: ${last_output}")
file(REMOVE_RECURSE ${WORK_DIR})
