# Runs the edgetensor CLI once and checks its exit status and output.
#   -DEXE=<edgetensor> -DARGS=<arguments, ';'-separated; empty for none> -DRC=<expected exit status>
#   -DSTDOUT=<regex the whole stdout must match> [-DSTDERR=<regex the whole stderr must match>]
# Both regexes are anchored here (^...$), so any other output fails.
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
set(problems "")
if(NOT rc STREQUAL RC)
  string(APPEND problems "exit status ${rc}, expected ${RC}\n")
endif()
if(NOT out MATCHES "^${STDOUT}$")
  string(APPEND problems "stdout does not match ^${STDOUT}$\n")
endif()
if(DEFINED STDERR AND NOT err MATCHES "^${STDERR}$")
  string(APPEND problems "stderr does not match ^${STDERR}$\n")
endif()
if(problems)
  message(FATAL_ERROR "edgetensor ${ARGS}:\n${problems}--- stdout:\n${out}--- stderr:\n${err}")
endif()
message(STATUS "edgetensor ${ARGS}: exit ${rc}, output as expected")
