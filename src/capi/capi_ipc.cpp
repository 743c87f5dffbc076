// SPDX-License-Identifier: Apache-2.0
// Tensors over AF_UNIX sockets, and the machine report.
#include "capi/capi_support.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// The wait of a C options struct: use_timeout 0 waits for ever, else timeout_ms.
Result<std::chrono::milliseconds> wait_of(uint32_t use_timeout, int32_t timeout_ms, uint32_t reserved,
                                          const char* what) {
  if (use_timeout > 1)
    return fail(ErrorCode::InvalidArgument, std::string(what) + ".use_timeout " + std::to_string(use_timeout) + " is not 0 or 1");
  if (reserved != 0)
    return fail(ErrorCode::InvalidArgument, std::string(what) + ".reserved is " + std::to_string(reserved) + ", not 0");
  if (use_timeout == 0) return ipc::kWaitForever;
  if (timeout_ms < 0)
    return fail(ErrorCode::InvalidArgument, std::string(what) + ".timeout_ms " + std::to_string(timeout_ms) +
                                                " is negative (use_timeout 0 waits for ever)");
  return std::chrono::milliseconds(timeout_ms);
}

}  // namespace

extern "C" {

et_status et_ipc_send_tensor(int32_t borrowed_socket, const et_tensor* tensor, const et_send_options* options) {
  return guarded([&]() -> Result<void> {
    if (tensor == nullptr) return null_argument("et_ipc_send_tensor", "tensor");
    ET_TRY_ASSIGN(auto c, read_options(options, ET_SEND_OPTIONS_SIZE_VER0, "et_send_options"));
    ipc::SendOptions o;
    ET_TRY_ASSIGN(o.timeout, wait_of(c.use_timeout, c.timeout_ms, c.reserved, "et_send_options"));
    return ipc::send(borrowed_socket, tensor->tensor, o);
  });
}

et_status et_ipc_receive_tensor(int32_t borrowed_socket, const et_receive_options* options, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_ipc_receive_tensor", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto c, read_options(options, ET_RECEIVE_OPTIONS_SIZE_VER0, "et_receive_options"));
    ipc::ReceiveOptions o;
    ET_TRY_ASSIGN(o.timeout, wait_of(c.use_timeout, c.timeout_ms, c.reserved, "et_receive_options"));
    if (c.max_buffer_bytes != 0) {
      ET_TRY_ASSIGN(o.max_buffer_bytes, to_size(c.max_buffer_bytes, "et_receive_options.max_buffer_bytes"));
    }
    ET_TRY_ASSIGN(auto t, ipc::receive(borrowed_socket, o));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_info_json(char** out_json) {
  return guarded([&]() -> Result<void> {
    if (out_json == nullptr) return null_argument("et_info_json", "out_json");
    *out_json = nullptr;
    const std::string json = probe().to_json();
    // malloc'd, so that et_string_free is free(): the string outlives no C++ object.
    char* copy = static_cast<char*>(std::malloc(json.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, json.c_str(), json.size() + 1);
    *out_json = copy;
    return {};
  });
}

void et_string_free(char* string) { std::free(string); }

}  // extern "C"
