/* SPDX-License-Identifier: Apache-2.0 */
/* edgetensor's C API (C11; also valid C++17 and later): libedgetensor-c.so.0, pkg-config edgetensor-c,
 * CMake edgetensor::edgetensor-c. A thin shell over the C++ library (libedgetensor.so, linked
 * dynamically): the same tensors, buffer keys and GL worker as C++ and Python code in the process.
 *
 * Conventions (every function below keeps them; docs/CAPI.md says why):
 * - Status. A fallible call returns et_status: ET_OK (0) or the C++ ErrorCode's value (ET_INVALID_ARGUMENT
 *   ... ET_INTERNAL). Results come back through out-parameters, written only on ET_OK, except that a
 *   failure sets an out handle to NULL and an out fd to -1. Nothing unwinds into C: an allocation
 *   failure is ET_OUT_OF_MEMORY, any other exception ET_INTERNAL.
 * - Last error, per thread. A failing call records its code, saved errno and message in the calling
 *   thread's last error (et_last_error_*); a successful call leaves it unchanged. No error object to free,
 *   so an FFI that ignores it leaks nothing.
 * - errno. Every function returns with errno as it was on entry, on success and on failure; a failure's
 *   own errno (0 when none applies) is et_last_error_errno().
 * - Handles (et_tensor, et_map, et_descriptor, et_fence, et_pool, et_frame, the channel's, CUDA's, GL's) are opaque
 *   and reference-counted: a call that makes one gives the caller one reference; _retain adds one, _release
 *   drops one (NULL is ignored); the last release frees it. Releasing more than was retained is undefined.
 *   A handle keeps what it needs alive (a map or view keeps its buffer).
 * - Option structs begin with uint32_t struct_size = sizeof(the struct as the caller compiled it); NULL
 *   means all defaults. Zero is every field's default: zero the struct (`= {0}` in C, `{}` in C++, or C's
 *   designated initializers), then set struct_size; positional initializers differ between 32- and 64-bit
 *   targets (pointer pads). Rule of Linux's copy_struct_from_user: a smaller struct_size (an older caller)
 *   leaves the missing fields at zero, a larger one (a newer caller) is accepted when every byte this
 *   library does not know is zero; otherwise ET_INVALID_ARGUMENT naming the offset. Below the first
 *   version's size (ET_*_SIZE_VER0), or above 4096: ET_INVALID_ARGUMENT. Output structs take the same
 *   struct_size; the library fills what both sides know and zeroes the caller's remainder.
 * - Integers are fixed-width; enumerations are int32_t values of the ET_* constants (no C enum types
 *   in structs or signatures). Shapes are in elements, strides, offsets and sizes in bytes.
 * - fds. A parameter named borrowed_* is used during the call only. A function named _adopt takes its
 *   fd: it is closed on every path, failures included. A function named _dup duplicates its fd (CLOEXEC).
 *   An fd returned through an out-parameter (int32_t* out_fd) is the caller's to close, and is CLOEXEC.
 * - Threads. Any function may be called from any thread. Distinct handles, and one handle from several
 *   threads, may be used at once (a handle is read-only after creation); the exceptions say so.
 */
#ifndef EDGETENSOR_C_H
#define EDGETENSOR_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define ET_C_API __attribute__((visibility("default")))
#else
#define ET_C_API
#endif

/* After each pointer in a struct: 4 zero bytes where pointers have 4, so that every struct has the same
 * size and offsets on 32- and 64-bit targets, and no padding the compiler would add unseen. */
#if UINTPTR_MAX == 0xffffffffu
#define ET_C_POINTER_PAD_(field) uint32_t field;
#else
#define ET_C_POINTER_PAD_(field)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and last error ---------------------------------------------------------------------- */
typedef int32_t et_status;
#define ET_OK 0
#define ET_INVALID_ARGUMENT 1     /* a broken contract: NULL handle, bad size, bad struct tail, bad fd */
#define ET_OUT_OF_RANGE 2         /* a value past a limit: size overflow, view out of bounds, short fd */
#define ET_NOT_FOUND 3
#define ET_ALREADY_EXISTS 4
#define ET_PERMISSION_DENIED 5    /* EACCES/EPERM, or a write map of read-only storage */
#define ET_OUT_OF_MEMORY 6        /* ENOMEM/ENOSPC, or an allocation that failed inside the library */
#define ET_BUSY 7                 /* try later: EBUSY/EAGAIN; a queue's wait that ran out (ipc, a pool): ETIMEDOUT */
#define ET_UNAVAILABLE 8          /* backend not built, device missing, peer gone */
#define ET_UNSUPPORTED 9          /* this backend cannot do it (export a heap tensor) */
#define ET_FAILED_PRECONDITION 10 /* wrong state (zero elements to share, ...) */
#define ET_INTERNAL 11            /* a bug, or an exception other than an allocation failure */
#define ET_TIMEOUT 12             /* a bounded wait for device work passed (a DMA-BUF map, a fence) */

/* "OK", "InvalidArgument", ... (the C++ ErrorCode names); "Unknown" otherwise. Static storage. */
ET_C_API const char* et_status_name(et_status status);
/* The calling thread's last error: its code (ET_OK before any failure on this thread). */
ET_C_API et_status et_last_error_code(void);
/* The errno saved with the last error on this thread (0 when none applies). */
ET_C_API int32_t et_last_error_errno(void);
/* "<CodeName>: <message>" of the last error on this thread ("" before any). Valid until the next failing
 * call on this thread, or the thread's end. */
ET_C_API const char* et_last_error_message(void);
/* The loaded C++ library's version ("0.7.1"). Static storage. */
ET_C_API const char* et_version(void);

/* ---- Values ------------------------------------------------------------------------------------- */
/* Element types (C++ DType, also on the wire). */
#define ET_DTYPE_U8 0
#define ET_DTYPE_I8 1
#define ET_DTYPE_U16 2
#define ET_DTYPE_I16 3
#define ET_DTYPE_U32 4
#define ET_DTYPE_I32 5
#define ET_DTYPE_U64 6
#define ET_DTYPE_I64 7
#define ET_DTYPE_F16 8
#define ET_DTYPE_BF16 9
#define ET_DTYPE_F32 10
#define ET_DTYPE_F64 11
/* Bytes per element (1, 2, 4 or 8); 0 for an unknown dtype. */
ET_C_API uint32_t et_dtype_size(int32_t dtype);
/* "u8", ..., "f64"; "invalid" otherwise. Static storage. */
ET_C_API const char* et_dtype_name(int32_t dtype);

/* Memory kinds (C++ MemoryKind). AUTO is a request only: DMA-BUF, then shm, then heap. */
#define ET_MEMORY_AUTO 0
#define ET_MEMORY_HEAP 1    /* process-private, not shareable by fd */
#define ET_MEMORY_SHM 2     /* memfd (sealed) or named POSIX shm */
#define ET_MEMORY_DMABUF 3
#define ET_MEMORY_GL_PBO 4  /* an OpenGL ES buffer of an et_gl_context (et_allocate_options.gl_context) */
#define ET_MEMORY_FOREIGN 5 /* imported from another library; never allocated, never shareable */
/* "auto", "heap", "shm", "dmabuf", "gl_pbo", "foreign"; "unknown" otherwise. Static storage. */
ET_C_API const char* et_memory_kind_name(int32_t memory);

/* Map directions (bit 0 read, bit 1 write). */
#define ET_MAP_READ 1
#define ET_MAP_WRITE 2
#define ET_MAP_READ_WRITE 3

/* Largest rank of a tensor. */
#define ET_MAX_RANK 8
/* Most planes of an image. */
#define ET_MAX_PLANES 4

/* ---- Tensors ------------------------------------------------------------------------------------ */
typedef struct et_tensor et_tensor;

/* A GL context (section "GL" below). */
typedef struct et_gl_context et_gl_context;

/* Options of et_tensor_allocate. */
typedef struct et_allocate_options {
  uint32_t struct_size;
  int32_t memory;          /* ET_MEMORY_*; 0 = AUTO. An explicit kind never falls back. */
  /* Byte alignment the first element's CPU address must have: 0 (none) or a power of two up to
   * ET_MAX_ALIGNMENT (TFLite's custom allocations want 64); above: ET_UNSUPPORTED. With ET_MEMORY_GL_PBO
   * only 0 or 1: the GL driver places each map (ET_UNSUPPORTED). */
  uint64_t alignment_bytes;
  const char* name;        /* NULL or "" = none; also names the memfd */
  ET_C_POINTER_PAD_(name_pad_)
  const char* shm_name;    /* with ET_MEMORY_SHM: a named POSIX shm object ("/cam0"), created O_EXCL */
  ET_C_POINTER_PAD_(shm_name_pad_)
  const char* dma_heap;    /* with DMA-BUF: require this dma-heap by name */
  ET_C_POINTER_PAD_(dma_heap_pad_)
  /* 0.6: with ET_MEMORY_GL_PBO (required there), the context that makes the buffer; borrowed for the call (a
   * tensor does not keep its context; a pool does: et_pool_options). Other kinds ignore it, as C++ does. */
  const et_gl_context* gl_context;
  ET_C_POINTER_PAD_(gl_context_pad_)
} et_allocate_options;
#define ET_ALLOCATE_OPTIONS_SIZE_VER0 40u /* 0.1: up to dma_heap */
#define ET_ALLOCATE_OPTIONS_SIZE_VER1 ((uint32_t)sizeof(et_allocate_options)) /* 0.6: gl_context */
/* The alignment every allocation's first element has in every process that maps it (heap blocks are
 * 256-byte aligned, fd-backed memory is mapped at a page boundary); GL PBOs promise none. */
#define ET_MAX_ALIGNMENT 256u

/* Allocates a C-contiguous tensor of `rank` dimensions (`shape`, elements; NULL allowed for rank 0) and
 * `dtype`, read as zeros, into *out. Errors: ET_INVALID_ARGUMENT (NULL out or shape, rank > ET_MAX_RANK,
 * unknown dtype or memory kind, bad options, an alignment not a power of two, ET_MEMORY_GL_PBO without
 * gl_context), ET_UNSUPPORTED (alignment above ET_MAX_ALIGNMENT, or above 1 with ET_MEMORY_GL_PBO),
 * ET_OUT_OF_RANGE (size overflow), the backend's error for an explicit kind (ET_UNAVAILABLE,
 * ET_OUT_OF_MEMORY, ET_ALREADY_EXISTS, ...; GL: ET_FAILED_PRECONDITION "GL context gone" or after fork(),
 * ET_BUSY when the GL thread did not answer within the context's timeout). Threads: a GL allocation waits
 * for the context's GL thread. */
ET_C_API et_status et_tensor_allocate(uint32_t rank, const uint64_t* shape, int32_t dtype,
                                      const et_allocate_options* options, et_tensor** out);

/* Import flags. */
/* Accept shared memory its owner can still shrink (not sealed F_SEAL_SHRINK): only from a trusted peer,
 * as a truncation would kill this process with SIGBUS. */
#define ET_IMPORT_ALLOW_SHRINKABLE 1u

/* Options of et_tensor_import_dup / _adopt. */
typedef struct et_import_options {
  uint32_t struct_size;
  uint32_t flags;                /* ET_IMPORT_* bits; others must be zero */
  uint64_t offset_bytes;         /* of the first element inside the fd's buffer */
  const int64_t* strides_bytes;  /* `rank` entries, or NULL for C-contiguous */
  ET_C_POINTER_PAD_(strides_bytes_pad_)
  const char* name;              /* NULL or "" = none */
  ET_C_POINTER_PAD_(name_pad_)
  /* 0.7: the caller's release hook (docs/CAPI.md, "Imports that hold their owner"). When not NULL, it is
   * called once, with user_data, when the import's last holder goes (every tensor, view, map, frame and
   * channel hold of the storages it made, after their mappings and fds are closed), on that holder's
   * thread: the caller's, a channel's release reader thread, or a thread in et_channel_publisher_send or
   * _send_frame of the publisher it was sent through, or in et_pool_acquire of a pool whose buffers that
   * publisher sent; it must not block for long nor call into that channel. Never called when the import fails: user_data stays the caller's then. user_data
   * without a release_callback: ET_INVALID_ARGUMENT. A struct_size below ET_IMPORT_OPTIONS_SIZE_VER1 reads
   * neither field (not even part of one): the import holds no hook and never calls one. */
  void (*release_callback)(void* user_data);
  ET_C_POINTER_PAD_(release_callback_pad_)
  void* user_data;
  ET_C_POINTER_PAD_(user_data_pad_)
} et_import_options;
#define ET_IMPORT_OPTIONS_SIZE_VER0 32u /* 0.1: up to name */
#define ET_IMPORT_OPTIONS_SIZE_VER1 ((uint32_t)sizeof(et_import_options)) /* 0.7: release_callback, user_data */

/* Imports a memfd, shm or DMA-BUF fd as a tensor: the library dups `borrowed_fd` (CLOEXEC), the caller
 * keeps its own. The fd's real size must hold offset + extent. Errors: ET_INVALID_ARGUMENT (negative or
 * closed fd, a pipe or socket or disk file, unsealed memfd, NULL out or shape, bad options),
 * ET_OUT_OF_RANGE (buffer too small, naming both sizes), ET_UNAVAILABLE (DMA-BUF not built). */
ET_C_API et_status et_tensor_import_dup(int32_t borrowed_fd, uint32_t rank, const uint64_t* shape, int32_t dtype,
                                        const et_import_options* options, et_tensor** out);
/* As et_tensor_import_dup, but takes `fd`: on success the tensor owns it; on every failure, argument
 * errors included, it is closed before the call returns (a negative fd is left alone). */
ET_C_API et_status et_tensor_import_adopt(int32_t fd, uint32_t rank, const uint64_t* shape, int32_t dtype,
                                          const et_import_options* options, et_tensor** out);

/* Adds a reference; returns `tensor` (NULL for NULL). */
ET_C_API et_tensor* et_tensor_retain(et_tensor* tensor);
/* Drops a reference (NULL: nothing); the last one frees the handle. Its buffer lives on while a view, map
 * or descriptor of it does. */
ET_C_API void et_tensor_release(et_tensor* tensor);

/* What a tensor is (output struct: set struct_size first). */
typedef struct et_tensor_info {
  uint32_t struct_size;
  int32_t dtype;                     /* ET_DTYPE_* */
  uint32_t rank;
  int32_t memory;                    /* ET_MEMORY_*: the backend that holds the bytes */
  uint32_t read_only;                /* 1 when write maps are refused */
  uint32_t contiguous;               /* 1 when C-contiguous */
  uint64_t shape[ET_MAX_RANK];       /* elements; entries past rank are 0 */
  int64_t strides_bytes[ET_MAX_RANK];
  uint64_t offset_bytes;             /* of the first element inside the buffer */
  uint64_t element_count;
  uint64_t packed_bytes;             /* element_count x element size */
  uint64_t extent_bytes;             /* first element to one past the last reachable one: what a map covers */
  uint64_t buffer_bytes;             /* the whole backing buffer */
  uint64_t identity;                 /* process-unique id of the allocation or import (never 0) */
  uint64_t buffer_key;               /* key of the underlying buffer object, equal across imports of it */
} et_tensor_info;
#define ET_TENSOR_INFO_SIZE_VER0 ((uint32_t)sizeof(et_tensor_info))

/* Fills *info. Errors: ET_INVALID_ARGUMENT (NULL tensor or info, bad struct_size). */
ET_C_API et_status et_tensor_get_info(const et_tensor* tensor, et_tensor_info* info);

/* A new CLOEXEC fd of the whole backing buffer, the caller's to close: pass offset_bytes, shape and
 * strides along to import the same view. Errors: ET_INVALID_ARGUMENT (NULL), ET_FAILED_PRECONDITION (zero
 * elements), ET_UNSUPPORTED (heap, GL, foreign memory), ET_BUSY (EMFILE). */
ET_C_API et_status et_tensor_export_fd(const et_tensor* tensor, int32_t* out_fd);

/* ---- Views (share the buffer and its identity) -------------------------------------------------- */
/* A general view: `offset_bytes` from this tensor's first element, `shape` (elements), `strides_bytes`
 * (`rank` entries, NULL = C-contiguous). Errors: ET_INVALID_ARGUMENT (NULL, rank > ET_MAX_RANK, misaligned
 * offset), ET_OUT_OF_RANGE (out of bounds: never clamped). */
ET_C_API et_status et_tensor_view(const et_tensor* tensor, uint64_t offset_bytes, uint32_t rank,
                                  const uint64_t* shape, const int64_t* strides_bytes, et_tensor** out);
/* The n-th sub-tensor along dimension 0. Errors: ET_FAILED_PRECONDITION (rank 0), ET_OUT_OF_RANGE. */
ET_C_API et_status et_tensor_batch(const et_tensor* tensor, uint64_t n, et_tensor** out);
/* Indices [begin, end) of dimension `dim`, same rank. Errors: ET_INVALID_ARGUMENT (dim >= rank),
 * ET_OUT_OF_RANGE (begin > end, end > shape[dim]). */
ET_C_API et_status et_tensor_slice(const et_tensor* tensor, uint32_t dim, uint64_t begin, uint64_t end,
                                   et_tensor** out);
/* Same bytes, new shape. Errors: ET_FAILED_PRECONDITION (not contiguous), ET_INVALID_ARGUMENT (element
 * counts differ). */
ET_C_API et_status et_tensor_reshape(const et_tensor* tensor, uint32_t rank, const uint64_t* shape,
                                     et_tensor** out);

/* ---- CPU maps ----------------------------------------------------------------------------------- */
typedef struct et_map et_map;

/* Maps the tensor's extent for reading: *out_data (the first element) and *out_size (bytes, its extent)
 * stay valid until the map's last release. DMA-BUF: maps share one DMA_BUF_IOCTL_SYNC bracket per
 * buffer. Errors: ET_INVALID_ARGUMENT (NULL), ET_FAILED_PRECONDITION, ET_BUSY (a PBO already mapped), the
 * backend's map or sync error. */
ET_C_API et_status et_tensor_map_read(const et_tensor* tensor, et_map** out_map, const void** out_data,
                                      size_t* out_size);
/* As et_tensor_map_read, for writing (reading through it gives undefined content). Errors: also
 * ET_PERMISSION_DENIED (read-only storage). */
ET_C_API et_status et_tensor_map_write(const et_tensor* tensor, et_map** out_map, void** out_data,
                                       size_t* out_size);
/* As et_tensor_map_write, for reading and writing. */
ET_C_API et_status et_tensor_map_read_write(const et_tensor* tensor, et_map** out_map, void** out_data,
                                            size_t* out_size);
ET_C_API et_map* et_map_retain(et_map* map);
/* The last release ends the CPU access (DMA-BUF: the last open map ends the sync bracket). */
ET_C_API void et_map_release(et_map* map);

/* Options of et_tensor_map (C++ MapOptions). */
typedef struct et_map_options {
  uint32_t struct_size;
  uint32_t use_timeout;  /* 0: the default wait (ET_DEFAULT_MAP_TIMEOUT_NS); 1: timeout_ns */
  /* With use_timeout: the longest wait for a DMA-BUF's pending device work (its fences) before the map
   * opens, in nanoseconds, rounded up to a whole millisecond; 0 only checks; negative: no bound. Only the
   * map that opens a buffer's sync bracket waits; other memory never waits. */
  int64_t timeout_ns;
} et_map_options;
#define ET_MAP_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_map_options))
/* The wait of a map without options (C++ kDefaultMapTimeout, 1 s). */
#define ET_DEFAULT_MAP_TIMEOUT_NS INT64_C(1000000000)

/* Maps the tensor as `map_mode` (ET_MAP_READ, _WRITE or _READ_WRITE) with `options` (NULL: defaults), as
 * et_tensor_map_read and its siblings do: *out_data (writable only when map_mode has ET_MAP_WRITE) and
 * *out_size stay valid until the map's last release. Errors: ET_INVALID_ARGUMENT (NULL, map_mode not 1 to
 * 3, bad options, use_timeout not 0 or 1), ET_TIMEOUT (the DMA-BUF's fences did not signal in time:
 * et_last_error_errno() ETIMEDOUT; for a timeout of 0, ET_BUSY with EAGAIN; the message names the buffer
 * and its pending fences),
 * then as the map of that direction. */
ET_C_API et_status et_tensor_map(const et_tensor* tensor, uint32_t map_mode, const et_map_options* options,
                                 et_map** out_map, void** out_data, size_t* out_size);

/* ---- Descriptors for runtimes (RKNN, Hailo, TIM-VX, OpenVINO, TFLite) --------------------------- */
typedef struct et_descriptor et_descriptor;

/* Where one plane lies in the buffer. */
typedef struct et_plane_desc {
  int32_t fd;                 /* the buffer's fd, owned by the descriptor handle (-1: not fd-shareable) */
  uint32_t reserved;          /* zero */
  uint64_t offset_bytes;      /* from the buffer's start to the plane's first byte */
  uint64_t size_bytes;        /* from that byte to one past the plane's last byte */
  uint64_t row_stride_bytes;  /* image: the plane's row stride; other tensors: the stride of dimension
                                 rank - 2 (rank >= 2), else size_bytes */
} et_plane_desc;

/* One buffer as C SDKs take it (output struct: set struct_size first). */
typedef struct et_buffer_desc {
  uint32_t struct_size;
  uint32_t plane_count;       /* 1 for a tensor, the format's planes for an image */
  uint64_t buffer_bytes;      /* the whole buffer (fd size) */
  uint64_t mapped_bytes;      /* bytes mapped from `data` (the tensor's extent); 0 with no map */
  void* data;                 /* CPU address of planes[0].offset_bytes (the first element), mapped as
                                 asked; NULL when no map was asked for */
  ET_C_POINTER_PAD_(data_pad_)
  et_plane_desc planes[ET_MAX_PLANES];
} et_buffer_desc;
#define ET_BUFFER_DESC_SIZE_VER0 ((uint32_t)sizeof(et_buffer_desc))

/* Describes the tensor's buffer for a runtime: its fd (exported once, CLOEXEC, owned by *out_holder),
 * each plane's offset, size and row stride, and, with map_mode ET_MAP_READ / _WRITE / _READ_WRITE, a CPU
 * address held mapped (0: none). Everything in *out stays valid until *out_holder's last release, which
 * ends the map and closes the fd. A DMA-BUF map held open keeps its sync bracket open: ask for one only
 * when the CPU reads or writes through `data`. A heap tensor gets fd -1 (its address still works).
 * Errors: ET_INVALID_ARGUMENT (NULL, unknown map_mode bits, bad struct_size), ET_FAILED_PRECONDITION
 * (zero elements), the export's and the map's errors. */
ET_C_API et_status et_tensor_describe(const et_tensor* tensor, uint32_t map_mode, et_buffer_desc* out,
                                      et_descriptor** out_holder);
ET_C_API et_descriptor* et_descriptor_retain(et_descriptor* descriptor);
ET_C_API void et_descriptor_release(et_descriptor* descriptor);

/* ---- Images: a tensor with a layout (planes in one buffer) -------------------------------------- */
/* Pixel formats (C++ PixelFormat values): planes, subsampling and codes as docs/ARCHITECTURE.md's table. */
#define ET_PIXEL_FORMAT_UNKNOWN 0
#define ET_PIXEL_FORMAT_GREY 1
#define ET_PIXEL_FORMAT_RGB 2
#define ET_PIXEL_FORMAT_BGR 3
#define ET_PIXEL_FORMAT_RGBA 4
#define ET_PIXEL_FORMAT_BGRA 5
#define ET_PIXEL_FORMAT_NV12 6
#define ET_PIXEL_FORMAT_NV21 7
#define ET_PIXEL_FORMAT_YUYV 8
#define ET_PIXEL_FORMAT_PLANAR_RGB 9
#define ET_PIXEL_FORMAT_Y16 10
#define ET_PIXEL_FORMAT_RGBX 11
#define ET_PIXEL_FORMAT_BGRX 12
#define ET_PIXEL_FORMAT_NV16 13
#define ET_PIXEL_FORMAT_NV61 14
#define ET_PIXEL_FORMAT_NV24 15
#define ET_PIXEL_FORMAT_NV42 16
#define ET_PIXEL_FORMAT_I420 17
#define ET_PIXEL_FORMAT_YV12 18
#define ET_PIXEL_FORMAT_YUV422P 19
#define ET_PIXEL_FORMAT_YVYU 20
#define ET_PIXEL_FORMAT_UYVY 21
#define ET_PIXEL_FORMAT_VYUY 22
#define ET_PIXEL_FORMAT_P010 23
#define ET_PIXEL_FORMAT_PLANAR_RGBA 24
#define ET_PIXEL_FORMAT_BAYER_RGGB8 25
#define ET_PIXEL_FORMAT_BAYER_BGGR8 26
#define ET_PIXEL_FORMAT_BAYER_GRBG8 27
#define ET_PIXEL_FORMAT_BAYER_GBRG8 28

/* "nv12", ...; "invalid" for an unknown value. Static storage. */
ET_C_API const char* et_pixel_format_name(int32_t format);
/* The format named `name` (as et_pixel_format_name). Errors: ET_INVALID_ARGUMENT (NULL, unknown name). */
ET_C_API et_status et_pixel_format_from_name(const char* name, int32_t* out_format);
/* The format of a V4L2 fourcc, and whether it is a multi-planar ("M") code (1) or not (0). Errors:
 * ET_INVALID_ARGUMENT (NULL, unknown code, named in hex). */
ET_C_API et_status et_pixel_format_from_v4l2(uint32_t v4l2_fourcc, int32_t* out_format, uint32_t* out_multiplanar);
/* The format of a DRM fourcc. Errors: ET_INVALID_ARGUMENT (NULL, unknown code). */
ET_C_API et_status et_pixel_format_from_drm(uint32_t drm_fourcc, int32_t* out_format);
/* The format of a GStreamer video format name ("NV12"). Errors: ET_INVALID_ARGUMENT (NULL, unknown name). */
ET_C_API et_status et_pixel_format_from_gst(const char* gst_name, int32_t* out_format);
/* The V4L2 fourcc of `format` (multiplanar 1: its "M" code). Errors: ET_INVALID_ARGUMENT (NULL, unknown
 * format, multiplanar not 0 or 1), ET_UNSUPPORTED (V4L2 has no code for it). */
ET_C_API et_status et_pixel_format_to_v4l2(int32_t format, uint32_t multiplanar, uint32_t* out_fourcc);
/* The DRM fourcc of `format`. Errors: as et_pixel_format_to_v4l2. */
ET_C_API et_status et_pixel_format_to_drm(int32_t format, uint32_t* out_fourcc);
/* The GStreamer name of `format` (static storage). Errors: as et_pixel_format_to_v4l2. */
ET_C_API et_status et_pixel_format_to_gst(int32_t format, const char** out_name);

/* One plane of an image layout: where it starts (bytes from the tensor's first element) and its row stride. */
typedef struct et_plane_layout {
  uint64_t offset_bytes;
  uint64_t row_stride_bytes;
} et_plane_layout;

/* An image layout (output struct: set struct_size first). */
typedef struct et_image_layout {
  uint32_t struct_size;
  int32_t format;                          /* ET_PIXEL_FORMAT_* */
  uint32_t width;                          /* pixels */
  uint32_t height;                         /* pixels */
  uint32_t plane_count;
  uint32_t reserved;                       /* zero */
  uint64_t modifier;                       /* DRM format modifier; 0 is LINEAR */
  et_plane_layout planes[ET_MAX_PLANES];   /* entries past plane_count are zero */
} et_image_layout;
#define ET_IMAGE_LAYOUT_SIZE_VER0 ((uint32_t)sizeof(et_image_layout))

/* Options of et_tensor_allocate_image: the default layout's alignments (C++ ImageAlignment). */
typedef struct et_image_options {
  uint32_t struct_size;
  uint32_t row_alignment_bytes;  /* each row stride rounded up to this power of two (0 or 1: tight rows;
                                    4: GStreamer's default), at most 4096 */
  uint32_t height_alignment;     /* the height rounded up to this power of two (0 or 1: none), at most 4096 */
  uint32_t reserved;             /* zero */
} et_image_options;
#define ET_IMAGE_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_image_options))

/* Allocates an image of `width` x `height` pixels of `format`, every plane in one buffer: a u8 tensor with
 * the default layout attached (et_tensor_get_image_layout; et_tensor_describe gives one plane each).
 * Errors: ET_INVALID_ARGUMENT (NULL out, unknown format, zero size, an alignment not a power of two or over
 * 4096, bad options), ET_OUT_OF_RANGE (a size overflows), then as et_tensor_allocate. */
ET_C_API et_status et_tensor_allocate_image(uint32_t width, uint32_t height, int32_t format,
                                            const et_image_options* image_options,
                                            const et_allocate_options* options, et_tensor** out);
/* The image layout the tensor holds. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size),
 * ET_FAILED_PRECONDITION (no whole image: none attached, or a view dropped it). */
ET_C_API et_status et_tensor_get_image_layout(const et_tensor* tensor, et_image_layout* layout);
/* The view of image plane `index` (its natural shape: [rows, cols] or [rows, cols, samples]). Errors:
 * ET_INVALID_ARGUMENT (NULL), ET_FAILED_PRECONDITION (no image layout), ET_OUT_OF_RANGE (index >= planes),
 * ET_UNSUPPORTED (a non-linear modifier). */
ET_C_API et_status et_tensor_plane(const et_tensor* tensor, uint32_t index, et_tensor** out);

/* ---- Quantization and colorimetry (C++ Quantization, Colorimetry) -------------------------------- */
/* A handle is read-only after creation, so the setters give a new handle: the same buffer, view and other
 * metadata, with the new value (as the C++ setter on a copy; the old handle keeps its own). */

/* Quantization kinds: real = scale * (q - zero_point). */
#define ET_QUANTIZATION_NONE 0
#define ET_QUANTIZATION_PER_TENSOR 1
#define ET_QUANTIZATION_PER_AXIS 2
/* Most channels of a per-axis quantization (C++ kMaxQuantizationChannels). */
#define ET_MAX_QUANTIZATION_CHANNELS 4096u

/* An affine quantization (input of et_tensor_with_quantization, output of et_tensor_get_quantization: set
 * struct_size first). Fields that the kind does not use are zero. */
typedef struct et_quantization {
  uint32_t struct_size;
  int32_t kind;                /* ET_QUANTIZATION_* */
  uint32_t axis;               /* PER_AXIS: the quantized dimension */
  uint32_t channel_count;      /* PER_AXIS: entries of scales and zero_points (shape[axis]) */
  float scale;                 /* PER_TENSOR: finite and > 0 */
  int32_t zero_point;          /* PER_TENSOR: representable in the dtype */
  const float* scales;         /* PER_AXIS: channel_count scales. Output: the tensor's, valid until the
                                  handle's last release */
  ET_C_POINTER_PAD_(scales_pad_)
  const int32_t* zero_points;  /* PER_AXIS: channel_count zero points (output: as scales) */
  ET_C_POINTER_PAD_(zero_points_pad_)
} et_quantization;
#define ET_QUANTIZATION_SIZE_VER0 ((uint32_t)sizeof(et_quantization))

/* The tensor's quantization (kind NONE when it has none). Errors: ET_INVALID_ARGUMENT (NULL, bad
 * struct_size). */
ET_C_API et_status et_tensor_get_quantization(const et_tensor* tensor, et_quantization* quantization);
/* A new handle of the tensor with `quantization` (NULL or kind NONE: none) into *out; the arrays are
 * copied. Errors: ET_INVALID_ARGUMENT (NULL tensor or out, bad struct_size, unknown kind, a field the kind
 * does not use not zero, NULL arrays, a scale not finite and > 0, a zero point the dtype cannot hold, a
 * float dtype, axis >= rank, channel_count != shape[axis], each naming the value and the limit),
 * ET_OUT_OF_RANGE (channel_count above ET_MAX_QUANTIZATION_CHANNELS, axis >= ET_MAX_RANK). */
ET_C_API et_status et_tensor_with_quantization(const et_tensor* tensor, const et_quantization* quantization,
                                               et_tensor** out);

/* Colorimetry (ITU-T H.273 meanings; UNSPECIFIED: the producer did not say). */
#define ET_COLOR_PRIMARIES_UNSPECIFIED 0
#define ET_COLOR_PRIMARIES_BT709 1
#define ET_COLOR_PRIMARIES_BT470BG 2   /* BT.601 625 */
#define ET_COLOR_PRIMARIES_SMPTE170M 3 /* BT.601 525 */
#define ET_COLOR_PRIMARIES_BT2020 4
#define ET_COLOR_PRIMARIES_DCI_P3 5
#define ET_COLOR_PRIMARIES_DISPLAY_P3 6
#define ET_COLOR_PRIMARIES_ADOBE_RGB 7
#define ET_COLOR_PRIMARIES_BT470M 8
#define ET_TRANSFER_UNSPECIFIED 0
#define ET_TRANSFER_BT709 1
#define ET_TRANSFER_SRGB 2
#define ET_TRANSFER_LINEAR 3
#define ET_TRANSFER_SMPTE2084 4   /* PQ */
#define ET_TRANSFER_ARIB_STD_B67 5 /* HLG */
#define ET_TRANSFER_ADOBE_RGB 6
#define ET_TRANSFER_DCI_P3 7
#define ET_TRANSFER_SMPTE240M 8
#define ET_YCBCR_MATRIX_UNSPECIFIED 0
#define ET_YCBCR_MATRIX_BT601 1
#define ET_YCBCR_MATRIX_BT709 2
#define ET_YCBCR_MATRIX_BT2020 3
#define ET_YCBCR_MATRIX_BT2020_CONSTANT 4
#define ET_YCBCR_MATRIX_SMPTE240M 5
#define ET_YCBCR_MATRIX_IDENTITY 6 /* RGB data */
#define ET_COLOR_RANGE_UNSPECIFIED 0
#define ET_COLOR_RANGE_FULL 1
#define ET_COLOR_RANGE_LIMITED 2

/* A colorimetry (input of et_tensor_with_colorimetry, output of et_tensor_get_colorimetry: set struct_size
 * first). */
typedef struct et_colorimetry {
  uint32_t struct_size;
  int32_t primaries;  /* ET_COLOR_PRIMARIES_* */
  int32_t transfer;   /* ET_TRANSFER_* */
  int32_t matrix;     /* ET_YCBCR_MATRIX_* */
  int32_t range;      /* ET_COLOR_RANGE_* */
  uint32_t reserved;  /* zero */
} et_colorimetry;
#define ET_COLORIMETRY_SIZE_VER0 ((uint32_t)sizeof(et_colorimetry))

/* The tensor's colorimetry (all UNSPECIFIED when none was set). Errors: ET_INVALID_ARGUMENT (NULL, bad
 * struct_size). */
ET_C_API et_status et_tensor_get_colorimetry(const et_tensor* tensor, et_colorimetry* colorimetry);
/* A new handle of the tensor with `colorimetry` (NULL: all UNSPECIFIED) into *out. Errors:
 * ET_INVALID_ARGUMENT (NULL tensor or out, bad struct_size, a value outside its constants, naming the
 * field, the value and the last valid one; reserved not zero). */
ET_C_API et_status et_tensor_with_colorimetry(const et_tensor* tensor, const et_colorimetry* colorimetry,
                                              et_tensor** out);

/* ---- IPC: one tensor per message on an AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM socket ------------------ */
/* Options of et_ipc_send_tensor. */
typedef struct et_send_options {
  uint32_t struct_size;
  uint32_t use_timeout;      /* 0: wait for room for ever; 1: at most timeout_ms */
  int32_t timeout_ms;        /* with use_timeout: 0 does not wait; then ET_BUSY */
  uint32_t reserved;         /* zero */
} et_send_options;
#define ET_SEND_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_send_options))

/* Sends the tensor's view and metadata, and its buffer's fd, on `borrowed_socket`; the tensor stays usable.
 * Errors: ET_INVALID_ARGUMENT (NULL, bad options, another socket type), ET_FAILED_PRECONDITION (zero
 * elements), ET_UNSUPPORTED (heap, PBO, unsealed shm), ET_BUSY (timeout), ET_UNAVAILABLE (peer gone). */
ET_C_API et_status et_ipc_send_tensor(int32_t borrowed_socket, const et_tensor* tensor,
                                      const et_send_options* options);

/* Options of et_ipc_receive_tensor. */
typedef struct et_receive_options {
  uint32_t struct_size;
  uint32_t use_timeout;      /* 0: wait for a message for ever; 1: at most timeout_ms */
  int32_t timeout_ms;        /* with use_timeout: 0 does not wait; then ET_BUSY */
  uint32_t reserved;         /* zero */
  uint64_t max_buffer_bytes; /* largest buffer accepted; 0 = the C++ default (64 GiB; 1 GiB on 32-bit) */
} et_receive_options;
#define ET_RECEIVE_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_receive_options))

/* Receives one tensor sent by et_ipc_send_tensor (or C++ ipc::send) on `borrowed_socket`, checked before it
 * is built (docs/WIRE.md); *out owns the received fd. Errors: ET_INVALID_ARGUMENT (NULL, bad options,
 * socket type, a malformed message), ET_OUT_OF_RANGE (buffer too small or over max_buffer_bytes),
 * ET_UNAVAILABLE (peer closed), ET_BUSY (timeout). */
ET_C_API et_status et_ipc_receive_tensor(int32_t borrowed_socket, const et_receive_options* options,
                                         et_tensor** out);

/* ---- Fences (C++ sync::Fence, docs/SYNC.md) ------------------------------------------------------ */
/* A fence is a kernel sync_file fd that a driver signals when device work is done, or "already
 * signalled" with no fd (-1 on a wire, Vulkan's SYNC_FD -1). This library never makes a sync_file of its
 * own: fences come from a driver (a DMA-BUF's export below, a GPU, a codec, a camera). */
typedef struct et_fence et_fence;

/* Which access a DMA-BUF fence covers (DMA_BUF_SYNC_READ / _WRITE). Export READ: the writers' fences (what a
 * reader waits for); WRITE: every fence (what a writer waits for). Import READ: a reader's fence (later
 * writers wait); WRITE: a writer's fence (every later access waits). */
#define ET_FENCE_ACCESS_READ 1
#define ET_FENCE_ACCESS_WRITE 2

/* A new signalled fence (no fd). Errors: ET_INVALID_ARGUMENT (NULL out). */
ET_C_API et_status et_fence_create_signalled(et_fence** out);
/* Takes `fd`, which must be a sync_file (checked with SYNC_IOC_FILE_INFO): on success the fence owns it;
 * on every failure it is closed (a negative fd is left alone). Errors: ET_INVALID_ARGUMENT (NULL out, a
 * negative fd: a signalled fence is et_fence_create_signalled; an fd that is no sync_file, naming what it
 * is), the ioctl's error. */
ET_C_API et_status et_fence_import_adopt(int32_t fd, et_fence** out);
/* As et_fence_import_adopt, of a CLOEXEC duplicate of `borrowed_fd` (the caller keeps its own); -1 gives a
 * signalled fence (the wire convention). Errors: ET_INVALID_ARGUMENT (NULL out, another negative fd, a
 * closed fd, no sync_file), ET_BUSY (EMFILE). */
ET_C_API et_status et_fence_import_dup(int32_t borrowed_fd, et_fence** out);
ET_C_API et_fence* et_fence_retain(et_fence* fence);
/* The last release closes the fence's fd. */
ET_C_API void et_fence_release(et_fence* fence);

/* Waits until the fence signals, at most `timeout_ns` nanoseconds (rounded up to a whole millisecond; 0
 * only checks; negative: no bound); a signal (EINTR) does not end the wait early. A fence signalled with
 * an error counts as signalled (et_fence_get_status tells). Errors: ET_INVALID_ARGUMENT (NULL), ET_TIMEOUT
 * (the timeout passed: et_last_error_errno() ETIMEDOUT; for 0, ET_BUSY with EAGAIN; the message names the
 * fd, the timeout and the pending fences), poll's error. */
ET_C_API et_status et_fence_wait(const et_fence* fence, int64_t timeout_ns);
/* *out_fd: the fence's sync_file fd, still the fence's (do not close it; valid until its last release),
 * for poll(2) (POLLIN: signalled) or an API that borrows it; -1 for a signalled fence without one.
 * Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_fence_get_borrowed_fd(const et_fence* fence, int32_t* out_borrowed_fd);
/* A new CLOEXEC fd of the fence's sync_file, the caller's to close (for an API that takes ownership:
 * Vulkan's SYNC_FD import, EGL_ANDROID_native_fence_sync); -1, with ET_OK, for a signalled fence without
 * an fd. Errors: ET_INVALID_ARGUMENT (NULL), ET_BUSY (EMFILE). */
ET_C_API et_status et_fence_dup_fd(const et_fence* fence, int32_t* out_fd);
/* A new fence that signals once both have (SYNC_IOC_MERGE). When one is signalled without an fd, a dup of
 * the other; both: a signalled fence. `name` (NULL: "edgetensor"; at most 31 bytes are kept) names the new
 * sync_file. Errors: ET_INVALID_ARGUMENT (NULL a, b or out), ET_BUSY (EMFILE), the ioctl's error. */
ET_C_API et_status et_fence_merge(const et_fence* a, const et_fence* b, const char* name, et_fence** out);

/* What SYNC_IOC_FILE_INFO says of a fence (output struct: set struct_size first). */
typedef struct et_fence_status {
  uint32_t struct_size;
  int32_t status;           /* 1 signalled, 0 pending, negative: an error (-errno) of one of its fences */
  uint32_t fence_count;     /* dma-fences inside the sync_file; 0 for a signalled fence without an fd */
  uint32_t pending_count;   /* of those, still pending */
  char name[32];            /* the sync_file's name, NUL-terminated ("" without an fd) */
} et_fence_status;
#define ET_FENCE_STATUS_SIZE_VER0 ((uint32_t)sizeof(et_fence_status))
/* Fills *status. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size), the ioctl's error. */
ET_C_API et_status et_fence_get_status(const et_fence* fence, et_fence_status* status);

/* The fences of the tensor's DMA-BUF (the whole buffer, whatever the view) as a new fence
 * (DMA_BUF_IOCTL_EXPORT_SYNC_FILE, Linux >= 6.0): a snapshot, which later device work does not join; a
 * buffer with no fences gives a sync_file that is already signalled. Errors: ET_INVALID_ARGUMENT (NULL,
 * access not an ET_FENCE_ACCESS_* value), ET_UNSUPPORTED (memory that is no DMA-BUF, naming its kind; a
 * kernel without the ioctl, naming its release), the ioctl's error. */
ET_C_API et_status et_tensor_export_fence(const et_tensor* tensor, int32_t access, et_fence** out);
/* Adds `fence` to the tensor's DMA-BUF as a reader's (READ) or a writer's (WRITE) fence
 * (DMA_BUF_IOCTL_IMPORT_SYNC_FILE): maps and implicitly synchronised drivers wait for it from now on. A
 * signalled fence without an fd adds nothing. Export, device submission and import are three calls: the
 * caller serialises the buffer's users across them (docs/SYNC.md, "Rules"). Errors: as
 * et_tensor_export_fence. Threads: concurrent imports into one buffer are the kernel's to order. */
ET_C_API et_status et_tensor_import_fence(const et_tensor* tensor, const et_fence* fence, int32_t access);

/* ---- Pools (C++ Pool): buffers of one layout, reused ---------------------------------------------- */
/* A pool allocates min_buffers at creation and more on demand, never more than max_buffers at once, and
 * keeps them until its last release. An acquired tensor goes back to the pool by itself when its last
 * holder is gone (the handle, its views, maps, descriptors, DLPack exports): nothing is returned by hand.
 * A buffer acquired again is the same memory (fd, mapping, buffer key), holding what the last holder left
 * unless ET_POOL_ZERO_ON_REUSE. Threads: acquire and stats from any threads at once; a buffer may come back
 * from any thread. A tensor that outlives its pool frees its memory at its last release. */
typedef struct et_pool et_pool;

/* Pool flags. */
#define ET_POOL_ZERO_ON_REUSE 1u /* zero a reused buffer before handing it out (a write map per reuse) */

/* Options of et_pool_create. */
typedef struct et_pool_options {
  uint32_t struct_size;
  uint32_t flags;                       /* ET_POOL_* bits; others must be zero */
  uint32_t min_buffers;                 /* allocated by et_pool_create; at most max_buffers */
  uint32_t max_buffers;                 /* buffers at once, free and in use; 0 = 4 */
  const char* name;                     /* NULL or "" = none; names errors, stats and every buffer */
  ET_C_POINTER_PAD_(name_pad_)
  /* How each buffer is allocated (NULL: defaults); its name is replaced by the pool's, a shm_name is
   * refused (a named object is created once); its gl_context is kept until the pool's last release. */
  const et_allocate_options* allocate;
  ET_C_POINTER_PAD_(allocate_pad_)
} et_pool_options;
#define ET_POOL_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_pool_options))

/* A pool of C-contiguous tensors of `rank` dimensions (`shape`, elements) and `dtype`; allocates
 * min_buffers now. Errors: ET_INVALID_ARGUMENT (NULL out or shape, rank > ET_MAX_RANK, unknown dtype, bad
 * options, min_buffers > max_buffers, a shm_name, zero elements), ET_OUT_OF_RANGE (size overflow), then
 * the allocation's errors for the first buffers (all freed again). */
ET_C_API et_status et_pool_create(uint32_t rank, const uint64_t* shape, int32_t dtype, const et_pool_options* options,
                                  et_pool** out);
/* A pool of single-buffer images of `width` x `height` pixels of `format` in the default layout of
 * `image_options`' alignments (NULL: tight rows), as et_tensor_allocate_image lays them out; `options` as
 * et_pool_create's. Each acquired tensor is a u8 tensor of the layout's bytes with the layout attached
 * (et_tensor_get_image_layout, et_tensor_plane, et_frame_from_tensor). Its size (et_pool_stats.packed_bytes)
 * ends where the last plane's last row ends: the padding after that row, which et_tensor_allocate_image
 * also allocates, is not part of it. Errors: ET_INVALID_ARGUMENT (NULL out, unknown format, zero width or
 * height, an alignment not a power of two or over 4096, bad image or pool options, as et_pool_create's),
 * ET_OUT_OF_RANGE (a size overflows), then the allocation's errors for the first buffers. */
ET_C_API et_status et_pool_create_image(uint32_t width, uint32_t height, int32_t format,
                                        const et_image_options* image_options, const et_pool_options* options,
                                        et_pool** out);
/* As et_pool_create_image, with a layout of the caller's (a GStreamer GstVideoInfo's, a V4L2 format's
 * bytesperline): `layout` is read as an input (struct_size set; plane_count and entries past the format's
 * planes ignored), offsets from the tensor's first byte; each buffer holds up to the end of the plane
 * that ends last. Errors: ET_INVALID_ARGUMENT (NULL out or layout, unknown format, zero width or height,
 * a row stride below its plane's row bytes or planes that share bytes, naming the plane; bad options),
 * ET_OUT_OF_RANGE (an offset or size overflows), then as et_pool_create_image. */
ET_C_API et_status et_pool_create_image_layout(const et_image_layout* layout, const et_pool_options* options,
                                               et_pool** out);
ET_C_API et_pool* et_pool_retain(et_pool* pool);
/* The last release frees the pool's free buffers; tensors acquired from it stay valid. */
ET_C_API void et_pool_release(et_pool* pool);
/* A buffer into *out: a free one (the last returned first), else a new one while fewer than max_buffers
 * exist, else the first to come back within `timeout_ns` (rounded up to a whole millisecond; 0 does not
 * wait; negative: no bound). Errors: ET_INVALID_ARGUMENT (NULL), ET_BUSY (none came back in time: the
 * message names the pool, max_buffers and the wait), a new buffer's allocation error, with
 * ET_POOL_ZERO_ON_REUSE the write map's error. */
ET_C_API et_status et_pool_acquire(et_pool* pool, int64_t timeout_ns, et_tensor** out);

/* A snapshot of a pool's counters (output struct: set struct_size first). */
typedef struct et_pool_stats {
  uint32_t struct_size;
  uint32_t reserved;          /* zero */
  uint64_t allocated;         /* buffers that exist: free + in_use */
  uint64_t free;              /* back in the pool (including those waiting for device work) */
  uint64_t device_pending;    /* of free: waiting for recorded device work */
  uint64_t in_use;            /* handed out, a holder alive */
  uint64_t peak_in_use;
  uint64_t acquired;          /* successful acquisitions */
  uint64_t waits;             /* acquisitions that found no buffer at first and waited */
  uint64_t timeouts;          /* acquisitions that failed with ET_BUSY */
  uint64_t packed_bytes;      /* bytes of every tensor acquired (its buffer may be larger) */
} et_pool_stats;
#define ET_POOL_STATS_SIZE_VER0 ((uint32_t)sizeof(et_pool_stats))
/* Fills *stats. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_pool_get_stats(const et_pool* pool, et_pool_stats* stats);

/* ---- DLPack 1.x (C++ dlpack::, include/edgetensor/dlpack.h) --------------------------------------- */
/* DLPack's DLManagedTensorVersioned, declared only: include dlpack/dlpack.h (1.0 or later) for its fields.
 * Debian 12's libdlpack-dev is 0.6, without it: take dlpack.h 1.x from the DLPack project (a single header).
 * This header never defines it, so the two can be included in either order. */
struct DLManagedTensorVersioned;

/* DLPack flags. */
#define ET_DLPACK_READ_ONLY 1u /* export for reading: DLPACK_FLAG_BITMASK_READ_ONLY, a read map held */

/* Options of et_dlpack_export_versioned. */
typedef struct et_dlpack_export_options {
  uint32_t struct_size;
  uint32_t flags;  /* ET_DLPACK_* bits; others must be zero */
} et_dlpack_export_options;
#define ET_DLPACK_EXPORT_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_dlpack_export_options))

/* Exports the tensor as a DLPack 1.1 DLManagedTensorVersioned (kDLCPU: a CPU map of it), into *out. The
 * caller owns *out and ends it by calling `(*out)->deleter(*out)` exactly once, from any thread (or by
 * handing it to a consumer that does, such as et_dlpack_adopt_versioned or numpy). Until then data, shape
 * and strides (elements) stay valid, even after every handle of the tensor is gone; while it lives, a
 * DMA-BUF's sync bracket stays open and a pooled buffer does not go back. READ_ONLY is set for read-only
 * storage and ET_DLPACK_READ_ONLY. Errors: ET_INVALID_ARGUMENT (NULL, bad options, a byte stride that is no
 * multiple of the element size), ET_UNSUPPORTED (a non-linear DRM modifier), ET_OUT_OF_MEMORY, the map's
 * errors. */
ET_C_API et_status et_dlpack_export_versioned(const et_tensor* tensor, const et_dlpack_export_options* options,
                                              struct DLManagedTensorVersioned** out);

/* Options of et_dlpack_adopt_versioned. */
typedef struct et_dlpack_adopt_options {
  uint32_t struct_size;
  uint32_t reserved;   /* zero */
  const char* name;    /* NULL or "" = none: the tensor's name */
  ET_C_POINTER_PAD_(name_pad_)
} et_dlpack_adopt_options;
#define ET_DLPACK_ADOPT_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_dlpack_adopt_options))

/* Takes a producer's DLPack 1.x tensor and gives a tensor over its memory (ET_MEMORY_FOREIGN: no fd, no
 * image layout, the name of the options). Ownership: `managed` is the library's from the call on, success or
 * failure: its deleter runs once (not if NULL), when the last handle, view, map or export of the tensor is
 * gone, on the thread that drops it, or before this call returns on any failure; the caller never calls it.
 * Exception: a NULL `managed` (ET_INVALID_ARGUMENT, nothing done); a NULL out or bad options still run the
 * deleter. Checked, each a named error: major version 1 (ET_UNSUPPORTED), a CPU-reachable device
 * (kDLCPU, kDLCUDAHost, kDLROCMHost; else ET_UNSUPPORTED), ndim (ET_OUT_OF_RANGE above ET_MAX_RANK), the
 * dtype (ET_UNSUPPORTED), strides (negative: ET_UNSUPPORTED; a broadcast: ET_INVALID_ARGUMENT), overflows
 * (ET_OUT_OF_RANGE), alignment (ET_INVALID_ARGUMENT). READ_ONLY gives read-only storage. */
ET_C_API et_status et_dlpack_adopt_versioned(struct DLManagedTensorVersioned* managed,
                                             const et_dlpack_adopt_options* options, et_tensor** out);

/* ---- Frames (C++ Frame): an image whose planes may lie in separate buffers ------------------------ */
/* One buffer per plane (V4L2 multi-planar, a decoder's fd per plane) or all planes in one; planes given as
 * several fds of the same buffer share one import. Reference-counted as the other handles; read-only after
 * creation. Frames travel on the frame channel (et_channel_sender_send_frame, et_channel_delivery.frame). */
typedef struct et_frame et_frame;

/* A frame of a single-buffer image tensor (et_tensor_allocate_image; no copy: the frame shares its buffer).
 * Errors: ET_INVALID_ARGUMENT (NULL, a tensor with no image layout). */
ET_C_API et_status et_frame_from_tensor(const et_tensor* image, et_frame** out);
/* Imports one borrowed fd per plane (the library dups them, the caller keeps its own): `fd_count` must be
 * the format's plane count, plane i lies at layout->planes[i].offset_bytes in borrowed_fds[i]'s buffer
 * (offsets count from each buffer's start). `layout` is read as an input (struct_size set; plane_count and
 * entries past it ignored); `options` as et_tensor_import_dup's, but offset_bytes and strides_bytes must be
 * zero and NULL (the layout has them); its flags and name apply to every fd. Errors: ET_INVALID_ARGUMENT
 * (NULL, a wrong fd count, a bad layout or options, a negative, closed or foreign fd), ET_OUT_OF_RANGE (a
 * plane past its buffer's end, naming the plane and both sizes), ET_UNAVAILABLE (DMA-BUF not built). */
ET_C_API et_status et_frame_import_planes_dup(const int32_t* borrowed_fds, uint32_t fd_count,
                                              const et_image_layout* layout, const et_import_options* options,
                                              et_frame** out);
ET_C_API et_frame* et_frame_retain(et_frame* frame);
/* The last release drops the frame's buffers (a channel's delivered frame goes back to its sender once
 * every plane and buffer view taken from it is gone too). */
ET_C_API void et_frame_release(et_frame* frame);
/* The frame's layout (offsets from each plane's own buffer). Errors: ET_INVALID_ARGUMENT (NULL, bad
 * struct_size). */
ET_C_API et_status et_frame_get_layout(const et_frame* frame, et_image_layout* layout);
/* Distinct buffers (1 to the plane count) into *out_count, and which buffer each plane lies in
 * (out_plane_buffers: ET_MAX_PLANES entries, those past the plane count set to 0). Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_frame_get_buffers(const et_frame* frame, uint32_t* out_count, uint32_t* out_plane_buffers);
/* A u8 tensor over the whole of buffer `index` (to export, describe or check its buffer key). Errors:
 * ET_INVALID_ARGUMENT (NULL), ET_OUT_OF_RANGE (index past the buffer count). */
ET_C_API et_status et_frame_buffer(const et_frame* frame, uint32_t index, et_tensor** out);
/* The view of plane `index` (as et_tensor_plane: [rows, cols] or [rows, cols, samples]); et_tensor_describe
 * of it gives that plane's fd, offset and stride. Errors: ET_INVALID_ARGUMENT (NULL), ET_OUT_OF_RANGE
 * (index past the plane count), ET_UNSUPPORTED (a non-linear modifier). */
ET_C_API et_status et_frame_plane(const et_frame* frame, uint32_t index, et_tensor** out);

/* ---- The frame channel (C++ channel::, docs/CHANNEL.md) ------------------------------------------ */
/* A stream of tensors or frames from a sender to a receiver in another process over a connected AF_UNIX
 * SOCK_SEQPACKET socket: each buffer's fd crosses once, then a frame is a small message, and the
 * receiver's last release of a delivered tensor or frame gives the buffer back to the sender (a pool has
 * it back then). Sockets: et_channel_socket_pair (one end per process, across fork), or a named socket
 * (et_channel_listener_create / _accept and et_channel_connect). Senders, receivers and listeners are
 * reference-counted handles, thread-safe (their calls are serialised inside); none may be used in the child
 * of a fork() made after its creation.
 * Waits: int32_t timeout_ms, 0 does not wait, ET_WAIT_FOREVER (-1) has no limit, any other negative value is
 * ET_INVALID_ARGUMENT. A wait that runs out is ET_BUSY (et_last_error_errno() ETIMEDOUT; EAGAIN for 0); the
 * channel stays open. */
#define ET_WAIT_FOREVER (-1)

/* A connected AF_UNIX SOCK_SEQPACKET pair (CLOEXEC), both the caller's: one end for a sender, one for a
 * receiver. Errors: ET_INVALID_ARGUMENT (NULL), socketpair's error (ET_BUSY for EMFILE). */
ET_C_API et_status et_channel_socket_pair(int32_t out_fds[2]);

typedef struct et_channel_listener et_channel_listener;

/* Listen flags. */
/* The allow rule does not pass a peer for having this process's effective uid (C++ AllowRule::same_uid
 * false): only the uids and gids listed pass. */
#define ET_LISTEN_NO_SAME_UID 1u

/* Options of et_channel_listener_create (C++ ListenOptions). */
typedef struct et_channel_listen_options {
  uint32_t struct_size;
  uint32_t mode;              /* permission bits of the socket file, at most 0777; 0 = 0600 (owner only) */
  uint32_t flags;             /* ET_LISTEN_* bits; others must be zero */
  int32_t backlog;            /* connections queued before accept, 1 to 4096; 0 = 16 */
  uint32_t uid_count;         /* entries of uids */
  uint32_t gid_count;         /* entries of gids */
  const uint32_t* uids;       /* peers with any of these uids pass (NULL when uid_count is 0) */
  ET_C_POINTER_PAD_(uids_pad_)
  const uint32_t* gids;       /* peers whose primary gid is one of these pass (NULL when gid_count is 0) */
  ET_C_POINTER_PAD_(gids_pad_)
} et_channel_listen_options;
#define ET_CHANNEL_LISTEN_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_channel_listen_options))

/* Binds `path` ('@' first: an abstract name, no file) and listens. A stale socket file (its listener died)
 * is replaced; a live one or a file of another kind is never touched. Errors: ET_INVALID_ARGUMENT (NULL,
 * empty path, a path longer than sun_path, mode above 0777, backlog out of range, bad options, a count
 * with a NULL array), ET_ALREADY_EXISTS (a live listener has the path, or it is not a socket), bind's,
 * chmod's and listen's errors. */
ET_C_API et_status et_channel_listener_create(const char* path, const et_channel_listen_options* options,
                                              et_channel_listener** out);
ET_C_API et_channel_listener* et_channel_listener_retain(et_channel_listener* listener);
/* The last release closes the socket and unlinks its file (if the path still names it). */
ET_C_API void et_channel_listener_release(et_channel_listener* listener);
/* The next allowed peer's connected socket into *out_fd (the caller's, CLOEXEC: hand it to
 * et_channel_sender_create_adopt or _receiver_create_adopt), waiting at most `timeout_ms`. A refused
 * peer is told why (its receive fails with ET_PERMISSION_DENIED), closed, logged and counted
 * (et_channel_listener_get_stats), and the wait goes on. Errors:
 * ET_INVALID_ARGUMENT (NULL, a bad timeout), ET_BUSY (no allowed peer in time), accept's error. */
ET_C_API et_status et_channel_listener_accept(et_channel_listener* listener, int32_t timeout_ms, int32_t* out_fd);
/* The listening socket (still the listener's, O_NONBLOCK: do not close it) for poll(2): POLLIN, then
 * accept with timeout 0. Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_channel_listener_get_fd(const et_channel_listener* listener, int32_t* out_borrowed_fd);
/* The path given to create (NUL-terminated; valid until the listener's last release). Errors:
 * ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_channel_listener_get_path(const et_channel_listener* listener, const char** out_path);

/* A listener's counters (output struct: set struct_size first). */
typedef struct et_channel_listener_stats {
  uint32_t struct_size;
  uint32_t has_last_refused;  /* 1 when a peer was refused: the last_refused_* fields are its credentials */
  uint64_t accepted;          /* peers accepted */
  uint64_t refused;           /* peers refused by the allow rule */
  uint64_t gone;              /* peers that hung up before accept took them */
  int32_t last_refused_pid;
  uint32_t last_refused_uid;
  uint32_t last_refused_gid;
  uint32_t reserved;          /* zero */
} et_channel_listener_stats;
#define ET_CHANNEL_LISTENER_STATS_SIZE_VER0 ((uint32_t)sizeof(et_channel_listener_stats))
/* Fills *stats. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_channel_listener_get_stats(const et_channel_listener* listener, et_channel_listener_stats* stats);

/* Connects to a listener's `path` ('@' first: an abstract name); *out_fd is the connected socket (the
 * caller's, CLOEXEC). Waits at most `timeout_ms` while the listener's queue is full. Errors:
 * ET_INVALID_ARGUMENT (NULL, path as et_channel_listener_create, a bad timeout), ET_NOT_FOUND (no such
 * file), ET_UNAVAILABLE (nobody listens), ET_PERMISSION_DENIED (the file's mode), ET_BUSY (queue full). */
ET_C_API et_status et_channel_connect(const char* path, int32_t timeout_ms, int32_t* out_fd);

/* ---- Sender ---- */
typedef struct et_channel_sender et_channel_sender;

/* What a send does when the receiver holds max_frames_out frames, every announced buffer or a full socket. */
#define ET_CHANNEL_POLICY_BLOCK 0 /* back-pressure: the send waits for a release, at most the send timeout, then ET_BUSY */
#define ET_CHANNEL_POLICY_DROP 1  /* never waits: the frame is not sent to it (counted in frames_dropped) */

/* Sender flags. */
/* A receiver's own request (et_channel_receiver_options.use_policy) is ignored: this policy and limit stand
 * (C++ SenderOptions::receiver_may_choose false). */
#define ET_CHANNEL_SENDER_FIXED_POLICY 1u

/* Options of et_channel_sender_create_adopt (C++ SenderOptions). */
typedef struct et_channel_sender_options {
  uint32_t struct_size;
  int32_t policy;             /* ET_CHANNEL_POLICY_*; 0 = BLOCK */
  uint32_t max_buffers;       /* buffers announced at once, 1 to 1024; 0 = 32 */
  uint32_t use_send_timeout;  /* 0: the default, 1000 ms; 1: send_timeout_ms */
  int32_t send_timeout_ms;    /* with use_send_timeout: the longest wait of a send (0: none; ET_WAIT_FOREVER) */
  uint32_t flags;             /* ET_CHANNEL_SENDER_* bits; others must be zero */
  uint64_t max_frames_out;    /* frames the receiver may hold before the policy applies, up to 2^20; 0 = no
                                 limit but the buffer table */
  const char* name;           /* NULL or "" = none; names the channel in errors */
  ET_C_POINTER_PAD_(name_pad_)
} et_channel_sender_options;
#define ET_CHANNEL_SENDER_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_channel_sender_options))

/* Bits of et_channel_send_options.has and et_channel_delivery.has: which optional fields are set. */
#define ET_CHANNEL_HAS_SEQUENCE 1u  /* send only: unset, the previous sequence + 1 (0 first) */
#define ET_CHANNEL_HAS_TIMESTAMP 2u /* send only: unset, CLOCK_MONOTONIC read at send */
#define ET_CHANNEL_HAS_PTS 4u
#define ET_CHANNEL_HAS_DURATION 8u

/* Per-frame values of a send (C++ SendOptions); NULL: all unset. */
typedef struct et_channel_send_options {
  uint32_t struct_size;
  uint32_t has;           /* ET_CHANNEL_HAS_* bits; others must be zero */
  uint32_t flags;         /* the caller's per-frame flags (e.g. GstBufferFlags), carried unchanged */
  uint32_t reserved;      /* zero */
  uint64_t sequence;      /* greater than every sequence sent before on this channel */
  int64_t timestamp_ns;   /* CLOCK_MONOTONIC, ns (e.g. the capture time) */
  int64_t pts_ns;         /* presentation time on the producer's timeline, ns; INT64_MIN is refused */
  int64_t duration_ns;    /* ns, >= 0 */
  /* 0.4: acquire fences (C++ SendOptions::acquire_fences, docs/CHANNEL.md "Fences"): the device work that
   * writes the frame, which the receiver's maps wait for. acquire_fence_count handles, borrowed for the call
   * (the receiver gets its own copy of each fd): 0, 1 (for every buffer) or one per buffer in the frame's
   * buffer order (a tensor has 1), at most ET_MAX_PLANES; a NULL entry or a signalled fence sends nothing
   * for its buffer. A receiver without the fence capability gets none: the send waits on them instead, at
   * most the send timeout (ET_TIMEOUT), and sends the frame without them. */
  const et_fence* const* acquire_fences;
  ET_C_POINTER_PAD_(acquire_fences_pad_)
  uint32_t acquire_fence_count;
  uint32_t reserved2;     /* zero */
} et_channel_send_options;
#define ET_CHANNEL_SEND_OPTIONS_SIZE_VER0 48u /* 0.3: up to duration_ns */
#define ET_CHANNEL_SEND_OPTIONS_SIZE_VER1 ((uint32_t)sizeof(et_channel_send_options)) /* 0.4: acquire fences */

/* Takes `socket_fd` (a connected AF_UNIX SOCK_SEQPACKET socket): on success the sender owns it and closes it at
 * its last release; on every failure, argument errors included, it is closed before the call returns (a
 * negative fd is left alone). Starts the sender's thread that reads releases. Errors: ET_INVALID_ARGUMENT
 * (NULL out, a negative fd, another socket type or no socket, naming it; bad options or policy; max_buffers
 * or max_frames_out out of range), ET_INTERNAL (the thread could not start). */
ET_C_API et_status et_channel_sender_create_adopt(int32_t socket_fd, const et_channel_sender_options* options,
                                                  et_channel_sender** out);
ET_C_API et_channel_sender* et_channel_sender_retain(et_channel_sender* sender);
/* The last release shuts the socket down (the receiver sees the channel end; frames it holds stay valid),
 * stops the thread and drops the buffers held for frames out (a pool has them back). It never waits
 * on the receiver: call et_channel_sender_end_stream and _drain first for a clean stop. */
ET_C_API void et_channel_sender_release(et_channel_sender* sender);
/* Sends `tensor` as one frame (a memfd sealed against shrinking or a DMA-BUF, as et_ipc_send_tensor) and
 * holds its buffer until the receiver releases the frame; *out_sequence is the frame's sequence. Under
 * ET_CHANNEL_POLICY_DROP a frame the receiver cannot take is not sent, and still gives ET_OK and its
 * sequence (et_channel_sender_stats.frames_dropped counts it). Errors: ET_INVALID_ARGUMENT (a NULL
 * sender, tensor or out_sequence; bad options, a sequence not increasing, a negative duration, pts
 * INT64_MIN), ET_FAILED_PRECONDITION (zero
 * elements, the channel closed, the stream ended), ET_UNSUPPORTED (heap, PBO or unsealed shm memory),
 * ET_BUSY (BLOCK: no release or no room in the socket within the send timeout), ET_UNAVAILABLE (the
 * receiver is gone), sendmsg's error (the channel closes). */
ET_C_API et_status et_channel_sender_send(et_channel_sender* sender, const et_tensor* tensor,
                                          const et_channel_send_options* options, uint64_t* out_sequence);
/* As et_channel_sender_send, for a frame of 1 to 4 buffers. */
ET_C_API et_status et_channel_sender_send_frame(et_channel_sender* sender, const et_frame* frame,
                                                const et_channel_send_options* options, uint64_t* out_sequence);
/* et_pool_acquire(pool) waiting at most `timeout_ms`, which also tells the sender the pool's size (its
 * buffer table grows to it: each pool buffer is announced once); on ET_BUSY the message names the frames
 * the receiver holds. Errors: ET_INVALID_ARGUMENT (NULL, a bad timeout), then et_pool_acquire's. */
ET_C_API et_status et_channel_sender_acquire(et_channel_sender* sender, et_pool* pool, int32_t timeout_ms,
                                             et_tensor** out);
/* Waits until the receiver has released every frame sent, at most `timeout_ms`. Errors: ET_INVALID_ARGUMENT
 * (NULL, a bad timeout), ET_BUSY (frames still out, naming how many), the channel's closing error. */
ET_C_API et_status et_channel_sender_drain(et_channel_sender* sender, int32_t timeout_ms);
/* Ends the stream: after the frames sent before it, the receiver's receive answers end_of_stream (not an
 * error); later sends fail; again: nothing. Call it before drain: a consumer that holds frames until its
 * next one then drops them. Waits at most the send timeout for room. Errors: ET_INVALID_ARGUMENT (NULL),
 * ET_BUSY (the socket stayed full: not ended, call again), the channel's closing error. */
ET_C_API et_status et_channel_sender_end_stream(et_channel_sender* sender);

/* How often a wait check runs while a channel send waits (C++ channel::kWaitCheckInterval). */
#define ET_CHANNEL_WAIT_CHECK_INTERVAL_MS 50
/* A wait check (et_channel_set_wait_check): returns 0 to wait on, anything else to stop the waiting call. It
 * runs on the waiting thread with no lock of the channel held, and must not call the channel it stops. */
typedef int (*et_channel_wait_check_fn)(void* user_data);
/* Makes the calling thread's sends stoppable from outside (a GStreamer element's unlock, a flag a signal
 * handler sets), as C++ channel::ScopedWaitCheck does. While `check` is set, et_channel_sender_send,
 * _send_frame and _end_stream and et_channel_publisher_send, _send_frame and _end_stream made on this thread
 * wait for a receiver (room in its buffer table, its frame limit, room in its socket) in slices of at most
 * ET_CHANNEL_WAIT_CHECK_INTERVAL_MS and call check(user_data) after each slice and when a signal interrupts
 * the wait. A non-zero return ends the call with ET_BUSY and et_last_error_errno() ECANCELED (a send timeout
 * gives ETIMEDOUT), undone as a timeout is: the frame does not go out to that receiver and the channel stays
 * open (a later send works); a publisher stops at that receiver (those served before it have the frame, the
 * ones after it do not). A NULL `check` clears it; setting one replaces the thread's check. It affects only
 * the calling thread; a check still set when the thread ends is dropped then. Do not set or clear it while
 * a C++ ScopedWaitCheck made later on the same thread lives (they nest, latest first). 0.7.4. Errors: none. */
ET_C_API et_status et_channel_set_wait_check(et_channel_wait_check_fn check, void* user_data);

/* A sender's counters (output struct: set struct_size first). */
typedef struct et_channel_sender_stats {
  uint32_t struct_size;
  uint32_t reserved;           /* zero */
  uint64_t frames_sent;
  uint64_t releases;           /* frame buffers released by the receiver */
  uint64_t announces;          /* buffers announced (an fd sent each) */
  uint64_t retires;
  uint64_t buffers_announced;  /* now */
  uint64_t frames_out;         /* frame buffers sent and not released */
  uint64_t reannounces;        /* buffers announced again after a retire: a table smaller than the pool */
  uint64_t frames_dropped;     /* ET_CHANNEL_POLICY_DROP: frames not sent */
  /* 0.4 */
  uint64_t acquire_fences_sent;    /* acquire fence fds sent with frames */
  uint64_t acquire_fences_waited;  /* acquire fences waited on here (the receiver lacks the capability) */
  uint64_t release_fences;         /* release fences received with releases */
} et_channel_sender_stats;
#define ET_CHANNEL_SENDER_STATS_SIZE_VER0 72u /* 0.3: up to frames_dropped */
#define ET_CHANNEL_SENDER_STATS_SIZE_VER1 ((uint32_t)sizeof(et_channel_sender_stats)) /* 0.4: fence counters */
/* Fills *stats. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_channel_sender_get_stats(const et_channel_sender* sender, et_channel_sender_stats* stats);
/* ET_OK while the channel is open; else why it closed (that error, recorded as the last error).
 * Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_channel_sender_status(const et_channel_sender* sender);

/* ---- Receiver ---- */
typedef struct et_channel_receiver et_channel_receiver;

/* Options of et_channel_receiver_create_adopt (C++ ReceiverOptions). */
typedef struct et_channel_receiver_options {
  uint32_t struct_size;
  uint32_t max_buffers;          /* buffers imported at once, 1 to 1024 (one fd and mapping each); 0 = 32 */
  uint64_t max_buffer_bytes;     /* largest buffer accepted; 0 = the C++ default (64 GiB; 1 GiB on 32-bit) */
  uint64_t max_queued_releases;  /* releases queued while the sender does not read, 1 to 2^20; 0 = 4096 */
  const char* name;              /* NULL or "" = none; names the channel in errors */
  ET_C_POINTER_PAD_(name_pad_)
  uint32_t use_policy;           /* 0: the sender's choice; 1: ask the sender for `policy` and `max_frames_out`
                                    (granted unless it set ET_CHANNEL_SENDER_FIXED_POLICY) */
  int32_t policy;                /* with use_policy: ET_CHANNEL_POLICY_* (DROP for a latest-frame consumer) */
  uint64_t max_frames_out;       /* with use_policy: frames this receiver may hold, up to 2^20 (0: the table) */
} et_channel_receiver_options;
#define ET_CHANNEL_RECEIVER_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_channel_receiver_options))

/* A fence handle in an array of the same layout on 32- and 64-bit targets. */
typedef struct et_fence_slot {
  et_fence* fence;
  ET_C_POINTER_PAD_(fence_pad_)
} et_fence_slot;

/* One delivery (output struct: set struct_size first): a tensor (sent with et_channel_sender_send), a frame
 * (_send_frame) or, with end_of_stream 1, the end of the stream (both NULL). The tensor or frame handle is
 * the caller's: its last release (and that of every view, map or plane taken from it) releases the frame
 * to the sender. */
typedef struct et_channel_delivery {
  uint32_t struct_size;
  uint32_t has;            /* ET_CHANNEL_HAS_PTS, ET_CHANNEL_HAS_DURATION: which of those fields are set */
  uint64_t sequence;       /* end of stream: the number of frames the sender sent */
  int64_t timestamp_ns;    /* the sender's CLOCK_MONOTONIC, ns */
  int64_t pts_ns;          /* with ET_CHANNEL_HAS_PTS; else 0 */
  int64_t duration_ns;     /* with ET_CHANNEL_HAS_DURATION; else 0 */
  uint32_t flags;          /* the sender's per-frame flags, unchanged */
  uint32_t end_of_stream;  /* 1: the sender ended the stream; no frame follows */
  et_tensor* tensor;       /* NULL for a frame and for the end of stream */
  ET_C_POINTER_PAD_(tensor_pad_)
  et_frame* frame;         /* NULL for a tensor and for the end of stream */
  ET_C_POINTER_PAD_(frame_pad_)
  /* 0.4: the sender's acquire fences (C++ Delivery::acquire_fences): 0 when none came, else one per buffer
   * (entry b: the frame's buffer b, as et_frame_buffer; 0 for a tensor), NULL for a buffer without one.
   * Borrowed: valid until the last release of this delivery's tensor or frame handle (et_fence_retain keeps
   * one longer). Every CPU map of the buffer waits for its fence first, so a consumer that only maps needs
   * none of them; one that hands the buffer to its own device API hands it the fence. */
  uint32_t acquire_fence_count;
  uint32_t reserved;       /* zero */
  et_fence_slot acquire_fences[ET_MAX_PLANES];
} et_channel_delivery;
#define ET_CHANNEL_DELIVERY_SIZE_VER0 64u /* 0.3: up to frame */
#define ET_CHANNEL_DELIVERY_SIZE_VER1 ((uint32_t)sizeof(et_channel_delivery)) /* 0.4: acquire fences */

/* Takes `socket_fd` as et_channel_sender_create_adopt does (closed on every failure). Errors:
 * ET_INVALID_ARGUMENT (NULL out, a negative fd, another socket type, bad options, limits out of range),
 * eventfd's error. */
ET_C_API et_status et_channel_receiver_create_adopt(int32_t socket_fd, const et_channel_receiver_options* options,
                                                    et_channel_receiver** out);
ET_C_API et_channel_receiver* et_channel_receiver_retain(et_channel_receiver* receiver);
/* The last release closes the socket (the sender sees the end) and every import; tensors and frames
 * delivered stay valid. */
ET_C_API void et_channel_receiver_release(et_channel_receiver* receiver);
/* The next frame into *out, waiting at most `timeout_ms`. After the sender's end of stream: end_of_stream
 * 1, on every later call (ET_OK). A failure leaves *out zeroed (handles NULL) once its struct_size was
 * accepted. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size, a bad timeout: the channel stays open; a
 * malformed message), ET_BUSY (no frame in time: the channel stays open), ET_UNAVAILABLE (the sender
 * closed or died), ET_FAILED_PRECONDITION (closed before), ET_OUT_OF_RANGE (a buffer past the limits); a
 * refusal by the producer, with its reason (docs/WIRE.md, refuse): ET_PERMISSION_DENIED with
 * et_last_error_errno() EACCES (not allowed to connect), ET_OUT_OF_RANGE with EUSERS (its receiver limit).
 * All but ET_BUSY and argument errors close the channel. Threads: one receive at a time (others wait). */
ET_C_API et_status et_channel_receiver_receive(et_channel_receiver* receiver, int32_t timeout_ms,
                                               et_channel_delivery* out);
/* As et_channel_receiver_receive, but the newest frame: every older frame already there is released at once
 * (et_channel_receiver_stats.frames_skipped). An end of stream or error behind it answers the next call. */
ET_C_API et_status et_channel_receiver_receive_latest(et_channel_receiver* receiver, int32_t timeout_ms,
                                                      et_channel_delivery* out);
/* Attaches `fence` (borrowed: the library keeps its own copy) to the release of `tensor`'s frame buffer (any
 * handle, view or plane of a tensor this receiver delivered, or an et_frame_buffer of a delivered frame): the
 * consumer's device still reads the buffer, so the sender's pool hands it out again only once the fence has
 * signalled (C++ Receiver::add_release_fence, docs/CHANNEL.md "Fences"). The release still goes at the last
 * release of the tensor's holders, with the fence; a second fence is merged with the first; a signalled
 * fence adds nothing. Errors: ET_INVALID_ARGUMENT (NULL; a tensor this receiver did not deliver),
 * ET_UNSUPPORTED (the sender lacks the fence capability: wait on the fence before releasing the tensor
 * instead), ET_FAILED_PRECONDITION (the channel closed), ET_BUSY (EMFILE), the merge's error. */
ET_C_API et_status et_channel_receiver_add_release_fence(et_channel_receiver* receiver, const et_tensor* tensor,
                                                         const et_fence* fence);
/* As et_channel_receiver_add_release_fence, for every buffer of a delivered frame. */
ET_C_API et_status et_channel_receiver_add_release_fence_frame(et_channel_receiver* receiver, const et_frame* frame,
                                                               const et_fence* fence);
/* Sends the releases queued while the sender's socket was full, without waiting. Errors: ET_INVALID_ARGUMENT
 * (NULL), the channel's closing error, sendmsg's error (the channel closes). */
ET_C_API et_status et_channel_receiver_flush(et_channel_receiver* receiver);
/* The channel's socket (still the receiver's: never read, write or close it) for poll(2): POLLIN (a
 * message, or the channel's end), then receive with timeout 0, which may still answer ET_BUSY (the message
 * was no frame). Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_channel_receiver_get_fd(const et_channel_receiver* receiver, int32_t* out_borrowed_fd);

/* A receiver's counters (output struct: set struct_size first). */
typedef struct et_channel_receiver_stats {
  uint32_t struct_size;
  uint32_t end_of_stream;     /* 1: the end of stream arrived */
  uint64_t frames_received;
  uint64_t releases_sent;
  uint64_t announces;         /* buffers imported */
  uint64_t retires;
  uint64_t buffers;           /* imported now */
  uint64_t frames_out;        /* delivered frame buffers still held */
  uint64_t releases_queued;   /* not sent yet */
  uint64_t frames_skipped;    /* released unseen by receive_latest */
  uint64_t frames_missing;    /* gaps between the sequences delivered (the sender's drops) */
  /* 0.4 */
  uint64_t acquire_fences;       /* acquire fences received with frames */
  uint64_t release_fences_sent;  /* release fence fds sent with releases */
} et_channel_receiver_stats;
#define ET_CHANNEL_RECEIVER_STATS_SIZE_VER0 80u /* 0.3: up to frames_missing */
#define ET_CHANNEL_RECEIVER_STATS_SIZE_VER1 ((uint32_t)sizeof(et_channel_receiver_stats)) /* 0.4: fence counters */
/* Fills *stats. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_channel_receiver_get_stats(const et_channel_receiver* receiver,
                                                 et_channel_receiver_stats* stats);
/* ET_OK while the channel is open; else why it closed (recorded as the last error). Errors:
 * ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_channel_receiver_status(const et_channel_receiver* receiver);

/* ---- Publisher: one producer, many receivers (C++ channel::Publisher, docs/CHANNEL.md "Many receivers") */
/* Each receiver has its own socket and its own sender inside (policy, frame limit, buffer table, counters);
 * a frame goes to every receiver with one sequence, and a buffer goes back to its pool once every receiver
 * it was sent to has released it (or left). A receiver that closes or dies is removed at the next send.
 * Pool size for a producer that never waits in acquire: the sum over receivers of max_frames_out x buffers
 * per frame + the buffers the producer holds at once. Thread-safe, reference-counted. */
typedef struct et_channel_publisher et_channel_publisher;

/* Most receivers one publisher serves. */
#define ET_CHANNEL_MAX_RECEIVERS 1024u

/* Options of et_channel_publisher_create / _listen (C++ PublisherOptions). */
typedef struct et_channel_publisher_options {
  uint32_t struct_size;
  uint32_t max_receivers;                      /* 1 to ET_CHANNEL_MAX_RECEIVERS; 0 = 64 */
  const char* name;                            /* NULL or "" = none; names the channel in errors and logs */
  ET_C_POINTER_PAD_(name_pad_)
  /* Options of every receiver added without its own and of every accepted peer (NULL: defaults); their
   * name is replaced by "<name> receiver <id>". */
  const et_channel_sender_options* receiver;
  ET_C_POINTER_PAD_(receiver_pad_)
} et_channel_publisher_options;
#define ET_CHANNEL_PUBLISHER_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_channel_publisher_options))

/* A publisher with no receivers (et_channel_publisher_add_receiver_adopt adds them). Errors:
 * ET_INVALID_ARGUMENT (NULL out, bad options, max_receivers or the receiver options out of range). */
ET_C_API et_status et_channel_publisher_create(const et_channel_publisher_options* options, et_channel_publisher** out);
/* A publisher that listens on `path` (as et_channel_listener_create, with `listen` options) and accepts
 * receivers on its own thread while it lives. Errors: as create and et_channel_listener_create,
 * ET_INTERNAL (the thread could not start). */
ET_C_API et_status et_channel_publisher_listen(const char* path, const et_channel_listen_options* listen,
                                               const et_channel_publisher_options* options,
                                               et_channel_publisher** out);
ET_C_API et_channel_publisher* et_channel_publisher_retain(et_channel_publisher* publisher);
/* The last release stops accepting, then closes every receiver as a sender's last release does. */
ET_C_API void et_channel_publisher_release(et_channel_publisher* publisher);
/* Serves a receiver on `socket_fd`, taken on every path as et_channel_sender_create_adopt takes it, with
 * `options` (NULL: the publisher's receiver options); *out_id is its id (1 first, never reused). After
 * end_stream the receiver gets the end of stream at once. Errors: ET_INVALID_ARGUMENT (NULL, a negative fd,
 * bad options, not a connected SEQPACKET socket), ET_OUT_OF_RANGE (max_receivers served). */
ET_C_API et_status et_channel_publisher_add_receiver_adopt(et_channel_publisher* publisher, int32_t socket_fd,
                                                           const et_channel_sender_options* options,
                                                           uint64_t* out_id);

/* What one publish did (output struct: set struct_size first). */
typedef struct et_channel_publish_result {
  uint32_t struct_size;
  uint32_t reserved;   /* zero */
  uint64_t sequence;   /* the frame's sequence, the same on every receiver */
  uint64_t delivered;  /* receivers it was sent to */
  uint64_t dropped;    /* receivers that did not get it (DROP at the limit, BLOCK past its send timeout) */
  uint64_t removed;    /* receivers found closed and removed by this send */
} et_channel_publish_result;
#define ET_CHANNEL_PUBLISH_RESULT_SIZE_VER0 ((uint32_t)sizeof(et_channel_publish_result))

/* Sends `tensor` to every receiver (0 receivers: ET_OK, its sequence used). A receiver's busy or drop is
 * counted in *out, not an error. Errors: ET_INVALID_ARGUMENT (NULL, bad options or struct_size, timing,
 * a sequence not increasing), ET_FAILED_PRECONDITION (zero elements, after end_stream), ET_UNSUPPORTED
 * (memory that cannot cross). */
ET_C_API et_status et_channel_publisher_send(et_channel_publisher* publisher, const et_tensor* tensor,
                                             const et_channel_send_options* options, et_channel_publish_result* out);
/* As et_channel_publisher_send, for a frame. */
ET_C_API et_status et_channel_publisher_send_frame(et_channel_publisher* publisher, const et_frame* frame,
                                                   const et_channel_send_options* options,
                                                   et_channel_publish_result* out);
/* et_pool_acquire(pool) at most `timeout_ms`, after sizing every receiver's buffer table to the pool; on
 * ET_BUSY the message names the receivers holding frames. Errors: ET_INVALID_ARGUMENT (NULL, a bad timeout),
 * then et_pool_acquire's. */
ET_C_API et_status et_channel_publisher_acquire(et_channel_publisher* publisher, et_pool* pool, int32_t timeout_ms,
                                                et_tensor** out);
/* Ends the stream on every receiver, and on every later one at once; later sends fail. Errors:
 * ET_INVALID_ARGUMENT (NULL), ET_BUSY (a receiver's socket stayed full: call again). */
ET_C_API et_status et_channel_publisher_end_stream(et_channel_publisher* publisher);
/* Waits until every receiver has released every frame, at most `timeout_ms` in all. Errors:
 * ET_INVALID_ARGUMENT (NULL, a bad timeout), ET_BUSY (frames still out, naming the receivers). */
ET_C_API et_status et_channel_publisher_drain(et_channel_publisher* publisher, int32_t timeout_ms);
/* Closes receiver `id`; its frames out count as released, so a pool may hand their buffers out again
 * while that process still maps them. Errors: ET_INVALID_ARGUMENT (NULL), ET_NOT_FOUND (no receiver `id`). */
ET_C_API et_status et_channel_publisher_disconnect(et_channel_publisher* publisher, uint64_t id);

/* One receiver of a publisher (output struct: set struct_size first). */
typedef struct et_channel_receiver_info {
  uint32_t struct_size;
  int32_t policy;                   /* ET_CHANNEL_POLICY_* in force (the receiver's request, if granted) */
  uint64_t id;
  uint64_t max_frames_out;          /* in force */
  uint32_t has_peer;                /* 1: the peer_* fields are the socket's SO_PEERCRED */
  int32_t peer_pid;
  uint32_t peer_uid;
  uint32_t peer_gid;
  /* Its sender's counters; stats.struct_size is set to what the caller's element holds of them (an older
   * caller's element ends with frames_dropped). */
  et_channel_sender_stats stats;
} et_channel_receiver_info;
#define ET_CHANNEL_RECEIVER_INFO_SIZE_VER0 112u /* 0.3: stats up to frames_dropped */
#define ET_CHANNEL_RECEIVER_INFO_SIZE_VER1 ((uint32_t)sizeof(et_channel_receiver_info)) /* 0.4: its stats grew */

/* The receivers served now, in the order they joined: the first min(capacity, count) into `infos`, an array
 * whose element size is infos[0].struct_size (set it on the first; the library sets it on the others), and
 * the number served into *out_count (call again with a larger array when it is above capacity). `infos`
 * may be NULL when capacity is 0. Errors: ET_INVALID_ARGUMENT (NULL publisher or out_count, NULL infos with
 * capacity > 0, bad struct_size). */
ET_C_API et_status et_channel_publisher_get_receivers(const et_channel_publisher* publisher,
                                                      et_channel_receiver_info* infos, uint32_t capacity,
                                                      uint32_t* out_count);

/* A publisher's counters (output struct: set struct_size first). */
typedef struct et_channel_publisher_stats {
  uint32_t struct_size;
  uint32_t reserved;            /* zero */
  uint64_t frames_published;    /* sequences used (0 receivers included) */
  uint64_t deliveries;          /* frames sent, summed over receivers */
  uint64_t drops;               /* frames a receiver did not get, summed over receivers */
  uint64_t receivers_joined;
  uint64_t receivers_left;      /* closed by their peer, failed, or disconnected */
  uint64_t receivers_refused;   /* peers refused, each told why: past max_receivers, or by _listen's allow rule */
  uint64_t receivers;           /* served now */
} et_channel_publisher_stats;
#define ET_CHANNEL_PUBLISHER_STATS_SIZE_VER0 ((uint32_t)sizeof(et_channel_publisher_stats))
/* Fills *stats. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_channel_publisher_get_stats(const et_channel_publisher* publisher,
                                                  et_channel_publisher_stats* stats);
/* The path given to _listen ("" otherwise; valid until the last release). Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_channel_publisher_get_path(const et_channel_publisher* publisher, const char** out_path);

/* ---- CUDA (C++ cuda::, include/edgetensor/cuda.h, docs/CUDA.md) --------------------------------- */
/* libcudart is loaded with dlopen on the first CUDA call of the process and never linked (EDGETENSOR_CUDART=<path>
 * loads that file only, EDGETENSOR_DISABLE_CUDA=1 none; both read once per process: docs/CUDA.md, "The loader, errors,
 * fork and threads"). Without a usable runtime, driver or device, every call below that reaches CUDA (a stream's create
 * and synchronize, a map, its record and wait) fails with ET_UNAVAILABLE, the message saying why, and the report says
 * so; in the child of a fork() made after CUDA was loaded, with ET_FAILED_PRECONDITION (CUDA state does not survive
 * fork). A CUDA error keeps its name, number and text in the message ("cudaErrorInsufficientDriver (35): ..."; CUDA
 * Runtime API, "Error Handling"), its status as docs/CUDA.md maps it (ET_OUT_OF_MEMORY for cudaErrorMemoryAllocation,
 * ET_INTERNAL for one without a mapping). CUDA calls run on the calling thread and use its current device
 * (cudaGetDevice) unless a device is given. Versions are 1000 x major + 10 x minor (13000 = 13.0), as
 * cudaRuntimeGetVersion and cudaDriverGetVersion give them (CUDA Runtime API, "Version Management"). */

/* What the CUDA runtime offers this process (C++ cuda::RuntimeReport; output struct: set struct_size first).
 * Computed once per process, on the first call, except forked_child (and with it available and error),
 * which follows the calling process. Strings are NUL-terminated UTF-8 of static storage: valid until the
 * process ends, never freed by the caller. */
typedef struct et_cuda_report {
  uint32_t struct_size;
  uint32_t available;        /* 1: a runtime loaded, its driver answers, >= 1 device, not a fork child (each
                                path may still be off: unavailable_paths) */
  int32_t runtime_version;   /* cudaRuntimeGetVersion; 0 when no runtime answered */
  int32_t driver_version;    /* cudaDriverGetVersion; 0 = no CUDA driver installed */
  int32_t device_count;      /* cudaGetDeviceCount; 0 when it failed */
  uint32_t forked_child;     /* 1: this process is a fork() child of the process that loaded CUDA */
  const char* error;         /* why unavailable (CUDA error name, number and text, or the loader's reason:
                                every file tried); "" when available */
  ET_C_POINTER_PAD_(error_pad_)
  const char* runtime_file;  /* full path of the loaded runtime (dlinfo); "" when none loaded */
  ET_C_POINTER_PAD_(runtime_file_pad_)
  /* While available: one line per ET_CUDA_PATH_* that cannot work here, "<et_cuda_path_name>: <reason>",
   * lines separated by '\n'; "" when every path can (or CUDA is unavailable: error says why). */
  const char* unavailable_paths;
  ET_C_POINTER_PAD_(unavailable_paths_pad_)
  /* One line for a log: "CUDA 13.0 runtime (<file>), driver none, 0 device(s): unavailable: <error>", or
   * "CUDA unavailable: <error>" when no runtime answered. */
  const char* summary;
  ET_C_POINTER_PAD_(summary_pad_)
} et_cuda_report;
#define ET_CUDA_REPORT_SIZE_VER0 ((uint32_t)sizeof(et_cuda_report))

/* Fills *report; loads the runtime on the first CUDA call of the process (a dlopen and a few queries: not for
 * a hot path the first time, a copy afterwards). An unusable CUDA is a report with available 0, not an
 * error. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_cuda_get_report(et_cuda_report* report);
/* 1 when et_cuda_get_report would give available 1, else 0; cheap after the first CUDA call. Never fails. */
ET_C_API uint32_t et_cuda_available(void);

/* One CUDA device (C++ cuda::DeviceInfo; output struct: set struct_size first). */
typedef struct et_cuda_device_info {
  uint32_t struct_size;
  int32_t ordinal;                    /* the CUDA device number */
  uint64_t total_memory_bytes;        /* cuDeviceTotalMem; 0 when the driver API was unreachable */
  int32_t compute_capability_major;   /* cudaDevAttrComputeCapabilityMajor */
  int32_t compute_capability_minor;   /* cudaDevAttrComputeCapabilityMinor */
  uint32_t integrated;                /* 1: shares memory with the CPU (Jetson); cudaDevAttrIntegrated */
  uint32_t can_map_host_memory;       /* 1: cudaDevAttrCanMapHostMemory */
  char name[256];                     /* cuDeviceGetName, NUL-terminated; "" when unreachable */
} et_cuda_device_info;
#define ET_CUDA_DEVICE_INFO_SIZE_VER0 ((uint32_t)sizeof(et_cuda_device_info))

/* The devices of the report (none while CUDA is unavailable), in ordinal order: the first min(capacity,
 * count) into `infos`, an array whose element size is infos[0].struct_size (set it on the first; the library
 * sets it on the others), and their number into *out_count (call again with a larger array when it is above
 * capacity). `infos` may be NULL when capacity is 0. Errors: ET_INVALID_ARGUMENT (NULL out_count, NULL infos
 * with capacity > 0, bad struct_size). */
ET_C_API et_status et_cuda_get_devices(et_cuda_device_info* infos, uint32_t capacity, uint32_t* out_count);

/* How a storage is reached from CUDA (C++ cuda::CudaPath). */
#define ET_CUDA_PATH_HOST_REGISTERED 0     /* heap, shm: cudaHostRegister(Mapped|Portable), cudaHostGetDevicePointer */
#define ET_CUDA_PATH_EXTERNAL_OPAQUE_FD 1  /* DMA-BUF: cudaImportExternalMemory(OpaqueFd) */
#define ET_CUDA_PATH_EXTERNAL_DMABUF 2     /* DMA-BUF: cuImportExternalMemory(..._HANDLE_TYPE_DMABUF_FD) */
#define ET_CUDA_PATH_GL_BUFFER 3           /* GL PBO: cudaGraphicsGLRegisterBuffer */
/* "host-registered", "external-opaque-fd", "external-dmabuf", "gl-buffer"; "unknown" otherwise. Static
 * storage. */
ET_C_API const char* et_cuda_path_name(int32_t path);

/* ---- CUDA streams ---- */
/* A CUDA stream (C++ cuda::Stream): created with cudaStreamCreateWithFlags(cudaStreamNonBlocking), destroyed
 * with cudaStreamDestroy at the last release (no CUDA call in a fork child). Reference-counted as the other
 * handles. */
typedef struct et_cuda_stream et_cuda_stream;

/* A new stream into *out. Errors: ET_INVALID_ARGUMENT (NULL out), ET_UNAVAILABLE, ET_FAILED_PRECONDITION
 * (fork child), the CUDA error of cudaStreamCreateWithFlags. */
ET_C_API et_status et_cuda_stream_create(et_cuda_stream** out);
ET_C_API et_cuda_stream* et_cuda_stream_retain(et_cuda_stream* stream);
/* The last release destroys the stream (cudaStreamDestroy: work queued on it still completes). */
ET_C_API void et_cuda_stream_release(et_cuda_stream* stream);
/* Blocks until all work queued on the stream is complete (cudaStreamSynchronize). Errors: ET_INVALID_ARGUMENT
 * (NULL), ET_UNAVAILABLE, ET_FAILED_PRECONDITION (fork child), the CUDA error. */
ET_C_API et_status et_cuda_stream_synchronize(const et_cuda_stream* stream);
/* *out_native_handle: the cudaStream_t, borrowed (never destroy it): valid until the handle's last release,
 * to queue the caller's own kernels and copies on. Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_cuda_stream_get_native_handle(const et_cuda_stream* stream, void** out_native_handle);

/* ---- CUDA maps: a device view of a tensor ---- */
/* A device pointer to the tensor's first element, its extent mapped (C++ cuda::CudaMap). The storage is
 * reached through one CUDA handle made on its first map and kept until the storage frees its memory (heap and
 * shm: host-registered once, read-only storage with cudaHostRegisterReadOnly; DMA-BUF: imported as external
 * memory; docs/CUDA.md). The map keeps the tensor's buffer alive. CPU and device access are not synchronised
 * for the caller: device work through the pointer must be complete before a CPU map of the same buffer opens,
 * and CPU maps closed before it starts; et_cuda_map_record after queuing the work and et_cuda_map_wait before
 * the CPU map do that. Reference-counted as the other handles; the last release ends the view. */
typedef struct et_cuda_map et_cuda_map;

/* Options of et_tensor_cuda_map (C++ cuda::MapOptions). */
typedef struct et_cuda_map_options {
  uint32_t struct_size;
  uint32_t use_device;              /* 0: the calling thread's current device (cudaGetDevice); 1: `device` */
  int32_t device;                   /* with use_device: the CUDA device number, 0 to device_count - 1 */
  uint32_t reserved;                /* zero */
  /* GL PBO tensors only (ET_MEMORY_GL_PBO): the stream the map and, at the last release, the unmap
   * are issued on (cudaGraphicsMapResources / cudaGraphicsUnmapResources; CUDA Runtime API, "Graphics
   * Interoperability"). NULL: the default stream. The map holds a reference to it until its last release.
   * Ignored by the other paths. */
  const et_cuda_stream* stream;
  ET_C_POINTER_PAD_(stream_pad_)
} et_cuda_map_options;
#define ET_CUDA_MAP_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_cuda_map_options))

/* Maps `tensor` for CUDA with `options` (NULL: defaults): *out_device_ptr (the first element's device address)
 * and *out_size (bytes, the tensor's extent) stay valid until the map's last release. Never a copy. Errors:
 * ET_INVALID_ARGUMENT (NULL, bad options, use_device not 0 or 1, a device that does not exist, naming it and
 * the count), ET_FAILED_PRECONDITION (zero bytes, fork child, a storage already reached from another device,
 * naming both), ET_UNAVAILABLE (naming why, e.g. "cudaErrorInsufficientDriver (35)"), ET_UNSUPPORTED (no path
 * works for this storage, with each path's reason), ET_BUSY (GL: CPU-mapped or already mapped by CUDA), the
 * CUDA error of the registration or import. */
ET_C_API et_status et_tensor_cuda_map(const et_tensor* tensor, const et_cuda_map_options* options,
                                      et_cuda_map** out_map, void** out_device_ptr, size_t* out_size);
ET_C_API et_cuda_map* et_cuda_map_retain(et_cuda_map* map);
/* The last release ends the view (C++ CudaMap::unmap) without waiting for recorded work: the buffer's last
 * holder waits for it, at most the record's teardown bound, before it frees the memory; a pool hands the
 * buffer out again, and a channel receiver sends its release, only once that work is done. */
ET_C_API void et_cuda_map_release(et_cuda_map* map);

/* What a CUDA map is (output struct: set struct_size first). */
typedef struct et_cuda_map_info {
  uint32_t struct_size;
  int32_t path;              /* ET_CUDA_PATH_*: how the storage is reached */
  int32_t device;            /* the CUDA device the storage's handle was made on */
  uint32_t reserved;         /* zero */
  uint64_t extent_bytes;     /* from the first element to one past the last: what the device pointer covers */
  void* device_ptr;          /* the first element's device address, as et_tensor_cuda_map gave it */
  ET_C_POINTER_PAD_(device_ptr_pad_)
} et_cuda_map_info;
#define ET_CUDA_MAP_INFO_SIZE_VER0 ((uint32_t)sizeof(et_cuda_map_info))
/* Fills *info. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_cuda_map_get_info(const et_cuda_map* map, et_cuda_map_info* info);

/* The teardown bound of a record without options (C++ cuda::kDefaultTeardownTimeout, 5 s). */
#define ET_CUDA_DEFAULT_TEARDOWN_TIMEOUT_NS INT64_C(5000000000)

/* Options of et_cuda_map_record. */
typedef struct et_cuda_record_options {
  uint32_t struct_size;
  uint32_t use_teardown_timeout;  /* 0: ET_CUDA_DEFAULT_TEARDOWN_TIMEOUT_NS; 1: teardown_timeout_ns */
  /* With use_teardown_timeout: the longest the buffer's last holder waits for the recorded work before it
   * frees the memory, in nanoseconds, rounded up to a whole millisecond; 0: no wait; negative: no bound. Past
   * it the memory is leaked with a warning naming the buffer, never freed under running work
   * (docs/SYNC.md, "Teardown"). */
  int64_t teardown_timeout_ns;
} et_cuda_record_options;
#define ET_CUDA_RECORD_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_cuda_record_options))

/* Records an event on `stream` (cudaEventRecord) marking the end of the work queued on it so far that reads or
 * writes through the map, with `options` (NULL: defaults); a later record replaces the event's work and the
 * bound. Errors: ET_INVALID_ARGUMENT (NULL map or stream, bad options, use_teardown_timeout not 0 or 1),
 * ET_UNAVAILABLE, ET_FAILED_PRECONDITION (fork child), the CUDA error. Threads: record and wait on one map
 * run one at a time (a second waits). */
ET_C_API et_status et_cuda_map_record(et_cuda_map* map, const et_cuda_stream* stream,
                                      const et_cuda_record_options* options);
/* Blocks until the recorded work is complete (cudaEventSynchronize); without a record, until the map's device
 * is idle (cudaDeviceSynchronize). Call it before a CPU map of the buffer. Errors: ET_INVALID_ARGUMENT (NULL),
 * ET_UNAVAILABLE, ET_FAILED_PRECONDITION (fork child), the CUDA error. Threads: as et_cuda_map_record. */
ET_C_API et_status et_cuda_map_wait(const et_cuda_map* map);

/* ---- GL (C++ gl::, include/edgetensor/gl.h; docs/ARCHITECTURE.md, "GL") --------------------------- */
/* A GL context (C++ gl::Context): one headless EGL display and OpenGL ES 3.0 context, current on a thread of
 * its own for its whole life; every GL call of the library runs there, and a caller waits for it at most the
 * context's timeout. EGL is loaded at run time (dlopen of libEGL.so.1, never linked): without it creation fails
 * with ET_UNAVAILABLE and the rest of the library works as before. Headless only: EGL's device platform
 * (EGL_EXT_platform_device) or Mesa's surfaceless one (EGL_MESA_platform_surfaceless); DISPLAY and
 * WAYLAND_DISPLAY play no part.
 * PBO tensors: et_tensor_allocate, et_tensor_allocate_image or a pool with memory ET_MEMORY_GL_PBO and
 * gl_context; they read as zeros at first. A CPU map (et_tensor_map*, et_tensor_describe with a map_mode)
 * maps the whole buffer on the GL thread (glMapBufferRange) and its last release unmaps it; one CPU map per
 * buffer at a time, views included: a second is ET_BUSY "already mapped". A PBO is not shareable by fd:
 * et_tensor_export_fd and et_ipc_send_tensor give ET_UNSUPPORTED, et_tensor_describe gives fd -1 (its address still works, held mapped until the descriptor's last release). When the buffer's last
 * holder goes, glDeleteBuffers runs on the GL thread without waiting.
 * Lifetime: a tensor does not keep its context alive; a pool whose allocate options name one does, until the
 * pool's last release. The context's last release deletes every PBO that is not CPU-mapped and disconnects
 * its tensors: their maps then fail with ET_FAILED_PRECONDITION "GL context gone", their release frees only
 * the handle. A PBO CPU-mapped at that moment stays valid until its map's last release, so no address
 * dangles. fork(): in the child every GL call (a map, an allocation) fails fast with
 * ET_FAILED_PRECONDITION; handles inherited from the parent may be released there (their GL objects are
 * left to the parent). */

/* EGL platforms (C++ gl::Platform). */
#define ET_GL_PLATFORM_AUTO 0        /* the device platform if one of its devices gives a GLES 3 context
                                        (hardware devices before software ones, each in eglQueryDevicesEXT
                                        order), else Mesa's surfaceless platform */
#define ET_GL_PLATFORM_DEVICE 1      /* EGL_EXT_platform_device only */
#define ET_GL_PLATFORM_SURFACELESS 2 /* EGL_MESA_platform_surfaceless only */
/* "auto", "device", "surfaceless"; "unknown" otherwise. Static storage. */
ET_C_API const char* et_gl_platform_name(int32_t platform);

/* The wait of a context made without options (C++ ContextOptions::timeout, 10 s). */
#define ET_GL_DEFAULT_TIMEOUT_NS INT64_C(10000000000)

/* Options of et_gl_context_create (C++ gl::ContextOptions). */
typedef struct et_gl_context_options {
  uint32_t struct_size;
  int32_t platform;           /* ET_GL_PLATFORM_*; 0 = AUTO */
  uint32_t use_device_index;  /* 0: AUTO's device order; 1: exactly device `device_index` */
  int32_t device_index;       /* with use_device_index: >= 0, in eglQueryDevicesEXT order; implies the device
                                 platform (ET_GL_PLATFORM_SURFACELESS with it: ET_INVALID_ARGUMENT) */
  uint32_t use_timeout;       /* 0: ET_GL_DEFAULT_TIMEOUT_NS; 1: timeout_ns */
  uint32_t reserved;          /* zero */
  /* With use_timeout: the longest each wait on the GL thread lasts (creation, allocations, maps, unmaps, the
   * last release), in nanoseconds rounded up to a whole millisecond; > 0 (there is no unbounded wait). */
  int64_t timeout_ns;
  /* The EGL library to dlopen: a soname or a path. NULL or "" = "libEGL.so.1". */
  const char* egl_library;
  ET_C_POINTER_PAD_(egl_library_pad_)
} et_gl_context_options;
#define ET_GL_CONTEXT_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_gl_context_options))

/* A new context into *out, with `options` (NULL: defaults): starts its thread, loads EGL, picks the platform and
 * device, and makes a GLES 3.0 context current there; blocks until that is done, at most the timeout. Errors:
 * ET_INVALID_ARGUMENT (NULL out; bad options: struct_size, an unknown platform, use_device_index or use_timeout
 * not 0 or 1, a negative device_index, a device_index with SURFACELESS, timeout_ns <= 0, reserved not zero, each
 * naming the field and the value), ET_UNAVAILABLE ("GL unavailable: <reason>": no EGL library, no headless
 * platform, no device gives a GLES 3 context, each attempt's EGL error named; or a library built without GL),
 * ET_OUT_OF_RANGE (device_index past the devices EGL reports, naming both), ET_BUSY (EGL's initialisation did
 * not finish within the timeout: the thread is left to clean up on its own). Threads: any thread; the context
 * may be used from several at once. */
ET_C_API et_status et_gl_context_create(const et_gl_context_options* options, et_gl_context** out);
ET_C_API et_gl_context* et_gl_context_retain(et_gl_context* context);
/* Drops a reference (NULL: nothing). The last one shuts the context down (above): it blocks until the GL thread
 * has deleted every PBO not CPU-mapped and ended, at most the context's timeout (with PBOs still CPU-mapped, the
 * thread lives on until their maps end, and the last of their tensors' releases waits for it). */
ET_C_API void et_gl_context_release(et_gl_context* context);

/* What a context runs on (C++ gl::ContextInfo; output struct: set struct_size first). Strings are NUL-terminated,
 * as EGL and GL report them, and stay valid until the context's last release. */
typedef struct et_gl_context_info {
  uint32_t struct_size;
  int32_t platform;             /* ET_GL_PLATFORM_DEVICE or _SURFACELESS (never AUTO) */
  int32_t device_index;         /* in eglQueryDevicesEXT order; -1 on the surfaceless platform */
  int32_t device_count;         /* devices EGL reported (0 without the device platform) */
  int64_t timeout_ns;           /* the context's wait (a whole number of milliseconds) */
  uint64_t live_buffer_count;   /* GL buffers made and not yet deleted (PBO tensors alive), when filled */
  const char* platform_detail;  /* "EGL_EXT_platform_device, device 0 of 1 (software)", ... */
  ET_C_POINTER_PAD_(platform_detail_pad_)
  const char* device_file;      /* EGL_DRM_DEVICE_FILE_EXT of the device; "" when EGL reports none */
  ET_C_POINTER_PAD_(device_file_pad_)
  const char* egl_library;      /* the library that was dlopen'ed */
  ET_C_POINTER_PAD_(egl_library_pad_)
  const char* egl_vendor;       /* EGL_VENDOR */
  ET_C_POINTER_PAD_(egl_vendor_pad_)
  const char* egl_version;      /* EGL_VERSION */
  ET_C_POINTER_PAD_(egl_version_pad_)
  const char* vendor;           /* GL_VENDOR ("Mesa") */
  ET_C_POINTER_PAD_(vendor_pad_)
  const char* renderer;         /* GL_RENDERER ("llvmpipe (LLVM 15.0.6, 256 bits)") */
  ET_C_POINTER_PAD_(renderer_pad_)
  const char* version;          /* GL_VERSION ("OpenGL ES 3.2 Mesa 22.3.6") */
  ET_C_POINTER_PAD_(version_pad_)
} et_gl_context_info;
#define ET_GL_CONTEXT_INFO_SIZE_VER0 ((uint32_t)sizeof(et_gl_context_info))
/* Fills *info. Errors: ET_INVALID_ARGUMENT (NULL, bad struct_size). */
ET_C_API et_status et_gl_context_get_info(const et_gl_context* context, et_gl_context_info* info);

/* ---- The machine report ------------------------------------------------------------------------- */
/* The probe report of `edgetensor info --json` (schema "edgetensor.info/1", probed within this process:
 * no cross-process round trips) as a NUL-terminated UTF-8 string in *out_json, freed with
 * et_string_free. Takes about 0.1 s; not for a hot path. Errors: ET_INVALID_ARGUMENT (NULL). */
ET_C_API et_status et_info_json(char** out_json);
/* Frees a string this library returned (NULL: nothing). */
ET_C_API void et_string_free(char* string);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* EDGETENSOR_C_H */
