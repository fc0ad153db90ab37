#include "transport/inproc/inproc_transport.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "grove/error.hpp"

namespace grove::transport {

// FIFO memory comes straight from mmap with MAP_POPULATE: page-aligned, zeroed and faulted
// in once at connection time, so no call ever pays a first-touch fault.
struct InprocWorld::FifoMemory {
  FifoMemory(size_t bytes, const FifoGeometry& geometry, Doorbell* senderBell,
             Doorbell* receiverBell)
      : bytes_(bytes),
        memory_(mapOrThrow(bytes)),
        fifo(memory_, geometry.slotBytes, geometry.depth, senderBell, receiverBell) {}
  ~FifoMemory() { munmap(memory_, bytes_); }

  static void* mapOrThrow(size_t bytes) {
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (memory == MAP_FAILED) {
      throw Error(ErrorCode::kSystemError, "cannot map " + std::to_string(bytes) +
                                               " bytes for a connection: " + strerror(errno));
    }
    return memory;
  }

  size_t bytes_;
  void* memory_;
  Fifo fifo;
};

InprocWorld::InprocWorld(int nranks, FifoGeometry geometry)
    : nranks_(nranks),
      geometry_(geometry),
      bells_(new Doorbell[nranks]),
      failed_(new std::atomic<bool>[nranks]),
      failures_(static_cast<size_t>(nranks)) {
  for (int i = 0; i < nranks; ++i) failed_[i] = false;
}

InprocWorld::~InprocWorld() = default;

Fifo& InprocWorld::fifo(int src, int dst, int lane) {
  std::lock_guard lock(mutex_);
  auto& slot = fifos_[{src, dst, lane}];
  if (!slot) {
    slot = std::make_unique<FifoMemory>(Fifo::memoryBytes(geometry_.slotBytes, geometry_.depth),
                                        geometry_, &bells_[src], &bells_[dst]);
  }
  return slot->fifo;
}

void InprocWorld::markFailed(int rank, const FailureInfo& info) {
  {
    std::lock_guard lock(mutex_);
    if (failures_[rank].origin < 0) {
      failures_[rank] = sanitizeFailure(info);
      if (failures_[rank].origin < 0) failures_[rank].origin = rank;
    }
  }
  failed_[rank].store(true, std::memory_order_release);
  anyFailed_.store(true, std::memory_order_release);
  for (int i = 0; i < nranks_; ++i) {
    bells_[i].sleeping.store(1, std::memory_order_relaxed);  // force the wake below
    ring(bells_[i]);
  }
}

int InprocWorld::failedRank(int except) const {
  if (!anyFailed_.load(std::memory_order_acquire)) return -1;
  for (int i = 0; i < nranks_; ++i) {
    if (i != except && failed_[i].load(std::memory_order_acquire)) return i;
  }
  return -1;
}

FailureInfo InprocWorld::failure(int rank) const {
  std::lock_guard lock(mutex_);
  return failures_[rank];
}

std::shared_ptr<InprocWorld> InprocWorld::splitWorld(uint64_t splitSequence, int color,
                                                     int members) {
  std::lock_guard lock(mutex_);
  auto& pending = splits_[{splitSequence, color}];
  if (!pending.world) {
    pending.world = std::make_shared<InprocWorld>(members, geometry_);
    pending.remaining = members;
  }
  auto world = pending.world;
  if (--pending.remaining == 0) splits_.erase({splitSequence, color});
  return world;
}

InprocTransport::InprocTransport(std::shared_ptr<InprocWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {}

}  // namespace grove::transport
