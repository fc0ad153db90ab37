// spawnRank: fork + execvpe with an exec-status pipe; see run_process.hpp.
#include "run_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace grove::tools::run {
namespace {

void closeIfOpen(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

/// What the child does between fork and exec. Only async-signal-safe calls: everything it
/// needs was prepared by the parent.
[[noreturn]] void becomeRank(char* const* argv, char* const* envp, int outFd, int errFd,
                             int stdinFd, int statusFd, pid_t parent, const cpu_set_t* cpus) {
  ::setpgid(0, 0);
  // Best effort: a rank that cannot be bound still runs, only unbound.
  if (cpus != nullptr) ::sched_setaffinity(0, sizeof(cpu_set_t), cpus);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);  // The launcher died before prctl took effect.
  if (stdinFd >= 0) ::dup2(stdinFd, STDIN_FILENO);
  if (outFd >= 0) ::dup2(outFd, STDOUT_FILENO);
  if (errFd >= 0) ::dup2(errFd, STDERR_FILENO);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int signal : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) ::sigaction(signal, &defaults, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execvpe(argv[0], argv, envp);
  const int error = errno;
  ssize_t ignored = ::write(statusFd, &error, sizeof(error));
  (void)ignored;
  ::_exit(127);
}

}  // namespace

Spawned spawnRank(const SpawnRequest& request) {
  Spawned result;
  std::vector<char*> argv;
  for (const std::string& arg : *request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : *request.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (request.cpu >= 0 && request.cpu < CPU_SETSIZE) CPU_SET(request.cpu, &cpus);

  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int status[2] = {-1, -1};
  auto closeAll = [&] {
    for (int* pair : {out, err, status}) {
      closeIfOpen(pair[0]);
      closeIfOpen(pair[1]);
    }
  };
  if ((request.captureOutput && (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)) ||
      ::pipe2(status, O_CLOEXEC) != 0) {
    result.execError = errno;
    closeAll();
    return result;
  }

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.execError = errno;
    closeAll();
    return result;
  }
  if (pid == 0) {
    becomeRank(argv.data(), envp.data(), out[1], err[1], request.stdinFd, status[1], parent,
               CPU_COUNT(&cpus) > 0 ? &cpus : nullptr);
  }
  ::setpgid(pid, pid);  // Also in the parent, so the group exists before anyone signals it.
  result.pid = pid;
  closeIfOpen(out[1]);
  closeIfOpen(err[1]);
  closeIfOpen(status[1]);

  int error = 0;
  ssize_t got;
  do {
    got = ::read(status[0], &error, sizeof(error));
  } while (got < 0 && errno == EINTR);
  closeIfOpen(status[0]);
  if (got == static_cast<ssize_t>(sizeof(error))) {
    result.execError = error;
    closeIfOpen(out[0]);
    closeIfOpen(err[0]);
    return result;
  }
  for (int fd : {out[0], err[0]}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  result.outFd = out[0];
  result.errFd = err[0];
  return result;
}

void signalGroup(pid_t pid, int signal) {
  if (pid > 0) ::kill(-pid, signal);
}

std::string signalName(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  if (abbreviation == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbreviation;
}

}  // namespace grove::tools::run
