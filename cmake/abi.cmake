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

# The C API library (libedgetensor-c, include/edgetensor/c/edgetensor_c.h) has a version of its own
# (README, "ABI policy", "C"): its SONAME changes only with an incompatible change of the C ABI, never
# with the C++ library's SOVERSION; additions get a new symbol version node (src/capi/edgetensor-c.map).
set(ET_C_VERSION 0.7.1)
set(ET_C_SOVERSION 0)
