// From a fractional packing to a few trees a plan can use, and the packer for large graphs.
//
// A plan runs one channel per tree, so a packing of fifty slivers is useless even when its
// total is optimal: reduce() merges identical trees, keeps the heaviest ones and rescales
// all rates by the one factor that makes the most loaded arc exactly full — dropping a tree
// frees capacity, the rescale hands it back to the others.
//
// packByWeights() is the multiplicative-weights packer (Garg–Könemann): arc lengths grow
// exponentially with their load, each round adds the cheapest tree under the lengths, so
// trees spread over idle links. It serves graphs too large for the LP of packing_lp.cpp (a
// 256-rank cluster has thousands of arcs) where a few rounds give a good, feasible packing.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>

#include "algo/packing_internal.hpp"

namespace grove::algo::packing_detail {
namespace {

constexpr double kDropShare = 0.005;  // trees summing to under this share of a group go
constexpr int kGreedyRanks = 0;       // larger graphs grow arborescences greedily

topo::Rate inexact(double units) {
  topo::Rate rate;
  rate.exact = false;
  rate.units = units;
  return rate;
}

std::vector<WeightedTree> mergeAndTrim(const std::vector<WeightedTree>& trees, int maxTrees) {
  std::map<LinkTree, double> merged;
  for (const WeightedTree& tree : trees) {
    if (tree.rate > 0) merged[tree.links] += tree.rate;
  }
  std::vector<WeightedTree> kept;
  double total = 0;
  for (const auto& [links, rate] : merged) {
    kept.push_back(WeightedTree{links, rate});
    total += rate;
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const WeightedTree& a, const WeightedTree& b) { return a.rate > b.rate; });
  while (static_cast<int>(kept.size()) > std::max(1, maxTrees)) kept.pop_back();
  double dropped = 0;
  while (kept.size() > 1 && dropped + kept.back().rate < kDropShare * total) {
    dropped += kept.back().rate;
    kept.pop_back();
  }
  return kept;
}

// Prim-style growth of an arborescence from `root` under `length`, each link taken at its
// current cost and its arcs' lengths doubled at once, so that one tree already spreads over
// parallel paths (a cheap stand-in for Chu–Liu/Edmonds on graphs with tens of thousands of
// links; lazy heap: costs only grow, a popped link whose cost has not changed is cheapest).
std::optional<LinkTree> greedyArborescence(const RankGraph& graph, int root,
                                           std::vector<double> length,
                                           const std::vector<std::vector<int>>& outLinks) {
  auto cost = [&](int link) {
    double sum = 0;
    for (int arc : graph.links[static_cast<size_t>(link)].arcs)
      sum += length[static_cast<size_t>(arc)];
    return sum;
  };
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  LinkTree tree(static_cast<size_t>(graph.ranks), -1);
  std::vector<char> inTree(static_cast<size_t>(graph.ranks), 0);
  auto join = [&](int v) {
    inTree[static_cast<size_t>(v)] = 1;
    for (int link : outLinks[static_cast<size_t>(v)]) {
      if (!inTree[static_cast<size_t>(graph.links[static_cast<size_t>(link)].to)])
        heap.emplace(cost(link), link);
    }
  };
  join(root);
  int joined = 1;
  while (!heap.empty() && joined < graph.ranks) {
    const auto [was, link] = heap.top();
    heap.pop();
    const int v = graph.links[static_cast<size_t>(link)].to;
    if (inTree[static_cast<size_t>(v)]) continue;
    const double now = cost(link);
    if (now > was) {
      heap.emplace(now, link);
      continue;
    }
    tree[static_cast<size_t>(v)] = link;
    for (int arc : graph.links[static_cast<size_t>(link)].arcs)
      length[static_cast<size_t>(arc)] *= 2;
    join(v);
    ++joined;
  }
  if (joined < graph.ranks) return std::nullopt;
  return tree;
}

}  // namespace

LinkTree withReverse(const RankGraph& graph, const LinkTree& tree) {
  LinkTree both = tree;
  for (int v = 0; v < graph.ranks; ++v) {
    const int link = tree[static_cast<size_t>(v)];
    if (link >= 0) both.push_back(graph.link(v, graph.links[static_cast<size_t>(link)].from));
  }
  return both;
}

std::vector<Packing> reduce(const RankGraph& graph, const std::vector<int>& roots,
                            std::vector<std::vector<WeightedTree>> groups, int maxTrees,
                            bool equalTotals, bool bothWays) {
  std::vector<double> totals(groups.size(), 0.0);
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g] = mergeAndTrim(groups[g], maxTrees);
    for (const WeightedTree& tree : groups[g]) totals[g] += tree.rate;
  }
  if (equalTotals && !groups.empty()) {
    const double common = *std::min_element(totals.begin(), totals.end());
    for (size_t g = 0; g < groups.size(); ++g) {
      if (common <= 0) groups[g].clear();
      for (WeightedTree& tree : groups[g]) tree.rate *= common / totals[g];
    }
  }
  std::vector<double> load(graph.capacity.size(), 0.0);
  for (const std::vector<WeightedTree>& group : groups) {
    for (const WeightedTree& tree : group) {
      const LinkTree links = bothWays ? withReverse(graph, tree.links) : tree.links;
      for (const auto& [arc, count] : arcLoad(graph, links)) {
        load[static_cast<size_t>(arc)] += tree.rate * count;
      }
    }
  }
  double factor = std::numeric_limits<double>::infinity();
  for (size_t a = 0; a < load.size(); ++a) {
    if (load[a] > 0) factor = std::min(factor, graph.capacity[a] / load[a]);
  }
  if (!std::isfinite(factor)) factor = 0;
  std::vector<Packing> packings;
  for (size_t g = 0; g < groups.size(); ++g) {
    Packing packing;
    double total = 0;
    for (const WeightedTree& tree : groups[g]) {
      Tree out = toTree(graph, roots[g], tree.links);
      out.rate = inexact(tree.rate * factor);
      total += out.rate.units;
      packing.trees.push_back(std::move(out));
    }
    packing.total = inexact(total);
    packings.push_back(std::move(packing));
  }
  return packings;
}

std::vector<std::vector<WeightedTree>> packByWeights(const RankGraph& graph,
                                                     const std::vector<int>& roots, bool spanning,
                                                     int rounds, double epsilon) {
  const size_t arcs = graph.capacity.size();
  double smallest = std::numeric_limits<double>::infinity();
  for (double c : graph.capacity) {
    if (c > 0) smallest = std::min(smallest, c);
  }
  std::vector<double> length(arcs, 0.0);
  for (size_t a = 0; a < arcs; ++a) {
    length[a] = graph.capacity[a] > 0 ? 1.0 / graph.capacity[a] : 1e30;
  }
  const std::vector<Edge> edges = spanning ? undirectedEdges(graph) : std::vector<Edge>{};
  std::vector<std::vector<int>> outLinks(static_cast<size_t>(graph.ranks));
  for (size_t l = 0; l < graph.links.size(); ++l) {
    outLinks[static_cast<size_t>(graph.links[l].from)].push_back(static_cast<int>(l));
  }
  std::vector<std::vector<WeightedTree>> groups(roots.size());
  std::vector<double> weight(graph.links.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t g = 0; g < roots.size(); ++g) {
      for (size_t l = 0; l < graph.links.size() && spanning; ++l) {
        double w = 0;
        for (int arc : graph.links[l].arcs) w += length[static_cast<size_t>(arc)];
        weight[l] = w;
      }
      std::optional<LinkTree> tree;
      if (spanning) {
        std::vector<double> edgeWeight;
        for (const Edge& edge : edges) {
          edgeWeight.push_back(weight[static_cast<size_t>(edge.forward)] +
                               weight[static_cast<size_t>(edge.backward)]);
        }
        std::optional<std::vector<int>> chosen = minSpanningTree(graph.ranks, edges, edgeWeight);
        if (chosen) tree = orientTree(graph, roots[g], edges, *chosen);
      } else {
        tree = greedyArborescence(graph, roots[g], length, outLinks);
      }
      if (!tree) return std::vector<std::vector<WeightedTree>>(roots.size());
      const std::vector<std::pair<int, int>> load =
          arcLoad(graph, spanning ? withReverse(graph, *tree) : *tree);
      // Single-group packings advance by the tree's bottleneck (Garg–Könemann); concurrent
      // groups by one common amount so that every root gains the same rate per round.
      double amount = smallest;
      if (roots.size() == 1) {
        amount = std::numeric_limits<double>::infinity();
        for (const auto& [arc, count] : load) {
          amount = std::min(amount, graph.capacity[static_cast<size_t>(arc)] / count);
        }
      }
      for (const auto& [arc, count] : load) {
        length[static_cast<size_t>(arc)] *=
            std::exp(epsilon * amount * count / graph.capacity[static_cast<size_t>(arc)]);
      }
      groups[g].push_back(WeightedTree{*tree, amount});
    }
  }
  return groups;
}

}  // namespace grove::algo::packing_detail
