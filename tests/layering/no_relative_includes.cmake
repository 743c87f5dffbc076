# Fails when a file under SRC includes a header by a relative path ("../x.h"), which would bypass the
# per-module include roots that enforce the layering.
file(GLOB_RECURSE files ${SRC}/*.h ${SRC}/*.cpp)
set(re "^[ \t]*#[ \t]*include[ \t]*\"\\.\\.?/")
set(why "relative includes bypass the module include roots")
set(what "under src/: no relative include")
include(${CMAKE_CURRENT_LIST_DIR}/forbid_lines.cmake)
