// The tree packer's entry points and its exact integral algorithm.
//
// Exact packing (integral capacities, direct rank-to-rank links): Edmonds' theorem says a
// graph whose every rank can receive λ units of flow from the root holds λ arc-disjoint
// spanning arborescences, and Lovász's proof builds them greedily: grow a tree from the
// root, keeping an arc u→v only if, with the tree's arcs taken out, every rank can still
// receive λ−1 (max-flow checks). Once the tree spans, it is used as many times t as the rest
// allows (largest t with λ(G − t·T) ≥ λ − t, a binary search: that function is monotone),
// so identical trees come out merged and the number of growth phases stays at most the
// number of distinct trees. Everything is integral: the rates are exact and sum to λ.
// The trees are then made shallow (packing_depth.cpp: parent links exchanged between trees
// or moved onto spare capacity), since a deep tree pipelines badly.
//
// Everything else — real-valued capacities, routes through switches, allreduce trees and
// RS+AG trees — is a fractional packing LP (packing_lp.cpp), pruned of its lightest trees
// (packing_prune.cpp), or, for graphs with thousands of arcs, multiplicative weights
// (packing_reduce.cpp); then the reduction to few trees. (RS+AG from the root-wise exact
// packings scaled by one exact factor was tried and removed: its 48 equal trees on all 8
// GPUs of a DGX-1V ran slower on the emulated mesh than the LP's, and it cost 6 ms.)
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "algo/packing_internal.hpp"
#include "grove/error.hpp"
#include "topo/dinic.hpp"

namespace grove::algo {
namespace {

using packing_detail::LinkTree;
using packing_detail::RankGraph;
using packing_detail::WeightedTree;

constexpr int kExactMaxRanks = 16;   // exact greedy beyond: LP or weights
constexpr int kLpMaxRows = 400;      // the dense LP beyond: multiplicative weights
constexpr int kLpMaxRsAgRanks = 16;  // RS+AG prices one oracle per root per pivot
constexpr int kWeightRounds = 24;    // multiplicative-weights rounds (large graphs)
constexpr double kWeightEpsilon = 0.3;
constexpr int64_t kFlattenMaxTrees = 64;  // unit trees the depth search rearranges
// LP packings drop their lightest trees while the re-solved rate stays within this share of
// the optimum (packing_prune.cpp): 32 → 30 RS+AG trees on all 8 GPUs of a DGX-1V.
constexpr double kPruneSlack = 0.005;

void checkRoot(const topo::Topology& topology, int rootRank, const char* function) {
  const int n = topology.rankCount();
  if (rootRank < 0 || rootRank >= n) {
    throw Error(ErrorCode::kInvalidArgument, std::string(function) + ": rootRank " +
                                                 std::to_string(rootRank) +
                                                 " is not a rank of topology '" + topology.name +
                                                 "' (expected 0.." + std::to_string(n - 1) + ")");
  }
}

topo::Rate exactRate(int64_t units) {
  topo::Rate rate;
  rate.exact = true;
  rate.value = topo::Rational(units);
  rate.units = static_cast<double>(units);
  return rate;
}

// With one rank there is nothing to move; one trivial tree of rate 1 lets callers split data
// by rate without a special case.
Packing singleRank(int root) {
  Packing packing;
  packing.trees.push_back(Tree{root, {-1}, exactRate(1)});
  packing.total = exactRate(1);
  return packing;
}

Packing emptyPacking() {
  Packing packing;
  packing.total = exactRate(0);
  return packing;
}

// Max-flow checks of the exact packer over the links (each one arc), capacities in units.
class FlowCheck {
 public:
  FlowCheck(const RankGraph& graph, int root) : graph_(graph), root_(root) {}

  // Whether every rank can receive `need` units from the root under `capacity` (per link).
  bool holds(const std::vector<int64_t>& capacity, int64_t need) const {
    if (need <= 0) return true;
    for (int v = 0; v < graph_.ranks; ++v) {
      if (v != root_ && flow(capacity, v, need) < need) return false;
    }
    return true;
  }

  // min over ranks of maxflow(root → v).
  int64_t lambda(const std::vector<int64_t>& capacity) const {
    int64_t best = -1;
    for (int v = 0; v < graph_.ranks; ++v) {
      if (v == root_) continue;
      const int64_t f = flow(capacity, v, std::numeric_limits<int64_t>::max());
      best = best < 0 ? f : std::min(best, f);
    }
    return std::max<int64_t>(best, 0);
  }

 private:
  int64_t flow(const std::vector<int64_t>& capacity, int sink, int64_t limit) const {
    topo::Dinic<int64_t> dinic(graph_.ranks);
    for (size_t l = 0; l < graph_.links.size(); ++l) {
      if (capacity[l] > 0) dinic.addArc(graph_.links[l].from, graph_.links[l].to, capacity[l]);
    }
    return dinic.augment(root_, sink, limit);
  }

  const RankGraph& graph_;
  int root_;
};

// One spanning arborescence T of `capacity` with λ(capacity − T) ≥ lambda − 1 (Lovász).
LinkTree growTree(const RankGraph& graph, const FlowCheck& check, int root,
                  const std::vector<int64_t>& capacity, int64_t lambda) {
  const int n = graph.ranks;
  LinkTree tree(static_cast<size_t>(n), -1);
  std::vector<int> depth(static_cast<size_t>(n), -1);
  std::vector<int> members{root};  // in order of (depth, rank): shallow trees first
  depth[static_cast<size_t>(root)] = 0;
  std::vector<int64_t> rest = capacity;
  for (int added = 1; added < n; ++added) {
    bool grown = false;
    for (size_t i = 0; i < members.size() && !grown; ++i) {
      const int u = members[i];
      for (int v = 0; v < n && !grown; ++v) {
        const int link = graph.link(u, v);
        if (link < 0 || depth[static_cast<size_t>(v)] >= 0 || rest[static_cast<size_t>(link)] < 1)
          continue;
        --rest[static_cast<size_t>(link)];
        if (check.holds(rest, lambda - 1)) {
          tree[static_cast<size_t>(v)] = link;
          depth[static_cast<size_t>(v)] = depth[static_cast<size_t>(u)] + 1;
          members.push_back(v);
          std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
            return depth[static_cast<size_t>(a)] < depth[static_cast<size_t>(b)];
          });
          grown = true;
        } else {
          ++rest[static_cast<size_t>(link)];
        }
      }
    }
    if (!grown) {
      throw Error(ErrorCode::kInternalError,
                  "packArborescences: no arc extends the arborescence from rank " +
                      std::to_string(root) + " (Edmonds' theorem violated: max-flow bug?)");
    }
  }
  return tree;
}

// The exact packing made shallow (packing_depth.cpp) when it has at most kFlattenMaxTrees
// unit trees: split into unit trees, flattened, identical trees merged again (in order of
// first appearance). `spare` is the capacity the trees leave unused.
std::vector<std::pair<LinkTree, int64_t>> shallow(const RankGraph& graph, int root,
                                                  std::vector<int64_t> spare,
                                                  std::vector<std::pair<LinkTree, int64_t>> trees) {
  int64_t units = 0;
  for (const auto& [tree, times] : trees) units += times;
  if (units > kFlattenMaxTrees) return trees;
  std::vector<LinkTree> unit;
  for (const auto& [tree, times] : trees) unit.insert(unit.end(), static_cast<size_t>(times), tree);
  packing_detail::flattenArborescences(graph, root, spare, unit);
  std::vector<std::pair<LinkTree, int64_t>> merged;
  for (const LinkTree& tree : unit) {
    auto same = std::find_if(merged.begin(), merged.end(),
                             [&](const auto& entry) { return entry.first == tree; });
    if (same != merged.end()) {
      ++same->second;
    } else {
      merged.emplace_back(tree, 1);
    }
  }
  return merged;
}

// Whether every link is one arc of a whole number of link units (the exact packer's domain;
// arcs no link uses, such as a slow switch port, do not matter).
bool integralLinks(const RankGraph& graph, const topo::Topology& topology) {
  if (!graph.direct || !(topology.unitGBps > 0)) return false;
  for (const packing_detail::Link& link : graph.links) {
    const double ratio = graph.capacity[static_cast<size_t>(link.arcs.front())];
    const double rounded = std::round(ratio);
    if (rounded < 1 || std::fabs(ratio - rounded) > 1e-9 * std::max(1.0, ratio)) return false;
  }
  return true;
}

Packing exactArborescences(const RankGraph& graph, const topo::Topology& topology, int root,
                           const PackOptions& options) {
  std::vector<int64_t> capacity;
  for (const packing_detail::Link& link : graph.links) {
    capacity.push_back(topology.units(link.arcs.front()));
  }
  const FlowCheck check(graph, root);
  int64_t lambda = check.lambda(capacity);
  if (lambda == 0) return emptyPacking();
  std::vector<std::pair<LinkTree, int64_t>> trees;
  while (lambda > 0) {
    const LinkTree tree = growTree(graph, check, root, capacity, lambda);
    int64_t most = lambda;
    for (int link : tree) {
      if (link >= 0) most = std::min(most, capacity[static_cast<size_t>(link)]);
    }
    auto without = [&](int64_t times) {
      std::vector<int64_t> rest = capacity;
      for (int link : tree) {
        if (link >= 0) rest[static_cast<size_t>(link)] -= times;
      }
      return rest;
    };
    int64_t low = 1;  // feasible by construction
    int64_t high = most;
    while (low < high) {
      const int64_t mid = low + (high - low + 1) / 2;
      if (check.holds(without(mid), lambda - mid)) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    capacity = without(low);
    lambda -= low;
    trees.emplace_back(tree, low);
  }
  trees = shallow(graph, root, capacity, std::move(trees));
  if (static_cast<int>(trees.size()) > std::max(1, options.maxTrees)) {
    std::vector<WeightedTree> weighted;
    for (const auto& [tree, times] : trees) {
      weighted.push_back(WeightedTree{tree, static_cast<double>(times)});
    }
    return packing_detail::reduce(graph, {root}, {weighted}, options.maxTrees, false, false)
        .front();
  }
  Packing packing;
  int64_t total = 0;
  for (const auto& [tree, times] : trees) {
    Tree out = packing_detail::toTree(graph, root, tree);
    out.rate = exactRate(times);
    total += times;
    packing.trees.push_back(std::move(out));
  }
  packing.total = exactRate(total);
  return packing;
}

bool lpFits(const RankGraph& graph, int extraRows) {
  return static_cast<int>(graph.capacity.size()) + extraRows <= kLpMaxRows;
}

// RS+AG on a single-switch fabric (DGX-2, 8 × H100): every rank's only arcs go to and come
// from one switch vertex. Each rank roots a star (one hop to everyone): a rank's uplink
// carries its own star n−1 times and its downlink one message of every other star, so the
// common rate is min(uplinks, downlinks)/(n−1) — the RS+AG bound when ranks are uniform.
std::optional<std::vector<Packing>> starRsAg(const topo::Topology& topology) {
  const int n = topology.rankCount();
  int hub = -1;
  std::vector<int64_t> units(static_cast<size_t>(2 * n), -1);  // up[r], down[r]
  std::vector<double> capacity(static_cast<size_t>(2 * n), -1);
  const bool integral = topology.integral();
  for (size_t a = 0; a < topology.arcs.size(); ++a) {
    const topo::Arc& arc = topology.arcs[a];
    const topo::Vertex& from = topology.vertices[static_cast<size_t>(arc.from)];
    const topo::Vertex& to = topology.vertices[static_cast<size_t>(arc.to)];
    const bool up = from.kind == topo::VertexKind::kRank;
    if (up == (to.kind == topo::VertexKind::kRank)) return std::nullopt;
    const int sw = up ? arc.to : arc.from;
    if (hub >= 0 && sw != hub) return std::nullopt;
    hub = sw;
    const size_t slot = up ? static_cast<size_t>(from.rank) : static_cast<size_t>(n + to.rank);
    capacity[slot] = arc.capacityGBps / topology.unitGBps;
    if (integral) units[slot] = topology.units(static_cast<int>(a));
  }
  if (*std::min_element(capacity.begin(), capacity.end()) <= 0) return std::nullopt;
  const size_t least =
      static_cast<size_t>(std::min_element(capacity.begin(), capacity.end()) - capacity.begin());
  topo::Rate rate;
  rate.exact = integral;
  if (integral) rate.value = topo::Rational(units[least], n - 1);
  rate.units = capacity[least] / (n - 1);
  std::vector<Packing> packings;
  for (int r = 0; r < n; ++r) {
    Tree star{r, std::vector<int>(static_cast<size_t>(n), r), rate};
    star.parent[static_cast<size_t>(r)] = -1;
    packings.push_back(Packing{{star}, rate});
  }
  return packings;
}

}  // namespace

Packing packArborescences(const topo::Topology& topology, int rootRank,
                          const PackOptions& options) {
  checkRoot(topology, rootRank, "packArborescences");
  if (topology.rankCount() == 1) return singleRank(rootRank);
  const RankGraph graph = packing_detail::buildRankGraph(topology, options.allowSwitches);
  if (integralLinks(graph, topology) && graph.ranks <= kExactMaxRanks) {
    return exactArborescences(graph, topology, rootRank, options);
  }
  std::vector<WeightedTree> trees =
      lpFits(graph, 0)
          ? packing_detail::packByLp(graph, rootRank, false)
          : packing_detail::packByWeights(graph, {rootRank}, false, kWeightRounds, kWeightEpsilon)
                .front();
  if (trees.empty()) return emptyPacking();
  return packing_detail::reduce(graph, {rootRank}, {trees}, options.maxTrees, false, false).front();
}

Packing packSpanningTrees(const topo::Topology& topology, int rootRank,
                          const PackOptions& options) {
  checkRoot(topology, rootRank, "packSpanningTrees");
  if (topology.rankCount() == 1) return singleRank(rootRank);
  const RankGraph graph = packing_detail::buildRankGraph(topology, options.allowSwitches);
  std::vector<WeightedTree> trees =
      lpFits(graph, 0)
          ? packing_detail::packByLp(graph, rootRank, true)
          : packing_detail::packByWeights(graph, {rootRank}, true, kWeightRounds, kWeightEpsilon)
                .front();
  if (trees.empty()) return emptyPacking();
  std::vector<std::vector<WeightedTree>> groups{std::move(trees)};
  if (lpFits(graph, 0)) packing_detail::pruneTrees(graph, groups, false, true, kPruneSlack);
  return packing_detail::reduce(graph, {rootRank}, std::move(groups), options.maxTrees, false, true)
      .front();
}

std::vector<Packing> packRsAg(const topo::Topology& topology, const PackOptions& options) {
  const int n = topology.rankCount();
  if (n == 1) return {singleRank(0)};
  if (options.allowSwitches) {
    if (std::optional<std::vector<Packing>> stars = starRsAg(topology)) return *stars;
  }
  const RankGraph graph = packing_detail::buildRankGraph(topology, options.allowSwitches);
  std::vector<int> roots(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) roots[static_cast<size_t>(r)] = r;
  std::vector<std::vector<WeightedTree>> groups =
      n <= kLpMaxRsAgRanks && lpFits(graph, n)
          ? packing_detail::packRsAgByLp(graph)
          : packing_detail::packByWeights(graph, roots, false, n > 128 ? 1 : 3, kWeightEpsilon);
  for (const std::vector<WeightedTree>& group : groups) {
    if (group.empty()) return std::vector<Packing>(static_cast<size_t>(n), emptyPacking());
  }
  if (n <= kLpMaxRsAgRanks && lpFits(graph, n)) {
    packing_detail::pruneTrees(graph, groups, true, false, kPruneSlack);
  }
  return packing_detail::reduce(graph, roots, std::move(groups), options.maxTrees, true, false);
}

}  // namespace grove::algo
