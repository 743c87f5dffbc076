add_library(et_warnings INTERFACE)
# GCC's -Wshadow=local (a local shadowing a local or a parameter) has no clang spelling; clang's
# -Wshadow is that plus locals shadowing namespace-scope variables.
target_compile_options(et_warnings INTERFACE -Wall -Wextra -Wpedantic $<IF:$<CXX_COMPILER_ID:Clang>,-Wshadow,-Wshadow=local>
                                             -Wnon-virtual-dtor -Wno-missing-field-initializers
                                             $<$<BOOL:${ET_WERROR}>:-Werror>)
