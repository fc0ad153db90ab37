// Selection on a known topology: rank candidates by the simulator instead of the α–β model.
//
// The α–β model sees one link speed for every pair; on a real topology (a partial NVLink
// mesh, hosts with different NICs) that hides exactly what decides between a ring and
// packed trees. When a communicator has a topology, select() asks predictedUs() instead:
// every rank's plan is built and the whole call is replayed on the topology's links.
#pragma once

#include "algo/registry.hpp"
#include "model/simulator.hpp"
#include "plan/plan.hpp"

namespace grove::algo {

/// The simulator's options for selection: the executor's tile and FIFO depth
/// (`params.tileBytes` and `params.fifoDepth`, the communicator's GROVE_SLOT_BYTES and
/// GROVE_FIFO_DEPTH) and `params.reduceGBps` for local reductions.
model::SimOptions selectionSimOptions(const CostParams& params,
                                      const topo::Topology* topology = nullptr);

/// Elements the prediction for `count` is made at: the smallest number of the form
/// m * 2^e (m in 4..7) that is >= count, so sizes within a quarter octave share one
/// simulation and the result is a pure function of the bucket.
size_t sizeBucket(size_t count);

/// Predicted time in microseconds of `algorithm` running `request` on *request.topology
/// (which must be set): the plans of all ranks are built and simulated with `options`, whose
/// `bytes` and `elementSize` are replaced by the request's (count rounded up by
/// sizeBucket(), element size of request.type). Results are memoized per (topology contents,
/// algorithm, collective, ranks, root, type, size bucket, options), process-wide and
/// thread-safe, so every rank computes the same value. Throws grove::Error
/// (kInvalidArgument) when the topology is not set or the plans cannot run on it (no route,
/// rank count mismatch).
double predictedUs(const Algorithm& algorithm, const plan::PlanRequest& request,
                   const model::SimOptions& options);

/// What select() ranks a candidate by when request.topology is set: predictedUs() with
/// selectionSimOptions(params), or +infinity when the plans cannot run on the topology.
double topologyCostUs(const Algorithm& algorithm, const plan::PlanRequest& request,
                      const CostParams& params);

}  // namespace grove::algo
