// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a MapBase built from a storage and a pointer (only TensorDyn makes maps).
#include <edgetensor/map.h>

#include <memory>

void forge_a_map(std::shared_ptr<edgetensor::detail::Storage> storage, std::byte* p, std::size_t n) {
  edgetensor::MapBase m(std::move(storage), p, n, edgetensor::MapMode::Write);
}
