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
 * - Handles (et_tensor, et_map, et_descriptor) are opaque and reference-counted: a call that makes one
 *   gives the caller one reference; _retain adds one, _release drops one (NULL is ignored); the last
 *   release frees it. Releasing more than was retained is undefined. A handle keeps what it needs alive
 *   (a map or view keeps its buffer).
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
#define ET_BUSY 7                 /* try later: EBUSY/EAGAIN, a timeout of ipc or a pool */
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
/* The loaded C++ library's version ("0.5.0"). Static storage. */
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
#define ET_MEMORY_GL_PBO 4  /* needs a GL context, which this API cannot give yet: ET_INVALID_ARGUMENT */
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

/* Options of et_tensor_allocate. */
typedef struct et_allocate_options {
  uint32_t struct_size;
  int32_t memory;          /* ET_MEMORY_*; 0 = AUTO. An explicit kind never falls back. */
  /* Byte alignment the first element's CPU address must have: 0 (none) or a power of two up to
   * ET_MAX_ALIGNMENT (TFLite's custom allocations want 64); above: ET_UNSUPPORTED. */
  uint64_t alignment_bytes;
  const char* name;        /* NULL or "" = none; also names the memfd */
  ET_C_POINTER_PAD_(name_pad_)
  const char* shm_name;    /* with ET_MEMORY_SHM: a named POSIX shm object ("/cam0"), created O_EXCL */
  ET_C_POINTER_PAD_(shm_name_pad_)
  const char* dma_heap;    /* with DMA-BUF: require this dma-heap by name */
  ET_C_POINTER_PAD_(dma_heap_pad_)
} et_allocate_options;
#define ET_ALLOCATE_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_allocate_options))
/* The alignment every allocation's first element has in every process that maps it (heap blocks are
 * 256-byte aligned, fd-backed memory is mapped at a page boundary). */
#define ET_MAX_ALIGNMENT 256u

/* Allocates a C-contiguous tensor of `rank` dimensions (`shape`, elements; NULL allowed for rank 0) and
 * `dtype`, read as zeros, into *out. Errors: ET_INVALID_ARGUMENT (NULL out or shape, rank > ET_MAX_RANK,
 * unknown dtype or memory kind, bad options, an alignment not a power of two), ET_UNSUPPORTED (alignment
 * above ET_MAX_ALIGNMENT), ET_OUT_OF_RANGE (size overflow), the backend's
 * error for an explicit kind (ET_UNAVAILABLE, ET_OUT_OF_MEMORY, ET_ALREADY_EXISTS, ...). */
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
} et_import_options;
#define ET_IMPORT_OPTIONS_SIZE_VER0 ((uint32_t)sizeof(et_import_options))

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
