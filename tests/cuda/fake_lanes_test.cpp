// SPDX-License-Identifier: Apache-2.0
// Lane 3 variants: the test double emulating a 12.x runtime, a driver that imports DMA-BUFs, no
// driver, no device, and a runtime lacking a required symbol. Each runs in its own ctest lane.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_support.h"

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;
using et_cuda_test::desc_field;
using Names = std::vector<std::string>;

namespace {

class CudaFake12 : public et_cuda_test::FakeLaneTest {};
class CudaFakeDmaBufDriver : public et_cuda_test::FakeLaneTest {};
class CudaFakeNoDriver : public et_cuda_test::FakeLaneTest {};
class CudaFakeNoDevice : public et_cuda_test::FakeLaneTest {};
class CudaFakeNewerRuntime : public et_cuda_test::FakeLaneTest {};
class CudaFakeUnknownMajor : public et_cuda_test::FakeLaneTest {};

TEST_F(CudaFake12, Runtime12GetsThe40ByteDescriptor) {
  if (et_test::env("ET_FAKE_CUDART_RUNTIME_VERSION") != "12080") GTEST_SKIP() << "run through ctest lane cuda.fake12";
  ASSERT_EQ(report_.runtime_version, 12080);
  ASSERT_TRUE(report_.available) << report_.summary();
  int memfd = memfd_create("et-ext12", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, 4096), 0);
  {
    auto ext = cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd, et_cuda_test::ext_dedicated());
    ASSERT_OK(ext);
    const EtFakeCall* imp = fake_.last("cudaImportExternalMemory");
    ASSERT_NE(imp, nullptr);
    // The double reads exactly the 12.x size: a larger read would be an ASan error on our 40-byte buffer
    // in the 13.0 lane's opposite case, and a smaller struct here would be one in this lane.
    EXPECT_EQ(imp->desc_size, 40u);
    EXPECT_EQ(desc_field<int>(imp, 0), 1);
    EXPECT_EQ(desc_field<unsigned long long>(imp, 24), 4096u);
    EXPECT_EQ(desc_field<unsigned>(imp, 32), 1u) << "cudaExternalMemoryDedicated";
    EXPECT_TRUE(et_cuda_test::all_zero(imp, 36)) << "padding is zero too";
    EXPECT_EQ(fake_.last("cudaExternalMemoryGetMappedBuffer")->desc_size, 24u);
  }
  close(memfd);
}

// Minor-version compatibility: runtime 13.1 on driver 13.0. cudaGetDriverEntryPointByVersion refuses
// any version above the driver's, so the runtime's own version must never be the one requested.
TEST_F(CudaFakeNewerRuntime, DriverEntryPointsWorkWithARuntimeNewerThanTheDriver) {
  if (et_test::env("ET_FAKE_CUDART_RUNTIME_VERSION") != "13010") GTEST_SKIP() << "run through ctest lane cuda.fakenewerruntime";
  ASSERT_EQ(report_.runtime_version, 13010);
  ASSERT_EQ(report_.driver_version, 13000);
  ASSERT_TRUE(report_.available) << report_.summary();
  ASSERT_EQ(report_.devices.size(), 1u);
  EXPECT_NE(report_.devices[0].name.find("test double"), std::string::npos) << report_.summary();
  EXPECT_EQ(report_.devices[0].total_memory_bytes, std::size_t{8} << 30);
  EXPECT_TRUE(loader_.dmabuf_handle_type);
  // The DMA-BUF path itself (the double's knob is read at each call).
  ASSERT_EQ(setenv("ET_FAKE_CUDART_DMABUF", "1", 1), 0);
  auto storage = et_cuda_test::dmabuf_storage(8192);
  auto m = cuda::detail::map_storage(storage, 0, 8192, {});
  unsetenv("ET_FAKE_CUDART_DMABUF");
  ASSERT_OK(m);
  EXPECT_EQ(m->path(), cuda::CudaPath::ExternalDmaBuf);
}

TEST_F(CudaFakeNewerRuntime, EachSymbolIsRequestedAtItsAbiVersionNeverAboveTheDriver) {
  if (et_test::env("ET_FAKE_CUDART_RUNTIME_VERSION") != "13010") GTEST_SKIP() << "run through ctest lane cuda.fakenewerruntime";
  const auto* api = cuda::detail::runtime();
  ASSERT_NE(api, nullptr);
  for (const auto& sym : cuda::detail::kDriverSymbols) {
    fake_.reset();
    std::string reason;
    EXPECT_NE(cuda::detail::driver_entry_point(*api, sym, 13000, &reason), nullptr) << sym.name << ": " << reason;
    const EtFakeCall* c = fake_.last("cudaGetDriverEntryPointByVersion");
    ASSERT_NE(c, nullptr) << sym.name;
    EXPECT_STREQ(reinterpret_cast<const char*>(c->desc), sym.name);
    EXPECT_EQ(c->args[0], static_cast<unsigned long long>(sym.abi_version)) << sym.name;
  }
  EXPECT_EQ(cuda::detail::kCuDeviceTotalMem.abi_version, 3020) << "cuDeviceTotalMem_v2 (size_t bytes)";
  EXPECT_EQ(cuda::detail::kCuMemFree.abi_version, 3020) << "cuMemFree_v2 (64-bit CUdeviceptr)";
  // An ABI newer than the driver is not asked for at all (the runtime would refuse it).
  fake_.reset();
  std::string reason;
  EXPECT_EQ(cuda::detail::driver_entry_point(*api, {"cuImportExternalMemory", 13020}, 13000, &reason), nullptr);
  EXPECT_EQ(reason, "driver 13.0 predates the cuImportExternalMemory we call (CUDA 13.2)");
  EXPECT_EQ(fake_.call_count(), 0);
}

TEST_F(CudaFakeNewerRuntime, TheDoubleRefusesAVersionAboveItsDriverLikeTheRealRuntime) {
  if (et_test::env("ET_FAKE_CUDART_RUNTIME_VERSION") != "13010") GTEST_SKIP() << "run through ctest lane cuda.fakenewerruntime";
  void* h = dlopen(ET_FAKE_CUDART_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto by_version = reinterpret_cast<int (*)(const char*, void**, unsigned, unsigned long long, int*)>(
      dlsym(h, "cudaGetDriverEntryPointByVersion"));
  dlclose(h);
  ASSERT_NE(by_version, nullptr);
  void* fn = nullptr;
  int query = -1;
  EXPECT_EQ(by_version("cuDeviceGetName", &fn, 13010, 0, &query), 1) << "cudaErrorInvalidValue above the driver";
  EXPECT_EQ(by_version("cuImportExternalMemory", &fn, 9020, 0, &query), 0);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(query, 2) << "cudaDriverEntryPointVersionNotSufficent before the symbol existed";
  EXPECT_EQ(by_version("cuDeviceTotalMem", &fn, 3020, 0, &query), 0);
  void* v2 = fn;
  EXPECT_EQ(by_version("cuDeviceTotalMem", &fn, 2000, 0, &query), 0);
  EXPECT_NE(fn, v2) << "below 3.2 the CUDA 2.0 ABI is handed out";
}

// A runtime major without an external-memory descriptor table (14.0 here): only the runtime's
// OpaqueFd import needs that table; host registration, streams, copies and the driver's DMA-BUF
// path work, and the status says which path is off and why.
TEST_F(CudaFakeUnknownMajor, OnlyTheRuntimeOpaqueFdPathIsOff) {
  if (et_test::env("ET_FAKE_CUDART_RUNTIME_VERSION") != "14000") GTEST_SKIP() << "run through ctest lane cuda.fakeunknownmajor";
  ASSERT_EQ(report_.runtime_version, 14000);
  EXPECT_TRUE(report_.available) << report_.summary();
  EXPECT_TRUE(report_.error.empty()) << report_.error;
  EXPECT_TRUE(cuda::available());
  EXPECT_FALSE(loader_.external_opaque_fd);
  EXPECT_TRUE(loader_.dmabuf_handle_type);
  EXPECT_EQ(report_.unavailable_paths,
            std::vector<std::string>{
                "external-opaque-fd: CUDA runtime 14.0 has no external-memory descriptor table here (known: 11.x-13.x)"});
  // Host registration, streams and copies.
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  EXPECT_EQ(m->path(), cuda::CudaPath::HostRegistered);
  auto s = cuda::Stream::create();
  ASSERT_OK(s);
  const char msg[] = "host-registered on an unknown runtime major";
  ASSERT_OK(cuda::copy_host_to_device_async(m->device_ptr(), msg, sizeof msg, *s));
  ASSERT_OK(s->synchronize());
  char back[sizeof msg] = {};
  ASSERT_OK(cuda::copy_device_to_host(back, m->device_ptr(), sizeof back));
  EXPECT_STREQ(back, msg);
  // The runtime's OpaqueFd import is refused before any CUDA call, naming the version.
  int memfd = memfd_create("et-ext14", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, 4096), 0);
  fake_.reset();
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd), ErrorCode::Unsupported,
               "no cudaExternalMemoryHandleDesc layout for CUDA runtime 14.0 (known: 11.x-13.x)");
  EXPECT_EQ(fake_.count("cudaImportExternalMemory"), 0);
  close(memfd);
  // The driver's DMA-BUF type has its own descriptor (cuda.h _v1), independent of the runtime major.
  ASSERT_EQ(setenv("ET_FAKE_CUDART_DMABUF", "1", 1), 0);
  auto storage = et_cuda_test::dmabuf_storage(8192);
  auto dm = cuda::detail::map_storage(storage, 0, 8192, {});
  unsetenv("ET_FAKE_CUDART_DMABUF");
  ASSERT_OK(dm);
  EXPECT_EQ(dm->path(), cuda::CudaPath::ExternalDmaBuf);
}

TEST_F(CudaFakeDmaBufDriver, DmaBufStorageUsesTheDriverDmaBufType) {
  if (et_test::env("ET_FAKE_CUDART_DMABUF") != "1") GTEST_SKIP() << "run through ctest lane cuda.fakedmabuf";
  auto storage = et_cuda_test::dmabuf_storage(16384);
  const int fds = et_test::open_fd_count();
  const auto closes = edgetensor::sys::call_count(edgetensor::sys::Call::Close);
  auto m = cuda::detail::map_storage(storage, 0, 16384, {});
  ASSERT_OK(m);
  EXPECT_EQ(m->path(), cuda::CudaPath::ExternalDmaBuf);
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaGetDevice", "cudaSetDevice", "cuImportExternalMemory",
                                  "cuExternalMemoryGetMappedBuffer"}));
  const EtFakeCall* imp = fake_.last("cuImportExternalMemory");
  EXPECT_EQ(imp->desc_size, 104u);
  EXPECT_EQ(desc_field<int>(imp, 0), 9);
  EXPECT_NE(desc_field<int>(imp, 8), storage->backing().fd());
  EXPECT_TRUE(et_cuda_test::all_zero(imp, 36));
  EXPECT_EQ(fake_.last("cuExternalMemoryGetMappedBuffer")->desc_size, 88u);
  EXPECT_EQ(et_test::open_fd_count(), fds + 1);
  fake_.reset();
  *m = cuda::CudaMap();
  storage.reset();
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaSetDevice", "cuMemFree", "cuDestroyExternalMemory"}));
  // A successful DMA-BUF import hands the dup to CUDA as OpaqueFd does (the documentation is silent
  // for this type): we never close it; the double closed it at destroy (a second close would be a
  // violation) and the backing closed the tensor's own fd.
  EXPECT_EQ(edgetensor::sys::call_count(edgetensor::sys::Call::Close) - closes, 1u) << "only the backing's fd";
  EXPECT_EQ(et_test::open_fd_count(), fds - 1);
}

TEST_F(CudaFakeNoDriver, EveryEntryPointFailsFastWithoutCallingCuda) {
  if (et_test::env("ET_FAKE_CUDART_DRIVER_VERSION") != "0") GTEST_SKIP() << "run through ctest lane cuda.fakenodriver";
  EXPECT_FALSE(report_.available);
  EXPECT_EQ(report_.driver_version, 0);
  EXPECT_NE(report_.error.find("cudaErrorInsufficientDriver (35)"), std::string::npos) << report_.error;
  // EDGETENSOR_CUDART is exclusive: a runtime that reaches no driver is kept, nothing else is tried.
  EXPECT_EQ(report_.runtime_file, ET_FAKE_CUDART_PATH);
  EXPECT_TRUE(loader_.tried.empty());
  auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  char buf[8] = {};
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::Stream::create(), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::copy_device_to_host(buf, buf, 8), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  // Without a usable runtime a zero-size copy is Unavailable too (cuda.h), not a silent success.
  EXPECT_ERROR(cuda::copy_host_to_device(nullptr, nullptr, 0), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::copy_to_device(*t, buf, 64), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(0, cuda::ExternalMemoryHandleType::OpaqueFd), ErrorCode::Unavailable,
               "cudaErrorInsufficientDriver");
  EXPECT_EQ(fake_.call_count(), 0) << "the status was computed once; nothing calls CUDA again";
}

TEST_F(CudaFakeNoDevice, NoDeviceIsUnavailable) {
  if (et_test::env("ET_FAKE_CUDART_DEVICES") != "0") GTEST_SKIP() << "run through ctest lane cuda.fakenodevice";
  EXPECT_FALSE(report_.available);
  EXPECT_FALSE(cuda::available());
  EXPECT_EQ(report_.device_count, 0);
  EXPECT_NE(report_.error.find("cudaErrorNoDevice (100)"), std::string::npos) << report_.error;
}

TEST(CudaFakeIncomplete, MissingRequiredSymbolMakesCudaUnavailable) {
#if !ET_TEST_HAVE_CUDA_HEADERS
  GTEST_SKIP() << "the CUDA test-double runtime was not built: no toolkit headers at " ET_CUDA_TOOLKIT_INCLUDE;
#else
  if (et_test::env("EDGETENSOR_CUDART") != ET_FAKE_CUDART_INCOMPLETE_PATH)
    GTEST_SKIP() << "run through ctest lane cuda.fakeincomplete";
  auto st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  EXPECT_FALSE(loader.loaded);
  EXPECT_FALSE(st.available);
  EXPECT_NE(st.error.find("lacks required CUDA runtime symbol(s): cudaHostRegister"), std::string::npos) << st.error;
  // Both lists describe the file, whatever else is missing: the double lacks the deprecated
  // cudaGetDriverEntryPoint (optional) as well as cudaHostRegister (required).
  EXPECT_EQ(st.runtime_file, ET_FAKE_CUDART_INCOMPLETE_PATH);
  EXPECT_EQ(loader.missing_required_symbols, std::vector<std::string>{"cudaHostRegister"});
  EXPECT_EQ(loader.missing_optional_symbols, std::vector<std::string>{"cudaGetDriverEntryPoint"});
  auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, "cudaHostRegister");
#endif
}

}  // namespace
