// ShmDomain: one rank's presence in shared memory, and its FIFOs with local processes.
//
// The protocol, in short (docs/transports.md tells it at length):
//  * At construction the rank creates its node segment (doorbell, failed flag, pid) and
//    marks it ready. A peer maps it on its first connection with this rank, waiting for it to
//    appear; the peer whose mapping makes the count of attached peers reach (local ranks - 1)
//    unlinks the name.
//  * A FIFO segment is created by whichever side connects first (O_CREAT|O_EXCL wins); the
//    other opens it, waits until its creator has sized it, maps it and waits for the ready
//    flag. Each side bumps the attach counter; the second unlinks the name.
//  * Fifo's constructor initialises its control block, which in shared memory would reset
//    counters the peer may already have advanced. So each side builds its Fifo view over a
//    private placeholder mapping and then maps the segment over the same addresses
//    (MAP_FIXED): the view points into the segment without ever having written to it. Fresh
//    segments are zero-filled, which is the FIFO's initial state.
//  * Nothing here waits for a peer to connect the same FIFO, so connection order never
//    deadlocks.
#include "transport/shm/shm_domain.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "grove/error.hpp"
#include "transport/shm/shm_domain_impl.hpp"
#include "transport/shm/shm_heartbeat.hpp"

namespace grove::transport {

using shm::FdCloser;
using shm::kNodeMagic;
using shm::kPageBytes;
using shm::NodeHeader;

namespace {

constexpr std::chrono::milliseconds kPidCheckInterval{100};

// Wakes the owner of `bell` even if it is awake now: its next sleep returns at once.
void forceRing(Doorbell& bell) {
  bell.sleeping.store(1, std::memory_order_relaxed);
  ring(bell);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ShmDomain::Impl::Impl(ShmOptions opts) : options(std::move(opts)) {
  shm::checkJobId(options.jobId);
  const int n = options.size;
  const int rank = options.rank;
  if (n < 1 || rank < 0 || rank >= n) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ShmDomain: rank {} of size {}; expected 0 <= rank < size", rank, n));
  }
  isLocal.assign(n, false);
  int previous = -1;
  for (int r : options.localRanks) {
    if (r <= previous || r >= n) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("ShmDomain on rank {}: localRanks [{}] must be ascending "
                              "ranks in [0, {})",
                              rank, fmt::join(options.localRanks, ", "), n));
    }
    isLocal[r] = true;
    previous = r;
  }
  if (!isLocal[rank]) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ShmDomain on rank {}: localRanks [{}] must contain the rank", rank,
                            fmt::join(options.localRanks, ", ")));
  }
  if (options.geometry.slotBytes == 0 || options.geometry.depth == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ShmDomain on rank {}: FIFO geometry {} bytes x {} slots; "
                            "expected both > 0",
                            rank, options.geometry.slotBytes, options.geometry.depth));
  }
  localCount = static_cast<int>(options.localRanks.size());
  peerMappings.resize(n);
  watchPid.assign(n, 0);
  pidNamespace = shm::pidNamespaceId();
  peers.reset(new std::atomic<NodeHeader*>[n]);
  gone.reset(new std::atomic<bool>[n]);
  lastBeat.reset(new std::atomic<uint64_t>[n]);
  lastBeatMovedNs.reset(new std::atomic<int64_t>[n]);
  silent.reset(new std::atomic<bool>[n]);
  for (int r = 0; r < n; ++r) {
    peers[r].store(nullptr, std::memory_order_relaxed);
    gone[r].store(false, std::memory_order_relaxed);
    lastBeat[r].store(0, std::memory_order_relaxed);
    lastBeatMovedNs[r].store(0, std::memory_order_relaxed);
    silent[r].store(false, std::memory_order_relaxed);
  }

  if (rank == options.localRanks.front()) {
    if (int reaped = reapAbandonedSegments(); reaped > 0) {
      log::info(rank, "shared memory: removed {} segment(s) of jobs whose ranks all died", reaped);
    }
  }
  nodeName = shm::nodeSegmentName(options.jobId, rank);
  int fd = shm::createSegment(nodeName, kPageBytes);
  if (fd < 0) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("ShmDomain on rank {}: shared-memory segment {} exists "
                            "already: another communicator uses job id '{}', or a killed job "
                            "left it behind (removeJobSegments)",
                            rank, nodeName, options.jobId));
  }
  FdCloser closer{fd};
  try {
    nodeMapping = shm::Mapping::shared(fd, kPageBytes, nodeName);
  } catch (...) {
    shm::unlinkSegment(nodeName);
    throw;
  }
  node = reinterpret_cast<NodeHeader*>(nodeMapping.base());
  node->pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
  node->pidNamespace = pidNamespace;
  node->ownerAddress = reinterpret_cast<uint64_t>(node);
  node->magic = kNodeMagic;
  node->ready.store(1, std::memory_order_release);
  if (localCount == 1) shm::unlinkSegment(nodeName);  // nobody will ever map it
  if (localCount > 1) {
    shm::addHeartbeat(&node->heartbeat);
    heartbeatRegistered = true;
  }
}

ShmDomain::Impl::~Impl() {
  if (node != nullptr) node->closed.store(1, std::memory_order_release);
  // Peers no longer watch a closed domain's heartbeat.
  if (heartbeatRegistered) shm::removeHeartbeat(&node->heartbeat);
  lingerForUnreadMessages();
  fifos.clear();  // unlinks FIFO segments no peer attached to
  if (node != nullptr &&
      node->attached.load(std::memory_order_acquire) < static_cast<uint32_t>(localCount - 1)) {
    shm::unlinkSegment(nodeName);
  }
}

// A rank may finish its part of a call as soon as its messages sit in the FIFOs, and be
// destroyed before a slower peer has even connected. Unlinking such a FIFO (or this node
// segment) now would lose the messages, so wait for the peer to attach first, unless this
// rank aborted, the peer is gone or closed, or the timeout passes.
void ShmDomain::Impl::lingerForUnreadMessages() {
  if (node == nullptr || node->failed.load(std::memory_order_acquire) != 0) return;
  shm::Backoff backoff(options.timeout);
  for (auto& [key, c] : fifos) {
    auto [src, dst, lane] = key;
    if (!c->created || src != options.rank || dst == src || c->header == nullptr) continue;
    auto* control = reinterpret_cast<FifoControl*>(c->mapping.base() + kPageBytes);
    if (control->committed.load(std::memory_order_acquire) == 0) continue;
    NodeHeader* peer = peers[dst].load(std::memory_order_acquire);
    while (c->header->attached.load(std::memory_order_acquire) < 2) {
      if (backoff.expired() || peer->failed.load(std::memory_order_acquire) != 0 ||
          peer->closed.load(std::memory_order_acquire) != 0 ||
          (watchPid[dst] && shm::processGone(peer->pid.load(std::memory_order_relaxed)))) {
        break;
      }
      backoff.pause();
    }
  }
}

void ShmDomain::Impl::checkPeer(int peer, int lane, const char* call) const {
  if (peer < 0 || peer >= options.size || !isLocal[peer]) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ShmDomain::{} on rank {}: peer {} is not a local rank; "
                            "expected one of [{}]",
                            call, options.rank, peer, fmt::join(options.localRanks, ", ")));
  }
  if (lane < 0) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("ShmDomain::{} on rank {}: lane {}; expected >= 0", call, options.rank, lane));
  }
}

ShmDomain::ShmDomain(ShmOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

ShmDomain::~ShmDomain() = default;

Doorbell& ShmDomain::doorbell() { return impl_->node->bell; }

Fifo& ShmDomain::sendFifo(int peer, int lane) {
  impl_->checkPeer(peer, lane, "sendFifo");
  return impl_->fifo(impl_->options.rank, peer, lane);
}

Fifo& ShmDomain::recvFifo(int peer, int lane) {
  impl_->checkPeer(peer, lane, "recvFifo");
  return impl_->fifo(peer, impl_->options.rank, lane);
}

void ShmDomain::abort() { abort(FailureInfo{impl_->options.rank, "the communicator was aborted"}); }

void ShmDomain::abort(const FailureInfo& info) {
  Impl& s = *impl_;
  if (s.node->failureClaimed.exchange(1, std::memory_order_acq_rel) == 0) {
    FailureInfo clean = sanitizeFailure(info);
    s.node->failureOrigin = clean.origin >= 0 ? clean.origin : s.options.rank;
    s.node->failureUsageError = clean.usageError ? 1 : 0;
    s.node->failureCauseBytes = static_cast<uint32_t>(clean.cause.size());
    std::memcpy(s.node->failureCause, clean.cause.data(), clean.cause.size());
    s.node->failureWritten.store(1, std::memory_order_release);
  }
  s.node->failed.store(1, std::memory_order_release);
  for (int r = 0; r < s.options.size; ++r) {
    if (NodeHeader* peer = s.peers[r].load(std::memory_order_acquire)) forceRing(peer->bell);
  }
  forceRing(s.node->bell);  // a thread of this rank sleeping on its own doorbell
}

std::optional<PeerProcess> ShmDomain::peerProcess(int peer) {
  if (peer < 0 || peer >= impl_->options.size || !impl_->isLocal[peer] ||
      peer == impl_->options.rank) {
    return std::nullopt;
  }
  shm::NodeHeader& header = impl_->peerNode(peer);
  if (!impl_->watchPid[peer]) return std::nullopt;  // Its pid means nothing here.
  const auto* base = reinterpret_cast<const char*>(&header);
  const auto* pidField = reinterpret_cast<const char*>(&header.pid);
  return PeerProcess{header.pid.load(std::memory_order_relaxed),
                     header.ownerAddress + static_cast<uint64_t>(pidField - base)};
}

int ShmDomain::failedPeer() const {
  const Impl& s = *impl_;
  int64_t now = nowNs();
  int64_t due = s.nextPidCheckNs.load(std::memory_order_relaxed);
  if (now >= due && s.nextPidCheckNs.compare_exchange_strong(
                        due, now + std::chrono::nanoseconds(kPidCheckInterval).count(),
                        std::memory_order_relaxed)) {
    for (int r : s.options.localRanks) {
      NodeHeader* peer = s.peers[r].load(std::memory_order_acquire);
      if (peer == nullptr || !s.watchPid[r] || s.gone[r].load(std::memory_order_relaxed)) {
        continue;
      }
      if (shm::processGone(peer->pid.load(std::memory_order_relaxed))) {
        s.gone[r].store(true, std::memory_order_relaxed);
        // A crashed peer leaves behind what it created and nobody attached to yet. (One
        // that closed cleanly may have left data a slower peer has still to map.)
        if (peer->closed.load(std::memory_order_acquire) == 0) {
          removeRankSegments(s.options.jobId, r);
        }
      }
    }
    checkHeartbeats(now);
  }
  for (int r : s.options.localRanks) {
    if (r == s.options.rank) continue;
    NodeHeader* peer = s.peers[r].load(std::memory_order_acquire);
    if (peer == nullptr) continue;
    if (peer->failed.load(std::memory_order_acquire) != 0) return r;
    if (s.gone[r].load(std::memory_order_relaxed) &&
        peer->closed.load(std::memory_order_acquire) == 0) {
      return r;
    }
    if (s.silent[r].load(std::memory_order_relaxed) &&
        peer->closed.load(std::memory_order_acquire) == 0) {
      return r;
    }
  }
  return -1;
}

// Runs with the liveness check, while this rank waits. Silence from before the wait does not
// count: a rank that computed for a minute between two calls must not find every peer
// "silent" when it comes back.
void ShmDomain::checkHeartbeats(int64_t now) const {
  const Impl& s = *impl_;
  const int64_t timeout = std::chrono::nanoseconds(s.options.heartbeatTimeout).count();
  if (timeout <= 0) return;
  const int64_t previous = s.lastBeatCheckNs.exchange(now, std::memory_order_relaxed);
  const bool newWait = now - previous > std::chrono::nanoseconds(std::chrono::seconds(1)).count();
  for (int r : s.options.localRanks) {
    NodeHeader* peer = s.peers[r].load(std::memory_order_acquire);
    if (r == s.options.rank || peer == nullptr || s.gone[r].load(std::memory_order_relaxed) ||
        peer->closed.load(std::memory_order_acquire) != 0) {
      continue;
    }
    const uint64_t beat = peer->heartbeat.load(std::memory_order_relaxed);
    // A peer mapped during this wait is seen here for the first time (its time 0 means
    // "never"): its counter may still be at 0, which is no evidence of a stopped process.
    const bool firstSighting = s.lastBeatMovedNs[r].load(std::memory_order_relaxed) == 0;
    if (newWait || firstSighting || beat != s.lastBeat[r].load(std::memory_order_relaxed)) {
      s.lastBeat[r].store(beat, std::memory_order_relaxed);
      s.lastBeatMovedNs[r].store(now, std::memory_order_relaxed);
    } else if (now - s.lastBeatMovedNs[r].load(std::memory_order_relaxed) >= timeout &&
               !s.silent[r].exchange(true, std::memory_order_relaxed)) {
      log::warn(s.options.rank, "shared memory: no heartbeat from rank {} for {} s", r,
                s.options.heartbeatTimeout.count() / 1000.0);
    }
  }
}

bool ShmDomain::peerLeft(int peer) const {
  const Impl& s = *impl_;
  if (peer < 0 || peer >= s.options.size || !s.isLocal[peer] || peer == s.options.rank) {
    return false;
  }
  const NodeHeader* header = s.peers[peer].load(std::memory_order_acquire);
  // `closed` is raised (release) after the peer's last write to any FIFO.
  return header != nullptr && header->closed.load(std::memory_order_acquire) != 0 &&
         header->failed.load(std::memory_order_acquire) == 0;
}

FailureInfo ShmDomain::failure() const {
  const Impl& s = *impl_;
  int r = failedPeer();
  if (r < 0) return FailureInfo{};
  const NodeHeader* peer = s.peers[r].load(std::memory_order_acquire);
  if (peer->failed.load(std::memory_order_acquire) == 0 &&
      !s.gone[r].load(std::memory_order_relaxed) && s.silent[r].load(std::memory_order_relaxed)) {
    return FailureInfo{r, fmt::format("no heartbeat from rank {} for {} s "
                                      "(GROVE_HEARTBEAT_TIMEOUT): its process is stopped or frozen",
                                      r, s.options.heartbeatTimeout.count() / 1000.0)};
  }
  if (peer->failed.load(std::memory_order_acquire) == 0) {
    return FailureInfo{r, "its process ended without closing the communicator (killed or crashed)"};
  }
  if (peer->failureWritten.load(std::memory_order_acquire) == 0) {
    return FailureInfo{r, "it aborted"};
  }
  // Written by another process: trust no field.
  FailureInfo info;
  info.origin =
      peer->failureOrigin >= 0 && peer->failureOrigin < s.options.size ? peer->failureOrigin : r;
  size_t bytes = std::min<size_t>(peer->failureCauseBytes, FailureInfo::kMaxCauseBytes);
  info.cause.assign(peer->failureCause, bytes);
  info.usageError = peer->failureUsageError == 1;
  return sanitizeFailure(std::move(info));
}

}  // namespace grove::transport
