// The registry of live groveComm_t handles: what lets the C ABI answer a destroyed, twice
// destroyed or never-issued handle with groveInvalidArgument instead of reading freed memory.
//
// Why slots in grove-owned chunks and no set under a lock: every collective looks its handle
// up, from every rank's thread at once, and the latency path takes no lock and makes no
// system call. A handle is the address of a slot; a lookup first checks that the address is
// a slot of one of the chunks (comparisons, no dereference, so a foreign pointer is never
// read), then reads the slot's state. Chunks are never freed and slots never reused, so a
// destroyed handle stays "destroyed" for the life of the process and can never alias a
// newer communicator; a slot costs sizeof(groveComm) (24 bytes) once its communicator is gone.
#pragma once

#include <atomic>
#include <cstdint>

#include "grove/communicator.hpp"
#include "grove/grove.h"

/// What a groveComm_t points to: one rank's C++ communicator, in a registry slot.
struct groveComm {
  enum : uint32_t { kUnused = 0, kLive = 1, kDestroyed = 2 };
  std::atomic<uint32_t> state{kUnused};
  grove::Communicator comm;
};

namespace grove::capi {

/// A live handle for `comm` (takes it over).
groveComm_t registerHandle(Communicator comm);

/// Throws kInvalidArgument unless `handle` is a live handle: NULL, destroyed already, or not
/// returned by grove (a foreign pointer is compared, never read).
void requireLive(const groveComm* handle);

/// Marks the live `handle` destroyed and frees its communicator. Throws kInvalidUsage (and
/// leaves the handle live) when another thread is inside a call on it, and kInvalidArgument
/// when another thread retired it first. `call` names the C function for messages.
void retireHandle(groveComm_t handle, const char* call);

}  // namespace grove::capi
