// SPDX-License-Identifier: Apache-2.0
// Symbol visibility: the shared library is built with hidden visibility; ET_API marks the public ABI.
#pragma once

// C++20 or later. Every public header includes this one before anything else of its own (directly or
// through error.h or array_ref.h), so an older -std stops here with one message, not with a parse
// error deep in array_ref.h. C++17 is __cplusplus 201703L, C++20 202002L (GCC 12, Clang 14); a
// compiler's draft value in between (-std=c++2a on older ones) is let through. MSVC keeps 199711L in
// __cplusplus unless /Zc:__cplusplus is given, and reports the real value in _MSVC_LANG.
#if defined(_MSVC_LANG)
#if _MSVC_LANG <= 201703L
#define ET_CXX_TOO_OLD_ 1
#endif
#elif __cplusplus <= 201703L
#define ET_CXX_TOO_OLD_ 1
#endif
#ifdef ET_CXX_TOO_OLD_
#error "edgetensor requires C++20 or later: compile with -std=c++20 (CMake: link edgetensor::edgetensor, or target_compile_features(<target> PRIVATE cxx_std_20))"
// The headers that follow would add dozens of errors after the one above: stop the compiler here
// (a missing include is fatal in GCC, Clang and MSVC).
#include <edgetensor requires C++20 (compilation stopped here)>
#endif

#include <edgetensor/abi.h>  // generated: version macros, ET_ABI_NAMESPACE

#if defined(__GNUC__) || defined(__clang__)
#define ET_API __attribute__((visibility("default")))
#else
#define ET_API
#endif
