/* SPDX-License-Identifier: Apache-2.0 */
/* A C program of a user's own on the installed C API (install_consumer.cmake): built with find_package's
 * edgetensor::edgetensor-c and with pkg-config edgetensor-c, linking only libedgetensor-c. */
#include <edgetensor/c/edgetensor_c.h>

#include <stdio.h>

int main(void) {
  const uint64_t shape[2] = {2, 3};
  et_tensor* t = NULL;
  if (et_tensor_allocate(2, shape, ET_DTYPE_F32, NULL, &t) != ET_OK) {
    fprintf(stderr, "%s\n", et_last_error_message());
    return 1;
  }
  et_tensor_info info = {.struct_size = sizeof info};
  const et_status s = et_tensor_get_info(t, &info);
  et_tensor_release(t);
  printf("C consumer: edgetensor %s, %llu bytes in %s memory\n", et_version(), (unsigned long long)info.packed_bytes,
         et_memory_kind_name(info.memory));
  return s == ET_OK && info.packed_bytes == 24 ? 0 : 1;
}
