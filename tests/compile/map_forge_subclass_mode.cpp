// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a class derived from MapBase rewriting a map's mode, so that unmap would release
// a write access the storage never granted (a read map becomes a "write" one).
#include <edgetensor/map.h>

#include <utility>

struct ModeFlipper : edgetensor::MapBase {
  explicit ModeFlipper(edgetensor::MapBase&& m) : edgetensor::MapBase(std::move(m)) {
    mode_ = edgetensor::MapMode::Write;
  }
};
