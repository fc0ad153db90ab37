// Starting one rank of `grove run`: fork, a process group of its own, the rank's environment,
// optional pipes for its output, and execvpe — with the exec's failure (command not found,
// not executable) reported back to the launcher rather than lost in the child.
//
// Each rank leads its own process group so that the launcher can signal everything a rank
// started (a shell's `sleep`, a Python worker pool) with one kill(-pgid), and so that a
// terminal's Ctrl-C reaches only the launcher, which forwards it once to every rank.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace grove::tools::run {

/// How one rank is started.
struct SpawnRequest {
  const std::vector<std::string>* argv = nullptr;  ///< argv[0] is looked up in PATH.
  const std::vector<std::string>* env = nullptr;   ///< NAME=value entries.
  bool captureOutput = false;  ///< Pipes for stdout/stderr instead of inheriting them.
  int stdinFd = -1;            ///< Duplicated onto the rank's stdin; -1 inherits it.
  int cpu = -1;                ///< The one CPU the rank may run on; -1 inherits the mask.
};

/// A started rank, or why it could not start.
struct Spawned {
  pid_t pid = -1;     ///< The rank's process (and process group) id; -1 when fork failed.
  int outFd = -1;     ///< Read end of its stdout pipe (non-blocking) when captured.
  int errFd = -1;     ///< Read end of its stderr pipe (non-blocking) when captured.
  int execError = 0;  ///< errno of a failed fork or execvpe (the child is then gone); 0 on
                      ///< success.
};

/// Starts a rank. SIGINT, SIGTERM and SIGCHLD must be blocked by the caller (they are
/// unblocked and reset to their defaults in the child, together with SIGPIPE). When
/// execError is set after fork, the child has already exited with 127 and must still be
/// reaped. The child receives SIGTERM if the launcher dies (PR_SET_PDEATHSIG).
Spawned spawnRank(const SpawnRequest& request);

/// Sends `signal` to the process group led by `pid`; ignores groups that are gone.
void signalGroup(pid_t pid, int signal);

/// "SIGTERM" for 15, or "signal 99" for names this system does not know.
std::string signalName(int signal);

}  // namespace grove::tools::run
