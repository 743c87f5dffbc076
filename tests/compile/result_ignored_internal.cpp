// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: detail::probe_fd returns a Result and is not itself marked [[nodiscard]].
#include "core/backend.h"

void ignore_an_internal_result() { edgetensor::detail::probe_fd(0); }
