/* SPDX-License-Identifier: Apache-2.0 */
/* Hands a camera-like frame to NPU runtimes through the C API's runtime descriptor (et_tensor_describe).
 * The runtimes are mocks with the entry points' real shapes: an RKNN-like one takes (fd, CPU address,
 * 32-bit size, offset), a Hailo-like one takes {fd, size} and has no offset, so it gets a buffer of its
 * own; a TFLite-style custom allocation takes a 64-byte-aligned CPU pointer. Each mock checks what it is
 * given and reads the frame through its own mmap of the fd, as a driver would.
 * Build: cc -std=c11 npu_consumer.c $(pkg-config --cflags --libs edgetensor-c) */
#define _GNU_SOURCE
#include <edgetensor/c/edgetensor_c.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TRY(call)                                                                       \
  do {                                                                                  \
    if ((call) != ET_OK) {                                                              \
      fprintf(stderr, "%s failed: %s\n", #call, et_last_error_message());               \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

/* ---- mock runtimes ---------------------------------------------------------------------------- */

/* Sums `size` bytes at `offset` of the fd's buffer, read through a mapping of our own; -1 on error. */
static int64_t sum_through_own_mmap(int fd, uint64_t offset, uint64_t size) {
  /* The buffer's real size (a DMA-BUF's too), with the shared file offset put back as it was. */
  const off_t at = lseek(fd, 0, SEEK_CUR);
  const off_t end = lseek(fd, 0, SEEK_END);
  if (at < 0 || end < 0 || lseek(fd, at, SEEK_SET) != at || (uint64_t)end < offset + size) return -1;
  uint8_t* p = mmap(NULL, (size_t)end, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -1;
  int64_t sum = 0;
  for (uint64_t i = 0; i < size; ++i) sum += p[offset + i];
  munmap(p, (size_t)end);
  return sum;
}

/* RKNN-shaped: rknn_create_mem_from_fd(ctx, fd, virt_addr, size, offset). */
static int64_t mock_rknn_create_mem_from_fd(int32_t fd, void* virt_addr, uint32_t size, int32_t offset) {
  if (fd < 0 || virt_addr == NULL || offset < 0) return -1;
  const int64_t sum = sum_through_own_mmap(fd, (uint64_t)offset, size);
  int64_t cpu_sum = 0; /* the CPU address shows the same bytes */
  for (uint32_t i = 0; i < size; ++i) cpu_sum += ((const uint8_t*)virt_addr)[i];
  return sum == cpu_sum ? sum : -1;
}

/* Hailo-shaped: hailo_dma_buffer_t {int fd; size_t size}; no offset. */
typedef struct mock_hailo_dma_buffer {
  int fd;
  size_t size;
} mock_hailo_dma_buffer;
static int64_t mock_hailo_infer(mock_hailo_dma_buffer buffer) { return sum_through_own_mmap(buffer.fd, 0, buffer.size); }

/* TFLite-shaped: TfLiteCustomAllocation {void* data; size_t bytes}, data 64-byte aligned. */
static int mock_tflite_set_custom_allocation(void* data, size_t bytes) {
  if (((uintptr_t)data % 64) != 0) return -1;
  memset(data, 1, bytes); /* the interpreter writes its output there */
  return 0;
}

/* ---- the consumer ------------------------------------------------------------------------------- */

int main(void) {
  /* A 64x48 RGB frame in shared memory, filled by a "camera". */
  const uint64_t shape[3] = {48, 64, 3};
  et_allocate_options shm = {.struct_size = sizeof shm, .memory = ET_MEMORY_SHM, .name = "frame"};
  et_tensor* frame = NULL;
  TRY(et_tensor_allocate(3, shape, ET_DTYPE_U8, &shm, &frame));
  et_map* map = NULL;
  void* pixels = NULL;
  size_t size = 0;
  TRY(et_tensor_map_write(frame, &map, &pixels, &size));
  int64_t expected = 0;
  for (size_t i = 0; i < size; ++i) {
    ((uint8_t*)pixels)[i] = (uint8_t)(i % 251);
    expected += (uint8_t)(i % 251);
  }
  et_map_release(map); /* the CPU is done: ends its access (a DMA-BUF's sync bracket) */

  /* RKNN wants the fd, a CPU address, a 32-bit size and the offset: one descriptor gives all four. */
  et_buffer_desc d = {.struct_size = sizeof d};
  et_descriptor* held = NULL;
  TRY(et_tensor_describe(frame, ET_MAP_READ, &d, &held));
  if (d.planes[0].fd < 0 || d.planes[0].size_bytes > UINT32_MAX || d.planes[0].offset_bytes > INT32_MAX) return 1;
  const int64_t rknn = mock_rknn_create_mem_from_fd(d.planes[0].fd, d.data, (uint32_t)d.planes[0].size_bytes,
                                                    (int32_t)d.planes[0].offset_bytes);
  et_descriptor_release(held); /* unmaps and closes the descriptor's fd */
  printf("rknn: fd buffer %llu B, plane %llu B at offset %llu, sum %lld\n", (unsigned long long)d.buffer_bytes,
         (unsigned long long)d.planes[0].size_bytes, (unsigned long long)d.planes[0].offset_bytes, (long long)rknn);
  if (rknn != expected) return 1;

  /* Hailo takes no offset: the second image row, a view at offset 192, is refused by this check, and a
   * tensor of its own (offset 0) is what it gets. */
  et_tensor* row = NULL;
  TRY(et_tensor_batch(frame, 1, &row));
  TRY(et_tensor_describe(row, 0, &d, &held));
  const int row_usable = d.planes[0].offset_bytes == 0;
  et_descriptor_release(held);
  et_tensor_release(row);
  if (row_usable) return 1;
  TRY(et_tensor_describe(frame, 0, &d, &held));
  mock_hailo_dma_buffer hailo = {.fd = d.planes[0].fd, .size = (size_t)d.planes[0].size_bytes};
  const int64_t hailo_sum = mock_hailo_infer(hailo);
  et_descriptor_release(held);
  printf("hailo: fd + %zu B, sum %lld\n", hailo.size, (long long)hailo_sum);
  if (hailo_sum != expected) return 1;

  /* TFLite: an output tensor whose first element is 64-byte aligned, handed over as a CPU pointer. */
  const uint64_t out_shape[2] = {1, 1000};
  et_allocate_options aligned = {.struct_size = sizeof aligned, .memory = ET_MEMORY_HEAP, .alignment_bytes = 64};
  et_tensor* output = NULL;
  TRY(et_tensor_allocate(2, out_shape, ET_DTYPE_F32, &aligned, &output));
  TRY(et_tensor_describe(output, ET_MAP_WRITE, &d, &held));
  if (mock_tflite_set_custom_allocation(d.data, (size_t)d.mapped_bytes) != 0) return 1;
  et_descriptor_release(held);
  printf("tflite: %llu B at a 64-byte aligned address\n", (unsigned long long)d.mapped_bytes);

  et_tensor_release(output);
  et_tensor_release(frame);
  return 0;
}
