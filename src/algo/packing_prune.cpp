// Fewer trees for (almost) the same rate: pruning an LP packing and re-solving its rates.
//
// The packing LP's optimum is a basic solution, so it has up to one tree per arc (plus one
// per root for RS+AG): 32 trees for an allreduce over all 8 GPUs of a DGX-1V, many of them
// slivers. Every tree is a channel of the plan, and the data of a call is split across them,
// so each tree carries few tiles: its pipeline spends much of the call filling and draining,
// and every extra channel costs connections and per-message work on every rank. Measured on
// the emulated DGX-1V mesh, allreduce ran slower the more trees it used (48 equal trees
// 0.52–0.56 of the bound, the LP's 32 trees 0.63–0.67).
//
// pruneTrees() therefore drops the lightest tree, re-solves the rates of the trees left (the
// same LP restricted to those columns: total rate, or for RS+AG the common rate of every
// root), and keeps the drop while the rate stays within `slack` of the LP optimum; it stops
// at the first tree it cannot drop. The re-solve matters: simply rescaling the remaining
// trees (reduce()) loses far more than re-balancing them over the freed capacity.
#include <algorithm>
#include <cmath>
#include <limits>

#include "algo/packing_internal.hpp"

namespace grove::algo::packing_detail {
namespace {

constexpr int kMaxDropAttempts = 64;  // re-solves per pruning (each a small simplex)

// The packing LP over the given trees only. Returns per group the rate of each tree and
// the objective (total rate of the one group, or the common rate of all groups).
double refit(const RankGraph& graph, const std::vector<std::vector<LinkTree>>& groups,
             bool equalTotals, bool bothWays, std::vector<std::vector<double>>& rates) {
  const int arcs = static_cast<int>(graph.capacity.size());
  const bool common = equalTotals && groups.size() > 1;
  std::vector<double> rhs = graph.capacity;
  if (common) rhs.resize(static_cast<size_t>(arcs) + groups.size(), 0.0);
  ColumnLp lp(rhs);
  if (common) {
    std::vector<std::pair<int, double>> z;
    for (size_t g = 0; g < groups.size(); ++g) z.emplace_back(arcs + static_cast<int>(g), 1.0);
    lp.addColumn(std::move(z), 1.0);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const LinkTree& tree : groups[g]) {
      std::vector<std::pair<int, double>> entries;
      for (const auto& [arc, count] : arcLoad(graph, bothWays ? withReverse(graph, tree) : tree)) {
        entries.emplace_back(arc, count);
      }
      if (common) entries.emplace_back(arcs + static_cast<int>(g), -1.0);
      lp.addColumn(std::move(entries), common ? 0.0 : 1.0);
    }
  }
  lp.solve([](const std::vector<double>&) {}, 40 * lp.rows() + 1000);
  const std::vector<double> value = lp.values();
  size_t column = common ? 1 : 0;
  double total = 0;
  rates.assign(groups.size(), {});
  for (size_t g = 0; g < groups.size(); ++g) {
    double sum = 0;
    for (size_t t = 0; t < groups[g].size(); ++t) {
      rates[g].push_back(value[column++]);
      sum += rates[g].back();
    }
    total = g == 0 ? sum : (common ? std::min(total, sum) : total + sum);
  }
  return common ? value[0] : total;
}

}  // namespace

void pruneTrees(const RankGraph& graph, std::vector<std::vector<WeightedTree>>& groups,
                bool equalTotals, bool bothWays, double slack) {
  std::vector<std::vector<LinkTree>> trees(groups.size());
  size_t count = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const WeightedTree& tree : groups[g]) {
      if (tree.rate > 0) trees[g].push_back(tree.links);
    }
    if (trees[g].empty()) return;
    count += trees[g].size();
  }
  if (count <= groups.size()) return;
  std::vector<std::vector<double>> rates;
  const double optimum = refit(graph, trees, equalTotals, bothWays, rates);
  if (!(optimum > 0)) return;
  const double floor = optimum * (1 - slack);
  for (int attempt = 0; attempt < kMaxDropAttempts; ++attempt) {
    // The lightest tree of a group that keeps one (ties: first group, first tree).
    size_t bestGroup = groups.size();
    size_t bestTree = 0;
    double lightest = std::numeric_limits<double>::infinity();
    for (size_t g = 0; g < trees.size(); ++g) {
      for (size_t t = 0; t < trees[g].size() && trees[g].size() > 1; ++t) {
        if (rates[g][t] < lightest) {
          lightest = rates[g][t];
          bestGroup = g;
          bestTree = t;
        }
      }
    }
    if (bestGroup == groups.size()) break;
    std::vector<std::vector<LinkTree>> fewer = trees;
    fewer[bestGroup].erase(fewer[bestGroup].begin() + static_cast<std::ptrdiff_t>(bestTree));
    std::vector<std::vector<double>> fewerRates;
    if (refit(graph, fewer, equalTotals, bothWays, fewerRates) < floor) break;
    trees = std::move(fewer);
    rates = std::move(fewerRates);
    // Trees the re-solve left at zero go as well (a group keeps at least one).
    for (size_t g = 0; g < trees.size(); ++g) {
      for (size_t t = trees[g].size(); t-- > 0 && trees[g].size() > 1;) {
        if (rates[g][t] <= 0) {
          trees[g].erase(trees[g].begin() + static_cast<std::ptrdiff_t>(t));
          rates[g].erase(rates[g].begin() + static_cast<std::ptrdiff_t>(t));
        }
      }
    }
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].clear();
    for (size_t t = 0; t < trees[g].size(); ++t) {
      groups[g].push_back(WeightedTree{trees[g][t], rates[g][t]});
    }
  }
}

}  // namespace grove::algo::packing_detail
