# The scan the layering scripts share (included, not run): fails when a line of a .h or .cpp file in
# `files` matches `re`, listing each as "<file>: <line>" under `why`; else prints "<n> files <what>".
# With `skip_comments`, a line that starts with // is not counted (comments may name what code may not).
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS ${f} lines REGEX "${re}")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(NOT (skip_comments AND line MATCHES "^//"))
      list(APPEND bad "${f}: ${line}")
    endif()
  endforeach()
endforeach()
list(LENGTH files n)
if(bad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "${why}:\n${bad}")
endif()
message(STATUS "${n} files ${what}")
