// The transport of a communicator whose ranks are processes: shared memory to the ranks on
// this host, TCP to the others, chosen per peer at creation (GROVE_TRANSPORT=tcp forces TCP).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "transport/inproc/inproc_transport.hpp"
#include "transport/process/process_peer_memory.hpp"
#include "transport/shm/shm_domain.hpp"
#include "transport/tcp/tcp_links.hpp"
#include "transport/transport.hpp"

namespace grove::transport {

/// How this rank reaches a peer.
enum class PeerKind { kSelf, kShm, kTcp };

/// Everything a process transport is made of; built by the bootstrap (core/process_bootstrap).
struct ProcessTransportSetup {
  int rank = 0;
  int size = 1;
  std::string jobId;                 ///< Unique per communicator; names shm segments.
  std::string keyPrefix;             ///< Store namespace of this communicator.
  std::vector<std::string> hostIds;  ///< Per rank: where it lives (same string = same host).
  bool forceTcp = false;
  FifoGeometry geometry;
  TcpOptions tcp;  ///< Socket settings (rank/size/peers/prefix filled in).
  std::chrono::milliseconds timeout{300'000};
  std::shared_ptr<bootstrap::Store> store;
  std::shared_ptr<void> keepAlive;  ///< E.g. the store server rank 0 runs.
};

class ProcessTransport final : public Transport {
 public:
  /// Connects to the local and remote peers as `setup` says and waits (through the store)
  /// until every rank is ready; throws grove::Error naming missing ranks on timeout.
  explicit ProcessTransport(ProcessTransportSetup setup);
  ~ProcessTransport() override;

  int rank() const override { return setup_.rank; }
  int size() const override { return setup_.size; }
  std::string_view name() const override { return name_; }
  Fifo& sendFifo(int peer, int lane) override;
  Fifo& recvFifo(int peer, int lane) override;
  int ranksOnThisHost() const override { return localRanks_; }
  Doorbell& doorbell() override;
  /// Only when every peer is on this host.
  PeerMemory* peerMemory() override;
  /// The TCP links' latency path (TcpLinks::progress); false without remote peers.
  bool progress() override { return tcp_ && tcp_->progress(); }
  void handOffProgress() override {
    if (tcp_) tcp_->handOffProgress();
  }
  using Transport::abort;
  void abort(const FailureInfo& info) override;
  int failedPeer() const override;
  FailureInfo failure() const override;
  bool peerLeft(int peer) const override;
  bool overNetwork(int peer) const override {
    return peer >= 0 && peer < setup_.size && kinds_[peer] == PeerKind::kTcp;
  }
  SendRate measuredSendRate(int peer) const override {
    return overNetwork(peer) && tcp_ ? tcp_->drainRate(peer) : SendRate{};
  }
  std::unique_ptr<Transport> split(uint64_t sequence, int color, std::span<const int> members,
                                   int newRank) override;

  PeerKind kind(int peer) const { return kinds_[peer]; }

 private:
  ProcessTransportSetup setup_;
  std::vector<PeerKind> kinds_;
  int localRanks_ = 1;  ///< Ranks with this rank's host identity (shm peers and itself).
  std::string name_;
  std::unique_ptr<ShmDomain> shm_;
  std::unique_ptr<Doorbell> localBell_;  ///< When no shared-memory peer exists.
  std::unique_ptr<TcpLinks> tcp_;
  std::unique_ptr<ProcessPeerMemory> peerMemory_;  ///< When every peer is local.
  std::shared_ptr<InprocWorld> self_;  ///< FIFOs to this rank itself (grouped self send/recv).
};

}  // namespace grove::transport
