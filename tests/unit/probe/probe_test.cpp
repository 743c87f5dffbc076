// SPDX-License-Identifier: Apache-2.0
// probe() (src/probe): the report `edgetensor info` and edgetensor.info() print, as a library call.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace {

using namespace edgetensor;
using nlohmann::json;

const std::vector<std::string> kSections = {"heap",   "shm (memfd)", "shm (named POSIX)",
                                            "dmabuf", "gl_pbo",      "cuda"};

TEST(Probe, StatusNames) {
  EXPECT_EQ(probe_status_name(ProbeStatus::Ok), "ok");
  EXPECT_EQ(probe_status_name(ProbeStatus::Unavailable), "unavailable");
  EXPECT_EQ(probe_status_name(ProbeStatus::Failed), "failed");
}

TEST(Probe, ReportHasEverySectionAndPrintsAsJsonAndTable) {
  const int fds = et_test::open_fd_count();
  const int shm_entries = et_test::dev_shm_entry_count();
  const ProbeReport r = probe();
  EXPECT_EQ(r.version, version());
  std::vector<std::string> names;
  for (const auto& s : r.sections) names.push_back(s.name);
  EXPECT_EQ(names, kSections);

  const ProbeSection* heap = r.find("heap");
  ASSERT_NE(heap, nullptr);
  EXPECT_EQ(heap->status, ProbeStatus::Ok) << heap->detail;
  EXPECT_EQ(r.find("no such section"), nullptr);
  EXPECT_EQ(r.find("cuda"), &r.sections.back());

  // Without a round-trip hook the shareable sections check in this process and say so.
  const ProbeSection* memfd = r.find("shm (memfd)");
  ASSERT_NE(memfd, nullptr);
  EXPECT_EQ(memfd->status, backend_status(MemoryKind::Shm).available ? ProbeStatus::Ok : ProbeStatus::Unavailable)
      << memfd->detail;
  if (memfd->status == ProbeStatus::Ok) {
    EXPECT_NE(memfd->detail.find("no cross-process round trip"), std::string::npos) << memfd->detail;
    EXPECT_TRUE(json::parse(memfd->fields_json).at("round_trip").is_null()) << memfd->fields_json;
  }

  // This machine's absences are sections too, never a missing section or an error: no /dev/dma_heap
  // or udmabuf makes dmabuf Unavailable, no CUDA driver makes cuda Unavailable with the runtime's summary.
  const ProbeSection* dmabuf = r.find("dmabuf");
  ASSERT_NE(dmabuf, nullptr);
  if (!backend_status(MemoryKind::DmaBuf).available) {
    EXPECT_EQ(dmabuf->status, ProbeStatus::Unavailable) << dmabuf->detail;
    EXPECT_FALSE(dmabuf->detail.empty());
  }
  const ProbeSection* cuda_section = r.find("cuda");
  ASSERT_NE(cuda_section, nullptr);
  if (!cuda::available()) {
    EXPECT_EQ(cuda_section->status, ProbeStatus::Unavailable);
    EXPECT_EQ(cuda_section->detail, cuda::report().summary());
  }
  for (const auto& s : r.sections) EXPECT_TRUE(json::parse(s.fields_json).is_object()) << s.name;

  // The JSON `edgetensor info --json` prints: schema, version, system, sections with their fields.
  const json j = json::parse(r.to_json());
  EXPECT_EQ(j.at("schema"), kProbeSchema);
  EXPECT_EQ(j.at("schema"), "edgetensor.info/1");
  EXPECT_EQ(j.at("version"), r.version);
  ASSERT_EQ(j.at("sections").size(), kSections.size());
  for (std::size_t i = 0; i < kSections.size(); ++i) {
    const json& s = j.at("sections")[i];
    EXPECT_EQ(s.at("name"), kSections[i]);
    EXPECT_EQ(s.at("status"), probe_status_name(r.sections[i].status));
    EXPECT_EQ(s.at("detail"), r.sections[i].detail);
  }
  EXPECT_TRUE(j.at("sections")[5].contains("tried")) << "the loader's diagnostics stay in the report";
  const json& sys = j.at("system");
  EXPECT_GT(sys.at("page_size_bytes").get<long long>(), 0);
  EXPECT_EQ(sys.at("process_bits"), static_cast<int>(sizeof(void*) * 8));
  EXPECT_TRUE(sys.contains("auto_selection"));

  const std::string table = r.to_table();
  EXPECT_EQ(table.rfind("edgetensor " + r.version, 0), 0u) << table;
  for (const auto& name : kSections) EXPECT_NE(table.find(name), std::string::npos) << name << "\n" << table;
  EXPECT_NE(table.find("auto selection"), std::string::npos) << table;

  EXPECT_EQ(et_test::open_fd_count(), fds);
  EXPECT_EQ(et_test::dev_shm_entry_count(), shm_entries) << "the named shm object is removed";
}

TEST(Probe, RoundTripHookDecidesTheShareableSections) {
  if (!backend_status(MemoryKind::Shm).available) GTEST_SKIP() << backend_status(MemoryKind::Shm).detail;
  std::vector<std::string> names_seen;
  ProbeOptions options;
  options.round_trip = [&](const TensorDyn& t, std::string_view shm_name) -> Result<std::string> {
    names_seen.emplace_back(shm_name);
    if (shm_name.empty() && t.memory() == MemoryKind::Shm) return fail(ErrorCode::Busy, "peer did not answer");
    return std::string("peer checked it");
  };
  const ProbeReport r = probe(options);
  ASSERT_GE(names_seen.size(), 2u);
  EXPECT_EQ(names_seen[0], "") << "memfd travels by fd";
  EXPECT_EQ(names_seen[1].rfind("/edgetensor-info-", 0), 0u) << names_seen[1];

  const ProbeSection* memfd = r.find("shm (memfd)");
  ASSERT_NE(memfd, nullptr);
  EXPECT_EQ(memfd->status, ProbeStatus::Failed);
  EXPECT_NE(memfd->detail.find("round trip failed: "), std::string::npos) << memfd->detail;
  EXPECT_NE(memfd->detail.find("peer did not answer"), std::string::npos) << memfd->detail;
  EXPECT_EQ(json::parse(memfd->fields_json).at("round_trip"), false);

  const ProbeSection* named = r.find("shm (named POSIX)");
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->status, ProbeStatus::Ok) << named->detail;
  EXPECT_NE(named->detail.find("peer checked it"), std::string::npos) << named->detail;
  EXPECT_EQ(json::parse(named->fields_json).at("round_trip"), true);
  EXPECT_EQ(json::parse(r.to_json()).at("sections")[1].at("status"), "failed");
}

TEST(Probe, AThrowingHookIsAFailedSectionNotAnException) {
  if (!backend_status(MemoryKind::Shm).available) GTEST_SKIP() << backend_status(MemoryKind::Shm).detail;
  const int shm_entries = et_test::dev_shm_entry_count();
  ProbeOptions options;
  options.round_trip = [](const TensorDyn&, std::string_view shm_name) -> Result<std::string> {
    if (shm_name.empty()) throw std::runtime_error("hook broke");
    throw 42;
  };
  ProbeReport r;
  EXPECT_NO_THROW(r = probe(options));
  const ProbeSection* memfd = r.find("shm (memfd)");
  ASSERT_NE(memfd, nullptr);
  EXPECT_EQ(memfd->status, ProbeStatus::Failed);
  EXPECT_EQ(memfd->detail, "unexpected exception: hook broke");
  const ProbeSection* named = r.find("shm (named POSIX)");
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->status, ProbeStatus::Failed);
  EXPECT_EQ(named->detail, "unexpected exception");
  EXPECT_EQ(r.find("heap")->status, ProbeStatus::Ok) << "the other sections still ran";
  EXPECT_EQ(r.sections.size(), kSections.size());
  EXPECT_EQ(et_test::dev_shm_entry_count(), shm_entries) << "the named object is removed when the hook throws";
}

}  // namespace
