# ET_SANITIZE applies to everything built in this tree (library, tests, tools).
if(ET_SANITIZE)
  add_compile_options(-fsanitize=${ET_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ET_SANITIZE})
endif()
# Coverage for libFuzzer in every object (the library's code is what is fuzzed); the fuzz targets
# alone link libFuzzer (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt).
if(ET_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
