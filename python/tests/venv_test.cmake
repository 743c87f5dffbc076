# ctest python.venv: the module for a venv's interpreter (python -m venv --system-site-packages), with no
# .pth file or PYTHONPATH: configuring with -DPython3_EXECUTABLE=<venv>/bin/python picks that interpreter
# and installs into its site-packages; the package there imports and works in the venv.
# Inputs: SOURCE_DIR, BUILD_DIR (the tree whose module is copied), PYTHON (the base interpreter), WORK.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${PYTHON} -m venv --system-site-packages --without-pip ${WORK}/venv RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PYTHON} -m venv failed (${rc})")
endif()
set(venv_python ${WORK}/venv/bin/python)

# 1. The configure step: the venv's interpreter is the one found, and the install dir is its site-packages.
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build -G Ninja -DPython3_EXECUTABLE=${venv_python}
          -DET_REQUIRE_PYTHON=ON -DET_BUILD_TESTS=OFF -DET_BUILD_TOOLS=OFF -DET_BUILD_BENCH=OFF
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with ${venv_python} failed:\n${out}\n${err}")
endif()
string(REGEX MATCH "Python module: [^\n]*" found "${out}")
if(NOT found MATCHES "^Python module: ${WORK}/venv/bin/python ")
  message(FATAL_ERROR "the venv's interpreter was not the one found: '${found}'")
endif()
file(STRINGS ${WORK}/build/CMakeCache.txt dir_line REGEX "^ET_PYTHON_INSTALL_DIR:")
execute_process(COMMAND ${venv_python} -c "import sysconfig, sys, os; print(os.path.relpath(sysconfig.get_path('platlib'), sys.prefix), end='')"
                OUTPUT_VARIABLE site)
if(NOT dir_line STREQUAL "ET_PYTHON_INSTALL_DIR:STRING=${site}" OR NOT site MATCHES "site-packages$")
  message(FATAL_ERROR "install dir '${dir_line}' is not the venv's site-packages '${site}'")
endif()

# 2. The package where that install puts it (the built module: the same CPython ABI) imports in the venv.
file(COPY ${BUILD_DIR}/python/edgetensor DESTINATION ${WORK}/venv/${site} PATTERN __pycache__ EXCLUDE)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH ${venv_python} -c [=[
import sys, edgetensor, numpy
assert sys.prefix != sys.base_prefix and edgetensor.__file__.startswith(sys.prefix), edgetensor.__file__
t = edgetensor.allocate((2, 3), "float32", "shm")
with t.map_write() as m:
    numpy.asarray(m)[:] = 2
assert float(numpy.asarray(t).sum()) == 12.0
print("venv import ok:", edgetensor.__file__)
]=]
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import in the venv failed (${rc})")
endif()
file(REMOVE_RECURSE ${WORK})
