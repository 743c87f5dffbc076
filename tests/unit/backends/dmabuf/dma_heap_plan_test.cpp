// SPDX-License-Identifier: Apache-2.0
// Pure logic of the DMA-BUF backend: probe order, plans, buffer names, open-error wording.
#include "backends/dmabuf/dma_heap_plan.h"

#include <cerrno>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

TEST(DmaHeapPlan, ProbeTableTriesEveryCmaNameBeforeSystem) {
  std::vector<std::string> names;
  for (const auto& c : heap_probe_table()) names.emplace_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"default_cma_region", "linux,cma", "reserved", "default-pool", "system"}));
  for (const auto& c : heap_probe_table()) EXPECT_EQ(c.contiguous, c.name != "system") << c.name;
}

TEST(DmaHeapPlan, EmptyRequestIsTableThenUdmabuf) {
  auto plan = make_heap_plan("");
  ASSERT_OK(plan);
  EXPECT_EQ(plan->heaps.size(), heap_probe_table().size());
  EXPECT_EQ(plan->heaps.back(), "system");
  EXPECT_FALSE(plan->required);
  EXPECT_TRUE(plan->use_udmabuf);
}

TEST(DmaHeapPlan, NamedHeapIsRequiredAndAlone) {
  auto plan = make_heap_plan("vendor,secure");
  ASSERT_OK(plan);
  EXPECT_EQ(plan->heaps, std::vector<std::string>{"vendor,secure"});
  EXPECT_TRUE(plan->required);
  EXPECT_FALSE(plan->use_udmabuf);
}

TEST(DmaHeapPlan, UdmabufRequestSkipsHeaps) {
  auto plan = make_heap_plan("udmabuf");
  ASSERT_OK(plan);
  EXPECT_TRUE(plan->heaps.empty());
  EXPECT_TRUE(plan->use_udmabuf);
}

TEST(DmaHeapPlan, RefusesNamesThatAreNotNodeNames) {
  EXPECT_ERROR(make_heap_plan("../../etc/passwd"), ErrorCode::InvalidArgument, "'../../etc/passwd'");
  EXPECT_ERROR(make_heap_plan(".."), ErrorCode::InvalidArgument, "not a node name");
  EXPECT_ERROR(make_heap_plan(std::string("sys\0tem", 7)), ErrorCode::InvalidArgument, "NUL");
  EXPECT_ERROR(make_heap_plan(std::string(300, 'a')), ErrorCode::InvalidArgument, "300 bytes");
  EXPECT_ERROR(check_heap_name(""), ErrorCode::InvalidArgument, "empty");
}

TEST(DmaBufName, ShortNamesArePrefixed) {
  EXPECT_EQ(dmabuf_buffer_name(""), "edgetensor");
  EXPECT_EQ(dmabuf_buffer_name("cam0"), "et:cam0");
}

TEST(DmaBufName, TruncatedToNameLenMinusOne) {
  std::string n = dmabuf_buffer_name(std::string(100, 'x'));
  EXPECT_EQ(n.size(), kDmaBufNameLen - 1);
  EXPECT_EQ(n, "et:" + std::string(kDmaBufNameLen - 4, 'x'));
  // Exactly at the limit: kept whole.
  std::string exact(kDmaBufNameLen - 1 - 3, 'y');
  EXPECT_EQ(dmabuf_buffer_name(exact), "et:" + exact);
}

TEST(DmaBufName, TruncationNeverSplitsUtf8) {
  // "et:" + 27 ASCII = 30 bytes; then a 3-byte character would end at byte 33 > 31: dropped whole.
  std::string name = std::string(27, 'a') + "\xE2\x82\xAC" + "tail";
  std::string n = dmabuf_buffer_name(name);
  EXPECT_EQ(n, "et:" + std::string(27, 'a'));
  // A 2-byte character that fits is kept.
  std::string n2 = dmabuf_buffer_name(std::string(26, 'a') + "\xC3\xA9" + "zz");
  EXPECT_EQ(n2, "et:" + std::string(26, 'a') + "\xC3\xA9");
  EXPECT_LE(n2.size(), kDmaBufNameLen - 1);
}

TEST(DmaHeapPlan, RoundUpToPage) {
  EXPECT_EQ(*round_up_to_page(1, 4096), 4096u);
  EXPECT_EQ(*round_up_to_page(4096, 4096), 4096u);
  EXPECT_EQ(*round_up_to_page(4097, 4096), 8192u);
  EXPECT_ERROR(round_up_to_page(SIZE_MAX - 10, 4096), ErrorCode::OutOfRange, "overflows");
}

TEST(DeviceOpenError, EnoentWithKernelHeapSaysNodeMissing) {
  auto e = device_open_error("/dev/dma_heap/system", ENOENT, "system", {"system"}, "");
  EXPECT_EQ(e.code(), ErrorCode::Unavailable);
  EXPECT_EQ(e.sys_errno(), ENOENT);
  EXPECT_NE(e.message().find("/dev/dma_heap/system"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("device node is missing"), std::string::npos) << e.message();
}

TEST(DeviceOpenError, EnoentWithOtherHeapsListsThem) {
  auto e = device_open_error("/dev/dma_heap/linux,cma", ENOENT, "linux,cma", {"reserved", "linux,cma2", "system"}, "");
  EXPECT_NE(e.message().find("no heap \"linux,cma\"; its heaps: \"reserved\", \"linux,cma2\", \"system\""),
            std::string::npos)
      << e.message();
}

// Heap names hold commas ("linux,cma"): a list of them quotes each, so none reads as two.
TEST(DmaHeapPlan, QuotedNamesKeepCommasInsideOneName) {
  const std::vector<std::string> names{"linux,cma", "system"};
  EXPECT_EQ(quoted_names(names), "\"linux,cma\", \"system\"");
  const std::vector<std::string_view> views{"default-pool"};
  EXPECT_EQ(quoted_names(views), "\"default-pool\"");
  EXPECT_EQ(quoted_names(std::vector<std::string>{}), "");
}

// A kernel heap directory that is not one: the message says the list is unknown, and why.
TEST(DeviceOpenError, EnoentWithAnUnknownKernelListSaysWhy) {
  auto e = device_open_error("/x/dev/system", ENOENT, "system", {}, "",
                             "dmabuf::AllocatorOptions::kernel_heap_dir \"/x/sys\" is a regular file, not a directory");
  EXPECT_EQ(e.code(), ErrorCode::Unavailable);
  EXPECT_NE(e.message().find("whether this kernel has heap \"system\" is unknown: dmabuf::AllocatorOptions::"
                             "kernel_heap_dir \"/x/sys\" is a regular file"),
            std::string::npos)
      << e.message();
  EXPECT_EQ(e.message().find("CONFIG_DMABUF_HEAPS"), std::string::npos) << e.message();
}

TEST(DeviceOpenError, EnoentWithoutHeapsSaysKernelHasNone) {
  auto e = device_open_error("/dev/dma_heap/system", ENOENT, "system", {}, "");
  EXPECT_NE(e.message().find("CONFIG_DMABUF_HEAPS"), std::string::npos) << e.message();
  auto u = device_open_error("/dev/udmabuf", ENOENT, "", {}, "");
  EXPECT_NE(u.message().find("CONFIG_UDMABUF"), std::string::npos) << u.message();
}

TEST(DeviceOpenError, EaccesHintsAtVideoGroupAndUdev) {
  auto e = device_open_error("/dev/dma_heap/system", EACCES, "system", {"system"}, "crw------- uid 0 gid 0");
  EXPECT_EQ(e.code(), ErrorCode::PermissionDenied);
  EXPECT_EQ(e.sys_errno(), EACCES);
  for (const char* needle : {"/dev/dma_heap/system", "EACCES", "video", "udev", "crw------- uid 0 gid 0"})
    EXPECT_NE(e.message().find(needle), std::string::npos) << needle << " in " << e.message();
}

// 8192 MiB in bytes does not fit a 32-bit size_t: the message computes it in 64 bits (armhf printed 0).
TEST(UdmabufLimit, LimitOf4GiBOrMoreIsNotWrapped) {
  auto e = udmabuf_size_limit_error(std::size_t{3} << 30, 8192);
  EXPECT_NE(e.message().find("8589934592 B"), std::string::npos) << e.message();
}

TEST(DeviceOpenError, EnomemIsOutOfMemory) {
  auto e = device_open_error("/dev/udmabuf", ENOMEM, "", {}, "");
  EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
  EXPECT_NE(e.message().find("/dev/udmabuf"), std::string::npos);
}

TEST(DeviceOpenError, OtherErrnoKeepsPathAndName) {
  auto e = device_open_error("/dev/dma_heap/x", ENXIO, "x", {}, "crw-rw-rw- uid 0 gid 0");
  EXPECT_EQ(e.sys_errno(), ENXIO);
  EXPECT_NE(e.message().find("/dev/dma_heap/x"), std::string::npos);
  EXPECT_NE(e.message().find("ENXIO"), std::string::npos);
}

TEST(UdmabufLimit, ErrorNamesSizeAndLimit) {
  auto e = udmabuf_size_limit_error(70u << 20, 64);
  EXPECT_EQ(e.code(), ErrorCode::OutOfRange);
  for (const char* needle : {"73400320 B", "64 MiB", "udmabuf.size_limit_mb=64", "67108864 B"})
    EXPECT_NE(e.message().find(needle), std::string::npos) << needle << " in " << e.message();
}

}  // namespace
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
