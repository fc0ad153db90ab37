#include "core/call_guard.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/comm_state.hpp"
#include "grove/error.hpp"

namespace grove::detail {
namespace {

// Zero-initialised, so no TLS wrapper; filled in on a thread's first call.
thread_local uint32_t tThreadId = 0;

[[noreturn]] void throwConcurrentEntry(const CommState& state, const char* call, uint32_t me,
                                       uint32_t other) {
  const InUseMarker& marker = state.inUse();
  const char* otherCall = marker.call.load(std::memory_order_relaxed);
  const uint64_t operation = marker.operation.load(std::memory_order_relaxed);
  std::string inFlight = otherCall != nullptr ? otherCall : "a call";
  if (operation != 0) inFlight += fmt::format(" #{}", operation);
  throw Error(ErrorCode::kInvalidUsage,
              fmt::format("grove {} (rank {} of {}, thread {}): thread {} is inside {} on this "
                          "communicator; a Communicator may be used by one thread at a time. "
                          "This call was not run; the call in flight on thread {} is unaffected",
                          call, state.rank(), state.size(), me, other, inFlight, other));
}

}  // namespace

uint32_t currentThreadId() noexcept {
  if (tThreadId == 0) tThreadId = static_cast<uint32_t>(syscall(SYS_gettid));
  return tThreadId;
}

CallGuard::CallGuard(CommState& state, const char* call, uint64_t operation) {
  InUseMarker& marker = state.inUse();
  const uint32_t me = currentThreadId();
  uint32_t inside = 0;
  if (marker.thread.compare_exchange_strong(inside, me, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
    marker.call.store(call, std::memory_order_relaxed);
    marker.operation.store(operation, std::memory_order_relaxed);
    marker_ = &marker;
    return;
  }
  if (inside == me) return;
  throwConcurrentEntry(state, call, me, inside);
}

}  // namespace grove::detail
