// Topology-aware plan generators: packed trees (Blink), RS+AG trees (ForestColl), one-hop
// exchanges through a switch and hierarchical allreduce for two-tier clusters.
//
// They apply only when the communicator has a topology (GROVE_TOPO_FILE) whose rank count
// equals the communicator's; registry.cpp lists them. The helpers below are shared by their
// files (packed_trees.cpp, packed_direct.cpp, packed_common.cpp).
#pragma once

#include <string>

#include "algo/registry.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace grove::algo {

// packed_trees.cpp: trees from packArborescences / packSpanningTrees / packRsAg.
Algorithm packedTreesBroadcast();    ///< "trees" for broadcast.
Algorithm packedTreesReduce();       ///< "trees" for reduce.
Algorithm packedTreesAllReduce();    ///< "trees" for allreduce (reduce up, broadcast down).
Algorithm rsagTreesAllReduce();      ///< "rsag_trees" for allreduce.
Algorithm rsagTreesAllGather();      ///< "rsag_trees" for allgather.
Algorithm rsagTreesReduceScatter();  ///< "rsag_trees" for reducescatter.
// packed_direct.cpp: patterns that need no packing.
Algorithm oneHopAllReduce();        ///< "onehop" for allreduce through one switch.
Algorithm hierarchicalAllReduce();  ///< "hierarchical" allreduce for two-tier clusters.

/// Most ranks rsag_trees plans for (its channel count grows with ranks × trees).
inline constexpr int kMaxRsAgRanks = 16;

/// Ok when request.topology is set and has request.nranks ranks; otherwise says why:
/// "needs a topology (GROVE_TOPO_FILE)" or "the topology ... has 3 ranks, the communicator 4".
Status topologyMatches(const plan::PlanRequest& request);

/// The content of `topology` (unit, vertices, arcs) as a byte string: equal strings mean
/// equal topologies, so it keys the caches of packings and costs.
std::string topologyKey(const topo::Topology& topology);

/// Latency in microseconds of a message from rank `from` to rank `to` (the sum over its
/// route's arcs); 0 when no route exists.
double routeLatencyUs(const topo::Topology& topology, int from, int to);

/// Smallest capacity in GB/s along the route from rank `from` to rank `to`; 0 when none.
double routeCapacityGBps(const topo::Topology& topology, int from, int to);

}  // namespace grove::algo
