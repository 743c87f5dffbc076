// SPDX-License-Identifier: Apache-2.0
// ArrayRef<T>: a borrowed, read-only list for parameters; binds to {1, 2, 3}, std::vector, std::array
// and std::span alike. Borrowed for the call only: never store one.
#pragma once

#include <edgetensor/export.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

template <class T>
class ArrayRef {
 public:
  constexpr ArrayRef() noexcept = default;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // intended: an ArrayRef lives for one call only
#endif
  constexpr ArrayRef(std::initializer_list<T> list) noexcept : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr ArrayRef(std::span<const T> span) noexcept : data_(span.data()), size_(span.size()) {}
  ArrayRef(const std::vector<T>& v) noexcept : data_(v.data()), size_(v.size()) {}
  template <std::size_t N>
  constexpr ArrayRef(const std::array<T, N>& a) noexcept : data_(a.data()), size_(N) {}
  template <std::size_t N>
  constexpr ArrayRef(const T (&a)[N]) noexcept : data_(a), size_(N) {}
  constexpr ArrayRef(const T* data, std::size_t size) noexcept : data_(data), size_(size) {}

  constexpr const T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr const T* begin() const noexcept { return data_; }
  constexpr const T* end() const noexcept { return data_ + size_; }
  constexpr const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr std::span<const T> span() const noexcept { return {data_, size_}; }

 private:
  const T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
