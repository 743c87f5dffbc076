# Each public header, alone in a translation unit compiled as C++17, is refused with the one C++20
# message of include/edgetensor/export.h and nothing else. The control: the umbrella header, which
# includes them all, compiles as C++20 with the same command line (one compile: each header alone
# would cost ~3 s more, and the library's own build compiles them all as C++20 anyway).
#   -DCXX=<compiler> -DHEADERS=<edgetensor/x.h;...> plus probe.cmake's variables
include(${CMAKE_CURRENT_LIST_DIR}/probe.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
foreach(h IN LISTS HEADERS)
  if(h STREQUAL "")
    continue()
  endif()
  string(REGEX REPLACE "[/.]" "_" label "${h}")
  et_probe(${label}_cxx17 ${h} fails -std=c++17)
endforeach()
et_probe(umbrella_cxx20_control edgetensor/edgetensor.h builds -std=c++20)
et_probe_report("every public header under -std=c++17")
