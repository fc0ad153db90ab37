// An in-memory transport for tests that drive the executor directly: every rank of a world
// lives in one thread, FIFOs are the real slot FIFOs (transport/fifo.hpp) over plain heap
// memory, and failures are flags a test sets. Nothing blocks, so a test can step ranks
// round-robin and see exactly when each one moves, blocks or fails.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "transport/peer_memory.hpp"
#include "transport/transport.hpp"

namespace grove::testing {

/// The FIFOs, doorbells and failure flags shared by the ranks of one in-memory world.
class MemoryWorld {
 public:
  MemoryWorld(int nranks, size_t slotBytes, uint32_t depth)
      : nranks_(nranks),
        slotBytes_(slotBytes),
        depth_(depth),
        bells_(static_cast<size_t>(nranks)),
        failures_(static_cast<size_t>(nranks)) {}

  int size() const { return nranks_; }
  transport::Doorbell& doorbell(int rank) { return bells_[static_cast<size_t>(rank)]; }

  /// The FIFO `from` -> `to` on `lane`; both ends use this one object.
  transport::Fifo& fifo(int from, int to, int lane) {
    auto& entry = fifos_[std::make_tuple(from, to, lane)];
    if (entry == nullptr) entry = std::make_unique<Connection>(*this, from, to);
    return entry->fifo;
  }

  void markFailed(int rank, const transport::FailureInfo& info) {
    transport::FailureInfo& kept = failures_[static_cast<size_t>(rank)];
    if (kept.origin < 0) kept = transport::sanitizeFailure(info);
  }
  /// The lowest failed rank other than `except`, or -1.
  int failedRank(int except) const {
    for (int r = 0; r < nranks_; ++r) {
      if (r != except && failures_[static_cast<size_t>(r)].origin >= 0) return r;
    }
    return -1;
  }
  transport::FailureInfo failure(int rank) const {
    return rank < 0 ? transport::FailureInfo{} : failures_[static_cast<size_t>(rank)];
  }

 private:
  // FIFO memory must be zeroed and 64-byte aligned (Fifo's constructor).
  struct Connection {
    Connection(MemoryWorld& world, int from, int to)
        : bytes(transport::Fifo::memoryBytes(world.slotBytes_, world.depth_)),
          memory(::operator new (bytes, std::align_val_t{64})),
          fifo((std::memset(memory, 0, bytes), memory), world.slotBytes_, world.depth_,
               &world.doorbell(from), &world.doorbell(to)) {}
    ~Connection() { ::operator delete (memory, std::align_val_t{64}); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    size_t bytes;
    void* memory;
    transport::Fifo fifo;
  };

  const int nranks_;
  const size_t slotBytes_;
  const uint32_t depth_;
  std::vector<transport::Doorbell> bells_;
  std::vector<transport::FailureInfo> failures_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Connection>> fifos_;
};

/// Peer memory of ranks that live in one thread: a peer's buffer is read at its own address.
/// A test makes a rank say it cannot read its peers (one-sided plans then decline).
class SharedPeerMemory final : public transport::PeerMemory {
 public:
  bool canRead = true;
  bool canReadAllPeers() override { return canRead; }
  bool mapsAnyMemory() const override { return true; }
  const char* map(int, const transport::BufferDescriptor& buffer) override {
    return reinterpret_cast<const char*>(buffer.address);
  }
  bool read(int, uint64_t address, void* to, size_t bytes) override {
    std::memcpy(to, reinterpret_cast<const void*>(address), bytes);
    return true;
  }
  const std::string& readFailure() const override { return none_; }

 private:
  std::string none_;
};

/// One rank's view of a MemoryWorld.
class MemoryTransport final : public transport::Transport {
 public:
  MemoryTransport(MemoryWorld& world, int rank) : world_(world), rank_(rank) {}
  using transport::Transport::abort;

  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  std::string_view name() const override { return "memory"; }
  transport::Fifo& sendFifo(int peer, int lane) override { return world_.fifo(rank_, peer, lane); }
  transport::Fifo& recvFifo(int peer, int lane) override { return world_.fifo(peer, rank_, lane); }
  int ranksOnThisHost() const override { return world_.size(); }
  transport::Doorbell& doorbell() override { return world_.doorbell(rank_); }
  void abort(const transport::FailureInfo& info) override { world_.markFailed(rank_, info); }
  int failedPeer() const override { return world_.failedRank(rank_); }
  transport::FailureInfo failure() const override { return world_.failure(failedPeer()); }
  transport::PeerMemory* peerMemory() override { return &peerMemory_; }
  SharedPeerMemory& sharedPeerMemory() { return peerMemory_; }
  std::unique_ptr<transport::Transport> split(uint64_t, int, std::span<const int>, int) override {
    throw std::logic_error("MemoryTransport does not split");
  }

 private:
  MemoryWorld& world_;
  SharedPeerMemory peerMemory_;
  const int rank_;
};

}  // namespace grove::testing
