// SPDX-License-Identifier: Apache-2.0
// Messages: {fmt}'s syntax and compile-time format-string checks, with {fmt}'s implementation
// compiled once, in format.cpp. Write text::format(...) and text::join(...) where you would write
// fmt::format and fmt::join (`text` is a direct member of edgetensor, so it resolves from every
// namespace of ours, cuda::detail included).
//
// Why: with header-only {fmt} every file that formatted a message compiled and optimised all of
// {fmt} again (about 2/3 of a backend file's compile time). Includers see only <fmt/core.h>, which
// type-erases the arguments; the one vformat() is in format.cpp. Nothing links libfmt.
#pragma once

#include <edgetensor/abi.h>

#include <fmt/core.h>  // never <fmt/format.h> here: that is what made every includer slow

#include <iterator>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace text {

/// A format string checked at compile time against the argument types (fmt::format_string).
template <class... Args>
using format_string = fmt::format_string<Args...>;

/// fmt::vformat, compiled once (format.cpp). Throws only std::bad_alloc: format() checks the format
/// string at compile time.
std::string vformat(fmt::string_view pattern, fmt::format_args args);

/// fmt::format: same syntax, same output.
template <class... Args>
[[nodiscard]] std::string format(format_string<Args...> pattern, Args&&... args) {
  return text::vformat(pattern, fmt::make_format_args(args...));  // qualified: ADL finds fmt::vformat
}

/// fmt::join, as a string: each element formatted with "{}", `separator` between them. Pass it to a
/// plain "{}" (a spec such as "{:x}" would apply to the joined string, not to each element).
template <class It>
[[nodiscard]] std::string join(It first, It last, std::string_view separator) {
  std::string out;
  for (It it = first; it != last; ++it) {
    if (it != first) out += separator;
    const auto& element = *it;
    out += text::vformat("{}", fmt::make_format_args(element));
  }
  return out;
}

template <class Range>
[[nodiscard]] std::string join(const Range& range, std::string_view separator) {
  return text::join(std::begin(range), std::end(range), separator);
}

}  // namespace text
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
