// How a subcommand joins the `grove` tool without anyone editing main.cpp.
//
// Each subcommand lives in its own tools/<name>.cpp and registers a function that adds a
// CLI11 subcommand to the application, with a callback that runs it:
//
//   namespace grove::tools {
//   void addTopoCommand(CLI::App& app) {
//     CLI::App* topo = app.add_subcommand("topo", "Show the detected topology");
//     topo->callback([] { ... });
//   }
//   namespace {
//   const CommandRegistration kTopo{"topo", &addTopoCommand};
//   }  // namespace
//   }  // namespace grove::tools
//
// main() adds every registered command (sorted by name, so `grove --help` is stable) and
// runs the one named on the command line. How a callback ends the program:
// * returning normally: exit status 0;
// * throwing grove::Error (or any std::exception): main prints "grove <command>: error:
//   <what()>" on stderr and exits with status 1;
// * throwing CLI::ValidationError / CLI::ArgumentMismatch (bad flags found late): CLI11
//   prints the message with the usage hint, exit status as CLI11 sets it (non-zero);
// * throwing CommandExit(status): exit with `status` silently (the command has already
//   printed its own report, e.g. grove perf finding wrong values).
// The tool sources are compiled straight into the executable (not into a library), so a
// static CommandRegistration object is never dropped by the linker.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace grove::tools {

/// Adds one subcommand (and its callback) to the application.
using CommandAdder = void (*)(CLI::App& app);

/// A registered subcommand.
struct CommandEntry {
  std::string name;  ///< The subcommand's name, e.g. "perf".
  CommandAdder add;  ///< Adds it to the application.
};

/// Registers a subcommand when constructed; define one static instance per command.
struct CommandRegistration {
  CommandRegistration(std::string_view name, CommandAdder add);
};

/// Every registered subcommand, sorted by name.
std::vector<CommandEntry> registeredCommands();

/// Thrown by a command callback to end the program with `status` without a further
/// message.
class CommandExit : public CLI::RuntimeError {
 public:
  explicit CommandExit(int status) : CLI::RuntimeError(status) {}
};

/// Adds `grove perf` (tools/perf_command.cpp).
void addPerfCommand(CLI::App& app);

}  // namespace grove::tools
