// The `grove run` job: start, supervise, stop; see run_launcher.hpp.
#include "run_launcher.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include "grove/error.hpp"
#include "run_output.hpp"
#include "run_process.hpp"

namespace grove::tools::run {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<int, 3> kHandledSignals = {SIGINT, SIGTERM, SIGCHLD};

/// Write end of the self-pipe; the handlers write the signal number into it.
volatile sig_atomic_t gSignalPipe = -1;

extern "C" void onSignal(int signal) {
  const int savedErrno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  ssize_t ignored = ::write(gSignalPipe, &byte, 1);
  (void)ignored;
  errno = savedErrno;
}

/// Installs the handlers (and ignores SIGPIPE) for the job's lifetime; restores the previous
/// dispositions when destroyed.
class SignalScope {
 public:
  SignalScope() {
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw Error(ErrorCode::kSystemError,
                  std::string("cannot create the signal pipe: ") + std::strerror(errno));
    }
    gSignalPipe = pipe_[1];
    struct sigaction action {};
    action.sa_handler = onSignal;
    action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kHandledSignals.size(); ++i) {
      ::sigaction(kHandledSignals[i], &action, &previous_[i]);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previousPipe_);
  }
  ~SignalScope() {
    for (size_t i = 0; i < kHandledSignals.size(); ++i) {
      ::sigaction(kHandledSignals[i], &previous_[i], nullptr);
    }
    ::sigaction(SIGPIPE, &previousPipe_, nullptr);
    gSignalPipe = -1;
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int readFd() const { return pipe_[0]; }

 private:
  int pipe_[2] = {-1, -1};
  std::array<struct sigaction, kHandledSignals.size()> previous_{};
  struct sigaction previousPipe_ {};
};

/// Blocks the handled signals while ranks are forked; unblocks them when destroyed.
class SignalBlock {
 public:
  SignalBlock() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : kHandledSignals) sigaddset(&set, signal);
    ::sigprocmask(SIG_BLOCK, &set, &previous_);
  }
  ~SignalBlock() { ::sigprocmask(SIG_SETMASK, &previous_, nullptr); }
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

 private:
  sigset_t previous_;
};

struct Stream {
  int fd = -1;
  std::unique_ptr<LineTagger> tagger;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  std::array<Stream, 2> streams;  ///< stdout, stderr (fd -1 when not captured or at EOF).
};

class Job {
 public:
  explicit Job(const LaunchSpec& spec) : spec_(spec), ranks_(spec.environments.size()) {}

  int run() {
    SignalScope signals;
    if (!start()) return exitStatus_;
    supervise(signals.readFd());
    for (Rank& rank : ranks_) {
      for (Stream& stream : rank.streams) drain(stream);
    }
    return exitStatus_;
  }

 private:
  /// Starts every rank; on an exec failure stops the ones started and returns false.
  bool start() {
    SignalBlock blocked;
    const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (size_t r = 0; r < ranks_.size(); ++r) {
      SpawnRequest request;
      request.argv = &spec_.command;
      request.env = &spec_.environments[r];
      request.captureOutput = spec_.tagOutput;
      request.cpu = r < spec_.cpus.size() ? spec_.cpus[r] : -1;
      // Rank 0 reads the launcher's stdin unless it is a terminal (a rank in a process group
      // of its own would be stopped by SIGTTIN); the others read nothing.
      request.stdinFd = (r == 0 && !::isatty(STDIN_FILENO)) ? -1 : devNull;
      const Spawned spawned = spawnRank(request);
      if (spawned.execError != 0) {
        if (spawned.pid > 0) {
          std::fprintf(stderr, "grove run: error: cannot execute '%s' for rank %zu: %s\n",
                       spec_.command[0].c_str(), r, std::strerror(spawned.execError));
        } else {
          std::fprintf(stderr, "grove run: error: cannot start rank %zu (pipe or fork): %s\n", r,
                       std::strerror(spawned.execError));
        }
        if (spawned.pid > 0) ::waitpid(spawned.pid, nullptr, 0);
        for (size_t s = 0; s < r; ++s) {
          signalGroup(ranks_[s].pid, SIGKILL);
          ::waitpid(ranks_[s].pid, nullptr, 0);
          for (Stream& stream : ranks_[s].streams) closeStream(stream);
        }
        if (devNull >= 0) ::close(devNull);
        exitStatus_ = spawned.pid <= 0 ? 1 : spawned.execError == ENOENT ? 127 : 126;
        return false;
      }
      Rank& rank = ranks_[r];
      rank.pid = spawned.pid;
      rank.running = true;
      ++running_;
      if (spec_.tagOutput) {
        const std::string prefix = fmt::format("[{}]: ", r);
        rank.streams[0] = Stream{spawned.outFd, std::make_unique<LineTagger>(prefix, 1)};
        rank.streams[1] = Stream{spawned.errFd, std::make_unique<LineTagger>(prefix, 2)};
      }
    }
    if (devNull >= 0) ::close(devNull);
    return true;
  }

  void supervise(int signalFd) {
    std::vector<pollfd> polled;
    std::vector<Stream*> owners;
    while (running_ > 0) {
      polled.assign(1, pollfd{signalFd, POLLIN, 0});
      owners.assign(1, nullptr);
      for (Rank& rank : ranks_) {
        for (Stream& stream : rank.streams) {
          if (stream.fd < 0) continue;
          polled.push_back(pollfd{stream.fd, POLLIN, 0});
          owners.push_back(&stream);
        }
      }
      int timeoutMs = -1;
      if (stopping_ && !killed_) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
        timeoutMs = static_cast<int>(std::max<int64_t>(0, left.count() + 1));
      }
      const int ready = ::poll(polled.data(), polled.size(), timeoutMs);
      if (ready < 0 && errno != EINTR) {
        throw Error(ErrorCode::kSystemError, std::string("poll failed: ") + std::strerror(errno));
      }
      if (ready > 0) {
        if (polled[0].revents != 0) readSignals(signalFd);
        for (size_t i = 1; i < polled.size(); ++i) {
          if (polled[i].revents != 0) readSome(*owners[i]);
        }
      }
      reap();
      if (stopping_ && !killed_ && Clock::now() >= deadline_)
        killRemaining("after the grace period");
    }
  }

  void readSignals(int signalFd) {
    unsigned char signals[64];
    ssize_t got;
    while ((got = ::read(signalFd, signals, sizeof(signals))) > 0) {
      for (ssize_t i = 0; i < got; ++i) {
        if (signals[i] == SIGINT || signals[i] == SIGTERM) onLauncherSignal(signals[i]);
      }
    }
  }

  void onLauncherSignal(int signal) {
    if (stopping_) {
      if (!killed_) killRemaining(("on a second " + signalName(signal)).c_str());
      return;
    }
    std::fprintf(stderr, "grove run: received %s, forwarding it to the ranks\n",
                 signalName(signal).c_str());
    exitStatus_ = 128 + signal;
    stop(signal);
  }

  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (ranks_[r].pid == pid && ranks_[r].running) onRankExit(r, status);
      }
    }
  }

  void onRankExit(size_t r, int status) {
    ranks_[r].running = false;
    --running_;
    const bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (success || stopping_) return;
    // Tagged output the rank wrote before failing comes before the report.
    for (Stream& stream : ranks_[r].streams) readAvailable(stream);
    if (WIFEXITED(status)) {
      std::fprintf(stderr, "grove run: rank %zu (pid %d) exited with status %d\n", r,
                   static_cast<int>(ranks_[r].pid), WEXITSTATUS(status));
      exitStatus_ = WEXITSTATUS(status);
    } else {
      const int signal = WTERMSIG(status);
      std::fprintf(stderr, "grove run: rank %zu (pid %d) killed by signal %d (%s)\n", r,
                   static_cast<int>(ranks_[r].pid), signal, signalName(signal).c_str());
      exitStatus_ = 128 + signal;
    }
    if (running_ > 0) {
      std::fprintf(stderr,
                   "grove run: stopping the other %d rank%s (SIGTERM, SIGKILL after %.3g s)\n",
                   running_, running_ == 1 ? "" : "s", spec_.grace.count() / 1000.0);
    }
    stop(SIGTERM);
  }

  /// Sends `signal` to every rank's process group (also to groups whose leader has exited:
  /// what it started may still run) and starts the grace period.
  void stop(int signal) {
    stopping_ = true;
    deadline_ = Clock::now() + spec_.grace;
    for (const Rank& rank : ranks_) signalGroup(rank.pid, signal);
  }

  void killRemaining(const char* when) {
    killed_ = true;
    if (running_ == 0) return;
    std::fprintf(stderr, "grove run: killing %d rank%s still running %s\n", running_,
                 running_ == 1 ? "" : "s", when);
    for (const Rank& rank : ranks_) {
      if (rank.running) signalGroup(rank.pid, SIGKILL);
    }
  }

  /// Reads what one stream has now; closes it at end of file.
  static void readSome(Stream& stream) {
    char buffer[65536];
    const ssize_t got = ::read(stream.fd, buffer, sizeof(buffer));
    if (got > 0) {
      stream.tagger->feed(buffer, static_cast<size_t>(got));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      closeStream(stream);
    }
  }

  /// Reads all a stream holds now, without waiting; closes it at end of file.
  static void readAvailable(Stream& stream) {
    char buffer[65536];
    while (stream.fd >= 0) {
      const ssize_t got = ::read(stream.fd, buffer, sizeof(buffer));
      if (got > 0) {
        stream.tagger->feed(buffer, static_cast<size_t>(got));
      } else if (got < 0 && errno == EINTR) {
        continue;
      } else {
        if (got == 0 || errno != EAGAIN) closeStream(stream);
        return;
      }
    }
  }

  /// The ranks are gone: takes what their streams hold and closes them (a grandchild that
  /// keeps a pipe open is not waited for).
  static void drain(Stream& stream) {
    readAvailable(stream);
    closeStream(stream);
  }

  static void closeStream(Stream& stream) {
    if (stream.fd < 0) return;
    ::close(stream.fd);
    stream.fd = -1;
    if (stream.tagger) stream.tagger->finish();
  }

  const LaunchSpec& spec_;
  std::vector<Rank> ranks_;
  int running_ = 0;
  int exitStatus_ = 0;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point deadline_;
};

}  // namespace

int launchRanks(const LaunchSpec& spec) {
  if (spec.command.empty() || spec.environments.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "launchRanks: no command or no ranks");
  }
  Job job(spec);
  return job.run();
}

}  // namespace grove::tools::run
