// Detects a communicator entered by a second thread while a call is in flight on it.
//
// Why: a Communicator is not thread-safe by contract, and two threads inside one (two
// collectives, or a collective and a Request::wait) interleave their messages and return
// success with unreduced buffers. Every public entry that touches the communicator's state
// takes a CallGuard first: one compare-and-swap on an atomic that holds the calling thread's
// id (cached per thread, so no system call per call) and a release store on exit. A thread
// that finds another id there fails with kInvalidUsage before it touches anything, naming
// both calls, so the call already in flight completes as if nothing happened. The same thread
// may enter again (split() runs an allGather, groveGroupEnd waits on Requests).
#pragma once

#include <atomic>
#include <cstdint>

namespace grove::detail {

class CommState;

/// Who is inside a communicator; lives in its CommState. Only `thread` orders anything: the
/// other two fields are what the second thread quotes in its message, at best effort.
struct InUseMarker {
  std::atomic<uint32_t> thread{0};         ///< Id of the thread inside, 0 when none.
  std::atomic<const char*> call{nullptr};  ///< The API name of its outermost call.
  std::atomic<uint64_t> operation{0};      ///< The operation (#N) it issues or waits on; 0: none.
};

/// This thread's id (gettid), looked up once per thread.
uint32_t currentThreadId() noexcept;

class CallGuard {
 public:
  /// Enters `state` for the call named `call` (an API name, a string literal), about
  /// operation #`operation` (0: none). Throws kInvalidUsage when another thread is inside.
  CallGuard(CommState& state, const char* call, uint64_t operation);
  ~CallGuard() {
    if (marker_ != nullptr) marker_->thread.store(0, std::memory_order_release);
  }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

 private:
  InUseMarker* marker_ = nullptr;  ///< Null for a nested entry: the outer call clears it.
};

}  // namespace grove::detail
