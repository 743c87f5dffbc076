// SPDX-License-Identifier: Apache-2.0
#include <edgetensor/error.h>

#include "text/format.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::OutOfRange: return "OutOfRange";
    case ErrorCode::NotFound: return "NotFound";
    case ErrorCode::AlreadyExists: return "AlreadyExists";
    case ErrorCode::PermissionDenied: return "PermissionDenied";
    case ErrorCode::OutOfMemory: return "OutOfMemory";
    case ErrorCode::Busy: return "Busy";
    case ErrorCode::Unavailable: return "Unavailable";
    case ErrorCode::Unsupported: return "Unsupported";
    case ErrorCode::FailedPrecondition: return "FailedPrecondition";
    case ErrorCode::Internal: return "Internal";
    case ErrorCode::Timeout: return "Timeout";
  }
  return "Unknown";
}

namespace {
ErrorCode code_from_errno(int e) {
  switch (e) {
    case 0: return ErrorCode::Internal;
    case EINVAL: case EBADF: case ENAMETOOLONG: case ENOTSOCK: case ESPIPE: return ErrorCode::InvalidArgument;
    case ENOENT: return ErrorCode::NotFound;
    case EEXIST: return ErrorCode::AlreadyExists;
    case EACCES: case EPERM: case EROFS: return ErrorCode::PermissionDenied;
    case ENOMEM: case ENOSPC: case EDQUOT: return ErrorCode::OutOfMemory;
    case EBUSY: case EAGAIN: case EMFILE: case ENFILE: case EINTR: return ErrorCode::Busy;
    case ENODEV: case ENXIO: case EPIPE: case ECONNRESET: case ENOTCONN: case ENOSYS: return ErrorCode::Unavailable;
    case ENOTTY: case EOPNOTSUPP: return ErrorCode::Unsupported;
    case ERANGE: case EOVERFLOW: case EFBIG: case EMSGSIZE: return ErrorCode::OutOfRange;
    case ETIMEDOUT: return ErrorCode::Timeout;
    default: return ErrorCode::Internal;
  }
}
}  // namespace

std::string errno_name(int e) {
  // strerrorname_np needs glibc >= 2.32 (Debian 12 has 2.36).
  const char* name = ::strerrorname_np(e);
  return name ? std::string(name) : text::format("E{}", e);
}

Error Error::from_errno(int e, std::string_view context) {
  char buf[128];
  const char* text = ::strerror_r(e, buf, sizeof buf);  // GNU variant returns the text
  return Error(code_from_errno(e), text::format("{}: {} ({})", context, text, errno_name(e)), e);
}

std::string Error::to_string() const { return text::format("{}: {}", error_code_name(code_), message_); }

BadResultAccess::BadResultAccess(Error error)
    : tl::bad_expected_access<Error>(std::move(error)), what_(this->error().to_string()) {}

const char* BadResultAccess::what() const noexcept { return what_.c_str(); }

namespace detail {
void die_on_error_deref(const Error& error) noexcept {
  // No allocation on this path: the error's text may be about memory running out.
  const std::string_view code = error_code_name(error.code());
  std::fprintf(stderr, "edgetensor: dereferenced a Result that holds an error: %.*s: %s\n",
               static_cast<int>(code.size()), code.data(), error.message().c_str());
  std::fflush(stderr);
  std::abort();
}

void throw_bad_result_access(const Error& error) { throw BadResultAccess(error); }
}  // namespace detail

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
