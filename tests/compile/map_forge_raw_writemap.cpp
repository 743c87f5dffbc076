// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a WriteMap built over a ReadMap's pointer (only TensorDyn makes maps). The same
// constructor given the tensor's storage would, on unmap, end a DMA-BUF sync bracket that a real map
// still holds open.
#include <edgetensor/map.h>

#include <memory>

void forge_a_write_map(const edgetensor::ReadMap& r, std::shared_ptr<edgetensor::detail::Storage> storage) {
  edgetensor::WriteMap w(std::move(storage), const_cast<std::byte*>(r.data()), r.extent_bytes(),
                         edgetensor::MapMode::Write);
}
