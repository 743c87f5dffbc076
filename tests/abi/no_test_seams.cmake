# Checks that the shipped libraries carry no test machinery: neither SHARED
# (libedgetensor.so) nor STATIC (libedgetensor.a) defines a function of the testing seam
# (src/base/sys_testing.h: fault hook, ioctl emulator, call counters, page-size overrides). TESTING
# (edgetensor_testing, the tests' library) must define them, and every library must define sys::open:
# so the pattern is known to match and the symbol tables are real (a stripped library fails, never passes).
# Inputs: NM, SHARED, STATIC, TESTING (paths).
cmake_policy(VERSION 3.25)
set(testing_re "sys::(set_fault_hook|set_ioctl_emulator|call_count|total_calls|failed_count|total_failed|call_name|set_page_size_for_testing|set_hpage_pmd_size_for_testing|reset_hpage_pmd_size_for_testing)\\(")
set(wrapper_re "sys::open\\(char const\\*")

# Sets <out> to the defined symbols of <lib> (demangled, local ones too) that match <re>, one per entry.
function(matching_symbols lib re out)
  execute_process(COMMAND ${NM} -C --defined-only ${lib} OUTPUT_VARIABLE syms ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -C --defined-only ${lib} failed (${rc}): ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${syms}")
  list(FILTER lines INCLUDE REGEX "${re}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

foreach(lib IN ITEMS "${SHARED}" "${STATIC}" "${TESTING}")
  matching_symbols("${lib}" "${wrapper_re}" wrappers)
  if(NOT wrappers)
    message(FATAL_ERROR "${lib}: no sys::open in its symbol table (stripped?): this check cannot see the seam")
  endif()
endforeach()
matching_symbols("${TESTING}" "${testing_re}" control)
if(NOT control)
  message(FATAL_ERROR "${TESTING}: no testing-seam symbol found: the pattern no longer matches the seam")
endif()
foreach(lib IN ITEMS "${SHARED}" "${STATIC}")
  matching_symbols("${lib}" "${testing_re}" found)
  if(found)
    string(REPLACE ";" "\n  " found "${found}")
    message(FATAL_ERROR "${lib} ships test machinery (link et_sys, not et_sys_testing):\n  ${found}")
  endif()
endforeach()
list(LENGTH control n)
message(STATUS "no testing-seam symbol in ${SHARED} or ${STATIC} (${n} in ${TESTING})")
