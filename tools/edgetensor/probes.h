// SPDX-License-Identifier: Apache-2.0
// The probes of `edgetensor info`. Each section is one backend or subsystem; later backends add a probe
// function and a line in run_info(). JSON schema "edgetensor.info/1": {schema, version, sections:[...],
// system:{...}}; each section: {name, status: ok|unavailable|failed, detail, ...section fields}.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgetensor_cli {

inline constexpr const char* kInfoSchema = "edgetensor.info/1";

struct Section {
  std::string name;
  std::string status;  // "ok", "unavailable", "failed"
  std::string detail;  // one line
  nlohmann::json fields = nlohmann::json::object();
};

struct Report {
  std::vector<Section> sections;
  nlohmann::json system = nlohmann::json::object();
  bool heap_ok = false;
};

Report run_info(const std::string& self_exe);
nlohmann::json to_json(const Report& report);
std::string to_table(const Report& report);

}  // namespace edgetensor_cli
