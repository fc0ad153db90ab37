// The supervision half of `grove run`: start every rank, relay their output, forward the
// launcher's SIGINT/SIGTERM, and turn the first failure into a clean stop of the whole job.
//
// A job of N processes is only useful when all of them live: when one rank fails, the others
// would otherwise wait for it until their timeouts. So the first rank to exit non-zero or die
// by a signal is reported, every other rank is sent SIGTERM, and ranks still alive after the
// grace period are killed. The loop waits in poll(2) on the ranks' output pipes and on a
// self-pipe written by the signal handlers, so it uses no CPU while the job runs.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace grove::tools::run {

/// A job to run.
struct LaunchSpec {
  std::vector<std::string> command;                    ///< argv; argv[0] is looked up in PATH.
  std::vector<std::vector<std::string>> environments;  ///< One per rank: NAME=value entries.
  bool tagOutput = false;  ///< Prefix each output line with `[rank]: ` (pipes + poll).
  std::vector<int> cpus;   ///< One per rank: the CPU it is bound to; empty binds none.
  std::chrono::milliseconds grace{5000};  ///< SIGTERM → SIGKILL delay when stopping the job.
};

/// Runs the job to its end and returns the launcher's exit status:
/// * 0 when every rank exited with status 0;
/// * the first failing rank's status when it exited non-zero, 128 + N when it was killed by
///   signal N;
/// * 128 + N when the launcher itself received SIGINT or SIGTERM (N) first;
/// * 127 when the command was not found, 126 when it could not be executed otherwise.
/// Messages ("grove run: rank 1 (pid 42) exited with status 3") go to stderr.
int launchRanks(const LaunchSpec& spec);

}  // namespace grove::tools::run
