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
# Coverage for libFuzzer in every object (the library's code is what is fuzzed); the fuzz targets
# alone link libFuzzer (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt).
if(ET_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
