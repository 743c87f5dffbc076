// SPDX-License-Identifier: Apache-2.0
// The one translation unit that compiles {fmt}'s implementation. FMT_HEADER_ONLY keeps it inline code
// (weak, hidden symbols, as in every file before), so neither libedgetensor.so nor libedgetensor.a
// defines a strong fmt:: symbol that could clash with a user's own {fmt}, and the library needs no
// libfmt at run time. It must precede every {fmt} header, hence this file's own header too.
#define FMT_HEADER_ONLY 1
#include "text/format.h"

#include <fmt/format.h>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace text {

std::string vformat(fmt::string_view pattern, fmt::format_args args) { return fmt::vformat(pattern, args); }

}  // namespace text
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
