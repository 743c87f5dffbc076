// SPDX-License-Identifier: Apache-2.0
// Error model: codes, names, errno mapping, ET_TRY / ET_TRY_ASSIGN (src/base/error.cpp).
#include <edgetensor/error.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

using namespace edgetensor;

namespace {

TEST(Error, CodeNames) {
  EXPECT_EQ(error_code_name(ErrorCode::InvalidArgument), "InvalidArgument");
  EXPECT_EQ(error_code_name(ErrorCode::OutOfRange), "OutOfRange");
  EXPECT_EQ(error_code_name(ErrorCode::NotFound), "NotFound");
  EXPECT_EQ(error_code_name(ErrorCode::AlreadyExists), "AlreadyExists");
  EXPECT_EQ(error_code_name(ErrorCode::PermissionDenied), "PermissionDenied");
  EXPECT_EQ(error_code_name(ErrorCode::OutOfMemory), "OutOfMemory");
  EXPECT_EQ(error_code_name(ErrorCode::Busy), "Busy");
  EXPECT_EQ(error_code_name(ErrorCode::Unavailable), "Unavailable");
  EXPECT_EQ(error_code_name(ErrorCode::Unsupported), "Unsupported");
  EXPECT_EQ(error_code_name(ErrorCode::FailedPrecondition), "FailedPrecondition");
  EXPECT_EQ(error_code_name(ErrorCode::Internal), "Internal");
  EXPECT_EQ(error_code_name(ErrorCode::Timeout), "Timeout");
  EXPECT_EQ(error_code_name(static_cast<ErrorCode>(1234)), "Unknown");
}

TEST(Error, FromErrnoPicksTheCodeAndNamesTheErrno) {
  struct Row {
    int e;
    ErrorCode code;
    const char* name;
  };
  const Row rows[] = {
      {ENOMEM, ErrorCode::OutOfMemory, "ENOMEM"},        {ENOSPC, ErrorCode::OutOfMemory, "ENOSPC"},
      {EACCES, ErrorCode::PermissionDenied, "EACCES"},   {EPERM, ErrorCode::PermissionDenied, "EPERM"},
      {ENOENT, ErrorCode::NotFound, "ENOENT"},           {EEXIST, ErrorCode::AlreadyExists, "EEXIST"},
      {EINVAL, ErrorCode::InvalidArgument, "EINVAL"},    {EBADF, ErrorCode::InvalidArgument, "EBADF"},
      {EMFILE, ErrorCode::Busy, "EMFILE"},               {EAGAIN, ErrorCode::Busy, "EAGAIN"},
      {EBUSY, ErrorCode::Busy, "EBUSY"},                 {ENODEV, ErrorCode::Unavailable, "ENODEV"},
      {EPIPE, ErrorCode::Unavailable, "EPIPE"},          {ENOTTY, ErrorCode::Unsupported, "ENOTTY"},
      {EOVERFLOW, ErrorCode::OutOfRange, "EOVERFLOW"},   {EMSGSIZE, ErrorCode::OutOfRange, "EMSGSIZE"},
      {ETIMEDOUT, ErrorCode::Timeout, "ETIMEDOUT"},      {EIO, ErrorCode::Internal, "EIO"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    Error err = Error::from_errno(r.e, "doing thing 42");
    EXPECT_EQ(err.code(), r.code);
    EXPECT_EQ(err.sys_errno(), r.e);
    EXPECT_EQ(err.message().rfind("doing thing 42: ", 0), 0u) << err.message();
    EXPECT_NE(err.message().find(std::string("(") + r.name + ")"), std::string::npos) << err.message();
  }
  // The strerror text is part of the message.
  EXPECT_NE(Error::from_errno(ENOENT, "x").message().find("No such file or directory"), std::string::npos);
}

TEST(Error, ToStringStartsWithTheCodeName) {
  Error err(ErrorCode::OutOfRange, "batch 5 out of range");
  EXPECT_EQ(err.to_string(), "OutOfRange: batch 5 out of range");
  EXPECT_EQ(err.sys_errno(), 0);
}

TEST(Error, ErrnoNameOfUnknownValue) {
  EXPECT_EQ(errno_name(ENOENT), "ENOENT");
  EXPECT_EQ(errno_name(99999), "E99999");
}

Result<int> half(int v) {
  if (v % 2) return fail(ErrorCode::InvalidArgument, "odd value " + std::to_string(v));
  return v / 2;
}
Result<int> quarter(int v) {
  ET_TRY_ASSIGN(int h, half(v));
  ET_TRY_ASSIGN(int q, half(h));
  return q;
}
Result<void> check_even(int v) {
  ET_TRY(half(v));
  return {};
}

// Two ET_TRY_ASSIGN on one line, as a user macro expanding to both would put them: the temporaries are
// named by __COUNTER__, so they do not collide (with __LINE__ this did not compile).
#define ET_TEST_TWO_HALVES(a, b, x, y) ET_TRY_ASSIGN(int a, half(x)); ET_TRY_ASSIGN(int b, half(y))
Result<int> sum_of_halves(int x, int y) {
  ET_TEST_TWO_HALVES(hx, hy, x, y);
  return hx + hy;
}
#undef ET_TEST_TWO_HALVES

TEST(Error, TryAssignTwiceOnOneLine) {
  ASSERT_TRUE(sum_of_halves(4, 8).has_value());
  EXPECT_EQ(*sum_of_halves(4, 8), 6);
  EXPECT_EQ(sum_of_halves(4, 7).error().message(), "odd value 7");
}

// Result is a tl::expected in every other respect: it converts from and to one.
TEST(Error, ResultConvertsFromAndToTheExpectedItWraps) {
  tl::expected<int, Error> plain = half(8);
  Result<int> back = plain;
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, 4);
  Result<int> err = tl::expected<int, Error>(tl::unexpect, Error(ErrorCode::Busy, "later"));
  EXPECT_EQ(err.error().code(), ErrorCode::Busy);
}

TEST(Error, TryMacrosPropagateTheFirstError) {
  ASSERT_TRUE(quarter(8).has_value());
  EXPECT_EQ(*quarter(8), 2);
  auto r = quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(r.error().message(), "odd value 3");
  EXPECT_TRUE(check_even(4).has_value());
  ASSERT_FALSE(check_even(5).has_value());
  EXPECT_EQ(check_even(5).error().message(), "odd value 5");
}

}  // namespace

// Accessors on an error report the error itself, never undefined behaviour or a generic text.
namespace {
Result<std::string> failed_lookup() { return fail(ErrorCode::NotFound, "shm name \"/et-missing\" does not exist"); }
struct Point {
  int x = 0;
};
Result<Point> failed_point() { return fail(ErrorCode::OutOfRange, "point past 640 x 480"); }
}  // namespace

TEST(ResultDeathTest, DereferencingAnErrorEndsTheProcessWithItsText) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto r = failed_lookup();
  EXPECT_DEATH((void)*r, "dereferenced a Result that holds an error: NotFound: shm name \"/et-missing\" does not exist");
  const auto& cr = r;
  EXPECT_DEATH((void)*cr, "NotFound: shm name");
  EXPECT_DEATH((void)*failed_lookup(), "NotFound: shm name");
  auto p = failed_point();
  EXPECT_DEATH((void)p->x, "OutOfRange: point past 640 x 480");
  const auto& cp = p;
  EXPECT_DEATH((void)cp->x, "OutOfRange: point past 640 x 480");
}

TEST(Result, ValueOnAnErrorThrowsWithTheErrorsText) {
  auto r = failed_lookup();
  try {
    (void)r.value();
    FAIL() << "value() returned";
  } catch (const BadResultAccess& e) {
    EXPECT_STREQ(e.what(), "NotFound: shm name \"/et-missing\" does not exist");
    EXPECT_EQ(e.error().code(), ErrorCode::NotFound);
  }
  // Every overload, and handlers written for tl::expected still catch it.
  const auto& cr = r;
  EXPECT_THROW((void)cr.value(), BadResultAccess);
  EXPECT_THROW((void)failed_lookup().value(), tl::bad_expected_access<Error>);
  EXPECT_THROW((void)std::move(cr).value(), BadResultAccess);
  try {
    (void)failed_point().value();
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "OutOfRange: point past 640 x 480");
  }
}

TEST(Result, AccessorsOnAValueGiveTheValue) {
  Result<std::string> r = std::string("frame");
  EXPECT_EQ(*r, "frame");
  EXPECT_EQ(r->size(), 5u);
  EXPECT_EQ(r.value(), "frame");
  std::string moved = *std::move(r);
  EXPECT_EQ(moved, "frame");
  Result<void> ok;
  EXPECT_TRUE(ok.has_value());
}

// map, transform, map_error, transform_error, and_then and or_else return a checked Result in every
// value category, so reading their result on an error says the error too.
namespace {
template <class R>
inline constexpr bool kIsResult = false;
template <class U>
inline constexpr bool kIsResult<Result<U>> = true;

constexpr auto kLength = [](const std::string& s) { return s.size(); };
constexpr auto kRename = [](const Error& e) { return Error(e.code(), "renamed: " + e.message()); };
constexpr auto kLengthResult = [](const std::string& s) -> Result<std::size_t> { return s.size(); };
constexpr auto kRecover = [](const Error&) -> Result<std::string> { return std::string("fallback"); };
template <class R>
void expect_chain_types() {
  using S = decltype(std::declval<R>().map(kLength));
  static_assert(std::is_same_v<S, Result<std::size_t>>);
  static_assert(std::is_same_v<decltype(std::declval<R>().transform(kLength)), Result<std::size_t>>);
  static_assert(std::is_same_v<decltype(std::declval<R>().map_error(kRename)), Result<std::string>>);
  static_assert(std::is_same_v<decltype(std::declval<R>().transform_error(kRename)), Result<std::string>>);
  static_assert(std::is_same_v<decltype(std::declval<R>().and_then(kLengthResult)), Result<std::size_t>>);
  static_assert(std::is_same_v<decltype(std::declval<R>().or_else(kRecover)), Result<std::string>>);
}
}  // namespace

TEST(Result, ChainsReturnCheckedResultsInEveryValueCategory) {
  expect_chain_types<Result<std::string>&>();
  expect_chain_types<const Result<std::string>&>();
  expect_chain_types<Result<std::string>&&>();
  expect_chain_types<const Result<std::string>&&>();
  // Result<void> too, and chains from and to void.
  Result<void> ok;
  static_assert(std::is_same_v<decltype(ok.map([] { return 3; })), Result<int>>);
  static_assert(std::is_same_v<decltype(ok.transform([] {})), Result<void>>);
  static_assert(std::is_same_v<decltype(ok.map_error(kRename)), Result<void>>);
  static_assert(std::is_same_v<decltype(ok.and_then([] { return Result<int>(4); })), Result<int>>);
  static_assert(std::is_same_v<decltype(ok.or_else([](const Error&) {})), Result<void>>);
  static_assert(kIsResult<decltype(std::as_const(ok).and_then([]() -> tl::expected<int, Error> { return 5; }))>);
  static_assert(std::is_same_v<decltype(Result<int>(1).map([](int) {})), Result<void>>);
  EXPECT_EQ(*ok.map([] { return 3; }), 3);
  EXPECT_EQ(*ok.and_then([]() -> tl::expected<int, Error> { return 5; }), 5);
}

TEST(Result, ChainsOnAValue) {
  Result<std::string> r = std::string("frame");
  EXPECT_EQ(*r.map(kLength), 5u);
  EXPECT_EQ(*std::as_const(r).transform(kLength), 5u);
  EXPECT_EQ(*r.and_then(kLengthResult), 5u);
  EXPECT_EQ(*r.map_error(kRename), "frame");
  EXPECT_EQ(*r.or_else(kRecover), "frame");
  bool seen = false;
  EXPECT_EQ(*r.or_else([&](const Error&) { seen = true; }), "frame");
  EXPECT_FALSE(seen);
  // An rvalue chain moves: a move-only value passes through every step.
  auto p = Result<std::unique_ptr<int>>(std::make_unique<int>(7))
               .map([](std::unique_ptr<int>&& q) { return std::move(q); })
               .and_then([](std::unique_ptr<int>&& q) { return Result<std::unique_ptr<int>>(std::move(q)); })
               .map_error(kRename)
               .or_else([](const Error& e) -> Result<std::unique_ptr<int>> { return fail(e); });
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(**p, 7);
  int calls = 0;
  Result<void> ok;
  EXPECT_TRUE(ok.map([&] { ++calls; }).has_value());
  EXPECT_EQ(calls, 1);
  ok.value();  // no-op
  std::as_const(ok).value();
}

TEST(Result, ChainsOnAnErrorKeepOrChangeTheError) {
  auto r = failed_lookup();
  int calls = 0;
  auto m = r.map([&](const std::string& s) { return ++calls, s.size(); });
  EXPECT_EQ(calls, 0);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().to_string(), "NotFound: shm name \"/et-missing\" does not exist");
  EXPECT_EQ(r.map_error(kRename).error().message(), "renamed: shm name \"/et-missing\" does not exist");
  EXPECT_EQ(failed_lookup().transform_error(kRename).error().code(), ErrorCode::NotFound);
  EXPECT_EQ(*r.or_else(kRecover), "fallback");
  std::string seen;
  auto observed = failed_lookup().or_else([&](const Error& e) { seen = e.message(); });
  EXPECT_EQ(seen, "shm name \"/et-missing\" does not exist");
  ASSERT_FALSE(observed.has_value());
  EXPECT_EQ(observed.error().message(), seen);  // an observer neither consumes nor moves the error
  Result<void> bad = fail(ErrorCode::Busy, "pool cam0 has no free buffer");
  EXPECT_EQ(bad.and_then([] { return Result<int>(1); }).error().message(), "pool cam0 has no free buffer");
}

TEST(ResultDeathTest, ReadingAChainedErrorEndsTheProcessWithItsText) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto r = failed_lookup();
  const auto& cr = r;
  EXPECT_DEATH((void)*r.map(kLength), "dereferenced a Result that holds an error: NotFound: shm name");
  EXPECT_DEATH((void)*cr.transform(kLength), "NotFound: shm name");
  EXPECT_DEATH((void)*failed_lookup().map(kLength), "NotFound: shm name");
  EXPECT_DEATH((void)*std::move(cr).transform(kLength), "NotFound: shm name");
  EXPECT_DEATH((void)*r.and_then(kLengthResult), "NotFound: shm name");
  EXPECT_DEATH((void)*failed_lookup().and_then(kLengthResult), "NotFound: shm name");
  EXPECT_DEATH((void)r.map_error(kRename)->size(), "NotFound: renamed: shm name");
  EXPECT_DEATH((void)failed_lookup().transform_error(kRename)->size(), "NotFound: renamed: shm name");
  EXPECT_DEATH((void)*r.or_else([](const Error&) {}), "NotFound: shm name");
  EXPECT_DEATH((void)*failed_lookup().or_else([](const Error& e) { return fail(e); }), "NotFound: shm name");
  EXPECT_DEATH((void)failed_point().map([](const Point& p) { return p; })->x, "OutOfRange: point past 640 x 480");
  Result<void> bad = fail(ErrorCode::Busy, "pool cam0 has no free buffer");
  EXPECT_DEATH((void)*bad.map([] { return 1; }), "Busy: pool cam0 has no free buffer");
}

TEST(Result, ValueOfAChainedErrorThrowsWithTheErrorsText) {
  auto r = failed_lookup();
  for (auto call : std::initializer_list<std::function<void()>>{
           [&] { (void)r.map(kLength).value(); },
           [&] { (void)std::as_const(r).and_then(kLengthResult).value(); },
           [&] { (void)failed_lookup().transform(kLength).value(); },
           [&] { (void)r.or_else([](const Error&) {}).value(); }}) {
    try {
      call();
      FAIL() << "value() returned";
    } catch (const BadResultAccess& e) {
      EXPECT_STREQ(e.what(), "NotFound: shm name \"/et-missing\" does not exist");
    }
  }
  try {
    (void)r.map_error(kRename).value();
    FAIL() << "value() returned";
  } catch (const BadResultAccess& e) {
    EXPECT_STREQ(e.what(), "NotFound: renamed: shm name \"/et-missing\" does not exist");
  }
  // Result<void>::value(), also on what a chain to void returns.
  Result<void> bad = fail(ErrorCode::Busy, "pool cam0 has no free buffer");
  try {
    bad.value();
    FAIL() << "value() returned";
  } catch (const BadResultAccess& e) {
    EXPECT_STREQ(e.what(), "Busy: pool cam0 has no free buffer");
    EXPECT_EQ(e.error().code(), ErrorCode::Busy);
  }
  EXPECT_THROW(std::as_const(bad).value(), BadResultAccess);
  EXPECT_THROW(r.map([](const std::string&) {}).value(), BadResultAccess);
  EXPECT_THROW(Result<void>(bad).value(), tl::bad_expected_access<Error>);
}
