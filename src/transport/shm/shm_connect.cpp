// Connecting: mapping a peer's node segment and creating or opening FIFO segments (the
// protocol is described at the top of shm_domain.cpp and in docs/transports.md).
#include <fmt/format.h>

#include "grove/error.hpp"
#include "transport/shm/shm_domain_impl.hpp"

namespace grove::transport {

using shm::Connection;
using shm::FdCloser;
using shm::FifoHeader;
using shm::kFifoMagic;
using shm::kNodeMagic;
using shm::kPageBytes;
using shm::NodeHeader;

void ShmDomain::Impl::throwTimeout(int peer, const std::string& name, const char* what) const {
  throw Error(
      ErrorCode::kTimeout,
      fmt::format("ShmDomain on rank {}: waited {} ms for shared-memory segment "
                  "{} of local rank {} {}; is rank {} running on this host with job id "
                  "'{}'?",
                  options.rank, options.timeout.count(), name, peer, what, peer, options.jobId));
}

NodeHeader& ShmDomain::Impl::peerNode(int peer) {
  if (NodeHeader* mapped = peers[peer].load(std::memory_order_acquire)) return *mapped;
  std::string name = shm::nodeSegmentName(options.jobId, peer);
  shm::Backoff backoff(options.timeout);
  int fd;
  while ((fd = shm::openSegment(name)) < 0) {
    if (backoff.expired()) throwTimeout(peer, name, "to appear");
    backoff.pause();
  }
  FdCloser closer{fd};
  size_t size;
  while ((size = shm::segmentSize(fd, name)) == 0) {
    if (backoff.expired()) throwTimeout(peer, name, "to be sized");
    backoff.pause();
  }
  if (size != kPageBytes) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("ShmDomain on rank {}: segment {} of local rank {} has {} "
                            "bytes; expected {} (a different grove version?)",
                            options.rank, name, peer, size, kPageBytes));
  }
  shm::Mapping mapping = shm::Mapping::shared(fd, kPageBytes, name);
  auto* header = reinterpret_cast<NodeHeader*>(mapping.base());
  while (header->ready.load(std::memory_order_acquire) == 0) {
    if (backoff.expired()) throwTimeout(peer, name, "to be ready");
    backoff.pause();
  }
  if (header->magic != kNodeMagic) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("ShmDomain on rank {}: segment {} of local rank {} is not a "
                            "grove node segment",
                            options.rank, name, peer));
  }
  uint32_t attached = header->attached.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (attached == static_cast<uint32_t>(localCount - 1)) shm::unlinkSegment(name);
  watchPid[peer] = header->pidNamespace == pidNamespace;
  peerMappings[peer] = std::move(mapping);
  peers[peer].store(header, std::memory_order_release);
  return *header;
}

std::unique_ptr<Connection> ShmDomain::Impl::connectSelf() {
  const FifoGeometry& g = options.geometry;
  auto connection = std::make_unique<Connection>();
  connection->mapping = shm::Mapping::anonymous(Fifo::memoryBytes(g.slotBytes, g.depth), true);
  connection->fifo = std::make_unique<Fifo>(connection->mapping.base(), g.slotBytes, g.depth,
                                            &node->bell, &node->bell);
  return connection;
}

std::unique_ptr<Connection> ShmDomain::Impl::connectPeer(int src, int dst, int lane) {
  const FifoGeometry& g = options.geometry;
  const int peer = src == options.rank ? dst : src;
  NodeHeader& peerHeader = peerNode(peer);
  Doorbell* senderBell = src == options.rank ? &node->bell : &peerHeader.bell;
  Doorbell* receiverBell = dst == options.rank ? &node->bell : &peerHeader.bell;

  auto connection = std::make_unique<Connection>();
  Connection& c = *connection;
  c.name = shm::fifoSegmentName(options.jobId, src, dst, lane);
  const size_t total = kPageBytes + Fifo::memoryBytes(g.slotBytes, g.depth);
  shm::Backoff backoff(options.timeout);
  int fd;
  for (;;) {
    fd = shm::createSegment(c.name, total);
    if (fd >= 0) {
      c.created = true;
      break;
    }
    fd = shm::openSegment(c.name);  // the peer created it first
    if (fd >= 0) break;
    if (backoff.expired()) throwTimeout(peer, c.name, "to be opened");
    backoff.pause();
  }
  FdCloser closer{fd};
  if (!c.created) {
    size_t size;
    while ((size = shm::segmentSize(fd, c.name)) == 0) {
      if (backoff.expired()) throwTimeout(peer, c.name, "to be sized");
      backoff.pause();
    }
    if (size != total) {
      throw Error(ErrorCode::kInvalidUsage,
                  fmt::format("ShmDomain on rank {}: FIFO segment {} made by local rank "
                              "{} has {} bytes; expected {} for {} slots of {} bytes (the "
                              "ranks' FIFO geometries differ)",
                              options.rank, c.name, peer, size, total, g.depth, g.slotBytes));
    }
  }
  // Build the view over a placeholder, then put the segment under it (see the top).
  c.mapping = shm::Mapping::anonymous(total, false);
  c.fifo = std::make_unique<Fifo>(c.mapping.base() + kPageBytes, g.slotBytes, g.depth, senderBell,
                                  receiverBell);
  c.mapping.overlay(fd, c.name);
  c.header = reinterpret_cast<FifoHeader*>(c.mapping.base());
  if (c.created) {
    c.header->magic = kFifoMagic;
    c.header->slotBytes = g.slotBytes;
    c.header->depth = g.depth;
    c.header->ownerPid = static_cast<int32_t>(getpid());
    c.header->ownerPidNamespace = pidNamespace;
    c.header->ready.store(1, std::memory_order_release);
  } else {
    while (c.header->ready.load(std::memory_order_acquire) == 0) {
      if (backoff.expired()) throwTimeout(peer, c.name, "to be ready");
      backoff.pause();
    }
    if (c.header->magic != kFifoMagic || c.header->slotBytes != g.slotBytes ||
        c.header->depth != g.depth) {
      throw Error(ErrorCode::kInvalidUsage,
                  fmt::format("ShmDomain on rank {}: FIFO segment {} made by local rank "
                              "{} has {} slots of {} bytes; expected {} slots of {} bytes",
                              options.rank, c.name, peer, c.header->depth, c.header->slotBytes,
                              g.depth, g.slotBytes));
    }
  }
  if (c.header->attached.fetch_add(1, std::memory_order_acq_rel) + 1 == 2) {
    shm::unlinkSegment(c.name);
  }
  return connection;
}

Fifo& ShmDomain::Impl::fifo(int src, int dst, int lane) {
  auto key = std::make_tuple(src, dst, lane);
  if (auto it = fifos.find(key); it != fifos.end()) return *it->second->fifo;
  auto connection = src == dst ? connectSelf() : connectPeer(src, dst, lane);
  Fifo& result = *connection->fifo;
  fifos.emplace(key, std::move(connection));
  return result;
}

}  // namespace grove::transport
