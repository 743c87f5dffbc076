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
 * - Handles (et_tensor, et_map, et_descriptor, et_fence, et_pool) are opaque and reference-counted: a call that makes one
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
/* The loaded C++ library's version ("0.6.0"). Static storage. */
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
   * refused (a named object is created once). */
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
