// safety_check: one rank of a "safe by default" case (tests/safety/safety_test.py): a
// communicator's life cycle and the failures around it, through the C API a framework uses.
//
//   safety_check reinit CYCLES env|uid   CYCLES x (init, allreduce, destroy) in this process,
//                                        from the environment or from a unique id that rank 0
//                                        writes to $SAFETY_ID_DIR/id-<cycle>; fds and threads
//                                        after the last cycle must equal those after the first
//   safety_check reinit-inproc CYCLES N  CYCLES x groveCommInitAll(N) in one process
//   safety_check init                    init, one allreduce, destroy (for failures at init)
//   safety_check leave                   two allreduces, except the last rank, which makes one
//                                        and destroys its communicator: the others' second call
//                                        must fail naming it
//   safety_check hold                    init, then print "holding R" and sleep until killed
//   safety_check split CYCLES            CYCLES x (split, allreduce, destroy the part); rank 0
//                                        reports its heap in use after the first tenth and at
//                                        the end
//
// One line per rank on stdout: "rank R ok: ..." (exit 0), or
// "error R CODE DETECTED_NS MESSAGE" (exit 3), where DETECTED_NS is CLOCK_MONOTONIC when the
// error surfaced — the clock the test reads when it injects the fault.
#include <dirent.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "grove/grove.h"

namespace {

int64_t monotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

int countEntries(const char* directory) {
  DIR* dir = opendir(directory);
  if (dir == nullptr) return -1;
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - (std::strcmp(directory, "/proc/self/fd") == 0 ? 1 : 0);  // opendir's own
}

// The count of `directory` once entries that are already on their way out have left it. A
// joined thread can stay listed in /proc/self/task for a moment: pthread_join returns when the
// kernel clears the thread's id, before it reaps the thread. Counted at once, reinit_uid saw
// "threads 1 -> 2" or "2 -> 1" in 5 of 200 runs, and a listing of the tasks a moment later
// no longer held the extra one. So counts are read until two reads 20 ms apart agree, or
// until they reach `expected` (>= 0), for at most 2 s: a leaked thread or descriptor stays,
// and fails the comparison after all.
int settledCount(const char* directory, int expected = -1) {
  int count = countEntries(directory);
  for (int tries = 0; tries < 100 && count != expected; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int again = countEntries(directory);
    if (again == count && expected < 0) break;
    count = again;
  }
  return count;
}

int rankFromEnv() {
  const char* rank = std::getenv("GROVE_RANK");
  return rank != nullptr ? std::atoi(rank) : -1;
}

[[noreturn]] void reportError(int rank, groveResult_t code, const std::string& what) {
  std::printf("error %d %s %lld %s: %s\n", rank, groveGetErrorString(code),
              static_cast<long long>(monotonicNs()), what.c_str(), groveGetLastError(nullptr));
  std::fflush(stdout);
  std::exit(3);
}

[[noreturn]] void reportWrong(int rank, const std::string& what) {
  std::printf("rank %d FAILED: %s\n", rank, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

#define SAFETY_CHECK(rank, call)                                    \
  do {                                                              \
    groveResult_t result_ = (call);                                 \
    if (result_ != groveSuccess) reportError(rank, result_, #call); \
  } while (0)

// An allreduce of 1001 int32 (a count no rank count divides) of rank + salt, checked exactly.
void checkedAllreduce(groveComm_t comm, int rank, int size, int salt) {
  std::vector<int32_t> values(1001, rank + salt);
  SAFETY_CHECK(rank, groveAllReduce(values.data(), values.data(), values.size(), groveInt32,
                                    groveSum, comm));
  const int32_t want = size * (size - 1) / 2 + size * salt;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != want) {
      reportWrong(rank, "allreduce element " + std::to_string(i) + " is " +
                            std::to_string(values[i]) + ", expected " + std::to_string(want));
    }
  }
}

// Rank 0 of cycle `cycle` publishes a fresh unique id in $SAFETY_ID_DIR; the others wait.
groveUniqueId exchangeId(int rank, int cycle) {
  const char* dir = std::getenv("SAFETY_ID_DIR");
  if (dir == nullptr) reportWrong(rank, "SAFETY_ID_DIR is not set");
  const std::string path = std::string(dir) + "/id-" + std::to_string(cycle);
  groveUniqueId id{};
  if (rank == 0) {
    SAFETY_CHECK(rank, groveGetUniqueId(&id));
    const std::string temp = path + ".tmp";
    std::ofstream(temp, std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename(temp.c_str(), path.c_str());
    return id;
  }
  for (int tries = 0; tries < 60'000; ++tries) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reportWrong(rank, "no unique id appeared at " + path);
}

int reinit(int cycles, bool fromId) {
  int rank = rankFromEnv();
  int size = 0;
  int fdsAfterFirst = 0, threadsAfterFirst = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    groveComm_t comm = nullptr;
    if (fromId) {
      const char* sizeText = std::getenv("GROVE_WORLD_SIZE");
      size = sizeText != nullptr ? std::atoi(sizeText) : 0;
      groveUniqueId id = exchangeId(rank, cycle);
      SAFETY_CHECK(rank, groveCommInitRank(&comm, size, id, rank));
    } else {
      SAFETY_CHECK(rank, groveCommInitEnv(&comm));
    }
    SAFETY_CHECK(rank, groveCommUserRank(comm, &rank));
    SAFETY_CHECK(rank, groveCommCount(comm, &size));
    checkedAllreduce(comm, rank, size, cycle);
    SAFETY_CHECK(rank, groveCommDestroy(comm));
    if (cycle == 0) {
      fdsAfterFirst = settledCount("/proc/self/fd");
      threadsAfterFirst = settledCount("/proc/self/task");
    }
  }
  const int fds = settledCount("/proc/self/fd", fdsAfterFirst);
  const int threads = settledCount("/proc/self/task", threadsAfterFirst);
  std::printf("rank %d ok: %d cycles of %d ranks, fds %d -> %d, threads %d -> %d\n", rank, cycles,
              size, fdsAfterFirst, fds, threadsAfterFirst, threads);
  return fds == fdsAfterFirst && threads == threadsAfterFirst ? 0 : 1;
}

int reinitInProcess(int cycles, int ranks) {
  int fdsAfterFirst = 0, threadsAfterFirst = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    std::vector<groveComm_t> comms(static_cast<size_t>(ranks));
    SAFETY_CHECK(0, groveCommInitAll(comms.data(), ranks, nullptr));
    std::vector<std::vector<int32_t>> values(comms.size());
    SAFETY_CHECK(0, groveGroupStart());
    for (int r = 0; r < ranks; ++r) {
      values[r].assign(1001, r + cycle);
      SAFETY_CHECK(0, groveAllReduce(values[r].data(), values[r].data(), values[r].size(),
                                     groveInt32, groveSum, comms[r]));
    }
    SAFETY_CHECK(0, groveGroupEnd());
    for (int r = 0; r < ranks; ++r) {
      if (values[r][1000] != ranks * (ranks - 1) / 2 + ranks * cycle) {
        reportWrong(r, "in-process allreduce of cycle " + std::to_string(cycle) + " is wrong");
      }
      SAFETY_CHECK(r, groveCommDestroy(comms[r]));
    }
    if (cycle == 0) {
      fdsAfterFirst = settledCount("/proc/self/fd");
      threadsAfterFirst = settledCount("/proc/self/task");
    }
  }
  const int fds = settledCount("/proc/self/fd", fdsAfterFirst);
  const int threads = settledCount("/proc/self/task", threadsAfterFirst);
  std::printf("rank 0 ok: %d in-process cycles of %d ranks, fds %d -> %d, threads %d -> %d\n",
              cycles, ranks, fdsAfterFirst, fds, threadsAfterFirst, threads);
  return fds == fdsAfterFirst && threads == threadsAfterFirst ? 0 : 1;
}

// Joins from the environment and makes one checked allreduce; `size` gets the job's size.
groveComm_t joinAndCheck(int rank, int* size) {
  groveComm_t comm = nullptr;
  SAFETY_CHECK(rank, groveCommInitEnv(&comm));
  SAFETY_CHECK(rank, groveCommCount(comm, size));
  checkedAllreduce(comm, rank, *size, 0);
  return comm;
}

int initOnce() {
  int rank = rankFromEnv();
  int size = 0;
  groveComm_t comm = joinAndCheck(rank, &size);
  SAFETY_CHECK(rank, groveCommDestroy(comm));
  std::printf("rank %d ok: joined %d ranks\n", rank, size);
  return 0;
}

int leave() {
  int rank = rankFromEnv();
  int size = 0;
  groveComm_t comm = joinAndCheck(rank, &size);
  if (rank == size - 1) {
    SAFETY_CHECK(rank, groveCommDestroy(comm));
    std::printf("rank %d ok: left after one call\n", rank);
    return 0;
  }
  std::printf("waiting %d %lld\n", rank, static_cast<long long>(monotonicNs()));
  std::fflush(stdout);
  checkedAllreduce(comm, rank, size, 1);
  reportWrong(rank, "the second allreduce succeeded although rank " + std::to_string(size - 1) +
                        " had left");
}

int hold() {
  int rank = rankFromEnv();
  groveComm_t comm = nullptr;
  SAFETY_CHECK(rank, groveCommInitEnv(&comm));
  std::printf("holding %d\n", rank);
  std::fflush(stdout);
  while (true) pause();
}

size_t heapInUse() { return mallinfo2().uordblks; }

int splitCycles(int cycles) {
  int rank = rankFromEnv();
  int size = 0;
  groveComm_t comm = joinAndCheck(rank, &size);
  size_t heapAtTenth = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    groveComm_t part = nullptr;
    SAFETY_CHECK(rank, groveCommSplit(comm, rank % 2, rank, &part, nullptr));
    int partSize = 0, partRank = 0;
    SAFETY_CHECK(rank, groveCommCount(part, &partSize));
    SAFETY_CHECK(rank, groveCommUserRank(part, &partRank));
    checkedAllreduce(part, partRank, partSize, cycle);
    SAFETY_CHECK(rank, groveCommDestroy(part));
    if (cycle + 1 == cycles / 10) heapAtTenth = heapInUse();
  }
  const size_t heap = heapInUse();
  // Rank 0 serves the store the others' last splits still use: leave together.
  checkedAllreduce(comm, rank, size, 0);
  SAFETY_CHECK(rank, groveCommDestroy(comm));
  std::printf("rank %d ok: %d splits, heap in use %zu -> %zu bytes\n", rank, cycles, heapAtTenth,
              heap);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "reinit" && argc == 4) {
    return reinit(std::atoi(argv[2]), std::strcmp(argv[3], "uid") == 0);
  }
  if (mode == "reinit-inproc" && argc == 4) {
    return reinitInProcess(std::atoi(argv[2]), std::atoi(argv[3]));
  }
  if (mode == "init") return initOnce();
  if (mode == "leave") return leave();
  if (mode == "hold") return hold();
  if (mode == "split" && argc == 3) return splitCycles(std::atoi(argv[2]));
  std::fprintf(stderr,
               "usage: safety_check reinit CYCLES env|uid | reinit-inproc CYCLES N | init | "
               "leave | hold | split CYCLES\n");
  return 2;
}
