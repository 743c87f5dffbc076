# ET_SANITIZE applies to everything built in this tree (library, tests, tools).
if(ET_SANITIZE)
  add_compile_options(-fsanitize=${ET_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ET_SANITIZE})
endif()
