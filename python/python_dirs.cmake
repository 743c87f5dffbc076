# et_python_install_dir(<python> <out_var>): where the package goes under an install prefix for that
# interpreter, relative to the prefix, as the interpreter itself searches it:
#   - Debian's interpreter outside a venv: lib/python3.X/dist-packages (Debian's site.py searches it for
#     the prefixes /usr and /usr/local; its sysconfig default, posix_local, would add "local/");
#   - a venv (sys.prefix != sys.base_prefix) or any other CPython: its platlib relative to sys.prefix,
#     e.g. lib/python3.11/site-packages, so `cmake --install build --prefix <venv>` needs no .pth file.
# Used by python/CMakeLists.txt and the venv test (python/tests/venv_test.cmake).
function(et_python_install_dir python out_var)
  execute_process(
    COMMAND ${python} -c [=[
import os, sys, sysconfig
v = "%d.%d" % sys.version_info[:2]
if sys.prefix == sys.base_prefix and "deb_system" in sysconfig.get_scheme_names():
    print("lib/python%s/dist-packages" % v, end="")
else:
    print(os.path.relpath(sysconfig.get_path("platlib"), sys.prefix), end="")
]=]
    OUTPUT_VARIABLE dir RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR dir STREQUAL "")
    message(FATAL_ERROR "${python} cannot say its site directory (sysconfig): ${err}")
  endif()
  set(${out_var} "${dir}" PARENT_SCOPE)
endfunction()
