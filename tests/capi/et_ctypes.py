# SPDX-License-Identifier: Apache-2.0
"""libedgetensor-c.so for Python's ctypes, declared from include/edgetensor/c/edgetensor_c.h's text alone.

The constants, structs and functions the ctypes tests use (ctypes_test.py, round_trip_python_peer.py); no
edgetensor Python module. Each pointer in a struct takes 8 bytes on every target: where pointers have 4, a
4-byte pad follows it (the header's ET_C_POINTER_PAD_), and the sizes are checked against the header's."""
import ctypes

u8, u32, i32, u64, i64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64
ptr = ctypes.c_void_p
P = ctypes.POINTER

ET_OK, ET_INVALID_ARGUMENT = 0, 1
ET_MEMORY_SHM = 2
ET_DTYPE_U8, ET_DTYPE_U16 = 0, 2
ET_MAX_RANK, ET_MAX_PLANES = 8, 4
ET_CHANNEL_HAS_SEQUENCE, ET_CHANNEL_HAS_TIMESTAMP, ET_CHANNEL_HAS_PTS, ET_CHANNEL_HAS_DURATION = 1, 2, 4, 8


def pointer_field(name, ctype):
    """A pointer member and, where pointers have 4 bytes, its pad (ET_C_POINTER_PAD_)."""
    return [(name, ctype)] + ([(name + "_pad_", u32)] if ctypes.sizeof(ptr) == 4 else [])


class AllocateOptions(ctypes.Structure):
    _fields_ = ([("struct_size", u32), ("memory", i32), ("alignment_bytes", u64)] +
                pointer_field("name", ctypes.c_char_p) + pointer_field("shm_name", ctypes.c_char_p) +
                pointer_field("dma_heap", ctypes.c_char_p))


class TensorInfo(ctypes.Structure):
    _fields_ = [("struct_size", u32), ("dtype", i32), ("rank", u32), ("memory", i32), ("read_only", u32),
                ("contiguous", u32), ("shape", u64 * ET_MAX_RANK), ("strides_bytes", i64 * ET_MAX_RANK),
                ("offset_bytes", u64), ("element_count", u64), ("packed_bytes", u64), ("extent_bytes", u64),
                ("buffer_bytes", u64), ("identity", u64), ("buffer_key", u64)]


class PlaneLayout(ctypes.Structure):
    _fields_ = [("offset_bytes", u64), ("row_stride_bytes", u64)]


class ImageLayout(ctypes.Structure):
    _fields_ = [("struct_size", u32), ("format", i32), ("width", u32), ("height", u32), ("plane_count", u32),
                ("reserved", u32), ("modifier", u64), ("planes", PlaneLayout * ET_MAX_PLANES)]


class PoolOptions(ctypes.Structure):
    _fields_ = ([("struct_size", u32), ("flags", u32), ("min_buffers", u32), ("max_buffers", u32)] +
                pointer_field("name", ctypes.c_char_p) + pointer_field("allocate", P(AllocateOptions)))


class ChannelSenderOptions(ctypes.Structure):
    _fields_ = ([("struct_size", u32), ("policy", i32), ("max_buffers", u32), ("use_send_timeout", u32),
                 ("send_timeout_ms", i32), ("flags", u32), ("max_frames_out", u64)] +
                pointer_field("name", ctypes.c_char_p))


class ChannelReceiverOptions(ctypes.Structure):
    _fields_ = ([("struct_size", u32), ("max_buffers", u32), ("max_buffer_bytes", u64),
                 ("max_queued_releases", u64)] + pointer_field("name", ctypes.c_char_p) +
                [("use_policy", u32), ("policy", i32), ("max_frames_out", u64)])


class ChannelSendOptions(ctypes.Structure):
    _fields_ = ([("struct_size", u32), ("has", u32), ("flags", u32), ("reserved", u32), ("sequence", u64),
                 ("timestamp_ns", i64), ("pts_ns", i64), ("duration_ns", i64)] +
                pointer_field("acquire_fences", P(ptr)) + [("acquire_fence_count", u32), ("reserved2", u32)])


class FenceSlot(ctypes.Structure):
    _fields_ = pointer_field("fence", ptr)


class ChannelDelivery(ctypes.Structure):
    _fields_ = ([("struct_size", u32), ("has", u32), ("sequence", u64), ("timestamp_ns", i64), ("pts_ns", i64),
                 ("duration_ns", i64), ("flags", u32), ("end_of_stream", u32)] + pointer_field("tensor", ptr) +
                pointer_field("frame", ptr) +
                [("acquire_fence_count", u32), ("reserved", u32), ("acquire_fences", FenceSlot * ET_MAX_PLANES)])


# The header's sizes, the same on 32- and 64-bit targets.
for struct, size in ((AllocateOptions, 40), (TensorInfo, 208), (ImageLayout, 96), (PoolOptions, 32),
                     (ChannelSenderOptions, 40), (ChannelReceiverOptions, 48), (ChannelSendOptions, 64),
                     (ChannelDelivery, 104)):
    assert ctypes.sizeof(struct) == size, (struct.__name__, ctypes.sizeof(struct), size)

# name: (argument types, result type); every et_status function returns i32.
_FUNCTIONS = {
    "et_status_name": ([i32], ctypes.c_char_p),
    "et_last_error_message": ([], ctypes.c_char_p),
    "et_tensor_allocate": ([u32, P(u64), i32, P(AllocateOptions), P(ptr)], i32),
    "et_tensor_get_info": ([ptr, P(TensorInfo)], i32),
    "et_tensor_map_read": ([ptr, P(ptr), P(ptr), P(ctypes.c_size_t)], i32),
    "et_tensor_map_write": ([ptr, P(ptr), P(ptr), P(ctypes.c_size_t)], i32),
    "et_tensor_batch": ([ptr, u64, P(ptr)], i32),
    "et_tensor_plane": ([ptr, u32, P(ptr)], i32),
    "et_tensor_release": ([ptr], None),
    "et_map_release": ([ptr], None),
    "et_pool_create": ([u32, P(u64), i32, P(PoolOptions), P(ptr)], i32),
    "et_pool_create_image_layout": ([P(ImageLayout), P(PoolOptions), P(ptr)], i32),
    "et_pool_release": ([ptr], None),
    "et_frame_from_tensor": ([ptr, P(ptr)], i32),
    "et_frame_get_layout": ([ptr, P(ImageLayout)], i32),
    "et_frame_plane": ([ptr, u32, P(ptr)], i32),
    "et_frame_release": ([ptr], None),
    "et_channel_sender_create_adopt": ([i32, P(ChannelSenderOptions), P(ptr)], i32),
    "et_channel_sender_acquire": ([ptr, ptr, i32, P(ptr)], i32),
    "et_channel_sender_send": ([ptr, ptr, P(ChannelSendOptions), P(u64)], i32),
    "et_channel_sender_send_frame": ([ptr, ptr, P(ChannelSendOptions), P(u64)], i32),
    "et_channel_sender_end_stream": ([ptr], i32),
    "et_channel_sender_drain": ([ptr, i32], i32),
    "et_channel_sender_release": ([ptr], None),
    "et_channel_receiver_create_adopt": ([i32, P(ChannelReceiverOptions), P(ptr)], i32),
    "et_channel_receiver_receive": ([ptr, i32, P(ChannelDelivery)], i32),
    "et_channel_receiver_release": ([ptr], None),
}


def load(path):
    """libedgetensor-c.so at `path`, its functions above declared (errno kept for ctypes.get_errno)."""
    lib = ctypes.CDLL(path, use_errno=True)
    for name, (argtypes, restype) in _FUNCTIONS.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = argtypes, restype
    return lib


class CallError(Exception):
    """A call that did not give ET_OK: its name, the status's name and the last error's message."""


def check(lib, status, what):
    """Raises CallError unless `status` is ET_OK."""
    if status != ET_OK:
        raise CallError(f"{what}: {lib.et_status_name(status).decode()}: {lib.et_last_error_message().decode()}")


def sized(struct_type, **fields):
    """A struct of `struct_type` with struct_size set, and `fields`."""
    return struct_type(struct_size=ctypes.sizeof(struct_type), **fields)
