# Shared by cxx17_headers.cmake and without_tl_expected.cmake: compiles one translation unit that
# includes one header, with the compiler called directly (-DCXX), and checks the outcome.
#   -DINCLUDES=<the project's include directories> -DWORK=<scratch directory>
#   -DEXPECT=<regex a refused compile must print> -DNOT=<regex it must not print>
cmake_minimum_required(VERSION 3.25)
set(problems "")
set(probes 0)

# et_probe(<label> <header> fails|builds <compiler flags>...): appends to `problems` when the outcome
# differs (a refused compile must exit non-zero, print EXPECT and not print NOT).
function(et_probe label header expect)
  set(tu ${WORK}/${label}.cpp)
  file(WRITE ${tu} "#include <${header}>\nint et_probe() { return 0; }\n")
  set(inc "")
  foreach(d IN LISTS INCLUDES)
    list(APPEND inc -I${d})
  endforeach()
  execute_process(COMMAND ${CXX} ${ARGN} ${inc} -fsyntax-only ${tu}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  math(EXPR n "${probes} + 1")
  set(probes ${n} PARENT_SCOPE)
  set(why "")
  if(expect STREQUAL "builds")
    if(NOT rc EQUAL 0)
      set(why "expected to compile, exit ${rc}")
    endif()
  elseif(rc EQUAL 0)
    set(why "compiled, expected the refusal")
  elseif(NOT out MATCHES "${EXPECT}")
    set(why "refused without the expected message (${EXPECT})")
  elseif(out MATCHES "${NOT}")
    set(why "refused, but with another error too (${NOT})")
  endif()
  if(why)
    string(JOIN " " cmd ${CXX} ${ARGN} ${inc} -fsyntax-only ${tu})
    set(problems "${problems}\n== ${label} (${header}): ${why}\n${cmd}\n${out}" PARENT_SCOPE)
  endif()
endfunction()

# Ends the script: FATAL_ERROR listing the problems, or a one-line summary.
macro(et_probe_report what)
  if(problems)
    message(FATAL_ERROR "${what}:${problems}")
  endif()
  message(STATUS "${probes} compiles as expected: ${what}")
endmacro()
