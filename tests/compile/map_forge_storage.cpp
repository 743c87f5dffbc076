// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: user code reaching a tensor's storage. With it, a map could be forged whose unmap
// releases a CPU-access bracket the library never opened.
#include <edgetensor/tensor.h>

auto reach_the_storage(const edgetensor::TensorDyn& t) { return t.storage(); }
