// Pieces of the tree packer shared by its files (packing*.cpp); not a public interface.
//
// The packer sees a topology as ranks joined by *links*: a link u→v is the way a message from
// rank u reaches rank v — one direct arc, or (when switches are allowed) the arcs of the route
// through switch vertices. A tree is a choice of links; it loads every physical arc its links
// cross, once per link. Capacities stay on the physical arcs, so trees that share a switch
// port share its bandwidth, exactly as the executor's messages will.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "algo/packing.hpp"

namespace grove::algo::packing_detail {

/// How rank `from` reaches rank `to`: the topology arcs a message crosses, in order.
struct Link {
  int from = 0;
  int to = 0;
  std::vector<int> arcs;
};

/// The ranks, the links between them and the arcs' capacities in link units.
struct RankGraph {
  int ranks = 0;
  std::vector<double> capacity;  ///< Per topology arc, link units.
  std::vector<Link> links;       ///< Ordered by (from, to).
  std::vector<int> linkIndex;    ///< ranks × ranks: index of the link from→to, or -1.
  /// True when every link is one arc and every arc at most one link (no switch hops).
  bool direct = true;

  int link(int from, int to) const {
    return linkIndex[static_cast<size_t>(from) * static_cast<size_t>(ranks) +
                     static_cast<size_t>(to)];
  }
};

/// Links over direct rank-to-rank arcs, plus shortest routes through switch vertices (ties
/// broken by arc index) for pairs without a direct arc when `allowSwitches`.
RankGraph buildRankGraph(const topo::Topology& topology, bool allowSwitches);

/// A tree as the links it uses: parentLink[v] is the link entering rank v (-1 for the root).
using LinkTree = std::vector<int>;

/// Per arc, how many of the tree's links cross it (only arcs with a non-zero count).
std::vector<std::pair<int, int>> arcLoad(const RankGraph& graph, const LinkTree& tree);

/// Converts a link tree into the public form (parent ranks), rate unset.
Tree toTree(const RankGraph& graph, int root, const LinkTree& tree);

/// Minimum-weight spanning arborescence rooted at `root` (Chu–Liu/Edmonds), `weight` per
/// link; std::nullopt when some rank is unreachable. Ties go to the lower link index.
std::optional<LinkTree> minArborescence(const RankGraph& graph, int root,
                                        const std::vector<double>& weight);

/// An undirected edge for allreduce trees: the two links u→v and v→u (u < v).
struct Edge {
  int a = 0;
  int b = 0;
  int forward = -1;   ///< Link a→b.
  int backward = -1;  ///< Link b→a.
};
/// Every pair of ranks linked both ways, ordered by (a, b).
std::vector<Edge> undirectedEdges(const RankGraph& graph);
/// Minimum-weight spanning tree (Kruskal, ties by edge index) as edge indices; std::nullopt
/// when the edges do not connect every rank.
std::optional<std::vector<int>> minSpanningTree(int ranks, const std::vector<Edge>& edges,
                                                const std::vector<double>& weight);
/// Orients spanning-tree edges away from `root` into a link tree.
LinkTree orientTree(const RankGraph& graph, int root, const std::vector<Edge>& edges,
                    const std::vector<int>& treeEdges);

/// Maximises Σ objective·x subject to A·x ≤ rhs, x ≥ 0 (rhs ≥ 0) by the revised simplex
/// method with columns generated on demand (column generation): exact up to rounding for
/// the small LPs of tree packing (rows = arcs, plus one per root for RS+AG).
class ColumnLp {
 public:
  explicit ColumnLp(std::vector<double> rhs);
  /// Adds a column (sparse: row, coefficient) and returns its index.
  int addColumn(std::vector<std::pair<int, double>> entries, double objective);
  /// Reduced cost objective − y·a of column `column` under duals `y`.
  double reducedCost(int column, const std::vector<double>& y) const;
  /// Runs the simplex. Each iteration `generate(y)` may add columns (those with a positive
  /// reduced cost under the duals y); the best column of all enters. Stops at optimality or
  /// after `maxIterations` pivots (the solution is feasible either way).
  void solve(const std::function<void(const std::vector<double>& y)>& generate, int maxIterations);
  /// The value of every column.
  std::vector<double> values() const;
  int rows() const { return static_cast<int>(rhs_.size()); }

 private:
  void refactor();
  std::vector<double> dense(int variable) const;

  std::vector<double> rhs_;
  std::vector<std::vector<std::pair<int, double>>> columns_;
  std::vector<double> objective_;
  std::vector<int> basis_;       // per row: variable (column c ≥ 0, slack of row i: −1−i)
  std::vector<double> inverse_;  // rows × rows, row-major
  std::vector<double> basicValue_;
};

/// A tree with its rate, before reduction.
struct WeightedTree {
  LinkTree links;
  double rate = 0;
};

/// Makes a packing of unit arborescences from `root` shallow without changing the arcs it
/// loads beyond `spare` (per link, the capacity no tree uses; updated): moves a rank's
/// parent link between two trees or onto a spare link while that lowers the depth profile
/// (deepest tree, then trees at each depth, then the sum of depths). packing_depth.cpp.
void flattenArborescences(const RankGraph& graph, int root, std::vector<int64_t>& spare,
                          std::vector<LinkTree>& trees);

/// The reduction step: per group (a root's trees) merges identical trees, keeps the largest
/// (at most `maxTrees`, dropping the smallest while they sum to under 0.5% of the group's
/// total), optionally scales the groups to the smallest group total (`equalTotals`, RS+AG),
/// then scales every rate by one factor so that the arcs are exactly as loaded as their
/// capacities allow. `bothWays`: each tree also loads its links reversed (allreduce trees).
/// Rates come out inexact (doubles).
std::vector<Packing> reduce(const RankGraph& graph, const std::vector<int>& roots,
                            std::vector<std::vector<WeightedTree>> groups, int maxTrees,
                            bool equalTotals, bool bothWays);
/// The links of `tree` followed by the same links reversed (the reduce direction).
LinkTree withReverse(const RankGraph& graph, const LinkTree& tree);

/// Drops the lightest trees one at a time while re-solving the rates of the trees left (the
/// packing LP restricted to them) keeps the total — or with `equalTotals` the common total of
/// all groups — within `slack` of the optimum over all of them; each group keeps at least one
/// tree. `bothWays` as for reduce(). Rates come out re-solved. packing_prune.cpp.
void pruneTrees(const RankGraph& graph, std::vector<std::vector<WeightedTree>>& groups,
                bool equalTotals, bool bothWays, double slack);

/// Column generation for a single root's arborescences (`spanning` false) or for allreduce
/// spanning trees (`spanning` true); the result before reduction.
std::vector<WeightedTree> packByLp(const RankGraph& graph, int root, bool spanning);
/// Column generation for RS+AG: per root its trees, all roots at one common rate.
std::vector<std::vector<WeightedTree>> packRsAgByLp(const RankGraph& graph);
/// Multiplicative weights (Garg–Könemann style) for graphs too large for the LP: `rounds`
/// rounds, each adding every group's cheapest tree under exponential arc lengths. Groups are
/// the roots for arborescences (one group when `roots` has one entry) or a single spanning
/// group when `spanning`.
std::vector<std::vector<WeightedTree>> packByWeights(const RankGraph& graph,
                                                     const std::vector<int>& roots, bool spanning,
                                                     int rounds, double epsilon);

}  // namespace grove::algo::packing_detail
