// SPDX-License-Identifier: Apache-2.0
// Must NOT compile, and with one message only: the umbrella header under -std=c++17.
#include <edgetensor/edgetensor.h>

int main() { return 0; }
