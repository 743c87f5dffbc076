# ET_SANITIZE applies to everything built in this tree (library, tests, tools).
if(ET_SANITIZE)
  add_compile_options(-fsanitize=${ET_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ET_SANITIZE})
  # clang links its ASan runtime statically into executables and not at all into shared objects; one
  # shared runtime for every binary of the tree instead (as gcc does), so that libedgetensor.so links
  # with --no-undefined, and the Python module, which needs the runtime preloaded, can start this
  # tree's executables (a preloaded shared runtime and a static one in one process refuse to start).
  if(ET_SANITIZE MATCHES "address" AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir OUTPUT_VARIABLE ET_CLANG_RUNTIME_DIR
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    add_link_options(-shared-libasan -Wl,-rpath,${ET_CLANG_RUNTIME_DIR})
  endif()
endif()
# ET_SANITIZER_PRELOAD: the sanitizer runtimes a program that is not instrumented (python3, gst-launch-1.0)
# must preload to load this tree's libraries (LD_PRELOAD, ':'-separated). gcc: libasan.so and libubsan.so.
# clang: its shared ASan runtime (linked into every binary of the tree above), which holds UBSan's handlers.
set(ET_SANITIZER_PRELOAD "")
if(ET_SANITIZE MATCHES "address")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(ET_SANITIZER_PRELOAD ${ET_CLANG_RUNTIME_DIR}/libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
    if(NOT EXISTS ${ET_SANITIZER_PRELOAD})
      message(FATAL_ERROR "ET_SANITIZE=${ET_SANITIZE} with clang: programs that are not instrumented need "
                          "${ET_SANITIZER_PRELOAD} (clang's shared ASan runtime)")
    endif()
  else()
    set(libs asan)
    if(ET_SANITIZE MATCHES "undefined")
      list(APPEND libs ubsan)
    endif()
    foreach(lib IN LISTS libs)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${lib}.so OUTPUT_VARIABLE path
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      list(APPEND ET_SANITIZER_PRELOAD ${path})
    endforeach()
  endif()
  string(REPLACE ";" ":" ET_SANITIZER_PRELOAD "${ET_SANITIZER_PRELOAD}")
endif()
# Coverage for libFuzzer in every object (the library's code is what is fuzzed); the fuzz targets
# alone link libFuzzer (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt).
if(ET_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
