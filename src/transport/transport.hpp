// The seam between the executor and the ways bytes move (in-process, shared memory, TCP).
//
// A transport gives a rank FIFOs to and from each peer on each lane (connected on demand,
// then kept for the communicator's lifetime), the rank's doorbell to sleep on, and failure
// signalling: abort() marks this rank failed so that peers waiting on it get an error
// instead of waiting forever.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"

namespace grove::transport {

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "inproc", "shm", "tcp".
  virtual std::string_view name() const = 0;

  /// The FIFO carrying messages from this rank to `peer` on `lane` (created on first use;
  /// the reference stays valid for the transport's lifetime).
  virtual Fifo& sendFifo(int peer, int lane) = 0;
  /// The FIFO carrying messages from `peer` to this rank on `lane`.
  virtual Fifo& recvFifo(int peer, int lane) = 0;

  /// How many ranks of this communicator run on this host (this one included): with the
  /// number of CPUs it tells whether waiting ranks may spin or must give their core away.
  virtual int ranksOnThisHost() const = 0;

  /// This rank's doorbell: peers ring it when they publish data or free space for it.
  virtual Doorbell& doorbell() = 0;

  /// Marks this rank failed and wakes every peer.
  virtual void abort() = 0;
  /// The lowest rank (other than this one) that aborted, or -1.
  virtual int failedPeer() const = 0;

  /// Collective among the ranks that called split with the same `color` during split number
  /// `sequence` of this communicator: the transport of the new communicator whose rank i is
  /// this communicator's rank members[i]; this rank becomes `newRank`.
  virtual std::unique_ptr<Transport> split(uint64_t sequence, int color,
                                           std::span<const int> members, int newRank) = 0;
};

}  // namespace grove::transport
