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

namespace grove::transport {

struct TcpOptions {
  std::string keyPrefix;  ///< Store key namespace of this communicator.
  int rank = 0;
  int size = 1;
  std::vector<int> remoteRanks;  ///< Ranks reached over TCP (ascending).
  FifoGeometry geometry;
  int socketsPerPeer = 1;  ///< GROVE_NSOCKS.
  std::string interfaces;  ///< GROVE_SOCKET_IFNAME (NCCL syntax), empty = automatic.
  std::string secret;      ///< Job secret for the connection handshake.
  std::chrono::milliseconds timeout{300'000};
  /// Per rank (empty, or one entry per rank): the address of that peer on the link this
  /// rank's topology (GROVE_TOPO_FILE) names for the arc this rank -> peer; an empty entry
  /// means "no link of its own". When any entry is set, the listener accepts on every local
  /// address and a peer with an entry is dialed at that address (with its published port),
  /// so each edge of a plan really travels its own link.
  std::vector<std::string> linkAddresses;
};

class TcpLinks {
 public:
  /// Listens, publishes this rank's address in `store`, and starts the network thread;
  /// connections are made on first use. `rankBell` is rung when data or space arrives.
  TcpLinks(bootstrap::Store& store, TcpOptions options, Doorbell& rankBell);
  ~TcpLinks();
  TcpLinks(const TcpLinks&) = delete;
  TcpLinks& operator=(const TcpLinks&) = delete;

  Fifo& sendFifo(int peer, int lane);
  Fifo& recvFifo(int peer, int lane);
  /// Sends an abort notice on every open connection.
  void abort();
  /// A remote peer that aborted or whose connection broke, or -1.
  int failedPeer() const;
  /// The address this rank listens on, "host:port" (for logs).
  std::string address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::transport
