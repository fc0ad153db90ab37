// What one call is: the collective, its count, type, operator and root. Every layer that
// speaks of a call (the API's argument record, the planner's request, the queued operation,
// the trace record, and the tag every message carries) describes it with this one value, so
// the rules of which fields matter for which collective are written once, here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "grove/types.hpp"

namespace grove::plan {

/// What a call computes. Point-to-point send/recv plans use kSendRecv.
enum class Collective : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kAllToAllv,
  kGather,
  kScatter,
  kBarrier,
  kSendRecv,
};

inline constexpr int kCollectiveCount = 11;

/// Lower-case name, e.g. "allreduce", "reducescatter".
const char* toString(Collective collective);

/// Whether the collective combines values with a ReduceOp (allreduce, reduce, reducescatter).
constexpr bool reduces(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kReduce ||
         collective == Collective::kReduceScatter;
}

/// Whether the collective has a root rank (broadcast, reduce, gather, scatter).
constexpr bool rooted(Collective collective) {
  return collective == Collective::kBroadcast || collective == Collective::kReduce ||
         collective == Collective::kGather || collective == Collective::kScatter;
}

/// One call as every rank must agree on it. `count` is per block: allreduce's count,
/// allgather's and reducescatter's per-rank count, a send/recv transfer's count; allToAllv
/// has none (0: its counts are per rank). `op` means something only when the collective
/// reduces and `root` only when it is rooted; made() clears them otherwise, so that two
/// shapes compare equal exactly when they are the same call.
struct CallShape {
  Collective collective = Collective::kAllReduce;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = -1;

  /// The shape of a call with these arguments, the fields that do not apply cleared.
  static constexpr CallShape made(Collective collective, size_t count, DataType type, ReduceOp op,
                                  int root) {
    return {collective, count, type, plan::reduces(collective) ? op : ReduceOp::kSum,
            plan::rooted(collective) ? root : -1};
  }

  constexpr bool reduces() const { return plan::reduces(collective); }
  constexpr bool rooted() const { return plan::rooted(collective); }
  size_t bytes() const { return count * dataTypeSize(type); }

  /// "count 1000 float32 sum, root 2": the arguments, for messages (the operator only when
  /// the collective reduces, the root only when it has one).
  std::string details() const;

  friend bool operator==(const CallShape&, const CallShape&) = default;
};

}  // namespace grove::plan
