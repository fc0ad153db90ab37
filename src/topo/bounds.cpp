// computeBounds(): every yardstick of bounds.hpp for one topology, exact when it can be.
//
// Integral topologies (link counts) run the flow algorithms on int64_t link units and turn
// the results into Rationals; others run the same templates on doubles. Small graphs use
// exhaustive algorithms (set partitions for σ up to 10 ranks, vertex subsets for the RS+AG
// cut up to 16 vertices), larger ones the max-flow based ones of strength.cpp, so a 256-rank
// two-tier cluster stays well under a second. Anything not computed is said in `notes`.
#include "topo/bounds.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "topo/bounds_detail.hpp"

namespace grove::topo {
namespace {

constexpr int kEnumeratePartitionsUpTo = 10;  // ranks (Bell(10) = 115,975 partitions)
constexpr int kEnumerateCutsUpTo = 16;        // vertices (2^16 subsets)
constexpr int kRingsUpTo = 12;                // ranks
constexpr int64_t kRingNodeBudget = 100'000;  // ≈ 0.1 s at worst

Rate rateOf(int64_t num, int64_t den) {
  const Rational value(num, den);
  return Rate{true, value, value.toDouble()};
}

Rate rateOf(double num, int64_t den) {
  return Rate{false, Rational{}, num / static_cast<double>(den)};
}

Rate unbounded() { return Rate{false, Rational{}, std::numeric_limits<double>::infinity()}; }

bool lessThan(const Rate& a, const Rate& b) {
  return a.exact && b.exact ? a.value < b.value : a.units < b.units;
}

// A rank that `fromRank` cannot reach, or -1.
int unreachableFrom(const Topology& topology, int fromRank) {
  std::vector<char> seen(topology.vertices.size(), 0);
  std::vector<int> stack{topology.vertexOfRank(fromRank)};
  seen[static_cast<size_t>(stack.back())] = 1;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int a : topology.outArcs(u)) {
      const int v = topology.arcs[static_cast<size_t>(a)].to;
      if (!seen[static_cast<size_t>(v)]) {
        seen[static_cast<size_t>(v)] = 1;
        stack.push_back(v);
      }
    }
  }
  for (int r = 0; r < topology.rankCount(); ++r) {
    if (!seen[static_cast<size_t>(topology.vertexOfRank(r))]) return r;
  }
  return -1;
}

template <class Cap>
void fill(const Topology& topology, const detail::Network<Cap>& network, Bounds& bounds) {
  const int n = network.ranks();
  const std::vector<Cap> lambda = detail::rootedConnectivities(network);
  for (int r = 0; r < n; ++r) {
    bounds.lambda.push_back(rateOf(lambda[static_cast<size_t>(r)], 1));
    if (r == 0 || lessThan(bounds.lambda.back(), bounds.lambdaMin)) {
      bounds.lambdaMin = bounds.lambda.back();
    }
    if (lambda[static_cast<size_t>(r)] <= network.epsilon && bounds.notes.empty()) {
      const int lost = unreachableFrom(topology, r);
      bounds.notes.push_back(
          lost >= 0 ? "rank " + std::to_string(lost) + " cannot be reached from rank " +
                          std::to_string(r) +
                          ": the topology is not strongly connected, so every collective "
                          "rate is 0"
                    : "rank " + std::to_string(r) +
                          " has a zero-capacity cut to another rank: every collective rate "
                          "is 0");
    }
  }

  if (network.hasSwitches()) {
    bounds.notes.push_back(
        "sigma: not computed for topologies with switch vertices (trees through a switch are "
        "Steiner trees)");
  } else {
    const detail::Strength<Cap> strength = n <= kEnumeratePartitionsUpTo
                                               ? detail::strengthByPartitions(network)
                                               : detail::strengthByFlows(network);
    bounds.sigma = rateOf(strength.cut, strength.parts - 1);
  }

  const detail::CrowdedSet<Cap> crowded = network.vertices <= kEnumerateCutsUpTo
                                              ? detail::crowdedSetByEnumeration(network)
                                              : detail::crowdedSetByFlows(network);
  bounds.rsAg = crowded.capacityOut <= network.epsilon
                    ? rateOf(Cap{}, 1)
                    : rateOf(static_cast<Cap>(n) * crowded.capacityOut, 2 * crowded.ranksInside);

  bounds.allreduce =
      bounds.sigma && lessThan(bounds.rsAg, *bounds.sigma) ? *bounds.sigma : bounds.rsAg;

  Cap sent{};
  Cap received{};
  for (size_t a = 0; a < network.capacity.size(); ++a) {
    if (network.isRank[static_cast<size_t>(network.from[a])]) sent += network.capacity[a];
    if (network.isRank[static_cast<size_t>(network.to[a])]) received += network.capacity[a];
  }
  bounds.allreduceCeiling = rateOf(std::min(sent, received), 2 * static_cast<int64_t>(n - 1));
}

}  // namespace

Bounds computeBounds(const Topology& topology) {
  Bounds bounds;
  const int n = topology.rankCount();
  bounds.ranks = n;
  if (n < 2) {
    bounds.lambda.assign(static_cast<size_t>(n), unbounded());
    bounds.lambdaMin = bounds.rsAg = bounds.allreduce = bounds.allreduceCeiling = unbounded();
    bounds.notes.push_back("fewer than 2 ranks: nothing has to move, every rate is unbounded");
    return bounds;
  }
  const bool integral = topology.integral();
  if (integral) {
    fill(topology, detail::integralNetwork(topology), bounds);
  } else {
    fill(topology, detail::realNetwork(topology), bounds);
  }

  if (!integral) {
    bounds.notes.push_back("rings: not searched (capacities are not whole link units)");
  } else if (n > kRingsUpTo) {
    bounds.notes.push_back("rings: not searched for more than " + std::to_string(kRingsUpTo) +
                           " ranks");
  } else {
    bounds.rings = detail::ringCount(detail::integralNetwork(topology), kRingNodeBudget);
    if (!bounds.rings) {
      bounds.notes.push_back("rings: the search gave up after " + std::to_string(kRingNodeBudget) +
                             " nodes");
    }
  }
  return bounds;
}

}  // namespace grove::topo
