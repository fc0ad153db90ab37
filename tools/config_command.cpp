// `grove config`: every knob of the parameter table (common/parameter_list.hpp) with the value
// a communicator created now would see and where it came from (default or environment), so
// "which settings does this job run with?" has one answer. A malformed value is shown with
// the error a communicator would fail with, and makes the exit status 1.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "common/parameters.hpp"
#include "grove/error.hpp"

namespace grove::tools {
namespace {

struct ConfigOptions {
  bool json = false;
};

std::string_view kindName(common::ParamKind kind) {
  switch (kind) {
    case common::ParamKind::kInteger:
      return "integer";
    case common::ParamKind::kBoolean:
      return "boolean";
    case common::ParamKind::kEnum:
      return "enum";
    case common::ParamKind::kString:
      break;
  }
  return "string";
}

std::string_view scopeName(common::ParamScope scope) {
  switch (scope) {
    case common::ParamScope::kCommunicator:
      return "communicator";
    case common::ParamScope::kLaunch:
      return "launch";
    case common::ParamScope::kProcess:
      break;
  }
  return "process";
}

/// One knob as the environment sets it now.
struct Row {
  const common::ParamSpec* spec = nullptr;
  std::string value;  ///< As shown: secrets are "(set)", unset is "".
  std::string source;
  std::string error;  ///< Why the environment's value is refused, or "".
};

Row readRow(const common::ParamSpec& spec) {
  Row row{&spec};
  try {
    common::ParamValue value = common::resolveParameter(spec, {});
    row.value = spec.secret && value.isSet() ? "(set)" : value.text;
    row.source = std::string(common::toString(value.source));
  } catch (const Error& error) {
    row.source = "environment";
    row.error = error.what();
  }
  return row;
}

void printJson(const std::vector<Row>& rows) {
  nlohmann::json knobs = nlohmann::json::array();
  for (const Row& row : rows) {
    nlohmann::json knob{{"name", row.spec->name},
                        {"value", row.value},
                        {"source", row.source},
                        {"default", row.spec->fallback},
                        {"kind", kindName(row.spec->kind)},
                        {"scope", scopeName(row.spec->scope)},
                        {"expected", common::describeExpected(*row.spec)},
                        {"doc", row.spec->doc}};
    if (!row.error.empty()) knob["error"] = row.error;
    knobs.push_back(std::move(knob));
  }
  std::printf("%s\n", nlohmann::json{{"knobs", knobs}}.dump(2).c_str());
}

void printTable(const std::vector<Row>& rows) {
  std::printf("%-26s %-12s %-12s %s\n", "KNOB", "SOURCE", "VALUE", "MEANING");
  for (const Row& row : rows) {
    const std::string value = row.error.empty() ? (row.value.empty() ? "-" : row.value) : "INVALID";
    std::printf("%-26s %-12s %-12s %.*s\n", std::string(row.spec->name).c_str(), row.source.c_str(),
                value.c_str(), static_cast<int>(row.spec->doc.size()), row.spec->doc.data());
    if (!row.error.empty()) std::printf("%26s %s\n", "", row.error.c_str());
  }
}

void runConfig(const ConfigOptions& options) {
  std::vector<Row> rows;
  bool invalid = false;
  for (const common::ParamSpec& spec : common::kParameters) {
    rows.push_back(readRow(spec));
    invalid = invalid || !rows.back().error.empty();
  }
  if (options.json) {
    printJson(rows);
  } else {
    printTable(rows);
  }
  if (invalid) throw CommandExit(1);
}

void addConfigCommand(CLI::App& app) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* command = app.add_subcommand(
      "config", "Show every GROVE_* knob, its current value and where it came from");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
  command->callback([options] { runConfig(*options); });
}

const CommandRegistration kConfig{"config", &addConfigCommand};

}  // namespace
}  // namespace grove::tools
