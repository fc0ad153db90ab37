// The shared-memory transport's view of one rank: its doorbell in shared memory, and FIFOs
// to and from the other processes of its host, each in a POSIX shared-memory segment.
//
// Segments (docs/transports.md has the whole story):
//  * /grove-<jobId>-n<rank>: the node segment, created by the rank at construction: its
//    doorbell (peers ring it), its failed flag and its pid. Peers map it on first connect.
//  * /grove-<jobId>-f<src>-<dst>-<lane>: one FIFO, created by whichever side connects first.
// Names are unlinked as soon as everyone who needs them has mapped them, and at destruction;
// removeJobSegments() removes what a killed process left behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"
#include "transport/inproc/inproc_transport.hpp"  // FifoGeometry
#include "transport/transport.hpp"                // FailureInfo

namespace grove::transport {

struct ShmOptions {
  std::string jobId;  ///< Unique per communicator; part of every segment name.
  int rank = 0;       ///< This rank (communicator numbering).
  int size = 1;
  std::vector<int> localRanks;  ///< Ranks on this host (including this one), ascending.
  FifoGeometry geometry;
  std::chrono::milliseconds timeout{300'000};  ///< For waiting on a peer's segment.
  /// GROVE_HEARTBEAT_TIMEOUT: a local peer whose heartbeat (shm_heartbeat.hpp) stands still
  /// this long while this rank waits is declared failed; 0 turns the check off.
  std::chrono::milliseconds heartbeatTimeout{10'000};
};

/// Owns this rank's shared-memory presence. Thread-compatible (one thread drives a rank);
/// abort() and doorbell() may also be called from another thread.
///
/// Every local rank must construct its ShmDomain with the same jobId, size, localRanks and
/// geometry. Connecting (the first sendFifo/recvFifo with a peer) waits up to
/// `options.timeout` for the peer's node segment to appear, but never for the peer to
/// connect the same FIFO, so ranks may connect in any order.
/// A local peer's process, for reading its memory (transport/peer_memory.hpp).
struct PeerProcess {
  pid_t pid = -1;
  /// Where that process keeps its own pid (in its node segment), as a probe: reading it
  /// with process_vm_readv and finding `pid` shows that its memory can be read.
  uint64_t pidAddress = 0;
};

class ShmDomain {
 public:
  /// Creates this rank's node segment. Throws kInvalidArgument for inconsistent options and
  /// kSystemError when the segment cannot be made (or exists already: the job id is reused).
  explicit ShmDomain(ShmOptions options);
  /// Unlinks every segment this rank created that is still linked, unmaps everything.
  ~ShmDomain();
  ShmDomain(const ShmDomain&) = delete;
  ShmDomain& operator=(const ShmDomain&) = delete;

  /// This rank's doorbell, in shared memory so local peers can ring it.
  Doorbell& doorbell();
  /// FIFOs with a local peer (connected on first use; stable references). `peer` must be in
  /// localRanks (this rank itself gives a FIFO in private memory), `lane` >= 0. Throws
  /// kTimeout when the peer's node segment does not appear in time, kInvalidUsage when the
  /// peer's geometry differs.
  Fifo& sendFifo(int peer, int lane);
  Fifo& recvFifo(int peer, int lane);
  /// The process of local peer `peer` (mapping its node segment on first use, like
  /// connecting), or nullopt when it is not a local peer or lives in another pid namespace.
  std::optional<PeerProcess> peerProcess(int peer);
  /// Marks this rank failed where local peers see it, publishing `info` (origin and cause,
  /// sanitized; only the first call's info is kept) in its node segment, and rings their
  /// doorbells (the peers this rank has connected with; others see the flag at their next
  /// failedPeer()).
  void abort(const FailureInfo& info);
  /// abort() with this rank as the origin.
  void abort();
  /// A local peer that marked itself failed (or whose process is gone without having
  /// destroyed its domain), or -1; the lowest such rank. Only peers this rank has connected
  /// with are watched. The process check is a system call, made at most every 100 ms; the
  /// flags are plain loads. A peer that destroyed its domain cleanly is not a failure.
  int failedPeer() const;
  /// What failedPeer() published when it failed (its origin and cause), or, for a peer whose
  /// process is gone, that peer and "its process ended ..."; {-1, ""} when none failed.
  FailureInfo failure() const;
  /// Part of failedPeer(): marks silent the local peers whose heartbeat stood still for
  /// options.heartbeatTimeout during this wait.
  void checkHeartbeats(int64_t nowNs) const;
  /// `peer` destroyed its domain cleanly: what it wrote before is visible in the FIFOs (see
  /// Transport::peerLeft).
  bool peerLeft(int peer) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Removes every /dev/shm/grove-<jobId>-* segment (node and FIFO names only, so job "a"
/// never touches job "a-b"). For launchers, after a job ended, in case a killed process left
/// segments behind. Throws kInvalidArgument for an invalid job id.
void removeJobSegments(std::string_view jobId);

/// Removes every /dev/shm/grove-* segment whose creator's process is gone (of this pid
/// namespace; a pid reused since, or a segment not yet initialised, is left alone): what the
/// ranks of a job that all died left behind, since none of them could remove it. Every new
/// job's first local rank runs it. Returns how many it removed.
int reapAbandonedSegments();

/// Removes the segments of job `jobId` that rank `rank` owns or shares: its node segment and
/// every FIFO from or to it. For survivors, when they find that rank's process gone: nobody
/// else would remove what it created but no peer attached to yet.
void removeRankSegments(std::string_view jobId, int rank);

}  // namespace grove::transport
