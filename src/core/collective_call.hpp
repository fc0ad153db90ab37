// One API call, as the communicator received it, and its translation into a queued
// operation.
#pragma once

#include <memory>
#include <span>

#include "grove/communicator.hpp"
#include "plan/plan.hpp"

namespace grove::detail {

class CommState;
class Operation;

struct CollectiveCall {
  plan::Collective collective;
  const char* name;  ///< API name for messages, e.g. "allReduce".
  const void* sendbuf;
  void* recvbuf;
  size_t count;
  DataType type;
  ReduceOp op;
  int root;  ///< The root, or the peer of send/recv; -1 when none.
  const CallOptions* options;
  std::span<const size_t> sendCounts = {};
  std::span<const size_t> sendDispls = {};
  std::span<const size_t> recvCounts = {};
  std::span<const size_t> recvDispls = {};
};

/// Validates `call` (throwing grove::Error before anything is queued), builds its operation
/// and submits it. Returns the operation that completes the call (already done for calls
/// with nothing to move).
std::shared_ptr<Operation> issue(CommState& state, const CollectiveCall& call);

}  // namespace grove::detail
