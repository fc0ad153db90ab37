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

/// What call a message belongs to (32 bytes; the TCP frame header carries it verbatim).
/// Zero means untagged (tests and internal exchanges that do not check).
struct MessageTag {
  /// Bit set in `flags` when `checksum` holds the payload's checksum (GROVE_CHECKSUM).
  static constexpr uint8_t kHasChecksum = 1;

  uint64_t call = 0;       ///< Collective number on the communicator (1, 2, ...); 0 for send/recv.
  uint64_t count = 0;      ///< The call's count (send/recv: this transfer's count).
  uint32_t checksum = 0;   ///< xxHash of the payload when kHasChecksum is set.
  int32_t root = -1;       ///< Root of a rooted collective, else -1.
  uint32_t algorithm = 0;  ///< Hash of the algorithm's name (algorithmTag()).
  uint8_t collective = 0;  ///< plan::Collective, or kSignatureCheck.
  uint8_t type = 0;        ///< DataType.
  uint8_t op = 0;          ///< ReduceOp of reducing collectives, else 0.
  uint8_t flags = 0;

  /// Whether two tags name the same call (everything but the checksum and flags).
  bool sameCall(const MessageTag& other) const {
    return call == other.call && count == other.count && root == other.root &&
           algorithm == other.algorithm && collective == other.collective && type == other.type &&
           op == other.op;
  }
};
static_assert(sizeof(MessageTag) == 32);

/// Per-slot header: the message's length and tag, one cache line per slot.
struct alignas(64) SlotHeader {
  uint64_t bytes = 0;
  MessageTag tag;
};

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
  /// Sender: publishes the acquired slot holding `bytes` bytes, tagged with `tag`.
  void commit(size_t bytes, const MessageTag& tag = {}) {
    SlotHeader& header = headers_[sendHead_ % depth_];
    header.bytes = bytes;
    header.tag = tag;
    ++sendHead_;
    control_->committed.store(sendHead_, std::memory_order_release);
    ring(*receiverBell_);
  }

  /// Receiver: the next full slot and its length (and, when `tag` is given, its tag), or
  /// nullptr when none is ready.
  const void* tryPeek(size_t* bytes, const MessageTag** tag = nullptr) {
    if (recvTail_ == cachedCommitted_) {
      cachedCommitted_ = control_->committed.load(std::memory_order_acquire);
      if (recvTail_ == cachedCommitted_) return nullptr;
    }
    const SlotHeader& header = headers_[recvTail_ % depth_];
    *bytes = header.bytes;
    if (tag != nullptr) *tag = &header.tag;
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
  SlotHeader* headers_;
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
