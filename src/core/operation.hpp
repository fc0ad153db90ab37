// One call in flight on one rank: a collective or a batch of point-to-point transfers, each
// running a bound plan. The communicator queues operations and advances the oldest.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/point_to_point.hpp"
#include "exec/executor.hpp"
#include "grove/error.hpp"
#include "grove/types.hpp"
#include "plan/plan.hpp"

namespace grove::detail {

class CommState;

class Operation {
 public:
  enum class State { kIdle, kQueued, kDone, kFailed };

  // What the call is: its shape, its number on this communicator and the algorithm that runs
  // it (a send/recv batch: kSendRecv with the count of its first transfer).
  plan::CallShape shape;
  uint64_t sequence = 0;
  std::string_view algorithm;

  // A collective: the plan and the memory it runs over. The scratch base is filled in when
  // the operation starts, since scratch may grow while earlier operations are queued.
  const exec::BoundPlan* plan = nullptr;
  exec::CallBuffers buffers;
  size_t scratchBytes = 0;
  std::vector<exec::Extent> inputExtents;   ///< allToAllv's chunks.
  std::vector<exec::Extent> outputExtents;  ///< allToAllv's chunks.
  const char* stageFrom = nullptr;  ///< In-place allToAll: input to copy into scratch first.
  size_t stageBytes = 0;
  exec::Execution execution;
  // A one-sided plan (exec/one_sided.hpp) may be declined by the ranks' hellos; the call
  // then runs this plan instead, chosen as if one-sided plans did not exist.
  struct Fallback {
    const exec::BoundPlan* plan = nullptr;
    std::string_view algorithm;
    size_t tileElems = 1;
  };
  Fallback fallback;

  // A point-to-point batch: its transfers, run as a plan built when it starts (`plan`
  // then points into it).
  PointToPointBatch batch;

  // GROVE_CHECK=1: this operation is the signature exchange that precedes `checkedCall`
  // (nullptr for a call with nothing to move); `signatures` holds this rank's signature
  // followed by every rank's (MessageTag packed into 4 words each).
  bool signatureCheck = false;
  std::shared_ptr<Operation> checkedCall;
  std::vector<uint64_t> signatures;

  State state = State::kIdle;
  ErrorCode error = ErrorCode::kSuccess;
  std::string message;
  CommState* comm = nullptr;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds timeout{0};  ///< The call's own limit; 0: the communicator's.
  bool started = false;
  int64_t traceStartNs = 0;  ///< GROVE_TRACE: when the operation started executing.

  /// Clears everything for reuse by a new call (keeps vector capacity).
  void reset();
  /// "allreduce #3 (count 1000 float sum, algorithm ring)".
  std::string describe() const;
  bool isPointToPoint() const { return shape.collective == plan::Collective::kSendRecv; }
  bool finished() const { return state == State::kDone || state == State::kFailed; }
};

}  // namespace grove::detail
