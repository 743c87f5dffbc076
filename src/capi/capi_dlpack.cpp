// SPDX-License-Identifier: Apache-2.0
// DLPack 1.x: export a tensor as a DLManagedTensorVersioned, adopt a producer's.
#include "capi/capi_support.h"

#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

// The header declares DLManagedTensorVersioned only; dlpack::ManagedTensorVersioned is the same C ABI
// (its layout is pinned in src/dlpack/dlpack_types.cpp), so a pointer to one is a pointer to the other.
namespace {

dlpack::ManagedTensorVersioned* as_managed(DLManagedTensorVersioned* p) {
  return reinterpret_cast<dlpack::ManagedTensorVersioned*>(p);
}

// Runs a producer's deleter on a path that fails before adopt_versioned takes it (the header's
// ownership rule: the library owns `managed` from the call on). Only `deleter` is read: every major
// version keeps its offset.
void delete_unadopted(dlpack::ManagedTensorVersioned* managed) noexcept {
  if (managed->deleter != nullptr) managed->deleter(managed);
}

}  // namespace

extern "C" {

et_status et_dlpack_export_versioned(const et_tensor* tensor, const et_dlpack_export_options* options,
                                     DLManagedTensorVersioned** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_dlpack_export_versioned", "out");
    *out = nullptr;
    if (tensor == nullptr) return null_argument("et_dlpack_export_versioned", "tensor");
    ET_TRY_ASSIGN(auto c, read_options(options, ET_DLPACK_EXPORT_OPTIONS_SIZE_VER0, "et_dlpack_export_options"));
    if ((c.flags & ~ET_DLPACK_READ_ONLY) != 0)
      return fail(ErrorCode::InvalidArgument, "et_dlpack_export_options.flags " + std::to_string(c.flags) +
                                                  " has bits other than ET_DLPACK_READ_ONLY");
    dlpack::ExportOptions o;
    o.read_only = (c.flags & ET_DLPACK_READ_ONLY) != 0;
    ET_TRY_ASSIGN(auto managed, dlpack::export_versioned(tensor->tensor, o));
    *out = reinterpret_cast<DLManagedTensorVersioned*>(managed);
    return {};
  });
}

et_status et_dlpack_adopt_versioned(DLManagedTensorVersioned* managed, const et_dlpack_adopt_options* options,
                                    et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out != nullptr) *out = nullptr;
    if (managed == nullptr) return null_argument("et_dlpack_adopt_versioned", "managed");
    dlpack::ManagedTensorVersioned* m = as_managed(managed);
    // Until adopt_versioned holds it, every return (and an exception: catch, delete, rethrow) runs the deleter.
    dlpack::ImportOptions o;
    try {
      if (out == nullptr) {
        delete_unadopted(m);
        return null_argument("et_dlpack_adopt_versioned", "out");
      }
      auto c = read_options(options, ET_DLPACK_ADOPT_OPTIONS_SIZE_VER0, "et_dlpack_adopt_options");
      if (c && c->reserved != 0)
        c = fail(ErrorCode::InvalidArgument,
                 "et_dlpack_adopt_options.reserved is " + std::to_string(c->reserved) + ", not 0");
      if (!c) {
        delete_unadopted(m);
        return fail(c.error());
      }
      if (c->name != nullptr) o.name = c->name;
    } catch (...) {
      delete_unadopted(m);
      throw;
    }
    ET_TRY_ASSIGN(auto t, dlpack::adopt_versioned(m, o));  // owns `managed` from here, on every path
    give_tensor(std::move(t), out);
    return {};
  });
}

}  // extern "C"
