// SPDX-License-Identifier: Apache-2.0
// probe() and its report: the sections in order, each guarded so that nothing escapes; JSON and table.
#include <edgetensor/probe.h>
#include <edgetensor/version.h>

#include <exception>

#include "text/format.h"

#include "probe/probe_sections.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

using nlohmann::json;

namespace {

// A section that threw (a round-trip hook, or out of memory) is a Failed section that says so.
template <typename F>
ProbeSection guarded(const char* name, F&& section) {
  try {
    return std::forward<F>(section)().finish();
  } catch (const std::exception& e) {
    return {name, ProbeStatus::Failed, std::string("unexpected exception: ") + e.what(), "{}"};
  } catch (...) {
    return {name, ProbeStatus::Failed, "unexpected exception", "{}"};
  }
}

json parse_object(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

ProbeSection detail::ProbeDraft::finish() && {
  return {std::move(name), status, std::move(detail), fields.dump()};
}

std::string_view probe_status_name(ProbeStatus status) noexcept {
  switch (status) {
    case ProbeStatus::Ok: return "ok";
    case ProbeStatus::Unavailable: return "unavailable";
    case ProbeStatus::Failed: return "failed";
  }
  return "failed";
}

const ProbeSection* ProbeReport::find(std::string_view name) const noexcept {
  for (const auto& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

std::string ProbeReport::to_json() const {
  json secs = json::array();
  for (const auto& s : sections) {
    json o = parse_object(s.fields_json);
    o["name"] = s.name;
    o["status"] = std::string(probe_status_name(s.status));
    o["detail"] = s.detail;
    secs.push_back(std::move(o));
  }
  json j = {{"schema", kProbeSchema}, {"version", version}, {"system", parse_object(system_json)},
            {"sections", std::move(secs)}};
  return j.dump(2);
}

std::string ProbeReport::to_table() const {
  const json sys = parse_object(system_json);
  std::string out = text::format("edgetensor {} — {}\n\n", version, sys.value("kernel", std::string("?")));
  out += text::format("{:<20} {:<12} {}\n", "backend", "status", "detail");
  out += text::format("{:-<20} {:-<12} {:-<50}\n", "", "", "");
  for (const auto& s : sections) out += text::format("{:<20} {:<12} {}\n", s.name, probe_status_name(s.status), s.detail);
  out += "\nsystem\n";
  out += text::format("  page size          {} KiB ({}-bit process)\n", sys.value("page_size_bytes", 0LL) / 1024,
                      sys.value("process_bits", 0));
  const json shm = sys.value("dev_shm", json::object());
  if (shm.contains("size_bytes"))
    out += text::format("  /dev/shm           {:.1f} MiB total, {:.1f} MiB free\n",
                        shm.value("size_bytes", 0.0) / 1048576.0, shm.value("free_bytes", 0.0) / 1048576.0);
  const json heaps = sys.value("dma_heap_nodes", json::array());
  if (heaps.empty()) out += "  /dev/dma_heap      no heap nodes\n";
  for (const auto& h : heaps)
    out += text::format("  {:<18} {} uid {} gid {} {}{}\n", h.value("path", std::string()),
                        h.value("mode", std::string()), h.value("uid", 0), h.value("gid", 0),
                        h.value("readable", false) ? "r" : "-", h.value("writable", false) ? "w" : "-");
  const json u = sys.value("udmabuf", json::object());
  out += u.value("present", false)
             ? text::format("  /dev/udmabuf       present, {} {}{}\n", u.value("mode", std::string()),
                            u.value("readable", false) ? "r" : "-", u.value("writable", false) ? "w" : "-")
             : "  /dev/udmabuf       absent\n";
  out += text::format("  auto selection     {}\n", sys.value("auto_selection", std::string("?")));
  return out;
}

ProbeReport probe(const ProbeOptions& options) {
  ProbeReport r;
  try {
    r.version = std::string(version());
    r.sections.push_back(guarded("heap", [] { return detail::probe_heap(); }));
    r.sections.push_back(guarded("shm (memfd)", [&] { return detail::probe_memfd(options); }));
    r.sections.push_back(guarded("shm (named POSIX)", [&] { return detail::probe_named_shm(options); }));
    r.sections.push_back(guarded("dmabuf", [&] { return detail::probe_dmabuf(options); }));
    r.sections.push_back(guarded("gl_pbo", [] { return detail::probe_gl(); }));
    r.sections.push_back(guarded("cuda", [] { return detail::probe_cuda(); }));
    r.system_json = detail::probe_system().dump();
  } catch (...) {
    // Out of memory while the report itself grew (guarded() catches the rest): what was built so far.
  }
  return r;
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
