# CPACK_PRE_BUILD_SCRIPTS of the Debian packages (cmake/packaging.cmake): the static library keeps its
# symbols but loses its debug info and the compiler's .comment sections (as Debian's dh_strip does;
# -dbgsym packages hold only the shared objects' and programs' debug info). Runs on the staging
# directories, never on the build tree.
file(GLOB_RECURSE et_archives "${CPACK_TEMPORARY_DIRECTORY}/*.a")
foreach(a IN LISTS et_archives)
  execute_process(COMMAND ${CPACK_ET_STRIP} --strip-debug --remove-section=.comment --enable-deterministic-archives ${a}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CPACK_ET_STRIP} --strip-debug ${a} failed (${rc}): ${err}")
  endif()
endforeach()
