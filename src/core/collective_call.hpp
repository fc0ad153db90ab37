// One API call, as the communicator received it, and its translation into a queued
// operation.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "grove/communicator.hpp"
#include "plan/plan.hpp"

namespace grove::exec {
struct BoundPlan;
}

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

/// Points `op` at `bound` (the plan of `algorithm`): its chunk layout, tile, tag and scratch
/// over the buffers already in op.buffers. For a call's plan and, when its one-sided plan is
/// declined, its fallback.
void usePlan(Operation& op, const exec::BoundPlan& bound, std::string_view algorithm,
             size_t tileElems);

}  // namespace grove::detail
