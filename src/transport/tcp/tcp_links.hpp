// The TCP transport's view of one rank: FIFOs to and from ranks on other hosts, backed by
// local staging memory that a network thread moves over sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"
#include "transport/inproc/inproc_transport.hpp"  // FifoGeometry
#include "transport/transport.hpp"                // FailureInfo

namespace grove::transport {

/// TcpOptions::socketsPerPeer that gives every lane (0..65535) a connection of its own.
inline constexpr int kStreamsPerLane = 1 << 16;

struct TcpOptions {
  std::string keyPrefix;  ///< Store key namespace of this communicator.
  int rank = 0;
  int size = 1;
  std::vector<int> remoteRanks;  ///< Ranks reached over TCP (ascending).
  FifoGeometry geometry;
  /// Connections per peer (and direction, when not shared): lane L travels on stream
  /// L % socketsPerPeer. The default gives every lane its own connection: a lane whose
  /// receive FIFO is full stalls its own socket only, never another lane's (with lanes
  /// sharing a socket, one full FIFO blocks the rest, and plans whose channels wait on each
  /// other can deadlock). Tests may set fewer.
  int socketsPerPeer = kStreamsPerLane;
  /// GROVE_SOCKET_IFNAME (NCCL syntax), empty = automatic (one interface). Every interface a
  /// list selects (up to kMaxRails) carries a socket of each connection (rails.hpp).
  std::string interfaces;
  /// GROVE_TCP_DIRECT_BYTES: a rank waiting for a call writes and reads frames of at most
  /// this many payload bytes on its own thread (progress()); larger ones, and everything
  /// while the rank computes or sleeps, move on the network thread. 0: always the network
  /// thread.
  size_t directBytes = 67108864;
  /// GROVE_TCP_SHARED: with one interface, one connection per pair and lane carries both
  /// directions (links_state.hpp); false: each direction dials its own.
  bool sharedConnections = true;
  std::string secret;  ///< Job secret for the connection handshake.
  std::chrono::milliseconds timeout{300'000};
  /// An accepted connection that has not finished its handshake (secret, hello) this long
  /// after it was accepted is closed: a real peer needs a couple of round trips (and retries
  /// when closed), a stranger's idle socket must not be kept. Tests may set less.
  std::chrono::milliseconds handshakeTimeout{5'000};
  /// GROVE_HEARTBEAT_TIMEOUT: a peer from which nothing (data or heartbeat) arrived for this
  /// long while this rank waits (calls failedPeer()) is declared failed; 0 turns it off.
  /// Every connection idle for kHeartbeatInterval sends a heartbeat.
  std::chrono::milliseconds heartbeatTimeout{10'000};
  /// Per rank (empty, or one entry per rank): the address of that peer on the link this
  /// rank's topology (GROVE_TOPO_FILE) names for the arc this rank -> peer; an empty entry
  /// means "no link of its own". When any entry is set, the listener accepts on every local
  /// address and a peer with an entry is dialed at that address (with its published port),
  /// so each edge of a plan really travels its own link.
  std::vector<std::string> linkAddresses;
  /// Tests (GROVE_FAULT_CORRUPT_FRAME): every connection flips a bit of the N-th non-empty
  /// data frame it reads; 0 = off.
  uint64_t faultCorruptFrame = 0;
};

class TcpLinks {
 public:
  /// A connection that has sent nothing for this long sends a heartbeat frame.
  static constexpr std::chrono::milliseconds kHeartbeatInterval{1000};
  /// Accepted connections that may be in their handshake at once; a newer one closes the
  /// oldest (acceptor.hpp says why).
  static constexpr size_t kMaxPendingHandshakes = 64;

  /// Listens, publishes this rank's address in `store`, and starts the network thread;
  /// connections are made on first use. `rankBell` is rung when data or space arrives.
  TcpLinks(bootstrap::Store& store, TcpOptions options, Doorbell& rankBell);
  ~TcpLinks();
  TcpLinks(const TcpLinks&) = delete;
  TcpLinks& operator=(const TcpLinks&) = delete;

  Fifo& sendFifo(int peer, int lane);
  Fifo& recvFifo(int peer, int lane);
  /// Sends an abort notice carrying `info` (the first call's; sanitized) on every open
  /// connection.
  void abort(const FailureInfo& info);
  /// abort() with this rank as the origin.
  void abort();
  /// A remote peer that aborted, whose connection broke, or that stayed silent for
  /// heartbeatTimeout while this rank waited (calls to this function less than a second
  /// apart count as waiting), or -1; the lowest such rank.
  int failedPeer() const;
  /// What failedPeer() reported: the origin and cause of its abort notice, or that peer and
  /// what went wrong with its connection; {-1, ""} when no peer failed.
  FailureInfo failure() const;
  /// `peer` said bye on a connection and no connection carrying its data is open any more
  /// (see Transport::peerLeft).
  bool peerLeft(int peer) const;
  /// How fast the path to `peer` delivers this rank's sends: the median and the lowest of
  /// the kernel's recent samples (drain_rate.hpp); zeros before there were enough.
  SendRate drainRate(int peer) const;
  /// The latency path, on the rank's thread while it waits: writes the messages it committed
  /// and reads what arrived, frames of up to TcpOptions::directBytes (network_loop.hpp says
  /// how the work is shared with the network thread). True when anything moved.
  bool progress();
  /// The rank stops calling progress() (it is going to sleep): the network thread takes
  /// over at once.
  void handOffProgress();
  /// The address this rank listens on, "host:port" (for logs).
  std::string address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::transport
