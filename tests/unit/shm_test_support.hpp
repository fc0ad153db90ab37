// What the shared-memory transport's tests share: a job id of their own (so runs never see
// each other's segments), the job's entries in /dev/shm, and a rank's options.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
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

}  // namespace grove::transport
