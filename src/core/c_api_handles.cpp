#include "core/c_api_handles.hpp"

#include <array>
#include <cstddef>
#include <mutex>
#include <string>

#include "core/call_guard.hpp"
#include "grove/error.hpp"

namespace grove::capi {
namespace {

// Chunk k holds kFirstChunk << k slots: 40 chunks are more handles than a process can make.
constexpr size_t kFirstChunk = 64;
constexpr size_t kMaxChunks = 40;

struct Registry {
  std::mutex mutex;  ///< Orders registrations (rare); lookups take no lock.
  std::array<std::atomic<groveComm*>, kMaxChunks> chunks{};
  std::atomic<size_t> chunkCount{0};
  size_t used = 0;  ///< Slots handed out from the newest chunk (under mutex).
};

Registry& registry() {
  // Never destroyed: handles may be looked up from static destructors of the program.
  static Registry* instance = new Registry;
  return *instance;
}

constexpr const char* kDestroyedAlready =
    "comm is not a live communicator: it was destroyed already (groveCommDestroy or "
    "groveCommAbort)";

constexpr size_t chunkSlots(size_t k) { return kFirstChunk << k; }

/// The slot at `handle`, or nullptr when it is no slot's address. Only compares addresses.
const groveComm* findSlot(const groveComm* handle) {
  Registry& r = registry();
  const size_t count = r.chunkCount.load(std::memory_order_acquire);
  const auto address = reinterpret_cast<uintptr_t>(handle);
  for (size_t k = 0; k < count; ++k) {
    const auto base = reinterpret_cast<uintptr_t>(r.chunks[k].load(std::memory_order_relaxed));
    if (address < base) continue;
    const uintptr_t offset = address - base;
    if (offset >= chunkSlots(k) * sizeof(groveComm)) continue;
    if (offset % sizeof(groveComm) != 0) return nullptr;
    return handle;
  }
  return nullptr;
}

}  // namespace

groveComm_t registerHandle(Communicator comm) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  size_t count = r.chunkCount.load(std::memory_order_relaxed);
  if (count == 0 || r.used == chunkSlots(count - 1)) {
    if (count == kMaxChunks) {
      throw Error(ErrorCode::kSystemError, "out of communicator handles");
    }
    // Constructed in place, kUnused, and never freed (see the header).
    r.chunks[count].store(new groveComm[chunkSlots(count)], std::memory_order_relaxed);
    r.used = 0;
    r.chunkCount.store(++count, std::memory_order_release);
  }
  groveComm* slot = r.chunks[count - 1].load(std::memory_order_relaxed) + r.used++;
  slot->comm = std::move(comm);
  slot->state.store(groveComm::kLive, std::memory_order_release);
  return slot;
}

void requireLive(const groveComm* handle) {
  if (handle == nullptr) throw Error(ErrorCode::kInvalidArgument, "comm is NULL");
  const groveComm* slot = findSlot(handle);
  if (slot == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "comm is not a communicator handle (not returned by groveCommInit*, "
                "groveCommSplit or groveCommShrink)");
  }
  const uint32_t state = slot->state.load(std::memory_order_acquire);
  if (state == groveComm::kDestroyed) {
    throw Error(ErrorCode::kInvalidArgument, kDestroyedAlready);
  }
  if (state != groveComm::kLive) {
    throw Error(ErrorCode::kInvalidArgument,
                "comm is not a communicator handle (not returned by groveCommInit*, "
                "groveCommSplit or groveCommShrink)");
  }
}

void retireHandle(groveComm_t handle, const char* call) {
  {
    // Inside the communicator, so that a call in flight on another thread is refused
    // rather than left running on freed state.
    detail::CallGuard guard(handle->comm.state(), call, 0);
    uint32_t live = groveComm::kLive;
    if (!handle->state.compare_exchange_strong(live, groveComm::kDestroyed,
                                               std::memory_order_acq_rel)) {
      throw Error(ErrorCode::kInvalidArgument, kDestroyedAlready);
    }
  }
  // After the guard: it lives in the state this frees.
  handle->comm = Communicator();
}

}  // namespace grove::capi
