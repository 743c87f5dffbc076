// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a user's own function returning Result<void>, without [[nodiscard]], ignored.
#include <edgetensor/error.h>

edgetensor::Result<void> users_own_step();

void ignore_a_users_result() { users_own_step(); }
