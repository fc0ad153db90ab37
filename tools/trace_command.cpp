// `grove trace`: the GROVE_TRACE files, made readable.
//
// Every rank writes its own Chrome trace (see docs/tracing.md). `grove trace merge` joins
// them into one file that Perfetto or chrome://tracing opens with one process per rank, the
// ranks' clocks being the same host clock. `grove trace summary` answers "where did the
// time go?" without a browser: per call the duration on each rank, and per rank, peer and
// step kind the time spent and the time spent waiting for that peer.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "command.hpp"
#include "grove/error.hpp"

namespace grove::tools {
namespace {

nlohmann::json loadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "cannot open trace file '" + path + "'");
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  if (trace.is_discarded() || !trace.is_object() || !trace.contains("traceEvents") ||
      !trace["traceEvents"].is_array()) {
    throw Error(ErrorCode::kInvalidArgument,
                "'" + path +
                    "' is not a GROVE_TRACE file (expected a JSON object with a "
                    "traceEvents array)");
  }
  return trace;
}

void merge(const std::vector<std::string>& inputs, const std::string& output) {
  nlohmann::json merged = {{"displayTimeUnit", "ns"}, {"traceEvents", nlohmann::json::array()}};
  uint64_t dropped = 0;
  for (const std::string& path : inputs) {
    nlohmann::json trace = loadTrace(path);
    for (auto& event : trace["traceEvents"]) merged["traceEvents"].push_back(std::move(event));
    if (trace.contains("otherData")) dropped += trace["otherData"].value("dropped_steps", 0ull);
  }
  merged["otherData"] = {{"files", inputs.size()}, {"dropped_steps", dropped}};
  std::ofstream out(output);
  if (!out) throw Error(ErrorCode::kInvalidArgument, "cannot write '" + output + "'");
  out << merged.dump() << "\n";
  if (!out) throw Error(ErrorCode::kSystemError, "writing '" + output + "' failed");
  std::printf("grove trace: merged %zu files (%zu events) into %s\n", inputs.size(),
              merged["traceEvents"].size(), output.c_str());
}

void summary(const std::vector<std::string>& inputs) {
  // Per call: duration per rank.
  std::map<std::tuple<uint64_t, std::string>, std::map<int, double>> calls;
  // Per (rank, step kind, peer): time in steps, of which waiting, bytes, count.
  struct Totals {
    double us = 0, waitUs = 0;
    uint64_t bytes = 0, steps = 0;
  };
  std::map<std::tuple<int, std::string, std::string>, Totals> steps;
  for (const std::string& path : inputs) {
    const nlohmann::json trace = loadTrace(path);
    for (const auto& event : trace["traceEvents"]) {
      const std::string category = event.value("cat", "");
      if (category == "call") {
        calls[{event["args"].value("sequence", 0ull), event.value("name", "")}]
             [event.value("pid", -1)] = event.value("dur", 0.0);
      } else if (category == "step") {
        const std::string name = event.value("name", "");
        const size_t space = name.find(' ');
        Totals& t = steps[{event.value("pid", -1), name.substr(0, space),
                           space == std::string::npos ? "" : name.substr(space + 1)}];
        t.us += event.value("dur", 0.0);
        t.waitUs += event["args"].value("wait_us", 0.0);
        t.bytes += event["args"].value("bytes", 0ull);
        ++t.steps;
      }
    }
  }
  std::printf("%-28s %s\n", "# call", "duration per rank (us)");
  for (const auto& [key, perRank] : calls) {
    std::string line;
    for (const auto& [rank, us] : perRank) line += fmt::format("  r{}:{:.1f}", rank, us);
    std::printf("%-28s%s\n", std::get<1>(key).c_str(), line.c_str());
  }
  std::printf("\n%-6s %-6s %-8s %8s %12s %12s %12s %8s\n", "# rank", "step", "peer", "count",
              "bytes", "time(us)", "waiting(us)", "wait%");
  for (const auto& [key, t] : steps) {
    std::printf("%-6d %-6s %-8s %8llu %12llu %12.1f %12.1f %7.1f%%\n", std::get<0>(key),
                std::get<1>(key).c_str(), std::get<2>(key).c_str(),
                static_cast<unsigned long long>(t.steps), static_cast<unsigned long long>(t.bytes),
                t.us, t.waitUs, t.us > 0 ? 100.0 * t.waitUs / t.us : 0.0);
  }
}

void addTraceCommand(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "Merge or summarise GROVE_TRACE files");
  trace->require_subcommand(1);

  auto mergeInputs = std::make_shared<std::vector<std::string>>();
  auto mergeOutput = std::make_shared<std::string>();
  CLI::App* mergeCommand =
      trace->add_subcommand("merge", "Join per-rank traces into one file for Perfetto");
  mergeCommand->add_option("files", *mergeInputs, "Per-rank trace files")->required();
  mergeCommand->add_option("-o,--output", *mergeOutput, "The merged trace to write")->required();
  mergeCommand->callback([mergeInputs, mergeOutput] { merge(*mergeInputs, *mergeOutput); });

  auto summaryInputs = std::make_shared<std::vector<std::string>>();
  CLI::App* summaryCommand = trace->add_subcommand(
      "summary", "Per call and per rank, peer and step kind: time spent and time waiting");
  summaryCommand->add_option("files", *summaryInputs, "Trace files")->required();
  summaryCommand->callback([summaryInputs] { summary(*summaryInputs); });
}

const CommandRegistration kTrace{"trace", &addTraceCommand};

}  // namespace
}  // namespace grove::tools
