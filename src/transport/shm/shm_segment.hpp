// POSIX shared-memory segments as the shm transport uses them.
//
// Every segment of a job is named /grove-<jobId>-<what>, created exclusively by one process
// (O_CREAT|O_EXCL), sized once with ftruncate, mapped MAP_SHARED|MAP_POPULATE (pre-faulted at
// connection time, never on the data path) and unlinked as soon as everyone who needs it has
// mapped it. This file holds the system-call layer: names, create/open, mappings, waiting
// with a deadline, the liveness test of a peer process and the job cleanup helper; the
// protocol (who creates, who unlinks) lives in shm_domain.cpp.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove::transport::shm {

/// Throws kInvalidArgument unless `jobId` can be part of a segment name: non-empty, at most
/// 128 characters, printable, without '/'.
void checkJobId(std::string_view jobId);

/// "/grove-<jobId>-n<rank>": a rank's node segment (doorbell, failed flag, pid).
std::string nodeSegmentName(std::string_view jobId, int rank);
/// "/grove-<jobId>-f<src>-<dst>-<lane>": the FIFO carrying src -> dst on `lane`.
std::string fifoSegmentName(std::string_view jobId, int src, int dst, int lane);

/// True when `entry` (a name in /dev/shm, without the leading '/') is a segment of job
/// `jobId`: "grove-<jobId>-" followed by "n<digits>" or "f<digits>-<digits>-<digits>", so
/// that job "a" never matches the segments of job "a-b".
bool isJobSegment(std::string_view entry, std::string_view jobId);

/// Creates segment `name` exclusively and sizes it to `bytes` (0600: only this user).
/// Returns its descriptor, or -1 when the name exists already. Throws kSystemError on any
/// other failure (after unlinking what it created).
int createSegment(const std::string& name, size_t bytes);
/// Opens an existing segment read-write; -1 when it does not exist (yet).
int openSegment(const std::string& name);
/// Current size of the segment behind `fd` (0 until its creator has sized it).
size_t segmentSize(int fd, const std::string& name);
/// shm_unlink, ignoring a name that is already gone.
void unlinkSegment(const std::string& name) noexcept;

/// A range of address space, unmapped on destruction. Move-only.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping();
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  /// Private zeroed memory; `populate` pre-faults it.
  static Mapping anonymous(size_t bytes, bool populate);
  /// The segment behind `fd`, shared and pre-faulted.
  static Mapping shared(int fd, size_t bytes, const std::string& name);
  /// Replaces this range's memory by the segment behind `fd` (shared, pre-faulted), at the
  /// same address: objects that point into the range now point into the segment.
  void overlay(int fd, const std::string& name);

  char* base() const { return static_cast<char*>(base_); }
  size_t bytes() const { return bytes_; }

 private:
  Mapping(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

/// Polls for something with growing pauses (50 µs up to 5 ms) until a deadline.
class Backoff {
 public:
  explicit Backoff(std::chrono::milliseconds timeout);
  bool expired() const { return std::chrono::steady_clock::now() >= deadline_; }
  void pause();

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::microseconds pause_{50};
};

/// Identity of this process's pid namespace (the inode of /proc/self/ns/pid; 0 when
/// unknown). Pids of processes in another namespace mean nothing here.
uint64_t pidNamespaceId();

/// True when process `pid` no longer runs: kill(pid, 0) says ESRCH, or /proc says it is a
/// zombie (killed but not yet reaped by its parent). A process of another user counts as
/// alive.
bool processGone(pid_t pid);

}  // namespace grove::transport::shm
