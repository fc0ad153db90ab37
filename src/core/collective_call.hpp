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

/// The arguments of one API call: its shape, its buffers and options, and what only some
/// calls have (send/recv's peer, allToAllv's per-rank counts and displacements).
struct CollectiveCall {
  plan::CallShape shape;  ///< As made by CallShape::made (fields that do not apply cleared).
  const char* name;       ///< API name for messages, e.g. "allReduce".
  const void* sendbuf;
  void* recvbuf;
  const CallOptions* options;
  int peer = -1;  ///< send/recv: the other rank.
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
