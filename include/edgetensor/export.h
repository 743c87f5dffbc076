// SPDX-License-Identifier: Apache-2.0
// Symbol visibility: the shared library is built with hidden visibility; ET_API marks the public ABI.
#pragma once

#include <edgetensor/abi.h>  // generated: version macros, ET_ABI_NAMESPACE

#if defined(__GNUC__) || defined(__clang__)
#define ET_API __attribute__((visibility("default")))
#else
#define ET_API
#endif
