// Argument checks shared by the collectives: each throws grove::Error naming the call, the
// rank, the argument and what was expected, before anything is queued or written.
#pragma once

#include <cstddef>

#include "grove/types.hpp"

namespace grove::detail {

class CommState;

/// Identifies a call in messages: "grove allReduce (rank 1 of 4)".
struct CallSite {
  const char* name;
  int rank;
  int size;
};

/// The communicator can take calls: not aborted, not failed earlier.
void checkUsable(const CommState& comm, const char* name);
void checkType(const CallSite& site, DataType type);
/// A valid operator that `type` accepts (bitwise ones need an integer type).
void checkOp(const CallSite& site, ReduceOp op, DataType type);
/// A null buffer is an error when it must hold `count` > 0 elements.
void checkBuffer(const CallSite& site, const char* argument, const void* buffer, size_t count,
                 DataType type);
/// 0 <= value < size (and != rank when `notSelf`).
void checkRank(const CallSite& site, const char* argument, int value, bool notSelf = false);
/// count * multiplier * element size must fit in size_t; returns the byte count.
size_t checkedBytes(const CallSite& site, const char* argument, size_t count, size_t multiplier,
                    DataType type);
/// Rejects overlap of [send, send + sendBytes) and [recv, recv + recvBytes) unless `send` is
/// exactly `inPlaceSend` (the call's in-place form, described by `inPlaceForm`).
/// Returns true for the in-place form.
bool checkOverlap(const CallSite& site, const void* send, size_t sendBytes, const void* recv,
                  size_t recvBytes, const void* inPlaceSend, const char* inPlaceForm);

}  // namespace grove::detail
