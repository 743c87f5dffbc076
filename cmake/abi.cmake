# The version has one source, project(VERSION) in the top CMakeLists.txt. From it: the SOVERSION
# (README, "ABI policy": "0.<minor>" while the major is 0, then the major), the inline ABI namespace
# ("v" + SOVERSION with '.' -> '_') and the generated public header <edgetensor/abi.h>.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ET_SOVERSION 0.${PROJECT_VERSION_MINOR})
else()
  set(ET_SOVERSION ${PROJECT_VERSION_MAJOR})
endif()
string(REPLACE "." "_" ET_ABI_NAMESPACE "v${ET_SOVERSION}")
set(ET_GENERATED_INCLUDE_DIR ${PROJECT_BINARY_DIR}/include)
configure_file(${PROJECT_SOURCE_DIR}/cmake/abi.h.in ${ET_GENERATED_INCLUDE_DIR}/edgetensor/abi.h @ONLY)
