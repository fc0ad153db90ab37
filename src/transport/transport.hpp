// The seam between the executor and the ways bytes move (in-process, shared memory, TCP).
//
// A transport gives a rank FIFOs to and from each peer on each lane (connected on demand,
// then kept for the communicator's lifetime), the rank's doorbell to sleep on, and failure
// signalling: abort() marks this rank failed so that peers waiting on it get an error
// instead of waiting forever, and publishes where the failure started and why (FailureInfo)
// so that every rank's error names the origin and the cause, not only the neighbour that
// passed it on.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"
#include "transport/peer_memory.hpp"

namespace grove::transport {

/// Where a failure started and why: travels with the abort notice (shm node segment, TCP
/// abort frame), so a rank that fails because of a peer forwards the original.
struct FailureInfo {
  /// Longest cause that travels (longer ones are truncated): room for a mismatch report,
  /// which names both ranks' calls.
  static constexpr size_t kMaxCauseBytes = 480;
  int origin = -1;    ///< The rank where the failure started; -1: none.
  std::string cause;  ///< Short reason, e.g. the error message of the failed call.
  /// The failure is a usage error (the ranks' calls differ): every rank reports it as
  /// kInvalidUsage rather than kRemoteError.
  bool usageError = false;
};

/// `info` with its cause cut to FailureInfo::kMaxCauseBytes and every byte outside printable
/// ASCII replaced by '?' (it came from, or goes to, another process).
FailureInfo sanitizeFailure(FailureInfo info);

/// A measured rate of a network path, bytes/s (0: not measured): the median of recent samples
/// and the lowest of them. A slow receiver lowers both.
struct SendRate {
  double median = 0;
  double lowest = 0;
};

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

  /// Moves bytes on the calling thread, the rank's, while it waits for its calls: for TCP,
  /// writes the messages it committed straight to their sockets and reads what its peers
  /// sent, so that a small message crosses no thread hand-off. Called after every poll of
  /// the rank's operations; true when anything moved. Transports whose peers write into
  /// this rank's memory themselves have nothing to do.
  virtual bool progress() { return false; }
  /// The rank stops calling progress() for a while (it is going to sleep on its doorbell):
  /// whatever the transport moves meanwhile it moves on threads of its own, from now on.
  virtual void handOffProgress() {}

  /// Whether messages to `peer` cross a network (TCP to another host, or GROVE_TRANSPORT=tcp):
  /// the links where compression can pay (GROVE_COMPRESS).
  virtual bool overNetwork(int /*peer*/) const { return false; }
  /// How fast the network path to `peer` delivers this rank's sends (TCP: of the kernel's
  /// recent delivery-rate samples, tcp/drain_rate.hpp); zeros when not measured (yet).
  virtual SendRate measuredSendRate(int /*peer*/) const { return {}; }
  /// Reading peers' memory in place (zero-copy single-host collectives), or nullptr when
  /// this transport cannot (some peer is on another host).
  virtual PeerMemory* peerMemory() { return nullptr; }

  /// This rank's doorbell: peers ring it when they publish data or free space for it.
  virtual Doorbell& doorbell() = 0;

  /// Marks this rank failed, publishes `info` (sanitized) where peers see it and wakes every
  /// peer. Only the first call publishes; later ones change nothing.
  virtual void abort(const FailureInfo& info) = 0;
  /// abort() with this rank as the origin and `cause`.
  void abort(std::string_view cause = "the communicator was aborted") {
    abort(FailureInfo{rank(), std::string(cause), false});
  }
  /// The lowest rank (other than this one) that aborted, or -1.
  virtual int failedPeer() const = 0;
  /// What failedPeer() published when it aborted: the origin and cause it reported (for a
  /// peer whose process vanished or whose connection broke: that peer and what was seen).
  /// {-1, ""} when no peer failed.
  virtual FailureInfo failure() const = 0;
  /// True once `peer` has left for good: it destroyed its communicator cleanly, and every
  /// message it sent this rank is already in this rank's FIFOs. A call still waiting on it
  /// then cannot complete (a peer that left finished all its calls), so it fails at once
  /// instead of at its deadline. Transports that cannot tell say false.
  virtual bool peerLeft(int /*peer*/) const { return false; }

  /// Collective among the ranks that called split with the same `color` during split number
  /// `sequence` of this communicator: the transport of the new communicator whose rank i is
  /// this communicator's rank members[i]; this rank becomes `newRank`.
  virtual std::unique_ptr<Transport> split(uint64_t sequence, int color,
                                           std::span<const int> members, int newRank) = 0;
};

}  // namespace grove::transport
