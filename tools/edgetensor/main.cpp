// SPDX-License-Identifier: Apache-2.0
// edgetensor CLI: `info [--json]` prints edgetensor::probe() (include/edgetensor/probe.h), with the
// cross-process round trips against an exec'd copy of itself; `bench [--json]` measures the steady
// state (pool reuse against a warm memset) in a few seconds; `peer` is the exec'd side of the
// cross-process round trips (not for direct use).
//   edgetensor              prints the help on stdout and exits 1 (as git does: nothing was done, so a
//                           script that forgot the subcommand fails)
//   edgetensor -h|--help    the help, exit 0
//   edgetensor -V|--version "edgetensor <version>", exit 0 (the headers' version; if the library
//                           loaded at run time is another one, that is named too)
#include <CLI/CLI.hpp>
#include <edgetensor/abi.h>
#include <edgetensor/probe.h>
#include <edgetensor/version.h>

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <iostream>
#include <string>

#include "bench.h"
#include "round_trip.h"

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  buf[n] = '\0';
  return buf;
}

std::string version_line() {
  std::string line = "edgetensor " ET_VERSION_STRING;
  if (edgetensor::version() != ET_VERSION_STRING)
    line += " (libedgetensor " + std::string(edgetensor::version()) + " loaded)";
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgetensor: zero-copy tensor memory for edge-AI pipelines"};
  app.require_subcommand(0, 1);  // none: the help (below), not CLI11's "A subcommand is required"
  app.set_version_flag("-V,--version", version_line(), "Print the version and exit");

  bool json_out = false;
  auto* info = app.add_subcommand("info", "Probe this machine: backends, devices, cross-process round trips");
  info->add_flag("--json", json_out, "Print JSON (schema in the 'schema' field) instead of a table");

  bool bench_json = false;
  auto* bench = app.add_subcommand("bench", "Measure steady-state frames here in seconds: pool reuse, the frame channel (a report: "
                                             "exits 0 even when a target is missed)");
  bench->add_flag("--json", bench_json, "Print JSON (schema in the 'schema' field) instead of a table");

  int socket_fd = -1;
  auto* peer = app.add_subcommand("peer", "Internal: serve one round-trip request on an inherited socket");
  peer->add_option("--socket-fd", socket_fd, "Inherited Unix socket fd")->required();
  peer->group("");  // hidden from --help

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version: CLI11 prints them, exit 0
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A usage error: the program's name, CLI11's reason, exit 2 (as getopt-based tools do; CLI11's own codes
    // run past 100).
    std::cerr << "edgetensor: " << e.what() << "\nRun 'edgetensor --help' for the commands and their options.\n";
    return 2;
  }

  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return 1;
  }
  if (*peer) return edgetensor_cli::run_peer(socket_fd);
  if (*bench) {
    auto result = edgetensor_cli::run_bench();
    if (bench_json)
      std::cout << edgetensor_cli::to_json(result).dump(2) << "\n";
    else
      std::cout << edgetensor_cli::to_table(result);
    return result.error.empty() ? 0 : 1;  // a missed target is reported, never a failure
  }

  const edgetensor::ProbeReport report = edgetensor::probe(
      {.round_trip = [exe = self_exe()](const edgetensor::TensorDyn& t, std::string_view shm_name) {
        return edgetensor_cli::cross_process_round_trip(t, exe, std::string(shm_name));
      }});
  if (json_out)
    std::cout << report.to_json() << "\n";
  else
    std::cout << report.to_table();
  const edgetensor::ProbeSection* heap = report.find("heap");
  return heap && heap->status == edgetensor::ProbeStatus::Ok ? 0 : 1;
}
