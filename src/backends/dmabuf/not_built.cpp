// SPDX-License-Identifier: Apache-2.0
// The public DMA-BUF API when the backend is not built (ET_WITH_DMABUF=OFF): same header, Unavailable.
#include <edgetensor/dmabuf.h>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dmabuf {

Status probe() {
  Status st;
  st.why_none = "DMA-BUF backend not built into this library";
  return st;
}

Result<UniqueFd> udmabuf_from_memfd(int, std::size_t, std::size_t) {
  return fail(ErrorCode::Unavailable, "DMA-BUF backend not built into this library");
}

}  // namespace dmabuf
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
