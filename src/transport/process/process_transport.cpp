#include "transport/process/process_transport.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bootstrap/rendezvous.hpp"
#include "common/log.hpp"
#include "grove/error.hpp"

namespace grove::transport {
namespace {

std::string rankList(const std::vector<int>& ranks) {
  return ranks.empty() ? "none" : fmt::format("{}", fmt::join(ranks, ","));
}

}  // namespace

ProcessTransport::ProcessTransport(ProcessTransportSetup setup) : setup_(std::move(setup)) {
  const int me = setup_.rank;
  std::vector<int> local;
  std::vector<int> remote;
  kinds_.resize(setup_.size);
  for (int q = 0; q < setup_.size; ++q) {
    const bool sameHost = setup_.hostIds[q] == setup_.hostIds[me];
    if (q == me) {
      kinds_[q] = PeerKind::kSelf;
      local.push_back(q);
    } else if (sameHost && !setup_.forceTcp) {
      kinds_[q] = PeerKind::kShm;
      local.push_back(q);
    } else {
      kinds_[q] = PeerKind::kTcp;
      remote.push_back(q);
    }
  }
  localRanks_ = static_cast<int>(local.size());
  if (local.size() > 1) {
    ShmOptions shm;
    shm.jobId = setup_.jobId;
    shm.rank = me;
    shm.size = setup_.size;
    shm.localRanks = local;
    shm.geometry = setup_.geometry;
    shm.timeout = setup_.timeout;
    shm.heartbeatTimeout = setup_.tcp.heartbeatTimeout;
    shm_ = std::make_unique<ShmDomain>(shm);
  } else {
    localBell_ = std::make_unique<Doorbell>();
  }
  if (!remote.empty()) {
    TcpOptions tcp = setup_.tcp;
    tcp.keyPrefix = setup_.keyPrefix;
    tcp.rank = me;
    tcp.size = setup_.size;
    tcp.remoteRanks = remote;
    tcp.geometry = setup_.geometry;
    tcp.timeout = setup_.timeout;
    tcp_ = std::make_unique<TcpLinks>(*setup_.store, tcp, doorbell());
  }
  self_ = std::make_shared<InprocWorld>(1, setup_.geometry);
  if (remote.empty())
    peerMemory_ = std::make_unique<ProcessPeerMemory>(me, setup_.size, shm_.get());
  name_ = shm_ && tcp_ ? "shm+tcp" : tcp_ ? "tcp" : "shm";
  std::vector<int> shmPeers;
  for (int q : local) {
    if (q != me) shmPeers.push_back(q);
  }
  log::info(me, "transport: shm to ranks {}, tcp to ranks {}{}", rankList(shmPeers),
            rankList(remote), tcp_ ? fmt::format(" (listening on {})", tcp_->address()) : "");
  // The last wait of a communicator's creation: the last rank through also erases the
  // rendezvous' liveness counters.
  bootstrap::Rendezvous(*setup_.store, setup_.keyPrefix, me, setup_.size, setup_.timeout,
                        setup_.tcp.heartbeatTimeout)
      .barrier("ready", /*last=*/true);
}

ProcessTransport::~ProcessTransport() = default;

Fifo& ProcessTransport::sendFifo(int peer, int lane) {
  switch (kinds_[peer]) {
    case PeerKind::kSelf:
      return self_->fifo(0, 0, lane);
    case PeerKind::kShm:
      return shm_->sendFifo(peer, lane);
    case PeerKind::kTcp:
      return tcp_->sendFifo(peer, lane);
  }
  throw Error(ErrorCode::kInternalError, "unknown peer kind");
}

Fifo& ProcessTransport::recvFifo(int peer, int lane) {
  switch (kinds_[peer]) {
    case PeerKind::kSelf:
      return self_->fifo(0, 0, lane);
    case PeerKind::kShm:
      return shm_->recvFifo(peer, lane);
    case PeerKind::kTcp:
      return tcp_->recvFifo(peer, lane);
  }
  throw Error(ErrorCode::kInternalError, "unknown peer kind");
}

PeerMemory* ProcessTransport::peerMemory() { return peerMemory_.get(); }

Doorbell& ProcessTransport::doorbell() { return shm_ ? shm_->doorbell() : *localBell_; }

void ProcessTransport::abort(const FailureInfo& info) {
  if (shm_) shm_->abort(info);
  if (tcp_) tcp_->abort(info);
}

int ProcessTransport::failedPeer() const {
  int failed = shm_ ? shm_->failedPeer() : -1;
  if (failed < 0 && tcp_) failed = tcp_->failedPeer();
  return failed;
}

bool ProcessTransport::peerLeft(int peer) const {
  if (peer < 0 || peer >= setup_.size) return false;
  switch (kinds_[peer]) {
    case PeerKind::kShm:
      return shm_->peerLeft(peer);
    case PeerKind::kTcp:
      return tcp_->peerLeft(peer);
    default:
      return false;
  }
}

FailureInfo ProcessTransport::failure() const {
  if (shm_ && shm_->failedPeer() >= 0) return shm_->failure();
  if (tcp_ && tcp_->failedPeer() >= 0) return tcp_->failure();
  return FailureInfo{};
}

std::unique_ptr<Transport> ProcessTransport::split(uint64_t sequence, int color,
                                                   std::span<const int> members, int newRank) {
  ProcessTransportSetup child;
  child.rank = newRank;
  child.size = static_cast<int>(members.size());
  child.jobId = fmt::format("{}-s{}c{}", setup_.jobId, sequence, color);
  child.keyPrefix = fmt::format("{}split{}/{}/", setup_.keyPrefix, sequence, color);
  for (int old : members) child.hostIds.push_back(setup_.hostIds[old]);
  child.forceTcp = setup_.forceTcp;
  child.geometry = setup_.geometry;
  child.tcp = setup_.tcp;
  child.tcp.linkAddresses.clear();  // per rank: renumbered like the members
  if (!setup_.tcp.linkAddresses.empty()) {
    for (int old : members) child.tcp.linkAddresses.push_back(setup_.tcp.linkAddresses[old]);
  }
  child.timeout = setup_.timeout;
  child.store = setup_.store;
  child.keepAlive = setup_.keepAlive;
  return std::make_unique<ProcessTransport>(std::move(child));
}

}  // namespace grove::transport
