// The `grove` command: one executable whose subcommands (perf, and later plan, run, topo)
// register themselves through tools/command.hpp, so adding a command never touches this
// file. main() only builds the CLI11 application, runs the chosen command and turns its
// outcome into an exit status.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.hpp"
#include "grove/error.hpp"
#include "grove/version.hpp"

namespace grove::tools {
namespace {

std::vector<CommandEntry>& registry() {
  static std::vector<CommandEntry> entries;
  return entries;
}

}  // namespace

CommandRegistration::CommandRegistration(std::string_view name, CommandAdder add) {
  registry().push_back(CommandEntry{std::string(name), add});
}

std::vector<CommandEntry> registeredCommands() {
  std::vector<CommandEntry> entries = registry();
  std::sort(entries.begin(), entries.end(),
            [](const CommandEntry& a, const CommandEntry& b) { return a.name < b.name; });
  return entries;
}

}  // namespace grove::tools

int main(int argc, char** argv) {
  CLI::App app{
      "grove: collective communication as verified, topology-aware plans.\n"
      "Run `grove <command> --help` for the flags of a command.",
      "grove"};
  app.set_version_flag("--version", "grove " GROVE_VERSION_STRING);
  app.require_subcommand(1);
  for (const grove::tools::CommandEntry& entry : grove::tools::registeredCommands()) {
    entry.add(app);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Also reached by --help, --version and CommandExit (which print nothing more).
    return app.exit(e);
  } catch (const std::exception& e) {
    std::string command = "grove";
    for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
  return 0;
}
