// A single-producer single-consumer FIFO of fixed-size slots: the connection between two
// ranks on one lane.
//
// Connections expose slots, not send/recv: the sender acquires the next free slot, writes
// its message straight into it (a copy or the result of a reduction) and commits it; the
// receiver peeks at the next full slot, reads or reduces from it in place, and releases it.
// That makes fused steps like recvReduceSend a single pass over memory. The FIFO is plain
// memory plus two counters, so it works unchanged in memory shared between processes.
//
// Every message carries a MessageTag beside its length, in the slot's header line: which call
// it belongs to and that call's arguments. The receiver compares it with its own call, so
// calls made in a different order or with different arguments on two ranks are an error
// that names both sides, not a hang or a wrong result.
//
// The header line is also the flag the receiver polls (flag in line, as NCCL's LL protocol
// puts flags beside data): the sender writes length, tag and — for messages of at most
// SlotHeader::kInlineBytes — the payload itself into that one cache line, then publishes the
// message's number in it last. A receiver waiting for a small message therefore pulls one
// cache line from the sender's core, instead of a counter, a header and a slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/doorbell.hpp"

namespace grove::transport {

/// What call a message belongs to (32 bytes; the TCP frame header carries it verbatim).
/// Zero means untagged (tests and internal exchanges that do not check).
struct MessageTag {
  /// Bit set in `flags` when `checksum` holds the payload's checksum (GROVE_CHECKSUM).
  static constexpr uint8_t kHasChecksum = 1;
  /// Bit set in `flags` when the payload is a codec frame of the message's values
  /// (GROVE_COMPRESS, exec/link_codec.hpp); the checksum covers the frame as sent.
  static constexpr uint8_t kCompressed = 2;

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

/// Per-slot header, one cache line per slot: the number of the message it holds (written
/// last: what the receiver polls), its length and tag, and small payloads themselves.
struct alignas(64) SlotHeader {
  static constexpr size_t kInlineBytes = 16;
  std::atomic<uint64_t> published{0};  ///< Message index + 1 once committed; 0: never used.
  uint64_t bytes = 0;
  MessageTag tag;
  char inlineData[kInlineBytes];  ///< The payload when bytes <= kInlineBytes.
};
static_assert(sizeof(SlotHeader) == 64);

/// Control block of a FIFO, at the start of its memory; the slots follow.
struct FifoControl {
  /// Messages the sender has committed (receivers poll the slot headers instead; this says
  /// whether a FIFO was ever used, e.g. before its memory is unlinked).
  alignas(64) std::atomic<uint64_t> committed{0};
  alignas(64) std::atomic<uint64_t> released{0};  ///< Messages the receiver has released.
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
    if (bytes <= SlotHeader::kInlineBytes) std::memcpy(header.inlineData, slot(sendHead_), bytes);
    ++sendHead_;
    header.published.store(sendHead_, std::memory_order_release);
    control_->committed.store(sendHead_, std::memory_order_relaxed);
    ring(*receiverBell_);
  }

  /// Receiver: the next full slot and its length (and, when `tag` is given, its tag), or
  /// nullptr when none is ready.
  const void* tryPeek(size_t* bytes, const MessageTag** tag = nullptr) {
    const SlotHeader& header = headers_[recvTail_ % depth_];
    if (header.published.load(std::memory_order_acquire) != recvTail_ + 1) return nullptr;
    *bytes = header.bytes;
    if (tag != nullptr) *tag = &header.tag;
    return header.bytes <= SlotHeader::kInlineBytes ? header.inlineData : slot(recvTail_);
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
  // Each side's private view: the sender's head and a cache of the receiver's count, so the
  // shared `released` line is read only when the cached value says "no room"; the receiver's
  // tail (it polls the next slot header itself).
  alignas(64) uint64_t sendHead_ = 0;
  uint64_t cachedReleased_ = 0;
  alignas(64) uint64_t recvTail_ = 0;
};

}  // namespace grove::transport
