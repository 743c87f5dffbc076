# Fails when README.md or a Markdown file under docs/ points outside the repository (a design file
# beside the checkout, say): the project's docs must stand on their own. Checked, for each file:
#   - link targets "[text](target)" other than URLs (scheme:...) and anchors (#...): resolved from
#     the file's folder, each must be a file or folder inside the repository;
#   - every path that climbs ("../x", anywhere in the text, code spans included): the same rule;
#   - absolute paths into a home or a workspace (/home/..., /root/..., /work/..., ~/...).
# -DROOT=<repository root>
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repository> -P docs_stand_alone.cmake")
endif()
cmake_path(SET root NORMALIZE "${ROOT}/")
file(GLOB_RECURSE docs "${root}docs/*.md")
list(PREPEND docs "${root}README.md")

set(bad "")
# Appends "<doc>: '<target>' ..." to `bad` unless `target` (relative to `dir`) is inside the
# repository and exists.
function(check_inside rel_doc dir target)
  cmake_path(ABSOLUTE_PATH target BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE p)
  cmake_path(IS_PREFIX root "${p}" NORMALIZE inside)
  if(NOT inside)
    list(APPEND bad "${rel_doc}: '${target}' leads outside the repository")
  elseif(NOT EXISTS "${p}")
    list(APPEND bad "${rel_doc}: '${target}' names nothing in the repository")
  endif()
  set(bad "${bad}" PARENT_SCOPE)
endfunction()

set(checked 0)
foreach(doc IN LISTS docs)
  if(NOT EXISTS "${doc}")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  cmake_path(GET doc PARENT_PATH dir)
  cmake_path(RELATIVE_PATH doc BASE_DIRECTORY "${root}" OUTPUT_VARIABLE rel_doc)
  file(READ "${doc}" text)
  # CMake lists split on ';' except inside [ ]: keep neither in the text. A link becomes "@LINK@(...)".
  string(REPLACE ";" " " text "${text}")
  string(REPLACE "](" "@LINK@(" text "${text}")
  string(REPLACE "[" " " text "${text}")
  string(REPLACE "]" " " text "${text}")

  string(REGEX MATCHALL "@LINK@\\([^ )\n]+\\)" links "${text}")
  foreach(link IN LISTS links)
    string(REGEX REPLACE "^@LINK@\\((.*)\\)$" "\\1" target "${link}")
    if(target MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:" OR target MATCHES "^#")
      continue()  # a URL, or an anchor in this file
    endif()
    string(REGEX REPLACE "#.*$" "" target "${target}")
    if(target MATCHES "^/")
      list(APPEND bad "${rel_doc}: '${target}' is an absolute path")
    else()
      check_inside("${rel_doc}" "${dir}" "${target}")
    endif()
  endforeach()

  string(REGEX MATCHALL "(\\.\\./)+[^ \t\n`'\"()<>]*" ups "${text}")
  foreach(up IN LISTS ups)
    string(REGEX REPLACE "[.,:]+$" "" up "${up}")  # sentence punctuation after the path
    check_inside("${rel_doc}" "${dir}" "${up}")
  endforeach()

  string(REGEX MATCHALL "(^|[ \t\n`'\"(])(~|/home|/root|/work)/[^ \t\n`'\"()<>]*" homes "${text}")
  foreach(h IN LISTS homes)
    string(REGEX REPLACE "^[ \t\n`'\"(]" "" h "${h}")
    string(REGEX REPLACE "[.,:]+$" "" h "${h}")
    list(APPEND bad "${rel_doc}: '${h}' is in a home or workspace, not in the repository")
  endforeach()
endforeach()

if(bad)
  list(REMOVE_DUPLICATES bad)
  list(LENGTH bad n)
  list(JOIN bad "\n  " bad)
  message(NOTICE "the docs point outside the repository (move what they need into docs/):\n  ${bad}\n")
  message(FATAL_ERROR "${n} pointers outside the repository")
endif()
message(STATUS "${checked} docs (README.md, docs/*.md): every link and path stays inside the repository")
