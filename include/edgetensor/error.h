// SPDX-License-Identifier: Apache-2.0
// Error model: every expected failure is a value, never an exception.
//
// A fallible call returns `Result<T>`: a tl::expected<T, Error> (a later switch to std::expected changes
// only its base class) that is [[nodiscard]] as a class, so ignoring any call that returns one is a
// warning (an error with -Werror), whether or not the function itself says [[nodiscard]]. Discard one
// on purpose with a `(void)` cast. An Error holds an ErrorCode, the saved errno (0 if none) and one
// line of context naming the value and the limit that were involved.
#pragma once

#include <edgetensor/export.h>

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

// tl::expected is the one dependency of the public headers. Without it, say which package gives it,
// then stop the compiler with a missing include (fatal), which spares the errors that would follow.
// It names another file: GCC 12.2 silently skips an #include that __has_include has just missed.
#if __has_include(<tl/expected.hpp>)
#include <tl/expected.hpp>
#else
#error "edgetensor needs tl::expected: <tl/expected.hpp> is not on the include path (Debian package libexpected-dev; elsewhere TartanLlama/expected, header-only, version 1.x)"
#include <edgetensor needs tl/expected.hpp (compilation stopped here)>
#endif

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Standard error codes (the Abseil/gRPC vocabulary). Add one only when a caller would act differently.
enum class ErrorCode : int {
  // Value 0 is unused: an Error never holds success.
  InvalidArgument = 1,     ///< A broken public contract: bad shape, negative stride, wrong dtype.
  OutOfRange = 2,          ///< A value past a limit: size overflow, view out of bounds, short fd.
  NotFound = 3,            ///< A named object does not exist (shm name, device node).
  AlreadyExists = 4,       ///< A create-exclusive call found the name taken.
  PermissionDenied = 5,    ///< EACCES/EPERM, or a write map on read-only storage.
  OutOfMemory = 6,         ///< ENOMEM/ENOSPC: the memory or the filesystem is full.
  Busy = 7,                ///< Try later: EBUSY/EAGAIN, a PBO already mapped; a queue's wait that ran
                           ///< out (pool, socket, channel) with sys_errno ETIMEDOUT (EAGAIN for 0).
  Unavailable = 8,         ///< Backend not built, device or driver missing, library not loadable.
  Unsupported = 9,         ///< This backend or object cannot do the operation (export a heap tensor).
  FailedPrecondition = 10, ///< The object is in the wrong state (empty tensor, GL context gone).
  Internal = 11,           ///< A bug or an errno we do not classify.
  Timeout = 12,            ///< A bounded wait passed its timeout (ETIMEDOUT): device work still pending.
};

/// Name of an ErrorCode ("InvalidArgument"); "Unknown" for values outside the enum.
ET_API std::string_view error_code_name(ErrorCode code) noexcept;

/// An error: code, saved errno (0 if none) and one line of context.
class ET_API Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), errno_(sys_errno), message_(std::move(message)) {}

  /// Builds an Error from an errno value: the code follows the errno (ENOMEM -> OutOfMemory,
  /// EACCES/EPERM -> PermissionDenied, ENOENT -> NotFound, ...; see error.cpp), the message is
  /// "<context>: <strerror> (<ERRNO_NAME>)".
  static Error from_errno(int sys_errno, std::string_view context);

  ErrorCode code() const noexcept { return code_; }
  /// The errno saved when the error was made, 0 when none applies.
  int sys_errno() const noexcept { return errno_; }
  /// One line of context, e.g. "allocate u8 [4611686018427387904, 8]: byte size overflows 64-bit size arithmetic (a
  /// tensor holds at most 9223372036854775807 B)".
  const std::string& message() const noexcept { return message_; }
  /// "<CodeName>: <message>".
  std::string to_string() const;

 private:
  ErrorCode code_;
  int errno_;
  std::string message_;
};

/// Thrown by Result::value() on an error; what() is the Error's to_string(). A tl::bad_expected_access<Error>,
/// so handlers written for tl::expected still catch it.
class ET_API BadResultAccess : public tl::bad_expected_access<Error> {
 public:
  explicit BadResultAccess(Error error);
  const char* what() const noexcept override;

 private:
  std::string what_;
};

template <class T>
class Result;

namespace detail {
/// Result<U> for a Result<U> or a tl::expected<U, Error> (what and_then's function returns), else void.
template <class R> struct ResultFor { using type = void; };
template <class U> struct ResultFor<Result<U>> { using type = Result<U>; };
template <class U> struct ResultFor<tl::expected<U, Error>> { using type = Result<U>; };

/// Ends the process: prints "edgetensor: dereferenced a Result that holds an error: <to_string()>" to
/// stderr, then abort() (as Abseil's StatusOr does).
[[noreturn]] ET_API void die_on_error_deref(const Error& error) noexcept;
[[noreturn]] ET_API void throw_bad_result_access(const Error& error);
}  // namespace detail

/// The result of a fallible call: a value of T, or an Error. [[nodiscard]] as a class: use it, or cast it
/// to void. A tl::expected<T, Error> (converts from and to it) whose accessors report the real error:
/// `*r` and `r->` on an error end the process with the error's text; `value()` throws BadResultAccess.
/// map, transform, map_error, transform_error, and_then and or_else return a Result too, so whatever
/// is read from their result is checked the same way.
template <class T>
class [[nodiscard]] Result : public tl::expected<T, Error> {
  using Base = tl::expected<T, Error>;

 public:
  using Base::Base;
  using Base::operator=;
  Result() = default;
  Result(const Base& other) : Base(other) {}
  Result(Base&& other) : Base(std::move(other)) {}

  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  U& operator*() & { return checked(), Base::operator*(); }
  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  const U& operator*() const& { return checked(), Base::operator*(); }
  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  U&& operator*() && { return checked(), std::move(*this).Base::operator*(); }
  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  const U&& operator*() const&& { return checked(), std::move(*this).Base::operator*(); }
  T* operator->() { return checked(), Base::operator->(); }
  const T* operator->() const { return checked(), Base::operator->(); }

  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  U& value() & { return thrown(), Base::operator*(); }
  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  const U& value() const& { return thrown(), Base::operator*(); }
  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  U&& value() && { return thrown(), std::move(*this).Base::operator*(); }
  template <class U = T, std::enable_if_t<!std::is_void_v<U>>* = nullptr>
  const U&& value() const&& { return thrown(), std::move(*this).Base::operator*(); }
  /// Result<void>: throws BadResultAccess on an error, does nothing otherwise.
  template <class U = T, std::enable_if_t<std::is_void_v<U>>* = nullptr>
  void value() const { thrown(); }

  /// Result<U> of f(value) (f() for Result<void>; U may be void), or this error.
  template <class F> auto map(F&& f) & { return mapped(*this, std::forward<F>(f)); }
  template <class F> auto map(F&& f) const& { return mapped(*this, std::forward<F>(f)); }
  template <class F> auto map(F&& f) && { return mapped(std::move(*this), std::forward<F>(f)); }
  template <class F> auto map(F&& f) const&& { return mapped(std::move(*this), std::forward<F>(f)); }
  /// As map (std::expected's name).
  template <class F> auto transform(F&& f) & { return mapped(*this, std::forward<F>(f)); }
  template <class F> auto transform(F&& f) const& { return mapped(*this, std::forward<F>(f)); }
  template <class F> auto transform(F&& f) && { return mapped(std::move(*this), std::forward<F>(f)); }
  template <class F> auto transform(F&& f) const&& { return mapped(std::move(*this), std::forward<F>(f)); }
  /// This value, or the Error that f(error) returns (a Result's error is always an Error).
  template <class F> Result map_error(F&& f) & { return remapped(*this, std::forward<F>(f)); }
  template <class F> Result map_error(F&& f) const& { return remapped(*this, std::forward<F>(f)); }
  template <class F> Result map_error(F&& f) && { return remapped(std::move(*this), std::forward<F>(f)); }
  template <class F> Result map_error(F&& f) const&& { return remapped(std::move(*this), std::forward<F>(f)); }
  /// As map_error (std::expected's name).
  template <class F> Result transform_error(F&& f) & { return remapped(*this, std::forward<F>(f)); }
  template <class F> Result transform_error(F&& f) const& { return remapped(*this, std::forward<F>(f)); }
  template <class F> Result transform_error(F&& f) && { return remapped(std::move(*this), std::forward<F>(f)); }
  template <class F> Result transform_error(F&& f) const&& { return remapped(std::move(*this), std::forward<F>(f)); }
  /// What f(value) (f() for Result<void>) returns, a Result<U> or tl::expected<U, Error>, as a
  /// Result<U>; or this error.
  template <class F> auto and_then(F&& f) & { return chained(*this, std::forward<F>(f)); }
  template <class F> auto and_then(F&& f) const& { return chained(*this, std::forward<F>(f)); }
  template <class F> auto and_then(F&& f) && { return chained(std::move(*this), std::forward<F>(f)); }
  template <class F> auto and_then(F&& f) const&& { return chained(std::move(*this), std::forward<F>(f)); }
  /// This value, or what f(error) returns (a Result<T>, or anything one is made from); an f that returns
  /// void only sees the error (as const Error&), which stays.
  template <class F> Result or_else(F&& f) & { return recovered(*this, std::forward<F>(f)); }
  template <class F> Result or_else(F&& f) const& { return recovered(*this, std::forward<F>(f)); }
  template <class F> Result or_else(F&& f) && { return recovered(std::move(*this), std::forward<F>(f)); }
  template <class F> Result or_else(F&& f) const&& { return recovered(std::move(*this), std::forward<F>(f)); }

 private:
  // f(value), or f() for Result<void>; `self` is *this in the caller's value category.
  template <class Self, class F>
  static decltype(auto) invoke_on_value(Self&& self, F&& f) {
    if constexpr (std::is_void_v<T>) return std::invoke(std::forward<F>(f));
    else return std::invoke(std::forward<F>(f), std::forward<Self>(self).Base::operator*());
  }
  template <class Self, class F>
  static auto mapped(Self&& self, F&& f) {
    using U = std::remove_cvref_t<decltype(invoke_on_value(std::forward<Self>(self), std::forward<F>(f)))>;
    if (!self.has_value()) return Result<U>(tl::unexpect, std::forward<Self>(self).error());
    if constexpr (std::is_void_v<U>) {
      invoke_on_value(std::forward<Self>(self), std::forward<F>(f));
      return Result<U>();
    } else {
      return Result<U>(tl::in_place, invoke_on_value(std::forward<Self>(self), std::forward<F>(f)));
    }
  }
  template <class Self, class F>
  static Result remapped(Self&& self, F&& f) {
    static_assert(std::is_convertible_v<std::invoke_result_t<F, decltype(std::forward<Self>(self).error())>, Error>,
                  "Result::map_error: f must return an Error; for another error type, convert to tl::expected first");
    if (self.has_value()) return std::forward<Self>(self);
    return Result(tl::unexpect, std::invoke(std::forward<F>(f), std::forward<Self>(self).error()));
  }
  template <class Self, class F>
  static auto chained(Self&& self, F&& f) {
    using R = std::remove_cvref_t<decltype(invoke_on_value(std::forward<Self>(self), std::forward<F>(f)))>;
    using Out = typename detail::ResultFor<R>::type;
    static_assert(!std::is_void_v<Out>, "Result::and_then: f must return a Result<U> or a tl::expected<U, Error>");
    if (!self.has_value()) return Out(tl::unexpect, std::forward<Self>(self).error());
    return Out(invoke_on_value(std::forward<Self>(self), std::forward<F>(f)));
  }
  template <class Self, class F>
  static Result recovered(Self&& self, F&& f) {
    if (self.has_value()) return std::forward<Self>(self);
    if constexpr (std::is_void_v<std::invoke_result_t<F, decltype(std::forward<Self>(self).error())>>) {
      std::invoke(std::forward<F>(f), std::as_const(self.error()));
      return std::forward<Self>(self);
    } else {
      return Result(std::invoke(std::forward<F>(f), std::forward<Self>(self).error()));
    }
  }

  void checked() const noexcept {
    if (!this->has_value()) [[unlikely]] detail::die_on_error_deref(this->error());
  }
  void thrown() const {
    if (!this->has_value()) [[unlikely]] detail::throw_bad_result_access(this->error());
  }
};

/// The error side of a Result, for `return unexpected(Error(...))`.
using Unexpected = tl::unexpected<Error>;

/// Shorthand: `return fail(ErrorCode::OutOfRange, "...")`.
inline Unexpected fail(ErrorCode code, std::string message, int sys_errno = 0) {
  return Unexpected(Error(code, std::move(message), sys_errno));
}
inline Unexpected fail(Error error) { return Unexpected(std::move(error)); }

/// Name of an errno value ("ENOENT"); "E<number>" for unknown values.
ET_API std::string errno_name(int sys_errno);

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor

/// Propagates the error of a Result<void>-like expression.
#define ET_TRY(expr)                                              \
  do {                                                            \
    auto&& et_try_result_ = (expr);                               \
    if (!et_try_result_) return ::edgetensor::Unexpected(std::move(et_try_result_).error()); \
  } while (0)

#define ET_CONCAT_INNER_(a, b) a##b
#define ET_CONCAT_(a, b) ET_CONCAT_INNER_(a, b)
/// `ET_TRY_ASSIGN(auto x, expr);` assigns the value of a Result or returns its error.
/// The temporary is named by __COUNTER__, so two uses on one line (e.g. in a macro) do not collide.
#define ET_TRY_ASSIGN(lhs, expr) ET_TRY_ASSIGN_IMPL_(ET_CONCAT_(et_try_tmp_, __COUNTER__), lhs, expr)
#define ET_TRY_ASSIGN_IMPL_(tmp, lhs, expr)                                  \
  auto tmp = (expr);                                                         \
  if (!tmp) return ::edgetensor::Unexpected(std::move(tmp).error());         \
  lhs = std::move(*tmp)
