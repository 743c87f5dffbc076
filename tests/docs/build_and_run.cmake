# Builds TARGET in BUILD_DIR, then runs EXE; fails with the build's or the program's output.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building ${TARGET} (README.md example) failed:\n${out}")
endif()
execute_process(COMMAND ${EXE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} (README.md example) exited with ${rc}:\n${out}${err}")
endif()
message(STATUS "${EXE}: ${out}")
