// SPDX-License-Identifier: Apache-2.0
// Control for the cases above: the same calls compile when the Result is used or cast to void.
#include <edgetensor/error.h>

#include "core/backend.h"

edgetensor::Result<void> users_own_step();

edgetensor::Result<int> use_them() {
  (void)edgetensor::detail::probe_fd(0);
  (void)users_own_step();
  ET_TRY(users_own_step());
  ET_TRY_ASSIGN(auto info, edgetensor::detail::probe_fd(0));
  return static_cast<int>(info.kind);
}
