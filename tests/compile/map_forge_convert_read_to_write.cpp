// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a ReadMap turned into a WriteMap (directly or through its MapBase).
#include <edgetensor/map.h>

#include <utility>

edgetensor::WriteMap convert(edgetensor::ReadMap r) { return edgetensor::WriteMap(std::move(r)); }
