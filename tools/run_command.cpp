// `grove run`: the local launcher, like `torchrun --standalone` or `mpirun` on one host.
//
// grove's processes find each other through GROVE_* variables (src/bootstrap/launch.hpp);
// setting them by hand for N processes is tedious and error-prone, and a job where one
// process died must not leave the others waiting. This command starts N copies of a command
// with the variables set (a fresh rendezvous port, secret and job id), relays or tags their
// output, and stops the whole job when one rank fails. The flags are checked here; the
// process work lives in run_launcher.cpp.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "common/parameters.hpp"
#include "grove/error.hpp"
#include "run_env.hpp"
#include "run_launcher.hpp"

extern char** environ;

namespace grove::tools {
namespace {

constexpr int kMaxRanks = 1024;

/// The flags as typed.
struct RunArgs {
  int nprocs = 0;
  int port = 0;
  bool tagOutput = false;
  double graceSeconds = 5.0;
  std::string bind = "auto";
  std::vector<std::string> command;
};

[[noreturn]] void reject(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

/// The command line to run. `grove run -n 2 -- cmd -x` fills `positional` and leaves just
/// the `--` in `remaining`; `grove run -n 2 cmd -x` leaves the command in `remaining` (see
/// addRunCommand). A word that looks like an option ahead of the command is one grove run
/// does not know.
std::vector<std::string> commandLine(const std::vector<std::string>& positional,
                                     std::vector<std::string> remaining) {
  if (!positional.empty() && !remaining.empty() && remaining.back() == "--") remaining.pop_back();
  if (!remaining.empty() && remaining[0].size() > 1 && remaining[0][0] == '-' &&
      remaining[0] != "--") {
    reject(
        fmt::format("{}: not an option of grove run (expected -n, --port, --tag-output, --bind "
                    "or --grace before the command)",
                    remaining[0]));
  }
  if (!positional.empty()) return positional;
  if (!remaining.empty() && remaining[0] == "--") remaining.erase(remaining.begin());
  return remaining;
}

/// The CPU of each rank under --bind (empty: none bound). Ranks take the CPUs this launcher
/// may run on, in order, one each, as Open MPI's mpirun does by default for small jobs: two
/// unbound ranks that wait on each other are now and then placed on one CPU by the scheduler
/// (it wakes a rank where its waker runs) and stay there, and every call then costs a
/// context switch (5-7 us for a 2-rank 8 B allreduce, against 0.5 us).
std::vector<int> rankCpus(const std::string& bind, int nprocs) {
  if (bind == "none") return {};
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && static_cast<int>(cpus.size()) < nprocs; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  if (static_cast<int>(cpus.size()) == nprocs) return cpus;
  if (bind == "core") {
    reject(
        fmt::format("--bind core: {} ranks but this launcher may run on only {} CPUs "
                    "(expected at most one rank per CPU; --bind none or auto runs them "
                    "unbound)",
                    nprocs, cpus.size()));
  }
  return {};  // auto: more ranks than CPUs share them all.
}

void runJob(const RunArgs& args) {
  if (args.nprocs < 1 || args.nprocs > kMaxRanks) {
    reject(fmt::format("-n/--nproc: {} is out of range (expected 1 <= N <= {})", args.nprocs,
                       kMaxRanks));
  }
  if (args.port < 0 || args.port > 65535) {
    reject(
        fmt::format("--port: {} is out of range (expected 1 <= P <= 65535, or 0 for a free "
                    "port)",
                    args.port));
  }
  if (!std::isfinite(args.graceSeconds) || args.graceSeconds < 0 || args.graceSeconds > 86400) {
    reject(fmt::format("--grace: {} is out of range (expected 0 <= SECONDS <= 86400)",
                       args.graceSeconds));
  }
  if (args.bind != "auto" && args.bind != "core" && args.bind != "none") {
    reject(fmt::format("--bind: '{}' is not a binding (expected auto, core or none)", args.bind));
  }
  if (args.command.empty() || args.command[0].empty()) {
    reject("no command to run (usage: grove run -n N [options] [--] CMD [ARGS...])");
  }

  const uint16_t port = args.port > 0 ? static_cast<uint16_t>(args.port) : run::findFreePort();
  const std::string inherited =
      common::resolveParameter(common::spec(common::Param::kSecret), {}).text;
  const std::string secret = !inherited.empty() ? inherited : run::randomHex(16);
  const std::string jobId = run::randomHex(8);

  run::LaunchSpec spec;
  spec.command = args.command;
  spec.tagOutput = args.tagOutput;
  spec.cpus = rankCpus(args.bind, args.nprocs);
  spec.grace = std::chrono::milliseconds(std::llround(args.graceSeconds * 1000.0));
  const std::string size = std::to_string(args.nprocs);
  for (int rank = 0; rank < args.nprocs; ++rank) {
    spec.environments.push_back(
        run::mergeEnvironment(environ, {{"GROVE_RANK", std::to_string(rank)},
                                        {"GROVE_LOCAL_RANK", std::to_string(rank)},
                                        {"GROVE_WORLD_SIZE", size},
                                        {"GROVE_LOCAL_WORLD_SIZE", size},
                                        {"GROVE_ROOT", "127.0.0.1:" + std::to_string(port)},
                                        {"GROVE_SECRET", secret},
                                        {"GROVE_JOB_ID", jobId}}));
  }

  std::fflush(stdout);
  const int status = run::launchRanks(spec);
  run::removeJobSegments(jobId);
  if (status != 0) throw CommandExit(status);
}

void addRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* command = app.add_subcommand(
      "run",
      "Start N processes of a command on this host with GROVE_* variables set (like "
      "torchrun --standalone); stop them all when one fails");
  command->prefix_command();
  command->add_option("-n,--nproc,--nproc-per-node", args->nprocs, "Number of ranks (1..1024)")
      ->required();
  command->add_option("--port", args->port, "Rendezvous port on 127.0.0.1 (default: a free port)");
  command->add_flag("--tag-output", args->tagOutput,
                    "Prefix every line of a rank's stdout/stderr with '[rank]: '");
  command
      ->add_option("--bind", args->bind,
                   "Bind each rank to one CPU: auto (when there are at least as many CPUs as "
                   "ranks), core (always; an error when there are fewer) or none")
      ->capture_default_str();
  command
      ->add_option("--grace", args->graceSeconds,
                   "Seconds between SIGTERM and SIGKILL when stopping the ranks")
      ->capture_default_str();
  command->footer(
      "Examples:\n"
      "  grove run -n 4 ./train --epochs 3\n"
      "  grove run -n 8 --tag-output -- python3 worker.py\n"
      "Exit status: 0 when every rank succeeds; the failing rank's status (128+N for signal N);\n"
      "127 when the command is not found. See docs/run.md.");
  // The command and its arguments are taken verbatim: as a prefix command, `run` stops
  // parsing at the first word that is not one of its options and leaves it and everything
  // after it in remaining(). After `--`, CLI11 hands words to a positional instead, so one
  // is declared that accepts words only once the `--` has been seen.
  command->validate_positionals();
  command->add_option("command", args->command, "The command to run and its arguments, after `--`")
      ->check(CLI::Validator(
          [command](const std::string&) {
            const std::vector<std::string> seen = command->remaining();
            return !seen.empty() && seen.back() == "--" ? std::string() : std::string("no --");
          },
          "", "after --"));
  command->callback([args, command] {
    args->command = commandLine(args->command, command->remaining());
    runJob(*args);
  });
}

const CommandRegistration kRun{"run", &addRunCommand};

}  // namespace
}  // namespace grove::tools
