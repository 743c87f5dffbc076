# SPDX-License-Identifier: Apache-2.0
"""libedgetensor-c.so from Python's ctypes, with no C++ knowledge: the C ABI is usable from an FFI.

Declares the structs and functions it uses from the header's text alone, allocates a tensor, writes it
through a map, reads it back through a view, checks a refusal's status and message, and releases all.
Usage: python3 ctypes_test.py <path of libedgetensor-c.so>"""
import ctypes
import errno
import os
import sys

lib = ctypes.CDLL(sys.argv[1], use_errno=True)
u32, i32, u64, i64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64
ptr = ctypes.c_void_p
ET_OK, ET_INVALID_ARGUMENT, ET_MEMORY_SHM, ET_DTYPE_U16, ET_MAX_RANK = 0, 1, 2, 2, 8


class AllocateOptions(ctypes.Structure):  # pointers take 8 bytes on every target (pads on 32-bit)
    _fields_ = [("struct_size", u32), ("memory", i32), ("alignment_bytes", u64),
                ("name", ctypes.c_char_p)] + ([("name_pad", u32)] if ctypes.sizeof(ptr) == 4 else []) + [
                ("shm_name", ctypes.c_char_p)] + ([("shm_name_pad", u32)] if ctypes.sizeof(ptr) == 4 else []) + [
                ("dma_heap", ctypes.c_char_p)] + ([("dma_heap_pad", u32)] if ctypes.sizeof(ptr) == 4 else [])


class TensorInfo(ctypes.Structure):
    _fields_ = [("struct_size", u32), ("dtype", i32), ("rank", u32), ("memory", i32), ("read_only", u32),
                ("contiguous", u32), ("shape", u64 * ET_MAX_RANK), ("strides_bytes", i64 * ET_MAX_RANK),
                ("offset_bytes", u64), ("element_count", u64), ("packed_bytes", u64), ("extent_bytes", u64),
                ("buffer_bytes", u64), ("identity", u64), ("buffer_key", u64)]


assert ctypes.sizeof(AllocateOptions) == 40 and ctypes.sizeof(TensorInfo) == 208
lib.et_tensor_allocate.argtypes = [u32, ctypes.POINTER(u64), i32, ctypes.POINTER(AllocateOptions), ctypes.POINTER(ptr)]
lib.et_tensor_get_info.argtypes = [ptr, ctypes.POINTER(TensorInfo)]
lib.et_tensor_map_write.argtypes = [ptr, ctypes.POINTER(ptr), ctypes.POINTER(ptr), ctypes.POINTER(ctypes.c_size_t)]
lib.et_tensor_map_read.argtypes = lib.et_tensor_map_write.argtypes
lib.et_tensor_batch.argtypes = [ptr, u64, ctypes.POINTER(ptr)]
lib.et_tensor_release.argtypes = [ptr]
lib.et_map_release.argtypes = [ptr]
for f in (lib.et_tensor_allocate, lib.et_tensor_get_info, lib.et_tensor_map_write, lib.et_tensor_map_read,
          lib.et_tensor_batch):
    f.restype = i32
lib.et_last_error_message.restype = ctypes.c_char_p
lib.et_status_name.restype = ctypes.c_char_p
lib.et_status_name.argtypes = [i32]

shape = (u64 * 2)(3, 4)
options = AllocateOptions(struct_size=ctypes.sizeof(AllocateOptions), memory=ET_MEMORY_SHM, name=b"ctypes")
tensor = ptr()
assert lib.et_tensor_allocate(2, shape, ET_DTYPE_U16, ctypes.byref(options), ctypes.byref(tensor)) == ET_OK
info = TensorInfo(struct_size=ctypes.sizeof(TensorInfo))
assert lib.et_tensor_get_info(tensor, ctypes.byref(info)) == ET_OK
assert (info.rank, info.shape[0], info.shape[1], info.strides_bytes[0], info.packed_bytes) == (2, 3, 4, 8, 24)
assert info.memory == ET_MEMORY_SHM and info.buffer_key != 0

m, data, size = ptr(), ptr(), ctypes.c_size_t()
assert lib.et_tensor_map_write(tensor, ctypes.byref(m), ctypes.byref(data), ctypes.byref(size)) == ET_OK
values = (ctypes.c_uint16 * 12).from_address(data.value)
for i in range(12):
    values[i] = 100 + i
lib.et_map_release(m)

row = ptr()
assert lib.et_tensor_batch(tensor, 2, ctypes.byref(row)) == ET_OK
lib.et_tensor_release(tensor)  # the view keeps the buffer
assert lib.et_tensor_map_read(row, ctypes.byref(m), ctypes.byref(data), ctypes.byref(size)) == ET_OK
assert size.value == 8 and list((ctypes.c_uint16 * 4).from_address(data.value)) == [108, 109, 110, 111]
lib.et_map_release(m)
lib.et_tensor_release(row)

# A refusal: a status, a named message, errno as it was.
ctypes.set_errno(errno.EDOM)
bad = AllocateOptions(struct_size=3)
status = lib.et_tensor_allocate(2, shape, ET_DTYPE_U16, ctypes.byref(bad), ctypes.byref(tensor))
assert status == ET_INVALID_ARGUMENT and tensor.value is None, status
assert lib.et_status_name(status) == b"InvalidArgument"
assert b"struct_size 3 is below" in lib.et_last_error_message(), lib.et_last_error_message()
assert ctypes.get_errno() == errno.EDOM
print("ctypes: allocate, info, maps, batch and a refusal through libedgetensor-c.so; fds open:",
      len(os.listdir("/proc/self/fd")))
