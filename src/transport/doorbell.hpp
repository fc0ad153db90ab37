// A doorbell lets one rank sleep until a peer has done something it may be waiting for.
//
// Waiting on many FIFOs at once is impossible with one futex, so each rank of a
// communicator owns one doorbell word: a peer that makes data or space available rings the
// owner's doorbell after publishing. Ringing costs one load when the owner is awake (it spins
// and will see the data itself) and a futex wake only when the owner announced that it is
// going to sleep. The sleep/ring pair is Dekker-style: the sleeper stores `sleeping` and then
// re-polls; the ringer publishes and then loads `sleeping`; sequentially consistent fences on
// both sides guarantee that at least one of them sees the other, so no wake-up is lost.
//
// An owner that sleeps in epoll rather than on the futex (the TCP transport's network thread,
// which also waits for sockets) attaches an eventfd: ring() then writes the eventfd instead
// of waking the futex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace grove::transport {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> sequence{0};
  std::atomic<uint32_t> sleeping{0};
  /// Optional eventfd written by ring() while the owner sleeps, stored plus one so that
  /// zeroed (shared) memory means "none". Set it with attachEventFd() before any ring.
  int32_t eventFdPlusOne = 0;
};

/// Makes ring() wake the owner through `eventFd` (for owners sleeping in epoll).
inline void attachEventFd(Doorbell& bell, int eventFd) { bell.eventFdPlusOne = eventFd + 1; }

/// Called by a peer after it published data or space the owner may be waiting for.
void ring(Doorbell& bell);

/// Owner side, step 1: announce the intention to sleep; returns the sequence to sleep on.
/// The caller must re-check for progress after this and call cancelSleep() if it found some.
uint32_t prepareSleep(Doorbell& bell);

/// Owner side, step 2: blocks until rung or `timeout` elapses (spurious returns allowed).
void sleep(Doorbell& bell, uint32_t sequence, std::chrono::nanoseconds timeout);

/// Owner side: leave the sleeping state (after sleep() or instead of it).
void cancelSleep(Doorbell& bell);

/// Pause instruction for spin loops.
inline void cpuRelax() { __builtin_ia32_pause(); }

}  // namespace grove::transport
