// The heartbeat of a process's shared-memory ranks: one thread per process advances a
// counter in the node segment of every live ShmDomain of the process, so its peers can tell a
// rank that computes (its counter moves) from one whose process is stopped (SIGSTOP, a
// debugger) or frozen (its counter stands still). A rank thread cannot do it: it may spend
// minutes in the application's own work between two calls.
//
// The thread starts with the first registered counter and ends with the last, so init/destroy
// cycles leave no thread behind.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace grove::transport::shm {

/// How often the thread beats; peers allow GROVE_HEARTBEAT_TIMEOUT (at least 2 s) of silence.
inline constexpr std::chrono::milliseconds kHeartbeatInterval{250};

/// Starts beating `counter` (until removeHeartbeat).
void addHeartbeat(std::atomic<uint64_t>* counter);
/// Stops beating `counter`; joins the thread when it was the last one.
void removeHeartbeat(std::atomic<uint64_t>* counter);

}  // namespace grove::transport::shm
