# SPDX-License-Identifier: Apache-2.0
"""libedgetensor-c.so from Python's ctypes, with no C++ knowledge: the C ABI is usable from an FFI.

With the structs and functions et_ctypes.py declares from the header's text alone, allocates a tensor, writes it
through a map, reads it back through a view, checks a refusal's status and message, and releases all.
Usage: python3 ctypes_test.py <path of libedgetensor-c.so>"""
import ctypes
import errno
import os
import sys

sys.dont_write_bytecode = True  # et_ctypes sits in the source tree

from et_ctypes import (ET_DTYPE_U16, ET_INVALID_ARGUMENT, ET_MEMORY_SHM, ET_OK, AllocateOptions,  # noqa: E402
                       TensorInfo, load, ptr, u64)

lib = load(sys.argv[1])

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
