// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a class derived from WriteMap assigning a ReadMap through MapBase's protected move
// assignment, which would give a WriteMap's writable bytes() over memory mapped for reading only (on a
// write-sealed memfd, writing through it faults; on a DMA-BUF it writes inside a read sync bracket).
// The map types are final.
#include <edgetensor/map.h>

#include <utility>

struct Forger : edgetensor::WriteMap {
  explicit Forger(edgetensor::ReadMap&& r) { this->edgetensor::MapBase::operator=(std::move(r)); }
};
