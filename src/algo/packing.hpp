// Packing spanning trees into a topology (Blink, MLSys 2020; ForestColl): the data of a
// collective is split across several trees in proportion to their rates, so that together
// they use every link instead of the slowest ring hop.
//
// * packArborescences: broadcast/reduce from one root. With integral capacities it is
//   exact: greedy growth of one arborescence at a time, keeping an arc only when max-flow
//   checks show the remaining graph still holds the rest (Edmonds' theorem), reaches λ(root).
//   With general capacities (or routes through switches): the fractional packing LP solved
//   by column generation, its pricing oracle the min-cost arborescence (Chu–Liu/Edmonds),
//   optimal to rounding; on graphs too large for that LP (> 400 arcs, or RS+AG over > 16
//   ranks), multiplicative weights (Garg–Könemann) with greedy load-aware trees. Then
//   reduction to few trees (merge identical ones, drop slivers, rescale to the capacities).
// * packSpanningTrees: undirected spanning trees for allreduce as reduce-up then
//   broadcast-down on the same tree (each tree uses an edge in both directions once), rate σ.
// * packRsAg: per root rank a set of arborescences (the all-gather trees; reversed, the
//   reduce-scatter trees), all roots sharing the capacities, the common rate the RS+AG bound.
// Trees only use rank-to-rank arcs unless `allowSwitches`: then a tree may pass through a
// switch vertex (one-hop trees on NVSwitch-like fabrics; RS+AG on a single-switch fabric is
// the closed form "every rank roots a star"). Above 64 ranks, routes through switches between
// hosts are only considered along rails (j-th rank of a host to the j-th rank of another).
// Rates are exact only for the exact integral packing; otherwise `exact` is false and
// `units` holds the rate. No trees (total 0) when the ranks are not connected; with one rank,
// one trivial tree of rate 1. Costs: ≈ 1 ms for 8 ranks, < 0.5 s for a 256-rank cluster.
#pragma once

#include <vector>

#include "topo/bounds.hpp"
#include "topo/topology.hpp"

namespace grove::algo {

/// One directed tree over the ranks, edges pointing away from the root.
struct Tree {
  int root = 0;
  /// parent[r] is r's parent rank (-1 for the root); ranks are the topology's rank numbers.
  /// Switch hops are not listed: a tree edge parent→child is a message between two ranks,
  /// routed over the topology (Topology::route).
  std::vector<int> parent;
  topo::Rate rate;  ///< Share of the collective's rate this tree carries, link units.
};

struct Packing {
  std::vector<Tree> trees;
  topo::Rate total;  ///< Sum of the trees' rates.
};

struct PackOptions {
  bool allowSwitches = false;
  int maxTrees = 16;       ///< Reduction keeps at most this many trees (rescaling the rest).
  double epsilon = 0.002;  ///< Multiplicative-weights accuracy.
};

/// Arborescences from `rootRank` (see file comment). total == λ(root) exactly when integral.
Packing packArborescences(const topo::Topology& topology, int rootRank,
                          const PackOptions& options = {});
/// Undirected spanning trees (returned rooted at `rootRank`), total ≈ σ.
Packing packSpanningTrees(const topo::Topology& topology, int rootRank,
                          const PackOptions& options = {});
/// One Packing per rank r (trees rooted at r), all with the same total x, all N packings
/// fitting the capacities together. An allreduce of S bytes as reduce-scatter then
/// all-gather over them takes 2·(S/N)/x, algbw N·x/2, which is the RS+AG bound when x is
/// optimal (x = min over subsets A of capacity leaving A / |ranks in A|).
std::vector<Packing> packRsAg(const topo::Topology& topology, const PackOptions& options = {});

}  // namespace grove::algo
