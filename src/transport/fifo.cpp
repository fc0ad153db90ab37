#include "transport/fifo.hpp"

#include "common/enforce.hpp"

namespace grove::transport {
namespace {
constexpr size_t kHeadersOffset = sizeof(FifoControl);
constexpr size_t roundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }
}  // namespace

size_t Fifo::memoryBytes(size_t slotBytes, uint32_t depth) {
  return roundUp(kHeadersOffset + depth * sizeof(SlotHeader), 4096) + slotBytes * depth;
}

Fifo::Fifo(void* memory, size_t slotBytes, uint32_t depth, Doorbell* senderBell,
           Doorbell* receiverBell)
    : control_(static_cast<FifoControl*>(memory)),
      headers_(reinterpret_cast<SlotHeader*>(static_cast<char*>(memory) + kHeadersOffset)),
      slots_(static_cast<char*>(memory) +
             roundUp(kHeadersOffset + depth * sizeof(SlotHeader), 4096)),
      slotBytes_(slotBytes),
      depth_(depth),
      senderBell_(senderBell),
      receiverBell_(receiverBell) {
  // Slot indices are taken modulo depth and messages are cut to slotBytes: a FIFO without
  // either would divide by zero or never carry a byte.
  GROVE_ENFORCE(memory != nullptr);
  GROVE_ENFORCE_GT(depth, 0u, "FIFO slots");
  GROVE_ENFORCE_GT(slotBytes, size_t{0}, "bytes per FIFO slot");
  GROVE_ENFORCE(senderBell != nullptr && receiverBell != nullptr);
}

}  // namespace grove::transport
