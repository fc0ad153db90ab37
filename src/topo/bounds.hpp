// The rates a topology allows: the optimum no plan can beat, per collective.
//
// These are the yardsticks of `grove topo bounds`, of `grove plan --topo` (every plan's
// ratio to its bound) and of the packer's tests. Definitions (docs/topology.md and the
// reference table of the DGX-1V subsets):
// * λ(r): broadcast/reduce rate from root r = min over ranks v of maxflow(r → v), Edmonds'
//   theorem makes it achievable by arc-disjoint spanning arborescences;
// * σ: allreduce rate when every tree reduces up and broadcasts down concurrently = the
//   undirected tree-packing strength, min over partitions P of the ranks of
//   cut(P) / (|P| − 1), where an undirected edge {u,v} carries min(c(u→v), c(v→u));
// * RS+AG: allreduce rate of reduce-scatter + all-gather trees = N / (2 · max over proper
//   nonempty subsets A of the vertices with a rank in A of |ranks in A| / capacity leaving A);
// * rings: the most arc-disjoint directed Hamiltonian cycles over rank-to-rank arcs (the
//   ideal ring broadcast rate; 0 means a ring needs a hop through a switch).
// Rates are in link units (multiply by unitGBps) and exact when the topology is integral.
// Switch vertices count as Steiner vertices in flows (they forward, they are not sinks).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/rational.hpp"
#include "topo/topology.hpp"

namespace grove::topo {

/// A rate, exact when the topology is integral.
struct Rate {
  bool exact = false;
  Rational value;      ///< In link units; meaningful when exact.
  double units = 0.0;  ///< Always set: the value as a double, in link units.
  double gbps(const Topology& t) const { return units * t.unitGBps; }
};

struct Bounds {
  int ranks = 0;
  std::vector<Rate> lambda;  ///< Per root rank.
  Rate lambdaMin;            ///< min over roots.
  /// Absent for graphs with switch vertices (Steiner tree packing has no such formula).
  std::optional<Rate> sigma;
  Rate rsAg;       ///< RS+AG bound.
  Rate allreduce;  ///< max(σ, RS+AG): the best tree-based allreduce rate.
  /// Upper bound of any allreduce: every rank sends and receives 2(n−1)/n of the data, so
  /// min(Σ capacity leaving ranks, Σ capacity entering ranks) / (2(n−1)) — Σ arc capacities
  /// / (2(n−1)) on rank-only graphs, n·B / (2(n−1)) on a switch with B per rank. The other
  /// allreduce rates can never exceed it.
  Rate allreduceCeiling;
  /// Absent when the search was not run (> 12 ranks, or capacities not integral) or gave
  /// up (its node budget ran out before it could answer).
  std::optional<int> rings;
  /// Plain-English remarks for people: why σ or rings are absent, that the topology is not
  /// strongly connected (then every rate is 0, naming a rank that cannot reach another).
  std::vector<std::string> notes;
};

/// Maximum flow from vertex s to vertex t with arc capacities in link units (doubles), on
/// any vertices of the topology. Dinic's algorithm.
double maxFlow(const Topology& topology, int sourceVertex, int sinkVertex);
/// The same with integral capacities (topology.integral() must hold).
int64_t maxFlowUnits(const Topology& topology, int sourceVertex, int sinkVertex);

/// Computes every bound above. Under 10 ms for 8 ranks. With fewer than 2 ranks nothing
/// has to move: every rate is +infinity (exact = false) and σ and rings are absent.
Bounds computeBounds(const Topology& topology);

}  // namespace grove::topo
