# Fails when a file under SRC or TOOLS other than src/text/ includes a {fmt} header. {fmt}'s
# implementation is compiled once, in src/text/format.cpp; everything else formats with text::format
# and text::join from "text/format.h" (a <fmt/format.h> elsewhere would bring back its compile cost).
file(GLOB_RECURSE files ${SRC}/*.h ${SRC}/*.cpp ${TOOLS}/*.h ${TOOLS}/*.cpp)
list(FILTER files EXCLUDE REGEX "^${SRC}/text/")
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*<fmt/")
  if(lines)
    list(APPEND bad "${f}: ${lines}")
  endif()
endforeach()
list(LENGTH files n)
if(bad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "include \"text/format.h\" and call text::format / text::join instead:\n${bad}")
endif()
message(STATUS "${n} files under src/ and tools/: {fmt} is included only by src/text/")
