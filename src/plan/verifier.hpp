// Symbolic verifier: replays the plans of all ranks of one call shape and proves them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace grove::plan {

/// Outcome of a verification: ok, or the first problem found in words that name the rank,
/// channel, step and chunk involved.
struct VerifyResult {
  bool ok = true;
  std::string error;
};

/// Options of a verification run.
struct VerifyOptions {
  /// Model the NCCL in-place form of the collective (input and output share memory, e.g.
  /// allgather's input is output block `rank`), so plans that overwrite input they still
  /// need are caught.
  bool inPlace = false;
  /// Tiles to replay; two or more exercise pipelining between tiles.
  int tiles = 2;
  /// Messages a FIFO holds before the sender blocks. One is the strictest (if a plan
  /// completes with one slot, it completes with more).
  int fifoDepth = 1;
};

/// Replays `plans` (one per rank, plans[r].rank == r, all of the same call shape) and checks:
///  * every rank ends with exactly the right contributions in every output chunk, each
///    contribution once (for reductions: all ranks' same chunk; kAvg results finalized
///    exactly once, after the last contribution);
///  * every send meets a matching recv (same chunk size class) and no message is left over;
///  * no step can wait forever (no deadlock, with FIFOs of `fifoDepth` slots);
///  * chunk, peer, lane and dependency references are in range.
VerifyResult verify(const std::vector<Plan>& plans, const VerifyOptions& options = {});

}  // namespace grove::plan
