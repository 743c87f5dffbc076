// SPDX-License-Identifier: Apache-2.0
// Control for the map_forge_* cases: what user code does with tensors and maps through the public
// headers alone compiles.
#include <edgetensor/tensor.h>

#include <cstdint>
#include <utility>

edgetensor::Result<std::size_t> use_maps(const edgetensor::TensorDyn& t, edgetensor::Tensor<float> f) {
  ET_TRY_ASSIGN(auto r, t.map_read());
  std::size_t n = r.extent_bytes() + r.bytes().size() + (r.is_mapped() ? 1 : 0);
  edgetensor::ReadMap moved(std::move(r));
  edgetensor::ReadMap assigned;
  assigned = std::move(moved);
  edgetensor::MapBase& base = assigned;
  n += base.extent_bytes() + (base.mode() == edgetensor::MapMode::Read ? 1 : 0);
  assigned.unmap();
  {
    ET_TRY_ASSIGN(auto w, t.map_write());
    if (!w.bytes().empty()) w.data()[0] = std::byte{1};
  }
  ET_TRY_ASSIGN(auto rw, t.map_read_write());
  n += rw.bytes().size();
  ET_TRY_ASSIGN(auto typed, f.map_write());
  if (typed.size() > 0) typed[0] = 1.0f;
  n += typed.untyped().extent_bytes();
  edgetensor::WriteMap empty;
  n += empty.is_mapped() ? 1 : 0;
  return n + (t.is_empty_handle() ? 1 : 0);
}
