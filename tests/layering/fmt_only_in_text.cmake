# Fails when a file under SRC or TOOLS other than src/text/ includes a {fmt} header. {fmt}'s
# implementation is compiled once, in src/text/format.cpp; everything else formats with text::format
# and text::join from "text/format.h" (a <fmt/format.h> elsewhere would bring back its compile cost).
file(GLOB_RECURSE files ${SRC}/*.h ${SRC}/*.cpp ${TOOLS}/*.h ${TOOLS}/*.cpp)
list(FILTER files EXCLUDE REGEX "^${SRC}/text/")
set(re "^[ \t]*#[ \t]*include[ \t]*<fmt/")
set(why "include \"text/format.h\" and call text::format / text::join instead")
set(what "under src/ and tools/: {fmt} is included only by src/text/")
include(${CMAKE_CURRENT_LIST_DIR}/forbid_lines.cmake)
