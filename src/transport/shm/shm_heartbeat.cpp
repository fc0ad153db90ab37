#include "transport/shm/shm_heartbeat.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace grove::transport::shm {
namespace {

struct Beater {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::atomic<uint64_t>*> counters;  // under mutex
  std::thread thread;                            // under mutex
  // Bumped whenever the thread must end: a thread beats while it is the generation it was
  // started in, so one ending cannot be revived by a quick add() after the last remove().
  uint64_t generation = 0;  // under mutex
};

// Never destroyed: a process may exit with communicators alive, and a joinable std::thread
// destroyed at exit would terminate it.
Beater& beater() {
  static Beater* instance = new Beater;
  return *instance;
}

void beat(Beater& b, uint64_t mine) {
  std::unique_lock lock(b.mutex);
  while (b.generation == mine) {
    for (std::atomic<uint64_t>* counter : b.counters) {
      counter->fetch_add(1, std::memory_order_relaxed);
    }
    b.wake.wait_for(lock, kHeartbeatInterval, [&b, mine] { return b.generation != mine; });
  }
}

}  // namespace

void addHeartbeat(std::atomic<uint64_t>* counter) {
  Beater& b = beater();
  std::lock_guard lock(b.mutex);
  b.counters.push_back(counter);
  if (b.counters.size() == 1) {
    b.thread = std::thread([&b, mine = b.generation] { beat(b, mine); });
  }
}

void removeHeartbeat(std::atomic<uint64_t>* counter) {
  Beater& b = beater();
  std::thread ending;
  {
    std::lock_guard lock(b.mutex);
    std::erase(b.counters, counter);
    if (!b.counters.empty()) return;
    ++b.generation;
    ending = std::move(b.thread);
  }
  b.wake.notify_all();
  if (ending.joinable()) ending.join();
}

}  // namespace grove::transport::shm
