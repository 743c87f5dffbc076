// SPDX-License-Identifier: Apache-2.0
// The per-thread last error, names, and the argument readers every entry point uses.
#include "capi/capi_support.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace edgetensor::capi {
namespace {

struct LastError {
  et_status code = ET_OK;
  std::int32_t sys_errno = 0;
  std::string text;
};
thread_local LastError t_last;

// What et_last_error_message gives when the message itself could not be stored (no memory for it).
constexpr const char* kNoMemoryForMessage = "OutOfMemory: no memory to record the error's message";
thread_local bool t_text_lost = false;

et_status store(ErrorCode code, int sys_errno, std::string_view a, std::string_view b, std::string_view c) noexcept {
  t_last.code = static_cast<et_status>(code);
  t_last.sys_errno = sys_errno;
  try {
    t_last.text.assign(a);
    t_last.text.append(b);
    t_last.text.append(c);
    t_text_lost = false;
  } catch (...) {
    t_text_lost = true;
  }
  return t_last.code;
}

}  // namespace

et_status record(const Error& error) noexcept {
  return store(error.code(), error.sys_errno(), error_code_name(error.code()), ": ", error.message());
}

et_status record(ErrorCode code, std::string_view text, std::string_view detail) noexcept {
  std::string_view name = error_code_name(code);
  // "<Name>: <text><detail>"; the name and ": " are added in store's three parts.
  const int saved = errno;
  et_status s = store(code, 0, name, ": ", text);
  if (!detail.empty() && !t_text_lost) {
    try {
      t_last.text.append(detail);
    } catch (...) {
      t_text_lost = true;
    }
  }
  errno = saved;
  return s;
}

Unexpected null_argument(std::string_view function, std::string_view what) {
  return fail(ErrorCode::InvalidArgument, std::string(function) + ": " + std::string(what) + " is NULL");
}

Result<std::size_t> to_size(std::uint64_t value, std::string_view what) {
  if (value > SIZE_MAX)
    return fail(ErrorCode::OutOfRange, std::string(what) + " " + std::to_string(value) + " does not fit size_t (" +
                                           std::to_string(SIZE_MAX) + ")");
  return static_cast<std::size_t>(value);
}

Result<Shape> read_shape(std::string_view function, std::uint32_t rank, const std::uint64_t* shape) {
  if (rank > kMaxRank)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": rank " + std::to_string(rank) +
                                                " is above ET_MAX_RANK (" + std::to_string(kMaxRank) + ")");
  if (rank > 0 && shape == nullptr) return null_argument(function, "shape (rank " + std::to_string(rank) + ")");
  Shape s;
  s.rank = rank;
  for (std::uint32_t i = 0; i < rank; ++i) {
    if (shape[i] > SIZE_MAX)  // the message is built only here: this loop runs on every call
      return fail(ErrorCode::OutOfRange, std::string(function) + ": shape[" + std::to_string(i) + "] " +
                                             std::to_string(shape[i]) + " does not fit size_t");
    s.dims[i] = static_cast<std::size_t>(shape[i]);
  }
  return s;
}

Result<DType> read_dtype(std::string_view function, std::int32_t dtype) {
  if (dtype < 0 || dtype >= kDTypeCount)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": dtype " + std::to_string(dtype) +
                                                " is not an ET_DTYPE_* value (0 to " + std::to_string(kDTypeCount - 1) + ")");
  return static_cast<DType>(dtype);
}

std::chrono::milliseconds wait_from_ns(std::int64_t timeout_ns, std::chrono::milliseconds unbounded) noexcept {
  if (timeout_ns < 0) return unbounded;
  // Rounded up without overflow: INT64_MAX ns is about 292 years, far inside milliseconds' range.
  return std::chrono::milliseconds(timeout_ns / 1000000 + (timeout_ns % 1000000 != 0 ? 1 : 0));
}

void give_tensor(TensorDyn tensor, et_tensor** out) {
  *out = new et_tensor{.tensor = std::move(tensor)};
}

HeldFences::~HeldFences() {
  for (et_fence* f : fences) release_handle(f);
}

}  // namespace edgetensor::capi

using namespace edgetensor;

extern "C" {

// A status is the ErrorCode's value (capi::store); the header's numbers must follow the enum.
static_assert(ET_INTERNAL == static_cast<int>(ErrorCode::Internal) && ET_BUSY == static_cast<int>(ErrorCode::Busy) &&
              ET_TIMEOUT == static_cast<int>(ErrorCode::Timeout));

const char* et_status_name(et_status status) {
  if (status == ET_OK) return "OK";
  // error_code_name's views point at string literals: NUL-terminated, static storage.
  return error_code_name(static_cast<ErrorCode>(status)).data();
}

et_status et_last_error_code(void) { return capi::t_last.code; }
int32_t et_last_error_errno(void) { return capi::t_last.sys_errno; }
const char* et_last_error_message(void) {
  return capi::t_text_lost ? capi::kNoMemoryForMessage : capi::t_last.text.c_str();
}

const char* et_version(void) {
  // version()'s view is a string literal (NUL-terminated).
  return version().data();
}

uint32_t et_dtype_size(int32_t dtype) {
  if (dtype < 0 || dtype >= kDTypeCount) return 0;
  return static_cast<uint32_t>(dtype_size(static_cast<DType>(dtype)));
}

const char* et_dtype_name(int32_t dtype) {
  if (dtype < 0 || dtype >= kDTypeCount) return "invalid";
  return dtype_name(static_cast<DType>(dtype)).data();
}

const char* et_memory_kind_name(int32_t memory) {
  if (memory < 0 || memory > static_cast<int32_t>(MemoryKind::Foreign)) return "unknown";
  return memory_kind_name(static_cast<MemoryKind>(memory)).data();
}

}  // extern "C"
