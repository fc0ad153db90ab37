#include "transport/doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace grove::transport {
namespace {

// Shared (not FUTEX_PRIVATE) futex operations, so the same doorbell works when it lives in
// memory shared between processes.
long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void ring(Doorbell& bell) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (bell.sleeping.load(std::memory_order_relaxed) != 0) {
    bell.sequence.fetch_add(1, std::memory_order_release);
    if (bell.eventFdPlusOne != 0) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t written = ::write(bell.eventFdPlusOne - 1, &one, sizeof one);
    } else {
      futex(&bell.sequence, FUTEX_WAKE, INT_MAX, nullptr);
    }
  }
}

uint32_t prepareSleep(Doorbell& bell) {
  uint32_t sequence = bell.sequence.load(std::memory_order_acquire);
  bell.sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return sequence;
}

void sleep(Doorbell& bell, uint32_t sequence, std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1000000000);
  futex(&bell.sequence, FUTEX_WAIT, sequence, &ts);
}

void cancelSleep(Doorbell& bell) { bell.sleeping.store(0, std::memory_order_relaxed); }

}  // namespace grove::transport
