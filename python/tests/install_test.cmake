# ctest python.install: `cmake --install` into a scratch prefix, then Debian's python3 imports the
# installed package with PYTHONPATH naming only that prefix's package directory (installed_check.py).
set(prefix ${BUILD_DIR}/python-install-test)
file(REMOVE_RECURSE ${prefix})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} OUTPUT_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${prefix} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${PY_DIR}
                        PYTHONDONTWRITEBYTECODE=1 ${PYTHON} ${CHECK} ${prefix}
                WORKING_DIRECTORY ${prefix} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed package failed its check (${rc})")
endif()
file(REMOVE_RECURSE ${prefix})
