// The two allreduce yardsticks: the RS+AG cut and the tree-packing strength σ.
//
// RS+AG (ForestColl): the rate is N / (2 · max over vertex sets A holding some but not all
// ranks of |ranks in A| / capacity leaving A). Small graphs try every set; larger ones run
// Dinkelbach's method: with the best ratio t = k*/c* so far, the set maximizing
// c*·|ranks in A| − k*·cap(A) is a min cut (rank u pays c* when outside A, each arc pays k*
// times its capacity when it leaves A), one per rank q forced outside A; a positive gain
// gives a strictly better ratio, zero gain proves t optimal. A 256-rank cluster needs a few
// rounds of 256 small min cuts.
//
// σ: min over partitions P of the ranks of cut(P) / (|P| − 1) on the undirected graph whose
// edge {u,v} weighs min(c(u→v), c(v→u)) (Nash-Williams–Tutte: the fractional packing number
// of spanning trees). Up to 10 ranks every set partition is tried (Bell(10) = 115,975).
// Beyond, Newton's method on k: the partition minimizing cut(P) − k·|P| is found as a
// Dilworth truncation — greedily, vertex by vertex, each step a min cut (Cunningham 1985,
// Barahona 1992) — and a partition beating k gives the next, smaller k.
//
// Both run on int64_t link units for integral topologies (every quantity is scaled to stay
// integral, so results are exact) and on doubles otherwise.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>

#include "topo/bounds_detail.hpp"
#include "topo/dinic.hpp"

namespace grove::topo::detail {
namespace {

__extension__ using Wide = __int128;

// a/b > c/d for b, d ≥ 0 (x/0 is infinite when x > 0).
template <class Cap>
bool ratioGreater(int64_t a, Cap b, int64_t c, Cap d) {
  if constexpr (std::is_integral_v<Cap>) {
    return static_cast<Wide>(a) * d > static_cast<Wide>(c) * b;
  } else {
    return static_cast<double>(a) * d > static_cast<double>(c) * b * (1 + 1e-12);
  }
}

template <class Cap>
CrowdedSet<Cap> measure(const Network<Cap>& network, std::vector<char> inside) {
  CrowdedSet<Cap> set;
  for (int v = 0; v < network.vertices; ++v) {
    if (inside[static_cast<size_t>(v)] && network.isRank[static_cast<size_t>(v)]) {
      ++set.ranksInside;
    }
  }
  for (size_t a = 0; a < network.capacity.size(); ++a) {
    if (inside[static_cast<size_t>(network.from[a])] &&
        !inside[static_cast<size_t>(network.to[a])]) {
      set.capacityOut += network.capacity[a];
    }
  }
  set.inside = std::move(inside);
  return set;
}

// Undirected weights min(c(u→v), c(v→u)) between ranks, as an n×n matrix.
template <class Cap>
std::vector<Cap> undirectedWeights(const Network<Cap>& network) {
  const auto n = static_cast<size_t>(network.ranks());
  std::vector<int> rankOf(static_cast<size_t>(network.vertices), -1);
  for (size_t r = 0; r < n; ++r) rankOf[static_cast<size_t>(network.rankVertex[r])] = int(r);
  std::vector<Cap> directed(n * n, Cap{});
  for (size_t a = 0; a < network.capacity.size(); ++a) {
    const int u = rankOf[static_cast<size_t>(network.from[a])];
    const int v = rankOf[static_cast<size_t>(network.to[a])];
    if (u >= 0 && v >= 0)
      directed[static_cast<size_t>(u) * n + static_cast<size_t>(v)] += network.capacity[a];
  }
  std::vector<Cap> weight(n * n, Cap{});
  for (size_t u = 0; u < n; ++u) {
    for (size_t v = 0; v < n; ++v)
      weight[u * n + v] = std::min(directed[u * n + v], directed[v * n + u]);
  }
  return weight;
}

template <class Cap>
Cap partitionCut(const std::vector<Cap>& weight, const std::vector<int>& part) {
  const size_t n = part.size();
  Cap cut{};
  for (size_t u = 0; u < n; ++u) {
    for (size_t v = u + 1; v < n; ++v) {
      if (part[u] != part[v]) cut += weight[u * n + v];
    }
  }
  return cut;
}

template <class Cap>
struct PartitionSearch {
  const std::vector<Cap>& weight;
  size_t n;
  std::vector<int> part;
  Strength<Cap> best;

  void visit(size_t u, int blocks, Cap cut) {
    if (u == n) {
      if (blocks < 2) return;
      if (best.parts == 0 || ratioGreater<Cap>(blocks - 1, cut, best.parts - 1, best.cut)) {
        best.cut = cut;
        best.parts = blocks;
        best.partOfRank = part;
      }
      return;
    }
    for (int b = 0; b <= blocks && b < static_cast<int>(n); ++b) {
      Cap added{};
      for (size_t v = 0; v < u; ++v) {
        if (part[v] != b) added += weight[u * n + v];
      }
      part[u] = b;
      visit(u + 1, std::max(blocks, b + 1), cut + added);
    }
  }
};

}  // namespace

template <class Cap>
CrowdedSet<Cap> crowdedSetByEnumeration(const Network<Cap>& network) {
  const int v = network.vertices;
  const int n = network.ranks();
  CrowdedSet<Cap> best;
  uint32_t bestMask = 0;
  for (uint32_t mask = 1; mask < (uint32_t{1} << v); ++mask) {
    int64_t ranks = 0;
    for (int x = 0; x < v; ++x)
      ranks += ((mask >> x) & 1U) && network.isRank[static_cast<size_t>(x)];
    if (ranks == 0 || ranks == n) continue;
    Cap out{};
    for (size_t a = 0; a < network.capacity.size(); ++a) {
      if (((mask >> network.from[a]) & 1U) && !((mask >> network.to[a]) & 1U)) {
        out += network.capacity[a];
      }
    }
    if (bestMask == 0 || ratioGreater<Cap>(ranks, out, best.ranksInside, best.capacityOut)) {
      best.ranksInside = ranks;
      best.capacityOut = out;
      bestMask = mask;
      if (out <= network.epsilon) break;  // infinite: nothing beats it
    }
  }
  std::vector<char> inside(static_cast<size_t>(v), 0);
  for (int x = 0; x < v; ++x) inside[static_cast<size_t>(x)] = (bestMask >> x) & 1U;
  return measure(network, std::move(inside));
}

template <class Cap>
CrowdedSet<Cap> crowdedSetByFlows(const Network<Cap>& network) {
  const int n = network.ranks();
  const int v = network.vertices;
  // Start from "every vertex but rank 0": ratio (n − 1) / in(rank 0).
  std::vector<char> start(static_cast<size_t>(v), 1);
  start[static_cast<size_t>(network.rankVertex[0])] = 0;
  CrowdedSet<Cap> best = measure(network, std::move(start));
  const Cap total = std::accumulate(network.capacity.begin(), network.capacity.end(), Cap{});
  while (best.capacityOut > network.epsilon) {
    const Cap rankPrice = best.capacityOut;                    // c*: per rank outside A
    const auto arcPrice = static_cast<Cap>(best.ranksInside);  // k*: per unit leaving A
    const Cap infinite = arcPrice * total + rankPrice * n + 1;
    const Cap base = rankPrice * (n - 1);
    const Cap tolerance = std::is_integral_v<Cap> ? Cap{} : static_cast<Cap>(1e-9 * infinite);
    Cap bestGain = tolerance;
    std::vector<char> bestSide;
    const int s = v;
    const int t = v + 1;
    for (int q = 0; q < n; ++q) {
      Dinic<Cap> dinic(v + 2, network.epsilon);
      for (size_t a = 0; a < network.capacity.size(); ++a) {
        dinic.addArc(network.from[a], network.to[a], arcPrice * network.capacity[a]);
      }
      for (int r = 0; r < n; ++r) {
        if (r != q) dinic.addArc(s, network.rankVertex[static_cast<size_t>(r)], rankPrice);
      }
      dinic.addArc(network.rankVertex[static_cast<size_t>(q)], t, infinite);
      const Cap gain = base - dinic.augment(s, t);
      if (gain > bestGain) {
        bestGain = gain;
        bestSide = dinic.sourceSide(s);
      }
    }
    if (bestSide.empty()) break;
    bestSide.resize(static_cast<size_t>(v));
    CrowdedSet<Cap> next = measure(network, std::move(bestSide));
    if (next.ranksInside == 0 || !ratioGreater<Cap>(next.ranksInside, next.capacityOut,
                                                    best.ranksInside, best.capacityOut)) {
      break;  // only rounding can get here
    }
    best = std::move(next);
  }
  return best;
}

template <class Cap>
Strength<Cap> strengthByPartitions(const Network<Cap>& network) {
  const std::vector<Cap> weight = undirectedWeights(network);
  PartitionSearch<Cap> search{weight,
                              static_cast<size_t>(network.ranks()),
                              std::vector<int>(static_cast<size_t>(network.ranks()), 0),
                              {}};
  search.visit(0, 0, Cap{});
  return search.best;
}

template <class Cap>
Strength<Cap> strengthByFlows(const Network<Cap>& network) {
  const int n = network.ranks();
  const std::vector<Cap> weight = undirectedWeights(network);
  Strength<Cap> best;
  best.parts = n;
  best.partOfRank.resize(static_cast<size_t>(n));
  std::iota(best.partOfRank.begin(), best.partOfRank.end(), 0);
  best.cut = partitionCut(weight, best.partOfRank);
  const Cap totalWeight = best.cut;
  while (best.cut > network.epsilon) {
    // k = p / q. g(S) = q·d(S) − 2p; Σ over P of g = 2q·cut(P) − 2p·|P|.
    const Cap p = best.cut;
    const auto q = static_cast<Cap>(best.parts - 1);
    std::vector<Cap> x(static_cast<size_t>(n), Cap{});
    std::vector<int> part(static_cast<size_t>(n), -1);
    const Cap infinite = 2 * q * totalWeight + 1;
    for (int j = 0; j < n; ++j) {
      Dinic<Cap> dinic(n + 1, network.epsilon);
      const int t = n;
      for (int u = 0; u < n; ++u) {
        for (int w = u + 1; w < n; ++w) {
          const Cap c = weight[static_cast<size_t>(u * n + w)];
          if (c <= network.epsilon) continue;
          dinic.addArc(u, w, q * c);
          dinic.addArc(w, u, q * c);
        }
      }
      Cap rewards{};
      for (int u = 0; u < n; ++u) {
        const Cap xu = x[static_cast<size_t>(u)];
        if (u > j) {
          dinic.addArc(u, t, infinite);
        } else if (u < j && xu > Cap{}) {
          dinic.addArc(j, u, xu);
          rewards += xu;
        } else if (u < j && xu < Cap{}) {
          dinic.addArc(u, t, -xu);
        }
      }
      x[static_cast<size_t>(j)] = dinic.augment(j, t) - rewards - 2 * p;
      // The tight set found, merged with every part it meets, becomes one part.
      const std::vector<char> side = dinic.sourceSide(j);
      std::vector<char> merge(static_cast<size_t>(n), 0);
      for (int u = 0; u < j; ++u) {
        if (side[static_cast<size_t>(u)]) merge[static_cast<size_t>(part[u])] = 1;
      }
      for (int u = 0; u < j; ++u) {
        if (merge[static_cast<size_t>(part[u])]) part[static_cast<size_t>(u)] = j;
      }
      part[static_cast<size_t>(j)] = j;
    }
    // Renumber parts 0.. in order of first rank.
    std::vector<int> number(static_cast<size_t>(n), -1);
    int parts = 0;
    for (int& id : part) {
      if (number[static_cast<size_t>(id)] < 0) number[static_cast<size_t>(id)] = parts++;
      id = number[static_cast<size_t>(id)];
    }
    if (parts < 2) break;
    const Cap cut = partitionCut(weight, part);
    // Better when cut / (parts − 1) < p / q.
    if (!ratioGreater<Cap>(parts - 1, cut, static_cast<int64_t>(best.parts - 1), best.cut)) break;
    best.cut = cut;
    best.parts = parts;
    best.partOfRank = std::move(part);
  }
  return best;
}

template CrowdedSet<int64_t> crowdedSetByEnumeration(const Network<int64_t>&);
template CrowdedSet<double> crowdedSetByEnumeration(const Network<double>&);
template CrowdedSet<int64_t> crowdedSetByFlows(const Network<int64_t>&);
template CrowdedSet<double> crowdedSetByFlows(const Network<double>&);
template Strength<int64_t> strengthByPartitions(const Network<int64_t>&);
template Strength<double> strengthByPartitions(const Network<double>&);
template Strength<int64_t> strengthByFlows(const Network<int64_t>&);
template Strength<double> strengthByFlows(const Network<double>&);

}  // namespace grove::topo::detail
