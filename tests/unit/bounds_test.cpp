// The flow bounds of src/topo/bounds.hpp against rates known exactly: the reference table of
// DGX-1V subsets (reference/topologies.md), the DGX-1P, switch fabrics, two-tier clusters,
// hand-made graphs (asymmetric, disconnected, non-integral) — and the max-flow based
// algorithms against the exhaustive ones on every DGX-1V subset and on pseudo-random graphs.
#include "topo/bounds.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "grove/error.hpp"
#include "topo/bounds_detail.hpp"
#include "topo/rational.hpp"
#include "topo/topology.hpp"

namespace grove::topo {
void PrintTo(const Rational& r, std::ostream* os) { *os << r.toString(); }

namespace {

using Arcs = std::vector<std::tuple<int, int, double>>;

// A rank-only topology with the given arcs (from, to, GB/s).
Topology ranksOnly(int n, const Arcs& arcs, double unit = 1.0) {
  Topology t;
  t.name = "hand";
  t.unitGBps = unit;
  for (int r = 0; r < n; ++r) t.vertices.push_back({VertexKind::kRank, "r" + std::to_string(r), r});
  for (const auto& [from, to, gbps] : arcs) t.arcs.push_back({from, to, gbps, 1.0});
  t.validate();
  return t;
}

Arcs bothWays(const Arcs& edges) {
  Arcs arcs;
  for (const auto& [u, v, c] : edges) {
    arcs.emplace_back(u, v, c);
    arcs.emplace_back(v, u, c);
  }
  return arcs;
}

Rational frac(int64_t num, int64_t den = 1) { return Rational(num, den); }

void expectExact(const Rate& rate, Rational expected, const std::string& what) {
  EXPECT_TRUE(rate.exact) << what;
  EXPECT_EQ(rate.value, expected) << what;
  EXPECT_DOUBLE_EQ(rate.units, expected.toDouble()) << what;
}

struct ReferenceRow {
  const char* spec;
  Rational lambda;
  int rings;
  Rational sigma;
  Rational rsAg;
};

TEST(BoundsTest, ReferenceTableOfDgx1vSubsets) {
  const ReferenceRow rows[] = {
      {"dgx1v:0,1,4", frac(1), 0, frac(1), frac(3, 4)},
      {"dgx1v:0,1,2", frac(2), 2, frac(2), frac(3, 2)},
      {"dgx1v:0,2,3", frac(3), 2, frac(5, 2), frac(9, 4)},
      {"dgx1v:0,1,2,3", frac(4), 4, frac(3), frac(8, 3)},
      {"dgx1v:0,3,4,7", frac(3), 2, frac(7, 3), frac(2)},
      {"dgx1v", frac(6), 6, frac(24, 7), frac(24, 7)},
  };
  for (const ReferenceRow& row : rows) {
    SCOPED_TRACE(row.spec);
    const Topology t = fromSpec(row.spec);
    const Bounds b = computeBounds(t);
    expectExact(b.lambdaMin, row.lambda, "lambda");
    ASSERT_TRUE(b.rings.has_value());
    EXPECT_EQ(*b.rings, row.rings);
    ASSERT_TRUE(b.sigma.has_value());
    expectExact(*b.sigma, row.sigma, "sigma");
    expectExact(b.rsAg, row.rsAg, "rsAg");
    expectExact(b.allreduce, std::max(row.sigma, row.rsAg), "allreduce");
    EXPECT_LE(b.allreduce.value, b.allreduceCeiling.value);
  }
}

TEST(BoundsTest, Dgx1vAllEight) {
  const Topology t = fromSpec("dgx1v");
  const Bounds b = computeBounds(t);
  EXPECT_EQ(b.ranks, 8);
  ASSERT_EQ(b.lambda.size(), 8U);
  for (int r = 0; r < 8; ++r) expectExact(b.lambda[r], frac(6), "lambda " + std::to_string(r));
  expectExact(b.allreduceCeiling, frac(24, 7), "ceiling");
  EXPECT_DOUBLE_EQ(b.lambdaMin.gbps(t), 150.0);
  EXPECT_TRUE(b.notes.empty());
}

TEST(BoundsTest, Dgx1pAllEight) {
  const Topology t = fromSpec("dgx1p");
  const Bounds b = computeBounds(t);
  expectExact(b.lambdaMin, frac(4), "lambda");
  expectExact(b.allreduce, frac(16, 7), "allreduce");
  expectExact(*b.sigma, frac(16, 7), "sigma");
  expectExact(b.rsAg, frac(16, 7), "rsAg");
  EXPECT_DOUBLE_EQ(b.allreduce.gbps(t), 20.0 * 16 / 7);
  EXPECT_EQ(b.rings, 4);
}

TEST(BoundsTest, FullMeshes) {
  struct Row {
    int n;
    int rings;  // K4* and K6* are the complete digraphs without a Hamiltonian decomposition
    Rational sigma;
    Rational rsAg;
  };
  const Row rows[] = {{2, 1, frac(1), frac(1)}, {3, 2, frac(3, 2), frac(3, 2)},
                      {4, 2, frac(2), frac(2)}, {5, 4, frac(5, 2), frac(5, 2)},
                      {6, 4, frac(3), frac(3)}, {7, 6, frac(7, 2), frac(7, 2)}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.n);
    const Bounds b = computeBounds(fromSpec("mesh:" + std::to_string(row.n)));
    expectExact(b.lambdaMin, frac(row.n - 1), "lambda");
    EXPECT_EQ(b.rings, row.rings);
    expectExact(*b.sigma, row.sigma, "sigma");
    expectExact(b.rsAg, row.rsAg, "rsAg");
    expectExact(b.allreduceCeiling, row.rsAg, "ceiling");
  }
}

TEST(BoundsTest, LargeMeshUsesFlowStrengthAndSkipsRings) {
  const Bounds b = computeBounds(fromSpec("mesh:13"));
  expectExact(*b.sigma, frac(13, 2), "sigma");
  expectExact(b.rsAg, frac(13, 2), "rsAg");
  EXPECT_FALSE(b.rings.has_value());
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes.back().find("12 ranks"), std::string::npos);
}

TEST(BoundsTest, SwitchFabrics) {
  const Topology dgx2 = fromSpec("dgx2");
  const Bounds b = computeBounds(dgx2);
  EXPECT_EQ(b.ranks, 16);
  expectExact(b.lambdaMin, frac(1), "lambda");
  EXPECT_DOUBLE_EQ(b.lambdaMin.gbps(dgx2), 150.0);
  // n·B / (2(n − 1)): the per-rank bound.
  expectExact(b.rsAg, frac(16, 30), "rsAg");
  expectExact(b.allreduce, frac(8, 15), "allreduce");
  expectExact(b.allreduceCeiling, frac(8, 15), "ceiling");
  EXPECT_FALSE(b.sigma.has_value());
  EXPECT_FALSE(b.rings.has_value());  // 16 ranks

  const Topology h100 = fromSpec("h100x8");
  const Bounds h = computeBounds(h100);
  expectExact(h.rsAg, frac(4, 7), "h100 rsAg");
  EXPECT_NEAR(h.allreduce.gbps(h100), 257.142857, 1e-5);
  EXPECT_EQ(h.rings, 0);  // no rank-to-rank arcs
  EXPECT_FALSE(h.sigma.has_value());
}

TEST(BoundsTest, TwoTierClusters) {
  // Units: 2.5 GB/s (shm 8, PCIe 10, a 100 Gbit/s NIC 5).
  const Topology two = fromSpec("cluster:2x4");
  const Bounds b = computeBounds(two);
  expectExact(b.lambdaMin, frac(5), "lambda");
  EXPECT_DOUBLE_EQ(b.lambdaMin.gbps(two), 12.5);
  expectExact(b.rsAg, frac(5), "rsAg");  // A = one host and its NIC: 4 ranks / 5 units
  expectExact(b.allreduceCeiling, frac(8 * 34, 14), "ceiling");
  EXPECT_EQ(b.rings, 0);
  EXPECT_FALSE(b.sigma.has_value());

  // Mixed NICs: the slow host decides.
  const Topology mixed = fromSpec("cluster:2x4:100,25");
  const Bounds m = computeBounds(mixed);
  EXPECT_DOUBLE_EQ(m.lambdaMin.gbps(mixed), 3.125);
  EXPECT_DOUBLE_EQ(m.rsAg.gbps(mixed), 3.125);
  EXPECT_TRUE(m.rsAg.exact);

  // One rank per host: the per-rank formula n·B / (2(n − 1)).
  const Topology single = fromSpec("cluster:4x1");
  const Bounds s = computeBounds(single);
  EXPECT_DOUBLE_EQ(s.rsAg.gbps(single), 4 * 12.5 / 6);
  EXPECT_DOUBLE_EQ(s.lambdaMin.gbps(single), 12.5);

  // 256 ranks: flows, not enumeration (timing is a benchmark, not asserted here).
  const Topology big = fromSpec("cluster:32x8");
  const Bounds g = computeBounds(big);
  EXPECT_EQ(g.ranks, 256);
  expectExact(g.lambdaMin, frac(5), "cluster:32x8 lambda");
  expectExact(g.rsAg, frac(80, 31), "cluster:32x8 rsAg");
  EXPECT_FALSE(g.rings.has_value());
}

TEST(BoundsTest, AsymmetricCapacities) {
  // A directed triangle: 2 units clockwise, 1 unit counter-clockwise.
  const Topology t =
      ranksOnly(3, {{0, 1, 2}, {1, 2, 2}, {2, 0, 2}, {1, 0, 1}, {2, 1, 1}, {0, 2, 1}});
  const Bounds b = computeBounds(t);
  for (int r = 0; r < 3; ++r) expectExact(b.lambda[r], frac(3), "lambda");
  expectExact(*b.sigma, frac(3, 2), "sigma");  // undirected weights min(2, 1) = 1
  expectExact(b.rsAg, frac(9, 4), "rsAg");     // A = two ranks, 3 units leave
  expectExact(b.allreduce, frac(9, 4), "allreduce");
  expectExact(b.allreduceCeiling, frac(9, 4), "ceiling");
  EXPECT_EQ(b.rings, 3);  // clockwise twice, counter-clockwise once

  // Different roots, different rates: a star whose centre sends more than it receives.
  const Topology star = ranksOnly(3, {{0, 1, 3}, {0, 2, 3}, {1, 0, 1}, {2, 0, 1}});
  const Bounds s = computeBounds(star);
  expectExact(s.lambda[0], frac(3), "star root 0");
  expectExact(s.lambda[1], frac(1), "star root 1");
  expectExact(s.lambda[2], frac(1), "star root 2");
  expectExact(s.lambdaMin, frac(1), "star min");
  EXPECT_EQ(s.rings, 0);
}

TEST(BoundsTest, DisconnectedTopologies) {
  const Topology pairs = ranksOnly(4, bothWays({{0, 1, 1}, {2, 3, 1}}));
  const Bounds b = computeBounds(pairs);
  expectExact(b.lambdaMin, frac(0), "lambda");
  expectExact(b.rsAg, frac(0), "rsAg");
  expectExact(*b.sigma, frac(0), "sigma");
  expectExact(b.allreduce, frac(0), "allreduce");
  EXPECT_EQ(b.rings, 0);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_EQ(b.notes[0],
            "rank 2 cannot be reached from rank 0: the topology is not strongly connected, so "
            "every collective rate is 0");

  // Reachable one way only.
  const Topology oneWay = ranksOnly(2, {{0, 1, 1}});
  const Bounds o = computeBounds(oneWay);
  expectExact(o.lambda[0], frac(1), "lambda 0");
  expectExact(o.lambda[1], frac(0), "lambda 1");
  expectExact(o.rsAg, frac(0), "rsAg");
  expectExact(*o.sigma, frac(0), "sigma");
  EXPECT_EQ(o.rings, 0);
  ASSERT_FALSE(o.notes.empty());
  EXPECT_NE(o.notes[0].find("rank 0 cannot be reached from rank 1"), std::string::npos);
}

TEST(BoundsTest, SingleRankIsUnbounded) {
  const Bounds b = computeBounds(fromSpec("dgx1v:3"));
  EXPECT_EQ(b.ranks, 1);
  ASSERT_EQ(b.lambda.size(), 1U);
  EXPECT_TRUE(std::isinf(b.lambda[0].units));
  EXPECT_FALSE(b.lambdaMin.exact);
  EXPECT_TRUE(std::isinf(b.allreduce.units));
  EXPECT_FALSE(b.sigma.has_value());
  EXPECT_FALSE(b.rings.has_value());
}

TEST(BoundsTest, NonIntegralCapacities) {
  const Topology t = ranksOnly(3, bothWays({{0, 1, 1.5}, {1, 2, 1.5}, {0, 2, 1.5}}));
  ASSERT_FALSE(t.integral());
  const Bounds b = computeBounds(t);
  EXPECT_FALSE(b.lambdaMin.exact);
  EXPECT_DOUBLE_EQ(b.lambdaMin.units, 3.0);
  EXPECT_DOUBLE_EQ(b.sigma->units, 2.25);
  EXPECT_DOUBLE_EQ(b.rsAg.units, 2.25);
  EXPECT_DOUBLE_EQ(b.allreduceCeiling.units, 2.25);
  EXPECT_FALSE(b.rings.has_value());
}

TEST(BoundsTest, MaxFlowOnAHandGraph) {
  // The textbook network (CLRS 26.1): maximum flow 23 from vertex 0 to vertex 5.
  const Arcs arcs = {{0, 1, 16}, {0, 2, 13}, {1, 3, 12}, {2, 1, 4}, {2, 4, 14},
                     {3, 2, 9},  {3, 5, 20}, {4, 3, 7},  {4, 5, 4}};
  const Topology t = ranksOnly(6, arcs);
  EXPECT_EQ(maxFlowUnits(t, 0, 5), 23);
  EXPECT_DOUBLE_EQ(maxFlow(t, 0, 5), 23.0);
  EXPECT_EQ(maxFlowUnits(t, 5, 0), 0);
  EXPECT_EQ(maxFlowUnits(t, 2, 2), 0);
  const Topology thirds = ranksOnly(6, arcs, 3.0);  // 16/3 is not a whole unit
  EXPECT_DOUBLE_EQ(maxFlow(thirds, 0, 5), 23.0 / 3);
  EXPECT_THROW(maxFlowUnits(thirds, 0, 5), Error);
  EXPECT_THROW(maxFlow(t, 0, 6), Error);
  EXPECT_THROW(maxFlow(t, -1, 2), Error);
}

TEST(BoundsTest, MaxFlowThroughASwitch) {
  Topology t = ranksOnly(3, {});
  t.vertices.push_back({VertexKind::kSwitch, "sw0", -1});
  for (int r = 0; r < 3; ++r) {
    t.arcs.push_back({r, 3, 2.0 + r, 1.0});
    t.arcs.push_back({3, r, 1.0, 1.0});
  }
  t.validate();
  EXPECT_EQ(maxFlowUnits(t, 2, 1), 1);  // limited by sw0 → r1
  EXPECT_EQ(maxFlowUnits(t, 2, 3), 4);
  const Bounds b = computeBounds(t);
  expectExact(b.lambdaMin, frac(1), "lambda");
  // A = {r0, r1, sw0}? leaves 1 unit to r2 with 2 ranks: rate 3 / (2 · 2).
  expectExact(b.rsAg, frac(3, 4), "rsAg");
}

// Every subset of the DGX-1V: exhaustive and flow-based algorithms agree, and the reference
// counts of NVLink-connected subsets without a ring hold.
TEST(BoundsTest, FlowAlgorithmsMatchEnumerationOnDgx1vSubsets) {
  const Topology full = fromSpec("dgx1v");
  int connected = 0;
  int ringless = 0;
  for (uint32_t mask = 1; mask < 256; ++mask) {
    std::vector<int> ranks;
    for (int r = 0; r < 8; ++r) {
      if (mask >> r & 1U) ranks.push_back(r);
    }
    if (ranks.size() < 2) continue;
    const Topology t = subset(full, ranks);
    const auto net = detail::integralNetwork(t);
    const auto byPartitions = detail::strengthByPartitions(net);
    const auto byFlows = detail::strengthByFlows(net);
    EXPECT_EQ(frac(byPartitions.cut, byPartitions.parts - 1), frac(byFlows.cut, byFlows.parts - 1))
        << t.name;
    const auto enumerated = detail::crowdedSetByEnumeration(net);
    const auto flowed = detail::crowdedSetByFlows(net);
    if (enumerated.capacityOut == 0) {
      EXPECT_EQ(flowed.capacityOut, 0) << t.name;
      continue;
    }
    ++connected;
    EXPECT_EQ(frac(enumerated.ranksInside, enumerated.capacityOut),
              frac(flowed.ranksInside, flowed.capacityOut))
        << t.name;
    if (detail::ringCount(net, 1 << 20) == 0) ++ringless;
  }
  EXPECT_EQ(connected, 197);
  EXPECT_EQ(ringless, 104);
}

// Pseudo-random directed graphs, integral and not, some with a switch vertex.
TEST(BoundsTest, FlowAlgorithmsMatchEnumerationOnRandomGraphs) {
  uint64_t state = 12345;
  auto next = [&state](int bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % static_cast<uint64_t>(bound));
  };
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + trial % 7;
    const bool withSwitch = trial % 3 == 0;
    const double scale = trial % 2 == 0 ? 1.0 : 0.7;
    Arcs arcs;
    const int vertices = n + (withSwitch ? 1 : 0);
    for (int u = 0; u < vertices; ++u) {
      for (int v = 0; v < vertices; ++v) {
        const int units = next(4);
        if (u != v && units > 0) arcs.emplace_back(u, v, units * scale);
      }
    }
    Topology t = ranksOnly(n, {});
    if (withSwitch) t.vertices.push_back({VertexKind::kSwitch, "sw", -1});
    for (const auto& [u, v, c] : arcs) t.arcs.push_back({u, v, c, 1.0});
    t.validate();
    SCOPED_TRACE("trial " + std::to_string(trial));
    const auto net = detail::realNetwork(t);
    if (!withSwitch) {
      const auto a = detail::strengthByPartitions(net);
      const auto b = detail::strengthByFlows(net);
      EXPECT_NEAR(a.cut / (a.parts - 1), b.cut / (b.parts - 1), 1e-9);
    }
    const auto e = detail::crowdedSetByEnumeration(net);
    const auto f = detail::crowdedSetByFlows(net);
    if (e.capacityOut <= 0) {
      EXPECT_LE(f.capacityOut, 0);
    } else {
      EXPECT_NEAR(e.ranksInside / e.capacityOut, f.ranksInside / f.capacityOut, 1e-9);
    }
    // λ from the skipping algorithm equals the plain definition.
    const auto lambda = detail::rootedConnectivities(net);
    for (int r = 0; r < n; ++r) {
      double plain = std::numeric_limits<double>::infinity();
      for (int v = 0; v < n; ++v) {
        if (v != r) plain = std::min(plain, detail::maxFlowOf(net, r, v));
      }
      EXPECT_NEAR(lambda[r], plain, 1e-9) << "root " << r;
    }
  }
}

}  // namespace
}  // namespace grove::topo
