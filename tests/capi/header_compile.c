/* SPDX-License-Identifier: Apache-2.0 */
/* <edgetensor/c/edgetensor_c.h> alone, compiled as C11, C17, C++17 and C++20 by gcc and clang-15
 * (header_compile.cmake; also the armhf cross gcc where installed), with -Wall -Wextra -Wpedantic -Werror: it parses, it needs nothing before it, and
 * its structs have the same offsets on every target (32- and 64-bit: the pointer pads). */
#include <edgetensor/c/edgetensor_c.h>
#include <edgetensor/c/edgetensor_c.h> /* include guard */

#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
#define ET_STATIC_ASSERT(cond, why) static_assert(cond, why)
#else
#define ET_STATIC_ASSERT(cond, why) _Static_assert(cond, why)
#endif

ET_STATIC_ASSERT(sizeof(et_status) == 4, "et_status is an int32_t");
ET_STATIC_ASSERT(sizeof(et_allocate_options) == 48 && offsetof(et_allocate_options, alignment_bytes) == 8 &&
                     offsetof(et_allocate_options, name) == 16 && offsetof(et_allocate_options, dma_heap) == 32 &&
                     offsetof(et_allocate_options, gl_context) == 40,
                 "et_allocate_options layout");
ET_STATIC_ASSERT(sizeof(et_import_options) == 48 && offsetof(et_import_options, offset_bytes) == 8 &&
                     offsetof(et_import_options, name) == 24 && offsetof(et_import_options, release_callback) == 32 &&
                     offsetof(et_import_options, user_data) == 40 && ET_IMPORT_OPTIONS_SIZE_VER0 == 32,
                 "et_import_options layout");
ET_STATIC_ASSERT(sizeof(et_tensor_info) == 208 && offsetof(et_tensor_info, shape) == 24 &&
                     offsetof(et_tensor_info, strides_bytes) == 88 && offsetof(et_tensor_info, buffer_key) == 200,
                 "et_tensor_info layout");
ET_STATIC_ASSERT(sizeof(et_plane_desc) == 32 && offsetof(et_plane_desc, offset_bytes) == 8, "et_plane_desc layout");
ET_STATIC_ASSERT(sizeof(et_buffer_desc) == 160 && offsetof(et_buffer_desc, data) == 24 &&
                     offsetof(et_buffer_desc, planes) == 32,
                 "et_buffer_desc layout");
ET_STATIC_ASSERT(sizeof(et_send_options) == 16 && sizeof(et_receive_options) == 24 &&
                     offsetof(et_receive_options, max_buffer_bytes) == 16,
                 "ipc options layout");
ET_STATIC_ASSERT(sizeof(et_image_layout) == 96 && offsetof(et_image_layout, modifier) == 24 &&
                     offsetof(et_image_layout, planes) == 32 && sizeof(et_image_options) == 16,
                 "image layout and options");
ET_STATIC_ASSERT(sizeof(et_map_options) == 16 && offsetof(et_map_options, timeout_ns) == 8, "et_map_options layout");
ET_STATIC_ASSERT(sizeof(et_fence_status) == 48 && offsetof(et_fence_status, name) == 16, "et_fence_status layout");
ET_STATIC_ASSERT(sizeof(et_pool_options) == 32 && offsetof(et_pool_options, name) == 16 &&
                     offsetof(et_pool_options, allocate) == 24,
                 "et_pool_options layout");
ET_STATIC_ASSERT(sizeof(et_pool_stats) == 80 && offsetof(et_pool_stats, allocated) == 8 &&
                     offsetof(et_pool_stats, packed_bytes) == 72,
                 "et_pool_stats layout");
ET_STATIC_ASSERT(sizeof(et_dlpack_export_options) == 8 && sizeof(et_dlpack_adopt_options) == 16 &&
                     offsetof(et_dlpack_adopt_options, name) == 8,
                 "DLPack options layout");
ET_STATIC_ASSERT(sizeof(et_quantization) == 40 && offsetof(et_quantization, scales) == 24 &&
                     offsetof(et_quantization, zero_points) == 32 && sizeof(et_colorimetry) == 24,
                 "quantization and colorimetry layouts");
ET_STATIC_ASSERT(sizeof(et_channel_listen_options) == 40 && offsetof(et_channel_listen_options, uids) == 24 &&
                     offsetof(et_channel_listen_options, gids) == 32 && sizeof(et_channel_listener_stats) == 48 &&
                     offsetof(et_channel_listener_stats, last_refused_pid) == 32,
                 "listener structs layout");
ET_STATIC_ASSERT(sizeof(et_channel_sender_options) == 40 && offsetof(et_channel_sender_options, max_frames_out) == 24 &&
                     offsetof(et_channel_sender_options, name) == 32 && sizeof(et_channel_send_options) == 64 &&
                     offsetof(et_channel_send_options, sequence) == 16 &&
                     offsetof(et_channel_send_options, acquire_fences) == 48 &&
                     offsetof(et_channel_send_options, acquire_fence_count) == 56 && sizeof(et_channel_sender_stats) == 96 &&
                     offsetof(et_channel_sender_stats, acquire_fences_sent) == 72,
                 "sender structs layout");
ET_STATIC_ASSERT(sizeof(et_channel_receiver_options) == 48 && offsetof(et_channel_receiver_options, name) == 24 &&
                     offsetof(et_channel_receiver_options, use_policy) == 32 &&
                     offsetof(et_channel_receiver_options, max_frames_out) == 40 &&
                     sizeof(et_channel_delivery) == 104 && offsetof(et_channel_delivery, flags) == 40 &&
                     offsetof(et_channel_delivery, tensor) == 48 && offsetof(et_channel_delivery, frame) == 56 &&
                     offsetof(et_channel_delivery, acquire_fence_count) == 64 &&
                     offsetof(et_channel_delivery, acquire_fences) == 72 && sizeof(et_fence_slot) == 8 &&
                     sizeof(et_channel_receiver_stats) == 96 && offsetof(et_channel_receiver_stats, acquire_fences) == 80,
                 "receiver structs layout");
ET_STATIC_ASSERT(sizeof(et_channel_publisher_options) == 24 && offsetof(et_channel_publisher_options, receiver) == 16 &&
                     sizeof(et_channel_publish_result) == 40 && sizeof(et_channel_receiver_info) == 136 &&
                     offsetof(et_channel_receiver_info, stats) == 40 && sizeof(et_channel_publisher_stats) == 64,
                 "publisher structs layout");
ET_STATIC_ASSERT(ET_ALLOCATE_OPTIONS_SIZE_VER0 == 40 && ET_BUFFER_DESC_SIZE_VER0 == 160, "first versions");
ET_STATIC_ASSERT(ET_ALLOCATE_OPTIONS_SIZE_VER1 == 48, "0.6: et_allocate_options.gl_context");
ET_STATIC_ASSERT(sizeof(et_gl_context_options) == 40 && offsetof(et_gl_context_options, device_index) == 12 &&
                     offsetof(et_gl_context_options, timeout_ns) == 24 &&
                     offsetof(et_gl_context_options, egl_library) == 32,
                 "et_gl_context_options layout");
ET_STATIC_ASSERT(sizeof(et_gl_context_info) == 96 && offsetof(et_gl_context_info, timeout_ns) == 16 &&
                     offsetof(et_gl_context_info, live_buffer_count) == 24 &&
                     offsetof(et_gl_context_info, platform_detail) == 32 && offsetof(et_gl_context_info, version) == 88,
                 "et_gl_context_info layout");
/* Structs that grew in 0.4 keep their first version's size. */
ET_STATIC_ASSERT(ET_CHANNEL_SEND_OPTIONS_SIZE_VER0 == 48 && ET_CHANNEL_SEND_OPTIONS_SIZE_VER1 == 64 &&
                     ET_CHANNEL_SENDER_STATS_SIZE_VER0 == 72 && ET_CHANNEL_SENDER_STATS_SIZE_VER1 == 96 &&
                     ET_CHANNEL_DELIVERY_SIZE_VER0 == 64 && ET_CHANNEL_DELIVERY_SIZE_VER1 == 104 &&
                     ET_CHANNEL_RECEIVER_STATS_SIZE_VER0 == 80 && ET_CHANNEL_RECEIVER_STATS_SIZE_VER1 == 96 &&
                     ET_CHANNEL_RECEIVER_INFO_SIZE_VER0 == 112 && ET_CHANNEL_RECEIVER_INFO_SIZE_VER1 == 136,
                 "versions of the structs that grew");

/* 0.5: CUDA. */
ET_STATIC_ASSERT(sizeof(et_cuda_report) == 56 && offsetof(et_cuda_report, error) == 24 &&
                     offsetof(et_cuda_report, runtime_file) == 32 && offsetof(et_cuda_report, unavailable_paths) == 40 &&
                     offsetof(et_cuda_report, summary) == 48,
                 "et_cuda_report layout");
ET_STATIC_ASSERT(sizeof(et_cuda_device_info) == 288 && offsetof(et_cuda_device_info, total_memory_bytes) == 8 &&
                     offsetof(et_cuda_device_info, compute_capability_major) == 16 &&
                     offsetof(et_cuda_device_info, name) == 32,
                 "et_cuda_device_info layout");
ET_STATIC_ASSERT(sizeof(et_cuda_map_options) == 24 && offsetof(et_cuda_map_options, device) == 8 &&
                     offsetof(et_cuda_map_options, stream) == 16,
                 "et_cuda_map_options layout");
ET_STATIC_ASSERT(sizeof(et_cuda_map_info) == 32 && offsetof(et_cuda_map_info, extent_bytes) == 16 &&
                     offsetof(et_cuda_map_info, device_ptr) == 24,
                 "et_cuda_map_info layout");
ET_STATIC_ASSERT(sizeof(et_cuda_record_options) == 16 && offsetof(et_cuda_record_options, teardown_timeout_ns) == 8,
                 "et_cuda_record_options layout");

/* Every declaration used once, so a wrong prototype fails here rather than in a user's build. */
int header_compile_uses(void);
int header_compile_uses(void) {
  /* Zeroed, then filled: positional initializers would differ between 32- and 64-bit targets (pads). */
  et_allocate_options a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.memory = ET_MEMORY_SHM;
  et_tensor* t = NULL;
  et_status s = et_tensor_allocate(0, NULL, ET_DTYPE_F32, &a, &t);
  et_tensor_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  s |= et_tensor_get_info(t, &info);
  int32_t fd = -1;
  s |= et_tensor_export_fd(t, &fd);
  et_tensor* v = et_tensor_retain(t);
  et_map* m = NULL;
  const void* cdata = NULL;
  void* data = NULL;
  size_t size = 0;
  s |= et_tensor_map_read(v, &m, &cdata, &size) | et_tensor_map_write(v, &m, &data, &size) |
       et_tensor_map_read_write(v, &m, &data, &size);
  et_map_release(et_map_retain(m));
  et_buffer_desc d;
  d.struct_size = sizeof d;
  et_descriptor* h = NULL;
  s |= et_tensor_describe(t, ET_MAP_READ, &d, &h);
  et_descriptor_release(et_descriptor_retain(h));
  s |= et_tensor_view(t, 0, 0, NULL, NULL, &v) | et_tensor_batch(t, 0, &v) | et_tensor_slice(t, 0, 0, 0, &v) |
       et_tensor_reshape(t, 0, NULL, &v);
  s |= et_tensor_import_dup(fd, 0, NULL, ET_DTYPE_U8, NULL, &v) | et_tensor_import_adopt(fd, 0, NULL, ET_DTYPE_U8, NULL, &v);
  et_send_options so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  et_receive_options ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  s |= et_ipc_send_tensor(0, t, &so) | et_ipc_receive_tensor(0, &ro, &v);
  int32_t format = ET_PIXEL_FORMAT_UNKNOWN;
  uint32_t code = 0;
  const char* gst = NULL;
  s |= et_pixel_format_from_name("nv12", &format) | et_pixel_format_from_v4l2(0, &format, &code) |
       et_pixel_format_from_drm(0, &format) | et_pixel_format_from_gst("NV12", &format) |
       et_pixel_format_to_v4l2(format, 0, &code) | et_pixel_format_to_drm(format, &code) |
       et_pixel_format_to_gst(format, &gst);
  et_image_options io;
  memset(&io, 0, sizeof io);
  io.struct_size = sizeof io;
  et_image_layout layout;
  memset(&layout, 0, sizeof layout);
  layout.struct_size = sizeof layout;
  s |= et_tensor_allocate_image(4, 4, ET_PIXEL_FORMAT_NV12, &io, &a, &v) | et_tensor_get_image_layout(v, &layout) |
       et_tensor_plane(v, 1, &v);
  et_map_options mo;
  memset(&mo, 0, sizeof mo);
  mo.struct_size = sizeof mo;
  s |= et_tensor_map(t, ET_MAP_READ, &mo, &m, &data, &size);
  et_fence* f = NULL;
  s |= et_fence_create_signalled(&f) | et_fence_import_adopt(-1, &f) | et_fence_import_dup(-1, &f) |
       et_fence_wait(f, ET_DEFAULT_MAP_TIMEOUT_NS) | et_fence_get_borrowed_fd(f, &fd) | et_fence_dup_fd(f, &fd) |
       et_fence_merge(f, f, "m", &f) | et_tensor_export_fence(t, ET_FENCE_ACCESS_READ, &f) |
       et_tensor_import_fence(t, f, ET_FENCE_ACCESS_WRITE);
  et_fence_status fs;
  memset(&fs, 0, sizeof fs);
  fs.struct_size = sizeof fs;
  s |= et_fence_get_status(f, &fs);
  et_fence_release(et_fence_retain(f));
  et_pool_options po;
  memset(&po, 0, sizeof po);
  po.struct_size = sizeof po;
  po.flags = ET_POOL_ZERO_ON_REUSE;
  po.allocate = &a;
  et_pool* pool = NULL;
  s |= et_pool_create(0, NULL, ET_DTYPE_U8, &po, &pool) | et_pool_acquire(pool, -1, &v) |
       et_pool_create_image(4, 4, ET_PIXEL_FORMAT_NV12, &io, &po, &pool) |
       et_pool_create_image_layout(&layout, &po, &pool);
  et_pool_stats ps;
  memset(&ps, 0, sizeof ps);
  ps.struct_size = sizeof ps;
  s |= et_pool_get_stats(pool, &ps);
  et_pool_release(et_pool_retain(pool));
  et_dlpack_export_options de;
  memset(&de, 0, sizeof de);
  de.struct_size = sizeof de;
  de.flags = ET_DLPACK_READ_ONLY;
  struct DLManagedTensorVersioned* managed = NULL;
  s |= et_dlpack_export_versioned(t, &de, &managed);
  et_dlpack_adopt_options da;
  memset(&da, 0, sizeof da);
  da.struct_size = sizeof da;
  s |= et_dlpack_adopt_versioned(managed, &da, &v);
  et_quantization q;
  memset(&q, 0, sizeof q);
  q.struct_size = sizeof q;
  et_colorimetry c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  s |= et_tensor_get_quantization(t, &q) | et_tensor_with_quantization(t, &q, &v) | et_tensor_get_colorimetry(t, &c) |
       et_tensor_with_colorimetry(t, &c, &v);
  int32_t fds[2] = {-1, -1};
  const int32_t plane_fds[2] = {fd, fd};
  et_frame* fr = NULL;
  s |= et_channel_socket_pair(fds) | et_frame_import_planes_dup(plane_fds, 2, &layout, NULL, &fr) |
       et_frame_from_tensor(t, &fr) | et_frame_get_layout(fr, &layout) | et_frame_buffer(fr, 0, &v) | et_frame_plane(fr, 0, &v);
  uint32_t buffer_count = 0, plane_buffers[ET_MAX_PLANES];
  s |= et_frame_get_buffers(fr, &buffer_count, plane_buffers);
  et_frame_release(et_frame_retain(fr));
  et_channel_listen_options lo;
  memset(&lo, 0, sizeof lo);
  lo.struct_size = sizeof lo;
  lo.flags = ET_LISTEN_NO_SAME_UID;
  et_channel_listener* l = NULL;
  const char* path = NULL;
  et_channel_listener_stats ls;
  memset(&ls, 0, sizeof ls);
  ls.struct_size = sizeof ls;
  s |= et_channel_listener_create("@x", &lo, &l) | et_channel_listener_accept(l, ET_WAIT_FOREVER, &fd) |
       et_channel_listener_get_fd(l, &fd) | et_channel_listener_get_path(l, &path) |
       et_channel_listener_get_stats(l, &ls) | et_channel_connect("@x", 0, &fd);
  et_channel_listener_release(et_channel_listener_retain(l));
  et_channel_sender_options sdo;
  memset(&sdo, 0, sizeof sdo);
  sdo.struct_size = sizeof sdo;
  sdo.policy = ET_CHANNEL_POLICY_DROP;
  et_channel_send_options sno;
  memset(&sno, 0, sizeof sno);
  sno.struct_size = sizeof sno;
  sno.has = ET_CHANNEL_HAS_SEQUENCE | ET_CHANNEL_HAS_TIMESTAMP | ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION;
  et_channel_sender* sender = NULL;
  uint64_t seq = 0;
  et_channel_sender_stats sst;
  memset(&sst, 0, sizeof sst);
  sst.struct_size = sizeof sst;
  s |= et_channel_sender_create_adopt(fds[0], &sdo, &sender) | et_channel_sender_send(sender, t, &sno, &seq) |
       et_channel_sender_send_frame(sender, fr, &sno, &seq) | et_channel_sender_acquire(sender, pool, 0, &v) |
       et_channel_sender_drain(sender, 0) | et_channel_sender_end_stream(sender) |
       et_channel_sender_get_stats(sender, &sst) | et_channel_sender_status(sender);
  et_channel_sender_release(et_channel_sender_retain(sender));
  et_channel_receiver_options rco;
  memset(&rco, 0, sizeof rco);
  rco.struct_size = sizeof rco;
  et_channel_receiver* receiver = NULL;
  et_channel_delivery dl;
  memset(&dl, 0, sizeof dl);
  dl.struct_size = sizeof dl;
  et_channel_receiver_stats rst;
  memset(&rst, 0, sizeof rst);
  rst.struct_size = sizeof rst;
  s |= et_channel_receiver_create_adopt(fds[1], &rco, &receiver) | et_channel_receiver_receive(receiver, 0, &dl) |
       et_channel_receiver_receive_latest(receiver, 0, &dl) | et_channel_receiver_flush(receiver) |
       et_channel_receiver_get_fd(receiver, &fd) | et_channel_receiver_get_stats(receiver, &rst) |
       et_channel_receiver_status(receiver) | et_channel_receiver_add_release_fence(receiver, t, f) |
       et_channel_receiver_add_release_fence_frame(receiver, fr, f);
  et_channel_receiver_release(et_channel_receiver_retain(receiver));
  et_channel_publisher_options pbo;
  memset(&pbo, 0, sizeof pbo);
  pbo.struct_size = sizeof pbo;
  pbo.receiver = &sdo;
  et_channel_publisher* pub = NULL;
  uint64_t id = 0;
  et_channel_publish_result pr;
  memset(&pr, 0, sizeof pr);
  pr.struct_size = sizeof pr;
  et_channel_receiver_info infos[2];
  memset(infos, 0, sizeof infos);
  infos[0].struct_size = sizeof infos[0];
  uint32_t receiver_count = 0;
  et_channel_publisher_stats pst;
  memset(&pst, 0, sizeof pst);
  pst.struct_size = sizeof pst;
  s |= et_channel_publisher_create(&pbo, &pub) | et_channel_publisher_listen("@p", &lo, &pbo, &pub) |
       et_channel_publisher_add_receiver_adopt(pub, fds[0], &sdo, &id) | et_channel_publisher_send(pub, t, &sno, &pr) |
       et_channel_publisher_send_frame(pub, fr, &sno, &pr) | et_channel_publisher_acquire(pub, pool, 0, &v) |
       et_channel_publisher_end_stream(pub) | et_channel_publisher_drain(pub, 0) | et_channel_publisher_disconnect(pub, id) |
       et_channel_publisher_get_receivers(pub, infos, 2, &receiver_count) | et_channel_publisher_get_stats(pub, &pst) |
       et_channel_publisher_get_path(pub, &path);
  et_channel_publisher_release(et_channel_publisher_retain(pub));
  et_channel_wait_check_fn check = NULL;
  s |= et_channel_set_wait_check(check, NULL) + (et_status)(ET_CHANNEL_WAIT_CHECK_INTERVAL_MS - 50);
  et_cuda_report cr;
  memset(&cr, 0, sizeof cr);
  cr.struct_size = ET_CUDA_REPORT_SIZE_VER0;
  et_cuda_device_info cdi[2];
  memset(cdi, 0, sizeof cdi);
  cdi[0].struct_size = ET_CUDA_DEVICE_INFO_SIZE_VER0;
  uint32_t cuda_devices = 0;
  s |= et_cuda_get_report(&cr) | et_cuda_get_devices(cdi, 2, &cuda_devices);
  et_cuda_stream* cs = NULL;
  void* native_stream = NULL;
  s |= et_cuda_stream_create(&cs) | et_cuda_stream_synchronize(cs) | et_cuda_stream_get_native_handle(cs, &native_stream);
  et_cuda_map_options cmo;
  memset(&cmo, 0, sizeof cmo);
  cmo.struct_size = ET_CUDA_MAP_OPTIONS_SIZE_VER0;
  cmo.stream = cs;
  et_cuda_map* cm = NULL;
  void* device_ptr = NULL;
  size_t device_size = 0;
  s |= et_tensor_cuda_map(t, &cmo, &cm, &device_ptr, &device_size);
  et_cuda_map_info cmi;
  memset(&cmi, 0, sizeof cmi);
  cmi.struct_size = ET_CUDA_MAP_INFO_SIZE_VER0;
  et_cuda_record_options cro;
  memset(&cro, 0, sizeof cro);
  cro.struct_size = ET_CUDA_RECORD_OPTIONS_SIZE_VER0;
  cro.use_teardown_timeout = 1;
  cro.teardown_timeout_ns = ET_CUDA_DEFAULT_TEARDOWN_TIMEOUT_NS;
  s |= et_cuda_map_get_info(cm, &cmi) | et_cuda_map_record(cm, cs, &cro) | et_cuda_map_wait(cm);
  s |= (et_status)et_cuda_available() + (et_status)et_cuda_path_name(ET_CUDA_PATH_GL_BUFFER)[0];
  et_cuda_map_release(et_cuda_map_retain(cm));
  et_cuda_stream_release(et_cuda_stream_retain(cs));
  et_gl_context_options glo;
  memset(&glo, 0, sizeof glo);
  glo.struct_size = ET_GL_CONTEXT_OPTIONS_SIZE_VER0;
  glo.platform = ET_GL_PLATFORM_SURFACELESS;
  et_gl_context* gl = NULL;
  s |= et_gl_context_create(&glo, &gl);
  et_gl_context_info gli;
  memset(&gli, 0, sizeof gli);
  gli.struct_size = ET_GL_CONTEXT_INFO_SIZE_VER0;
  s |= et_gl_context_get_info(gl, &gli) + (et_status)et_gl_platform_name(gli.platform)[0];
  a.struct_size = ET_ALLOCATE_OPTIONS_SIZE_VER1;
  a.memory = ET_MEMORY_GL_PBO;
  a.gl_context = gl;
  s |= et_tensor_allocate(0, NULL, ET_DTYPE_U8, &a, &v);
  et_gl_context_release(et_gl_context_retain(gl));
  char* json = NULL;
  s |= et_info_json(&json);
  et_string_free(json);
  et_tensor_release(t);
  return (int)s + (int)et_last_error_code() + et_last_error_errno() + (int)et_dtype_size(ET_DTYPE_U8) +
         (et_status_name(s)[0] + et_last_error_message()[0] + et_version()[0] + et_dtype_name(0)[0] +
          et_memory_kind_name(0)[0] + et_pixel_format_name(0)[0]);
}
