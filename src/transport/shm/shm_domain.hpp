// The shared-memory transport's view of one rank: its doorbell in shared memory, and FIFOs
// to and from the other processes of its host, each in a POSIX shared-memory segment.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"
#include "transport/inproc/inproc_transport.hpp"  // FifoGeometry

namespace grove::transport {

struct ShmOptions {
  std::string jobId;            ///< Unique per communicator; part of every segment name.
  int rank = 0;                 ///< This rank (communicator numbering).
  int size = 1;
  std::vector<int> localRanks;  ///< Ranks on this host (including this one), ascending.
  FifoGeometry geometry;
  std::chrono::milliseconds timeout{300'000};  ///< For waiting on a peer's segment.
};

/// Owns this rank's shared-memory presence. Thread-compatible (one thread drives a rank).
class ShmDomain {
 public:
  explicit ShmDomain(ShmOptions options);
  ~ShmDomain();
  ShmDomain(const ShmDomain&) = delete;
  ShmDomain& operator=(const ShmDomain&) = delete;

  /// This rank's doorbell, in shared memory so local peers can ring it.
  Doorbell& doorbell();
  /// FIFOs with a local peer (connected on first use; stable references).
  Fifo& sendFifo(int peer, int lane);
  Fifo& recvFifo(int peer, int lane);
  /// Marks this rank failed where local peers see it, and rings their doorbells.
  void abort();
  /// A local peer that marked itself failed (or whose process is gone), or -1.
  int failedPeer() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::transport
