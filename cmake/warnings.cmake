add_library(et_warnings INTERFACE)
target_compile_options(et_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Wno-missing-field-initializers
                                             $<$<BOOL:${ET_WERROR}>:-Werror>)
