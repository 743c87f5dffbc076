# Compiles SOURCE (header_compile.c) with each compiler and standard: CC and CLANG as C11 and C17, CXX and
# CLANGXX as C++17 and C++20 (-x c++), each with -Wall -Wextra -Wpedantic -Werror, and the header's include
# directory INCLUDE. Fails naming each compiler and standard that does not build it. Inputs: SOURCE,
# INCLUDE, CC, CXX, CLANG, CLANGXX, WORK; ARMHF_CC (optional: a 32-bit target, so the layout asserts see
# 4-byte pointers).
set(flags -Wall -Wextra -Wpedantic -Werror -c -I${INCLUDE})
set(failed "")
set(n 0)
foreach(run IN ITEMS "${CC}|c11|c" "${CC}|c17|c" "${CLANG}|c11|c" "${CLANG}|c17|c"
                     "${CXX}|c++17|c++" "${CXX}|c++20|c++" "${CLANGXX}|c++17|c++" "${CLANGXX}|c++20|c++"
                     ${ARMHF_CC})
  string(REPLACE "|" ";" run "${run}")
  list(GET run 0 compiler)
  list(GET run 1 std)
  list(GET run 2 lang)
  get_filename_component(name ${compiler} NAME)
  execute_process(COMMAND ${compiler} -std=${std} -x ${lang} ${flags} ${SOURCE} -o ${WORK}/${name}-${std}.o
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(APPEND failed "${name} -std=${std}:\n${out}")
  else()
    math(EXPR n "${n} + 1")
    message(STATUS "${name} -std=${std}: ok")
  endif()
endforeach()
if(failed)
  string(REPLACE ";" "\n" failed "${failed}")
  message(FATAL_ERROR "edgetensor_c.h does not compile:\n${failed}")
endif()
message(STATUS "edgetensor_c.h compiles in ${n} configurations")
