# Without <tl/expected.hpp> on the include path, the headers that need it are refused with the
# message of include/edgetensor/error.h naming the package, and nothing else.
# How tl/ is hidden: the compiler's own search list (from `-E -v`) is passed back explicitly after
# -nostdinc, in order, with the directory that holds tl/expected.hpp replaced by a shadow of itself:
# a directory of symlinks to each of its entries except tl/. Same compiler, same system headers.
#   -DCXX=<compiler> plus probe.cmake's variables
include(${CMAKE_CURRENT_LIST_DIR}/probe.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

execute_process(COMMAND ${CXX} -std=c++20 -x c++ -E -v /dev/null
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE verbose)
string(REGEX MATCH "#include <\\.\\.\\.> search starts here:\n(.*)\nEnd of search list" m "${verbose}")
if(NOT rc EQUAL 0 OR NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "cannot read the search list of ${CXX} (-E -v):\n${verbose}")
endif()
string(REPLACE "\n" ";" dirs "${CMAKE_MATCH_1}")

set(system "")
set(shadowed "")
set(shadows 0)
foreach(d IN LISTS dirs)
  string(STRIP "${d}" d)
  list(APPEND system -isystem ${d})
  if(EXISTS ${d}/tl/expected.hpp)
    set(shadow ${WORK}/shadow${shadows})
    math(EXPR shadows "${shadows} + 1")
    file(MAKE_DIRECTORY ${shadow})
    file(GLOB entries RELATIVE ${d} LIST_DIRECTORIES true ${d}/*)
    foreach(e IN LISTS entries)
      if(NOT e STREQUAL "tl")
        file(CREATE_LINK ${d}/${e} ${shadow}/${e} SYMBOLIC)
      endif()
    endforeach()
    set(d ${shadow})
  endif()
  list(APPEND shadowed -isystem ${d})
endforeach()
if(shadows EQUAL 0)
  message(FATAL_ERROR "no directory of the search list holds tl/expected.hpp:\n${dirs}")
endif()

et_probe(error_h edgetensor/error.h fails -std=c++20 -nostdinc ${shadowed})
et_probe(umbrella edgetensor/edgetensor.h fails -std=c++20 -nostdinc ${shadowed})
# Controls: the shadow serves every other header; the explicit list alone changes nothing.
et_probe(dtype_h_control edgetensor/dtype.h builds -std=c++20 -nostdinc ${shadowed})
et_probe(umbrella_control edgetensor/edgetensor.h builds -std=c++20 -nostdinc ${system})
et_probe_report("the public headers without tl/expected.hpp")
