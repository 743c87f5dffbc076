// SPDX-License-Identifier: Apache-2.0
// Lane 3: exact call sequences, fd ownership, teardown order, refcounting and fork behaviour, driven
// through libet_fake_cudart.so (a test double backed by host memory; not GPU support).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "fake_support.h"

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;
using et_cuda_test::desc_field;
using Names = std::vector<std::string>;

namespace {

using et_cuda_test::CudaFake;

constexpr std::size_t kMiB = 1 << 20;

TEST_F(CudaFake, ReportDescribesTheDouble) {
  EXPECT_TRUE(report_.available) << report_.summary();
  EXPECT_TRUE(loader_.from_env);
  EXPECT_EQ(report_.runtime_file, ET_FAKE_CUDART_PATH);
  EXPECT_EQ(report_.runtime_version, 13000);
  EXPECT_EQ(report_.driver_version, 13000);
  ASSERT_EQ(report_.device_count, 1);
  ASSERT_EQ(report_.devices.size(), 1u);
  EXPECT_NE(report_.devices[0].name.find("test double"), std::string::npos);
  EXPECT_EQ(report_.devices[0].total_memory_bytes, std::size_t{8} << 30);
  EXPECT_EQ(report_.devices[0].compute_capability_major, 8);
  EXPECT_EQ(report_.devices[0].compute_capability_minor, 7);
  EXPECT_TRUE(loader_.driver_entry_points);
  EXPECT_TRUE(loader_.dmabuf_handle_type);
  // The double exports the GL-interop group (cudaGraphicsGL*); the variant without it is checked in
  // cuda.gl.fakenointerop (missing optional symbols reported as a capability, not an error).
  EXPECT_TRUE(loader_.gl_interop);
  EXPECT_TRUE(loader_.missing_required_symbols.empty());
  EXPECT_TRUE(loader_.external_opaque_fd);
  EXPECT_TRUE(report_.unavailable_paths.empty()) << report_.unavailable_paths.front();
  for (const auto& m : loader_.missing_optional_symbols)
    EXPECT_EQ(m.rfind("cudaGraphics", 0), std::string::npos) << m << " is exported by the double";
  EXPECT_TRUE(report_.error.empty());
  EXPECT_NE(report_.summary().find(": available"), std::string::npos) << report_.summary();
}

// A strided view's device map covers its extent; an external memory object reports its whole size.
TEST_F(CudaFake, SizesAreExtentForMapsAndBufferForExternalMemory) {
  auto t = TensorDyn::allocate({4, 4}, DType::F32, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto v = t->view(4, {3, 2}, {16, 4});  // strided: extent 40 B, packed 24 B
  ASSERT_OK(v);
  auto m = cuda::map(*v);
  ASSERT_OK(m);
  EXPECT_EQ(m->extent_bytes(), 40u);
  int memfd = memfd_create("et-ext-size", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, 8192), 0);
  auto ext = cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd);
  ASSERT_OK(ext);
  EXPECT_EQ(ext->buffer_bytes(), 8192u);
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd,
                                                   cuda::ExternalMemoryOptions{.buffer_bytes = 4096}),
               ErrorCode::InvalidArgument, "buffer_bytes 4096 differs from the real size 8192 B");
  close(memfd);
}

TEST_F(CudaFake, HeapRegistersOnceAndUnregistersBeforeMemoryIsFreed) {
  auto t = TensorDyn::allocate({kMiB}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  void* host = nullptr;
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    host = const_cast<std::byte*>(r->data());
  }
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaGetDevice", "cudaHostRegister", "cudaHostGetDevicePointer"}));
  const EtFakeCall* reg = fake_.last("cudaHostRegister");
  ASSERT_NE(reg, nullptr);
  EXPECT_EQ(reg->args[0], reinterpret_cast<unsigned long long>(host));
  EXPECT_EQ(reg->args[1], kMiB);
  EXPECT_EQ(reg->args[2], 0x3u) << "cudaHostRegisterMapped | cudaHostRegisterPortable";
  EXPECT_EQ(m->device_ptr(), host) << "the double uses unified addressing";
  EXPECT_EQ(m->extent_bytes(), kMiB);
  EXPECT_EQ(m->path(), cuda::CudaPath::HostRegistered);

  // Data written through the device pointer is what the CPU reads.
  std::vector<unsigned char> pattern(4096);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7);
  ASSERT_OK(cuda::copy_host_to_device(m->device_ptr(), pattern.data(), pattern.size()));
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    EXPECT_EQ(std::memcmp(r->data(), pattern.data(), pattern.size()), 0);
  }

  fake_.reset();
  auto m2 = cuda::map(*t);
  ASSERT_OK(m2);
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice"})) << "the registration is cached per storage";
  *m = cuda::CudaMap();
  m2->unmap();
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 0) << "the tensor still holds the storage";
  *t = TensorDyn();
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaHostUnregister"})) << "map m2, then the teardown";
  EXPECT_EQ(fake_.last("cudaHostUnregister")->args[0], reinterpret_cast<unsigned long long>(host));
  // The double checks with mincore that the 1 MiB anonymous mapping still existed at unregister time.
}

TEST_F(CudaFake, ViewsShareOneHandleAndAddTheirOffset) {
  auto t = TensorDyn::allocate({4, 256}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto v1 = t->batch(1);
  auto v3 = t->batch(3);
  ASSERT_OK(v1);
  ASSERT_OK(v3);
  auto whole = cuda::map(*t);
  auto m1 = cuda::map(*v1);
  auto m3 = cuda::map(*v3);
  ASSERT_OK(whole);
  ASSERT_OK(m1);
  ASSERT_OK(m3);
  EXPECT_EQ(fake_.count("cudaHostRegister"), 1);
  EXPECT_EQ(fake_.last("cudaHostRegister")->args[1], 1024u) << "the whole buffer is registered once";
  auto* base = static_cast<std::byte*>(whole->device_ptr());
  EXPECT_EQ(m1->device_ptr(), base + 256);
  EXPECT_EQ(m3->device_ptr(), base + 768);
  EXPECT_EQ(m1->extent_bytes(), 256u);
  // Only a CudaMap keeps the storage now.
  *t = TensorDyn();
  *v1 = TensorDyn();
  *v3 = TensorDyn();
  *whole = cuda::CudaMap();
  *m1 = cuda::CudaMap();
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 0);
  m3->unmap();
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 1);
}

TEST_F(CudaFake, ReadOnlyStorageIsRegisteredReadOnly) {
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  const std::string proc = et_test::proc_fd_path(fd->get());
  int ro = open(proc.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ro, 0);
  auto imported = TensorDyn::import_fd_dup(ro, {4096}, DType::U8);
  close(ro);
  ASSERT_OK(imported);
  ASSERT_TRUE(imported->read_only());
  auto m = cuda::map(*imported);
  ASSERT_OK(m);
  EXPECT_EQ(fake_.last("cudaHostRegister")->args[2], 0x3u | 0x8u) << "cudaHostRegisterReadOnly added";
}

TEST_F(CudaFake, DmaBufStorageTriesDmaBufTypeThenOpaqueFdWithFullDescriptors) {
  constexpr std::size_t kSize = 64 * 1024;
  auto storage = et_cuda_test::dmabuf_storage(kSize);
  const int own_fd = storage->backing().fd();
  ASSERT_GE(own_fd, 0);
  const int fds = et_test::open_fd_count();
  const auto closes = edgetensor::sys::call_count(edgetensor::sys::Call::Close);

  auto m = cuda::detail::map_storage(storage, 4096, kSize - 4096, {});
  ASSERT_OK(m);
  EXPECT_EQ(m->path(), cuda::CudaPath::ExternalOpaqueFd);
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaGetDevice", "cudaSetDevice", "cuImportExternalMemory", "cudaGetDevice",
                                  "cudaImportExternalMemory", "cudaExternalMemoryGetMappedBuffer"}));
  EXPECT_EQ(fake_.count("cudaGetDriverEntryPointByVersion"), 0) << "looked up once, by report()";
  // The driver's DMA-BUF type: full 104-byte CUDA_EXTERNAL_MEMORY_HANDLE_DESC, reserved zero.
  const EtFakeCall* drv = fake_.last("cuImportExternalMemory");
  ASSERT_NE(drv, nullptr);
  EXPECT_EQ(drv->desc_size, 104u);
  EXPECT_EQ(desc_field<int>(drv, 0), 9) << "CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD";
  EXPECT_NE(desc_field<int>(drv, 8), own_fd) << "CUDA gets a dup, never the tensor's own fd";
  EXPECT_EQ(desc_field<unsigned long long>(drv, 24), kSize);
  EXPECT_EQ(desc_field<unsigned>(drv, 32), 0u) << "flags must be zero for DMA-BUF";
  EXPECT_TRUE(et_cuda_test::all_zero(drv, 36));
  EXPECT_EQ(drv->result, 801) << "the double refuses DMA-BUF like a desktop driver";
  // The runtime OpaqueFd type: 13.0 layout, 104 bytes, reserved[16] zero.
  const EtFakeCall* imp = fake_.last("cudaImportExternalMemory");
  ASSERT_NE(imp, nullptr);
  EXPECT_EQ(imp->desc_size, 104u);
  EXPECT_EQ(desc_field<int>(imp, 0), 1) << "cudaExternalMemoryHandleTypeOpaqueFd";
  const int dup_fd = desc_field<int>(imp, 8);
  EXPECT_NE(dup_fd, own_fd);
  EXPECT_TRUE(imp->fd_open);
  EXPECT_EQ(desc_field<unsigned long long>(imp, 24), kSize) << "size = the storage's real size";
  EXPECT_EQ(desc_field<unsigned>(imp, 32), 0u);
  EXPECT_TRUE(et_cuda_test::all_zero(imp, 36));
  const EtFakeCall* buf = fake_.last("cudaExternalMemoryGetMappedBuffer");
  EXPECT_EQ(buf->desc_size, 88u);
  EXPECT_EQ(desc_field<unsigned long long>(buf, 0), 0u) << "the whole buffer is mapped once";
  EXPECT_EQ(desc_field<unsigned long long>(buf, 8), kSize);
  EXPECT_TRUE(et_cuda_test::all_zero(buf, 16));
  // Ownership: the fake holds exactly the dup it was given; the failed DMA-BUF dup was closed by us.
  int owned[4];
  ASSERT_EQ(fake_.owned_fds(owned, 4), 1);
  EXPECT_EQ(owned[0], dup_fd);
  EXPECT_EQ(et_test::open_fd_count(), fds + 1);
  EXPECT_EQ(edgetensor::sys::call_count(edgetensor::sys::Call::Close) - closes, 1u);
  // Device writes land in the buffer (the view adds its 4096-byte offset).
  const char msg[] = "written through the device pointer";
  ASSERT_OK(cuda::copy_host_to_device(m->device_ptr(), msg, sizeof msg));
  char back[sizeof msg] = {};
  ASSERT_EQ(pread(own_fd, back, sizeof back, 4096), static_cast<ssize_t>(sizeof back));
  EXPECT_STREQ(back, msg);

  fake_.reset();
  *m = cuda::CudaMap();
  storage.reset();
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaFree", "cudaDestroyExternalMemory"}))
      << "cudaFree then destroy, each once";
  EXPECT_EQ(et_test::open_fd_count(), fds - 1) << "the double closed its dup, the backing closed the tensor's fd";
}

TEST_F(CudaFake, ImportFailureClosesEachDupExactlyOnce) {
  auto storage = et_cuda_test::dmabuf_storage(8192);
  const int own_fd = storage->backing().fd();
  const auto closes = edgetensor::sys::call_count(edgetensor::sys::Call::Close);
  const int fds = et_test::open_fd_count();
  fake_.fail("cudaImportExternalMemory", 1, 1);
  auto m = cuda::detail::map_storage(storage, 0, 8192, {});
  EXPECT_ERROR(m, ErrorCode::Unsupported, "CUDA_ERROR_NOT_SUPPORTED (801)");
  EXPECT_NE(m.error().message().find("cudaErrorInvalidValue (1): invalid argument"), std::string::npos)
      << m.error().message();
  EXPECT_NE(m.error().message().find("desktop GPUs do not import DMA-BUFs"), std::string::npos);
  EXPECT_EQ(edgetensor::sys::call_count(edgetensor::sys::Call::Close) - closes, 2u) << "two dups, two closes";
  EXPECT_EQ(et_test::open_fd_count(), fds);
  EXPECT_EQ(fake_.live("owned_fd"), 0);
  EXPECT_GE(fcntl(own_fd, F_GETFD), 0) << "the tensor's own fd is untouched";
  EXPECT_EQ(storage->existing_device_handle(), nullptr) << "a failure is not cached";
}

TEST_F(CudaFake, MappedBufferFailureDestroysTheImportOnce) {
  auto storage = et_cuda_test::dmabuf_storage(8192);
  const auto closes = edgetensor::sys::call_count(edgetensor::sys::Call::Close);
  const int fds = et_test::open_fd_count();
  fake_.fail("cudaExternalMemoryGetMappedBuffer", 1, 2);
  auto m = cuda::detail::map_storage(storage, 0, 8192, {});
  EXPECT_ERROR(m, ErrorCode::Unsupported, "cudaErrorMemoryAllocation (2)");
  EXPECT_EQ(fake_.count("cudaDestroyExternalMemory"), 1);
  EXPECT_EQ(fake_.count("cudaFree"), 0) << "nothing was mapped, nothing to free";
  EXPECT_EQ(edgetensor::sys::call_count(edgetensor::sys::Call::Close) - closes, 1u)
      << "only the DMA-BUF attempt's dup is ours to close; CUDA closed the imported one";
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST_F(CudaFake, ExternalMemoryPublicApi) {
  int memfd = memfd_create("et-ext", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, 8192), 0);
  const char msg[] = "hello from the fd side";
  ASSERT_EQ(pwrite(memfd, msg, sizeof msg, 100), static_cast<ssize_t>(sizeof msg));
  {
    auto ext = cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd);
    ASSERT_OK(ext);
    EXPECT_EQ(ext->buffer_bytes(), 8192u) << "size from fstat";
    EXPECT_EQ(ext->type(), cuda::ExternalMemoryHandleType::OpaqueFd);
    char back[sizeof msg] = {};
    ASSERT_OK(cuda::copy_device_to_host(back, static_cast<char*>(ext->device_ptr()) + 100, sizeof back));
    EXPECT_STREQ(back, msg);
    auto moved = std::move(*ext);
    EXPECT_EQ(ext->device_ptr(), nullptr);
    fake_.reset();
  }
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaFree", "cudaDestroyExternalMemory"}));
  fake_.reset();
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd, et_cuda_test::ext_size(4096)),
               ErrorCode::InvalidArgument, "buffer_bytes 4096 differs from the real size 8192 B");
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::DmaBufFd),
               ErrorCode::InvalidArgument, "not a DMA-BUF");
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(-1, cuda::ExternalMemoryHandleType::OpaqueFd),
               ErrorCode::InvalidArgument, "fd -1 is not valid");
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(999, cuda::ExternalMemoryHandleType::OpaqueFd),
               ErrorCode::InvalidArgument, "fd 999 is not an open file descriptor");
  EXPECT_EQ(fake_.call_count(), 0) << "bad input is refused before any CUDA call";
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(pipefd[0], cuda::ExternalMemoryHandleType::OpaqueFd),
               ErrorCode::InvalidArgument, "pass ExternalMemoryOptions::buffer_bytes");
  const auto closes = edgetensor::sys::call_count(edgetensor::sys::Call::Close);
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(pipefd[0], cuda::ExternalMemoryHandleType::OpaqueFd, et_cuda_test::ext_size(4096)),
               ErrorCode::Internal, "cudaErrorOperatingSystem");
  EXPECT_EQ(edgetensor::sys::call_count(edgetensor::sys::Call::Close) - closes, 1u) << "the failed import's dup";
  close(pipefd[0]);
  close(pipefd[1]);
  close(memfd);
}

TEST_F(CudaFake, StreamsAndCopies) {
  auto a = TensorDyn::allocate({1024}, DType::U8, et_test::mem(MemoryKind::Heap));
  auto b = TensorDyn::allocate({1024}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(a);
  ASSERT_OK(b);
  auto ma = cuda::map(*a);
  auto mb = cuda::map(*b);
  ASSERT_OK(ma);
  ASSERT_OK(mb);
  auto s = cuda::Stream::create();
  ASSERT_OK(s);
  EXPECT_EQ(fake_.last("cudaStreamCreateWithFlags")->args[0], 1u) << "cudaStreamNonBlocking";
  std::vector<unsigned char> src(1024), dst(1024);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i ^ 0x5a);
  fake_.reset();
  ASSERT_OK(cuda::copy_host_to_device_async(ma->device_ptr(), src.data(), 1024, *s));
  ASSERT_OK(cuda::copy_device_to_device_async(mb->device_ptr(), ma->device_ptr(), 1024, *s));
  ASSERT_OK(cuda::copy_device_to_host_async(dst.data(), mb->device_ptr(), 1024, *s));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(fake_.names(), (Names{"cudaMemcpyAsync", "cudaMemcpyAsync", "cudaMemcpyAsync", "cudaStreamSynchronize"}));
  EXPECT_EQ(fake_.call(0)->args[3], 1u);  // HostToDevice
  EXPECT_EQ(fake_.call(1)->args[3], 3u);  // DeviceToDevice
  EXPECT_EQ(fake_.call(2)->args[3], 2u);  // DeviceToHost
  EXPECT_EQ(fake_.call(0)->args[4], reinterpret_cast<unsigned long long>(s->native_handle()));
  EXPECT_EQ(src, dst);
  EXPECT_ERROR(cuda::copy_host_to_device(nullptr, src.data(), 4), ErrorCode::InvalidArgument, "null destination");
  ASSERT_OK(cuda::copy_host_to_device(nullptr, nullptr, 0));
  // A CUDA error keeps its name, number and text.
  int host_only = 0;
  EXPECT_ERROR(cuda::copy_host_to_device(&host_only, src.data(), 4), ErrorCode::InvalidArgument,
               "cudaErrorInvalidValue (1): invalid argument");
  fake_.reset();
  { auto gone = std::move(*s); }
  EXPECT_EQ(fake_.names(), (Names{"cudaStreamDestroy"}));
  EXPECT_ERROR(s->synchronize(), ErrorCode::FailedPrecondition, "moved-from stream");
}

TEST_F(CudaFake, TensorCopiesRowByRow) {
  auto t = TensorDyn::allocate({4, 8}, DType::U8, et_test::mem(MemoryKind::Heap));
  auto dev = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  ASSERT_OK(dev);
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    for (std::size_t i = 0; i < 32; ++i) w->data()[i] = std::byte(i);
  }
  auto md = cuda::map(*dev);
  ASSERT_OK(md);
  auto view = t->view(2, {4, 4}, {8, 1});  // columns 2..5 of each row
  ASSERT_OK(view);
  fake_.reset();
  ASSERT_OK(cuda::copy_to_device(*view, md->device_ptr(), md->extent_bytes()));
  EXPECT_EQ(fake_.names(), (Names{"cudaMemcpy", "cudaMemcpy", "cudaMemcpy", "cudaMemcpy"}));
  EXPECT_EQ(fake_.call(0)->args[2], 4u);
  {
    auto r = dev->map_read();
    ASSERT_OK(r);
    for (std::size_t row = 0; row < 4; ++row)
      for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(r->data()[row * 4 + c], std::byte(row * 8 + 2 + c));
  }
  // Back into another strided view, through a stream: queued, then waited for before the map closes.
  auto s = cuda::Stream::create();
  ASSERT_OK(s);
  auto target = t->view(0, {4, 4}, {8, 1});
  ASSERT_OK(target);
  fake_.reset();
  ASSERT_OK(cuda::copy_from_device(md->device_ptr(), 16, *target, &*s));
  EXPECT_EQ(fake_.names(),
            (Names{"cudaMemcpyAsync", "cudaMemcpyAsync", "cudaMemcpyAsync", "cudaMemcpyAsync", "cudaStreamSynchronize"}));
  {
    auto r = t->map_read();
    ASSERT_OK(r);
    for (std::size_t row = 0; row < 4; ++row)
      for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(r->data()[row * 8 + c], std::byte(row * 8 + 2 + c));
  }
  auto cols = t->view(0, {4, 2}, {8, 2});  // innermost stride 2 B != 1 B
  ASSERT_OK(cols);
  EXPECT_ERROR(cuda::copy_to_device(*cols, md->device_ptr(), md->extent_bytes()), ErrorCode::InvalidArgument,
               "the innermost stride is 2 B but the element size is 1 B");
  EXPECT_ERROR(cuda::copy_to_device(*t, md->device_ptr(), 16), ErrorCode::OutOfRange,
               "the tensor has 32 B, the device buffer holds 16 B");
  EXPECT_ERROR(cuda::copy_from_device(md->device_ptr(), 8, *t), ErrorCode::OutOfRange, "needs 32 B");
  EXPECT_ERROR(cuda::copy_to_device(TensorDyn(), md->device_ptr(), 16), ErrorCode::FailedPrecondition, "empty tensor");
}

TEST_F(CudaFake, RecordAndWaitBeforeCpuAccess) {
  auto t = TensorDyn::allocate({256}, DType::F32, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  auto s = cuda::Stream::create();
  ASSERT_OK(s);
  fake_.reset();
  ASSERT_OK(m->wait());
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaDeviceSynchronize"})) << "no event: the device";
  fake_.reset();
  ASSERT_OK(m->record(*s));
  ASSERT_OK(m->wait());
  EXPECT_EQ(fake_.names(), (Names{"cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventSynchronize"}));
  EXPECT_EQ(fake_.call(0)->args[0], 2u) << "cudaEventDisableTiming";
  fake_.reset();
  m->unmap();
  EXPECT_EQ(fake_.names(), Names{}) << "the event goes with the storage";
  EXPECT_ERROR(m->wait(), ErrorCode::FailedPrecondition, "released");
  *t = TensorDyn();  // the storage's teardown asks the event (done), then frees it, then unregisters
  EXPECT_EQ(fake_.names(), (Names{"cudaEventQuery", "cudaEventDestroy", "cudaHostUnregister"}));
}

TEST_F(CudaFake, CudaErrorsAreNotCachedAndCarryTheirName) {
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  fake_.fail("cudaHostRegister", 1, 2);
  EXPECT_ERROR(cuda::map(*t), ErrorCode::OutOfMemory, "cudaErrorMemoryAllocation (2): out of memory");
  fake_.fail("cudaHostGetDevicePointer", 1, 1);
  EXPECT_ERROR(cuda::map(*t), ErrorCode::InvalidArgument, "cudaHostGetDevicePointer");
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 1) << "a registration whose pointer failed is undone";
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  EXPECT_EQ(fake_.count("cudaHostRegister"), 3);
}

TEST_F(CudaFake, TeardownFailureIsLoggedNotThrown) {
  std::vector<std::string> logged;
  auto old = edgetensor::set_log_callback([&](edgetensor::LogLevel, std::string_view s) { logged.emplace_back(s); });
  {
    auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
    ASSERT_OK(t);
    ASSERT_OK(cuda::map(*t));
    fake_.fail("cudaHostUnregister", 1, 1);
  }
  edgetensor::set_log_callback(old);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("cudaHostUnregister"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("cudaErrorInvalidValue (1)"), std::string::npos) << logged[0];
  // The double still holds the registration it refused to drop (small heap blocks live in malloc's
  // pages, which stay mapped): drop it directly so the leak check at TearDown holds.
  EXPECT_EQ(fake_.live("host_register"), 1);
  void* h = dlopen(ET_FAKE_CUDART_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto unreg = reinterpret_cast<int (*)(void*)>(dlsym(h, "cudaHostUnregister"));
  dlclose(h);
  ASSERT_NE(unreg, nullptr);
  ASSERT_EQ(unreg(reinterpret_cast<void*>(fake_.last("cudaHostUnregister")->args[0])), 0);
}

TEST_F(CudaFake, ZeroSizeEmptyAndMissingDevice) {
  EXPECT_ERROR(cuda::map(TensorDyn()), ErrorCode::FailedPrecondition, "empty tensor handle");
  auto z = TensorDyn::allocate({0, 4}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(z);
  EXPECT_ERROR(cuda::map(*z), ErrorCode::FailedPrecondition, "no bytes");
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_ERROR(cuda::map(*t, {.device = 3}), ErrorCode::InvalidArgument, "CUDA device 3 does not exist (1 device(s))");
}

TEST_F(CudaFake, ForkChildNeverTouchesInheritedCudaState) {
  auto t = TensorDyn::allocate({kMiB}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  auto s = cuda::Stream::create();
  ASSERT_OK(s);
  ASSERT_OK(m->record(*s));
  const int before = fake_.call_count();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int bad = 0;
    auto again = cuda::map(*t);
    if (again || again.error().code() != ErrorCode::FailedPrecondition ||
        again.error().message().find("fork") == std::string::npos)
      bad |= 1;
    if (cuda::available() || !cuda::report().forked_child) bad |= 2;
    if (cuda::Stream::create()) bad |= 4;
    *m = cuda::CudaMap();  // event destroy skipped
    { auto gone = std::move(*s); }  // stream destroy skipped
    *t = TensorDyn();       // unregister skipped
    if (fake_.call_count() != before) bad |= 8;
    _exit(bad);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "child failure bits: 1 map not refused, 2 status, 4 stream, 8 CUDA called";
  EXPECT_EQ(fake_.call_count(), before) << "the child's calls, had there been any, are not in our record";
  fake_.reset();
  *m = cuda::CudaMap();
  *t = TensorDyn();
  { auto gone = std::move(*s); }
  EXPECT_EQ(fake_.names(), (Names{"cudaEventQuery", "cudaEventDestroy", "cudaHostUnregister", "cudaStreamDestroy"}))
      << "the parent still tears down";
}

}  // namespace
