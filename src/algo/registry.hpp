// The algorithm registry: every algorithm is a plan generator with an applicability test
// and an α–β cost estimate; selection takes the cheapest that applies unless overridden.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/parameters.hpp"
#include "common/status.hpp"
#include "plan/plan.hpp"

namespace grove::algo {

/// Machine parameters of the α–β model: time = alpha * messages-in-sequence + bytes / beta.
/// The defaults are measured, not guessed: bench/tune on the project's 2-CPU host, processes
/// over shared memory (docs/tuning.md has the data behind each value and how to remeasure).
struct CostParams {
  double alphaUs = 3.0;      ///< Latency of one message hop, microseconds.
  double betaGBps = 4.0;     ///< Bandwidth of one link, GB/s (10^9 bytes per second).
  double reduceGBps = 30.0;  ///< Throughput of a local reduction, GB/s of output.
  /// The executor's tile (one FIFO slot, GROVE_SLOT_BYTES; a communicator passes its own):
  /// pipelined algorithms move a block in messages of at most this many bytes.
  double tileBytes = static_cast<double>(common::defaultInteger(common::Param::kSlotBytes));
  /// Slots per FIFO (GROVE_FIFO_DEPTH; a communicator passes its own): how many tiles, and
  /// so how many back-to-back calls, a pipeline holds in flight between two ranks.
  double fifoDepth = static_cast<double>(common::defaultInteger(common::Param::kFifoDepth));
};

/// One plan generator.
struct Algorithm {
  std::string_view name;  ///< Lower-case, as GROVE_ALGO and CallOptions spell it.
  plan::Collective collective;
  /// Whether the generator can build this shape: ok, or kInvalidArgument saying why not.
  Status (*applies)(const plan::PlanRequest& request);
  /// Estimated time of the whole call in microseconds.
  double (*costUs)(const plan::PlanRequest& request, const CostParams& params);
  /// Builds request.rank's plan.
  plan::Plan (*build)(const plan::PlanRequest& request);
  /// Which of its plans the generator builds for this shape, for generators whose plan
  /// depends on the count (packed trees split small data into fewer chunks): calls of equal
  /// variants get equal plans, so a communicator builds one per variant. nullptr: one plan
  /// for every count (plans speak of chunks, not bytes).
  uint32_t (*planVariant)(const plan::PlanRequest& request) = nullptr;
};

/// Every registered algorithm, in a fixed order.
const std::vector<Algorithm>& algorithms();

/// The algorithm called `name` for `collective`, or nullptr.
const Algorithm* findAlgorithm(plan::Collective collective, std::string_view name);

/// Outcome of a selection: the chosen algorithm and one line saying why (for
/// GROVE_DEBUG=INFO), e.g. "ring: cost 12.3 us (tree 15.1 us, recursive_doubling n/a: ...)".
struct Selection {
  const Algorithm* algorithm = nullptr;
  std::string reason;
};

/// Chooses the algorithm for `request`. `forced` (a per-call option) wins over `envAlgo`
/// (GROVE_ALGO's value, NCCL_ALGO syntax: "ring", "tree,ring", "allreduce:tree;broadcast:chain",
/// "^tree" to exclude); both empty means the cheapest applicable one. Throws
/// grove::Error(kInvalidArgument) when a forced algorithm is unknown or does not apply.
Selection select(const plan::PlanRequest& request, std::string_view forced,
                 std::string_view envAlgo, const CostParams& params = {});

}  // namespace grove::algo
