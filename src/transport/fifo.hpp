// A single-producer single-consumer FIFO of fixed-size slots: the connection between two
// ranks on one lane.
//
// Connections expose slots, not send/recv: the sender acquires the next free slot, writes
// its message straight into it (a copy or the result of a reduction) and commits it; the
// receiver peeks at the next full slot, reads or reduces from it in place, and releases it.
// That makes fused steps like recvReduceSend a single pass over memory. The FIFO is plain
// memory plus two counters, so it works unchanged in memory shared between processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/doorbell.hpp"

namespace grove::transport {

/// Control block of a FIFO, at the start of its memory; the slots follow.
struct FifoControl {
  alignas(64) std::atomic<uint64_t> committed{0};  ///< Messages the sender has committed.
  alignas(64) std::atomic<uint64_t> released{0};   ///< Messages the receiver has released.
};

/// One FIFO endpoint pair over memory owned elsewhere. Both ends hold a view of the same
/// memory; the sender only calls the send half, the receiver only the receive half.
class Fifo {
 public:
  /// Bytes of memory a FIFO of `depth` slots of `slotBytes` needs.
  static size_t memoryBytes(size_t slotBytes, uint32_t depth);

  /// `memory` must hold memoryBytes(slotBytes, depth) bytes, zeroed when the FIFO was made
  /// (fresh mmap or shm memory), 64-byte aligned. The constructor does not write it, so a
  /// second view of a FIFO already in use (the other process of a shm pair) loses nothing.
  /// `senderBell` / `receiverBell` are rung when space / data becomes available.
  Fifo(void* memory, size_t slotBytes, uint32_t depth, Doorbell* senderBell,
       Doorbell* receiverBell);

  size_t slotBytes() const { return slotBytes_; }

  /// Sender: the next free slot, or nullptr when all slots are full.
  void* tryAcquire() {
    if (sendHead_ - cachedReleased_ >= depth_) {
      cachedReleased_ = control_->released.load(std::memory_order_acquire);
      if (sendHead_ - cachedReleased_ >= depth_) return nullptr;
    }
    return slot(sendHead_);
  }
  /// Sender: publishes the acquired slot holding `bytes` bytes.
  void commit(size_t bytes) {
    lengths_[sendHead_ % depth_] = bytes;
    ++sendHead_;
    control_->committed.store(sendHead_, std::memory_order_release);
    ring(*receiverBell_);
  }

  /// Receiver: the next full slot and its length, or nullptr when none is ready.
  const void* tryPeek(size_t* bytes) {
    if (recvTail_ == cachedCommitted_) {
      cachedCommitted_ = control_->committed.load(std::memory_order_acquire);
      if (recvTail_ == cachedCommitted_) return nullptr;
    }
    *bytes = lengths_[recvTail_ % depth_];
    return slot(recvTail_);
  }
  /// Receiver: hands the peeked slot back to the sender.
  void release() {
    ++recvTail_;
    control_->released.store(recvTail_, std::memory_order_release);
    ring(*senderBell_);
  }

 private:
  void* slot(uint64_t index) const { return slots_ + (index % depth_) * slotBytes_; }

  FifoControl* control_;
  size_t* lengths_;
  char* slots_;
  size_t slotBytes_;
  uint32_t depth_;
  Doorbell* senderBell_;
  Doorbell* receiverBell_;
  // Each side's private view: its own counter and a cache of the other side's, so the
  // shared cache lines are read only when the cached value says "no room" / "no data".
  alignas(64) uint64_t sendHead_ = 0;
  uint64_t cachedReleased_ = 0;
  alignas(64) uint64_t recvTail_ = 0;
  uint64_t cachedCommitted_ = 0;
};

}  // namespace grove::transport
