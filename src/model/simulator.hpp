// The simulator: how long a set of plans takes on a topology.
//
// grove's plans are data, so their time can be predicted before anything runs: every rank's
// plan is replayed tile by tile, each message travels its route (Topology::route) and takes
// latency + bytes / (its share of each link's capacity), concurrent messages on one link
// share it equally (progressive filling), a step starts when its inputs have arrived and its
// FIFO has room (fifoDepth slots per connection), and local reductions and copies take time
// at reduceGBps / copyGBps. One-sided plans' reads of peers' memory (get, rall) travel
// their routes like messages, between the prologue and epilogue the executor runs around
// them. This is what `grove plan --topo` prints as "predicted", what
// selection compares when a communicator has a topology, and what the netns benchmark checks
// against measurements (target: within 15%).
#pragma once

#include <cstddef>
#include <vector>

#include "common/parameters.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace grove::model {

struct SimOptions {
  size_t bytes = 0;        ///< Bytes per block of the call (allreduce: the whole buffer).
  size_t elementSize = 4;  ///< Bytes per element (tiles hold whole elements).
  /// Tile size of the plan being simulated: callers pass the tile its executor runs it in.
  /// The default is the FIFOs' slot (GROVE_SLOT_BYTES), the tile of plans that exchange
  /// messages; one-sided plans (Plan::oneSided) run in tiles of their own (the executor's
  /// exec::kOneSidedTileBytes, 512 KiB), so their callers choose that instead.
  size_t tileBytes = common::defaultInteger(common::Param::kSlotBytes);
  /// Slots per connection (GROVE_FIFO_DEPTH).
  int fifoDepth = common::defaultInteger(common::Param::kFifoDepth);
  double reduceGBps = 20.0;     ///< Local reduction throughput, GB/s of output.
  double copyGBps = 20.0;       ///< Local copy throughput.
  double stepOverheadUs = 0.5;  ///< Fixed cost of starting one step on one tile.
  /// Compressed network links (GROVE_COMPRESS, docs/compression.md): a message whose route
  /// crosses a network arc (LinkKind::kNet) carries bytes / compressionRatio on the wire, and
  /// the step that sends it (unless it passes on a compressed message it received, as the
  /// executor does) and the one that receives it each spend bytes / codecGBps of their rank's
  /// time encoding and decoding. A ratio of 1 models no compression; codecGBps 0, a free codec.
  double compressionRatio = 1.0;
  double codecGBps = 0;
  /// Shared CPUs (both empty: not modelled, every channel works on a CPU of its own).
  /// cpuGroup[r] is the group of CPUs rank r runs on (a host, or a machine whose emulated
  /// hosts share its cores) and groupCpus[g] how many CPUs group g has. A step's local work
  /// (reductions, copies, coding) then runs on its rank's one thread, shared by the rank's
  /// channels, and the busy ranks of a group share its CPUs max-min fairly, as flows share a
  /// link: 8 ranks coding at once on 2 CPUs each code at a quarter of codecGBps.
  std::vector<int> cpuGroup;
  std::vector<double> groupCpus;
};

struct Prediction {
  double timeUs = 0;
  /// size / time with nccl-tests' size: SimOptions::bytes, times n for allgather,
  /// reducescatter, alltoall(v), gather and scatter (the larger buffer).
  double algbwGBps = 0;
  double busbwGBps = 0;  ///< nccl-tests' bus bandwidth factor applied.
  /// Per arc of the topology: bytes carried, and the fraction of the run it was busy.
  std::vector<double> arcBytes;
  std::vector<double> arcBusy;
};

/// Predicts the run of `plans` (one per rank, plans[r].rank == r, all of one call shape)
/// on `topology`. The model is spelled out at the top of simulator.cpp. Throws
/// grove::Error(kInvalidArgument) when the plans and the topology disagree on the rank count,
/// a message has no route, or the plans deadlock.
Prediction simulate(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
                    const SimOptions& options);

namespace detail {

/// What the replay (replay.cpp) hands simulate(): when each rank's last step completed (its
/// start when it has none), and per arc the bytes carried and the time it was busy.
struct Replayed {
  std::vector<double> lastStepUs;
  std::vector<double> arcBytes;
  std::vector<double> arcBusyUs;
};

/// Replays `plans` (checked by simulate) on `topology`, rank r's channels starting at
/// startUs[r]; throws like simulate on a missing route or a deadlock.
Replayed replay(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
                const SimOptions& options, const std::vector<double>& startUs);

}  // namespace detail

/// nccl-tests' busbw factor for a collective on n ranks (allreduce 2(n−1)/n; allgather,
/// reducescatter, alltoall(v), gather and scatter (n−1)/n; others 1).
double busbwFactor(plan::Collective collective, int nranks);

}  // namespace grove::model
