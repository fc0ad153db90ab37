// What the shared-memory transport's tests share: a job id of their own (so runs never see
// each other's segments), the job's entries in /dev/shm, a rank's options, and ranks as
// forked children (runRanks) that meet at barriers in a shared page and report through
// their exit status (CHILD_CHECK), never through gtest.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "transport/shm/shm_domain.hpp"
#include "transport/shm/shm_segment.hpp"

namespace grove::transport {

// A job id no other run uses: this process id and 64 random bits.
inline std::string randomJobId() {
  std::random_device device;
  uint64_t bits = (uint64_t{device()} << 32) | device();
  char text[40];
  std::snprintf(text, sizeof text, "t%d-%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(bits));
  return text;
}

// /dev/shm entries of `jobId` (node and FIFO segments), sorted.
inline std::vector<std::string> jobEntries(const std::string& jobId) {
  std::vector<std::string> names;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    if (shm::isJobSegment(entry->d_name, jobId)) names.emplace_back(entry->d_name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// A rank's options: `localRanks` of one host, a small FIFO geometry, a 20 s timeout.
inline ShmOptions options(const std::string& jobId, int rank, std::vector<int> localRanks,
                          FifoGeometry geometry = {1000, 4}) {
  ShmOptions o;
  o.jobId = jobId;
  o.rank = rank;
  o.size = localRanks.empty() ? 1 : localRanks.back() + 1;
  o.localRanks = std::move(localRanks);
  o.geometry = geometry;
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Guard against hangs only: a child still running after this is killed and the test fails.
inline constexpr auto kChildGuard = std::chrono::seconds(60);

// Coordination memory shared by the test process and its children (mapped before fork).
struct Shared {
  std::atomic<int> arrived{0};
  std::atomic<int> flag{0};
};

class SharedPage {
 public:
  SharedPage() {
    void* memory = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared_ = new (memory) Shared;
  }
  ~SharedPage() { munmap(shared_, 4096); }
  Shared* operator->() const { return shared_; }
  Shared& operator*() const { return *shared_; }

 private:
  Shared* shared_;
};

// Barrier of `n` processes; `round` counts this process's barriers (start at 0).
inline bool barrier(Shared& shared, int n, int& round) {
  ++round;
  shared.arrived.fetch_add(1);
  auto deadline = std::chrono::steady_clock::now() + kChildGuard;
  while (shared.arrived.load() < n * round) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

#define CHILD_CHECK(condition)                                                                 \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #condition); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

// Forks one child per rank running body(rank); returns their exit codes (99: exception,
// 98: killed by the guard or a signal).
inline std::vector<int> runRanks(int n, const std::function<int(int)>& body) {
  std::vector<pid_t> pids;
  for (int rank = 0; rank < n; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 99;
      try {
        code = body(rank);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
      }
      std::fflush(stderr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(n, -1);
  auto deadline = std::chrono::steady_clock::now() + kChildGuard;
  int left = n;
  while (left > 0) {
    for (int rank = 0; rank < n; ++rank) {
      int status = 0;
      if (codes[rank] != -1 || waitpid(pids[rank], &status, WNOHANG) != pids[rank]) continue;
      codes[rank] = WIFEXITED(status) ? WEXITSTATUS(status) : 98;
      --left;
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int rank = 0; rank < n; ++rank) {
        if (codes[rank] == -1) kill(pids[rank], SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return codes;
}

}  // namespace grove::transport
