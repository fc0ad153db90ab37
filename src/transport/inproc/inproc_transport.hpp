// The in-process transport: ranks are threads of one process sharing an InprocWorld.
//
// Used by Communicator::createInProcess, groveCommInitAll/InitRank within a process, and
// the tests. The FIFOs are the same slot FIFOs the shared-memory transport uses, placed in
// ordinary (pre-faulted) memory, so the in-process runs exercise the real data path.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/parameters.hpp"
#include "transport/transport.hpp"

namespace grove::transport {

/// FIFO geometry, identical on every rank of a communicator.
struct FifoGeometry {
  size_t slotBytes = common::defaultInteger(common::Param::kSlotBytes);
  uint32_t depth = common::defaultInteger(common::Param::kFifoDepth);
};

/// State shared by all ranks of one in-process communicator.
class InprocWorld {
 public:
  InprocWorld(int nranks, FifoGeometry geometry);
  ~InprocWorld();
  InprocWorld(const InprocWorld&) = delete;
  InprocWorld& operator=(const InprocWorld&) = delete;

  int size() const { return nranks_; }
  const FifoGeometry& geometry() const { return geometry_; }
  Doorbell& doorbell(int rank) { return bells_[rank]; }

  /// The FIFO src -> dst on `lane`, created (and its memory pre-faulted) on first use.
  Fifo& fifo(int src, int dst, int lane);

  /// Marks `rank` failed with `info` (the first info of each rank is kept).
  void markFailed(int rank, const FailureInfo& info);
  int failedRank(int except) const;
  /// What `rank` published when it failed ({-1, ""} if it did not).
  FailureInfo failure(int rank) const;

  /// Rendezvous for split(): members of one (split call, color) share the world made by
  /// the first of them to arrive; `members` ranks are expected.
  std::shared_ptr<InprocWorld> splitWorld(uint64_t splitSequence, int color, int members);

 private:
  struct FifoMemory;
  const int nranks_;
  const FifoGeometry geometry_;
  std::unique_ptr<Doorbell[]> bells_;
  std::unique_ptr<std::atomic<bool>[]> failed_;
  std::atomic<bool> anyFailed_{false};
  mutable std::mutex mutex_;
  std::vector<FailureInfo> failures_;  ///< By rank, under mutex_.
  std::map<std::tuple<int, int, int>, std::unique_ptr<FifoMemory>> fifos_;
  struct PendingSplit {
    std::shared_ptr<InprocWorld> world;
    int remaining = 0;
  };
  std::map<std::pair<uint64_t, int>, PendingSplit> splits_;
};

/// Threads share one address space: a peer's buffer is read at its own address.
class SharedAddressSpace final : public PeerMemory {
 public:
  bool canReadAllPeers() override { return true; }
  bool mapsAnyMemory() const override { return true; }
  const char* map(int, const BufferDescriptor& buffer) override {
    return reinterpret_cast<const char*>(buffer.address);
  }
  bool read(int, uint64_t address, void* to, size_t bytes) override {
    std::memcpy(to, reinterpret_cast<const void*>(address), bytes);
    return true;
  }
  const std::string& readFailure() const override { return noFailure_; }

 private:
  std::string noFailure_;
};

/// One rank's view of an InprocWorld.
class InprocTransport final : public Transport {
 public:
  InprocTransport(std::shared_ptr<InprocWorld> world, int rank);

  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  std::string_view name() const override { return "inproc"; }
  Fifo& sendFifo(int peer, int lane) override { return world_->fifo(rank_, peer, lane); }
  Fifo& recvFifo(int peer, int lane) override { return world_->fifo(peer, rank_, lane); }
  int ranksOnThisHost() const override { return world_->size(); }
  Doorbell& doorbell() override { return world_->doorbell(rank_); }
  PeerMemory* peerMemory() override { return &sharedAddressSpace_; }
  using Transport::abort;
  void abort(const FailureInfo& info) override { world_->markFailed(rank_, info); }
  int failedPeer() const override { return world_->failedRank(rank_); }
  FailureInfo failure() const override {
    int peer = failedPeer();
    return peer < 0 ? FailureInfo{} : world_->failure(peer);
  }
  std::unique_ptr<Transport> split(uint64_t sequence, int color, std::span<const int> members,
                                   int newRank) override {
    return std::make_unique<InprocTransport>(
        world_->splitWorld(sequence, color, static_cast<int>(members.size())), newRank);
  }

  const std::shared_ptr<InprocWorld>& world() const { return world_; }

 private:
  std::shared_ptr<InprocWorld> world_;
  int rank_;
  SharedAddressSpace sharedAddressSpace_;
};

}  // namespace grove::transport
