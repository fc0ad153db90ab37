// Tests of the tree packer against the flow bounds: on every NVLink-connected subset of the
// DGX-1V (197 of them) the arborescences reach λ exactly from every root and the allreduce
// trees reach the better of σ and RS+AG within 1%; every packing is checked to be made of
// spanning trees that fit the capacities together. Also DGX-1P, switch fabrics, real-valued
// capacities, the degenerate one- and two-rank cases, and the pruning of LP packings.
#include "algo/packing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "algo/packing_internal.hpp"
#include "grove/error.hpp"
#include "topo/bounds.hpp"
#include "topo/topology.hpp"

namespace grove::algo {
namespace {

constexpr int kDgx1Links[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

// Every subset (ascending GPU lists) of 2..8 GPUs whose NVLink graph is connected.
std::vector<std::vector<int>> connectedSubsets() {
  std::vector<std::vector<int>> subsets;
  for (int mask = 1; mask < 256; ++mask) {
    std::vector<int> gpus;
    for (int g = 0; g < 8; ++g) {
      if (mask & (1 << g)) gpus.push_back(g);
    }
    if (gpus.size() < 2) continue;
    int reached = 1 << gpus[0];
    for (bool grew = true; grew;) {
      grew = false;
      for (int a : gpus) {
        for (int b : gpus) {
          if ((reached & (1 << a)) && !(reached & (1 << b)) && kDgx1Links[a][b] > 0) {
            reached |= 1 << b;
            grew = true;
          }
        }
      }
    }
    if (reached == mask) subsets.push_back(gpus);
  }
  return subsets;
}

std::string specOf(const std::string& preset, const std::vector<int>& gpus) {
  std::string spec = preset + ":";
  for (size_t i = 0; i < gpus.size(); ++i) spec += (i ? "," : "") + std::to_string(gpus[i]);
  return spec;
}

// Checks that every tree is a spanning arborescence of `root` whose edges have a route, and
// returns the load of every arc (rates; `bothWays` adds each edge reversed as well).
std::vector<double> checkTrees(const topo::Topology& t, const Packing& packing, int root,
                               bool bothWays, const std::string& what) {
  const int n = t.rankCount();
  std::vector<double> load(t.arcs.size(), 0.0);
  double sum = 0;
  for (const Tree& tree : packing.trees) {
    EXPECT_EQ(tree.root, root) << what;
    EXPECT_EQ(static_cast<int>(tree.parent.size()), n) << what;
    EXPECT_GT(tree.rate.units, 0.0) << what;
    if (static_cast<int>(tree.parent.size()) != n) continue;
    EXPECT_EQ(tree.parent[static_cast<size_t>(root)], -1) << what;
    for (int v = 0; v < n; ++v) {
      if (v == root) continue;
      int x = v;
      int steps = 0;
      while (x != root && x >= 0 && steps <= n) {
        x = tree.parent[static_cast<size_t>(x)];
        ++steps;
      }
      EXPECT_EQ(x, root) << what << ": rank " << v << " does not reach the root";
      const int p = tree.parent[static_cast<size_t>(v)];
      if (p < 0) continue;
      for (int arc : t.route(p, v)) load[static_cast<size_t>(arc)] += tree.rate.units;
      if (bothWays) {
        for (int arc : t.route(v, p)) load[static_cast<size_t>(arc)] += tree.rate.units;
      }
    }
    sum += tree.rate.units;
  }
  EXPECT_NEAR(sum, packing.total.units, 1e-9 * std::max(1.0, sum)) << what;
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    const double capacity = t.arcs[a].capacityGBps / t.unitGBps;
    EXPECT_LE(load[a], capacity * (1 + 1e-9)) << what << ": arc " << a << " overloaded";
  }
  return load;
}

void checkExactSum(const Packing& packing, const std::string& what) {
  topo::Rational sum(0);
  for (const Tree& tree : packing.trees) {
    EXPECT_TRUE(tree.rate.exact) << what;
    sum += tree.rate.value;
  }
  EXPECT_EQ(sum, packing.total.value) << what;
}

// Checks the RS+AG packings together; returns the common rate x.
double checkRsAg(const topo::Topology& t, const std::vector<Packing>& packings,
                 const std::string& what) {
  const int n = t.rankCount();
  EXPECT_EQ(static_cast<int>(packings.size()), n) << what;
  if (packings.empty()) return 0;
  std::vector<double> load(t.arcs.size(), 0.0);
  const double x = packings.front().total.units;
  for (int r = 0; r < static_cast<int>(packings.size()); ++r) {
    EXPECT_NEAR(packings[static_cast<size_t>(r)].total.units, x, 1e-9 * std::max(1.0, x)) << what;
    std::vector<double> mine = checkTrees(t, packings[static_cast<size_t>(r)], r, false,
                                          what + " root " + std::to_string(r));
    for (size_t a = 0; a < load.size(); ++a) load[a] += mine[a];
  }
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    EXPECT_LE(load[a], t.arcs[a].capacityGBps / t.unitGBps * (1 + 1e-9)) << what << " arc " << a;
  }
  return x;
}

// The allreduce rate of the better construction, compared with the bound; returns the ratio.
double allreduceRatio(const topo::Topology& t, const topo::Bounds& bounds, const std::string& what,
                      const PackOptions& options = {}) {
  const int n = t.rankCount();
  const Packing spanning = packSpanningTrees(t, 0, options);
  checkTrees(t, spanning, 0, true, what + " spanning");
  const double x = checkRsAg(t, packRsAg(t, options), what + " rsag");
  const double best = std::max(spanning.total.units, n * x / 2);
  return best / bounds.allreduce.units;
}

TEST(Packing, EveryConnectedDgx1vSubsetReachesTheBounds) {
  const std::vector<std::vector<int>> subsets = connectedSubsets();
  ASSERT_EQ(subsets.size(), 197u);
  int checked = 0;
  double worstAllreduce = 2.0;
  std::string worstSpec;
  for (const std::vector<int>& gpus : subsets) {
    const std::string spec = specOf("dgx1v", gpus);
    const topo::Topology t = topo::fromSpec(spec);
    const topo::Bounds bounds = topo::computeBounds(t);
    for (int root = 0; root < t.rankCount(); ++root) {
      const std::string what = spec + " root " + std::to_string(root);
      const Packing packing = packArborescences(t, root);
      ASSERT_TRUE(packing.total.exact) << what;
      EXPECT_EQ(packing.total.value, bounds.lambda[static_cast<size_t>(root)].value) << what;
      checkExactSum(packing, what);
      checkTrees(t, packing, root, false, what);
    }
    const double ratio = allreduceRatio(t, bounds, spec);
    EXPECT_GE(ratio, 0.99) << spec << ": allreduce bound " << bounds.allreduce.units;
    if (ratio < worstAllreduce) {
      worstAllreduce = ratio;
      worstSpec = spec;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 197);
  std::printf("197 subsets: worst allreduce packing / bound = %.6f (%s)\n", worstAllreduce,
              worstSpec.c_str());
}

TEST(Packing, ReferenceRowsOfTheDgx1v) {
  struct Row {
    const char* spec;
    int64_t lambda;
  };
  for (const Row& row : {Row{"dgx1v:0,1,4", 1}, Row{"dgx1v:0,1,2", 2}, Row{"dgx1v:0,2,3", 3},
                         Row{"dgx1v:0,1,2,3", 4}, Row{"dgx1v:0,3,4,7", 3}, Row{"dgx1v", 6}}) {
    const topo::Topology t = topo::fromSpec(row.spec);
    for (int root = 0; root < t.rankCount(); ++root) {
      EXPECT_EQ(packArborescences(t, root).total.value, topo::Rational(row.lambda)) << row.spec;
    }
  }
  // All 8: allreduce reaches 24/7 link units (σ = RS+AG).
  const topo::Topology t = topo::fromSpec("dgx1v");
  EXPECT_NEAR(packSpanningTrees(t, 0).total.units, 24.0 / 7, 0.01 * 24 / 7);
  EXPECT_NEAR(8 * packRsAg(t).front().total.units / 2, 24.0 / 7, 0.01 * 24 / 7);
}

size_t treeCount(const std::vector<Packing>& packings) {
  size_t count = 0;
  for (const Packing& packing : packings) count += packing.trees.size();
  return count;
}

// The LP's optima carry slivers (one tree per tight arc); the packer drops the lightest trees
// while the re-solved rate stays within 0.5% of the optimum. All 8 GPUs of a DGX-1V: the
// RS+AG LP has 32 trees and the spanning LP 15; pruned, 30 and 14.
TEST(Packing, LpPackingsArePruned) {
  const topo::Topology t = topo::fromSpec("dgx1v");
  const std::vector<Packing> rsag = packRsAg(t);
  EXPECT_EQ(treeCount(rsag), 30u);
  EXPECT_GE(8 * checkRsAg(t, rsag, "dgx1v rsag") / 2, 0.995 * 24 / 7);
  const Packing spanning = packSpanningTrees(t, 0);
  EXPECT_EQ(spanning.trees.size(), 14u);
  checkTrees(t, spanning, 0, true, "dgx1v spanning");
  EXPECT_GE(spanning.total.units, 0.995 * 24 / 7);
}

// pruneTrees directly: on a 3-rank full mesh of unit links, root 0 broadcasts at λ = 2 over
// B = 0→1→2 and C = 0→2→1 (rate 1 each). Given a sliver A = 0→1, 0→2 as well, pruning drops
// A (the re-solve still reaches 2) and then stops: without B or C only 1 is left.
TEST(Packing, PruneTreesDropsSliversAndResolvesRates) {
  using packing_detail::LinkTree;
  using packing_detail::WeightedTree;
  const topo::Topology t = topo::fromSpec("mesh:3");
  const packing_detail::RankGraph graph = packing_detail::buildRankGraph(t, false);
  const LinkTree a{-1, graph.link(0, 1), graph.link(0, 2)};
  const LinkTree b{-1, graph.link(0, 1), graph.link(1, 2)};
  const LinkTree c{-1, graph.link(2, 1), graph.link(0, 2)};
  std::vector<std::vector<WeightedTree>> groups{
      {WeightedTree{a, 0.1}, WeightedTree{b, 0.9}, WeightedTree{c, 0.9}}};
  packing_detail::pruneTrees(graph, groups, false, false, 0.0);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].size(), 2u);
  EXPECT_EQ(groups[0][0].links, b);
  EXPECT_EQ(groups[0][1].links, c);
  EXPECT_NEAR(groups[0][0].rate, 1.0, 1e-9);
  EXPECT_NEAR(groups[0][1].rate, 1.0, 1e-9);
  // One tree per group is never dropped, whatever the slack (nor re-solved: reduce() scales).
  std::vector<std::vector<WeightedTree>> single{{WeightedTree{a, 0.5}}};
  packing_detail::pruneTrees(graph, single, false, false, 1.0);
  ASSERT_EQ(single[0].size(), 1u);
  EXPECT_EQ(single[0][0].rate, 0.5);
}

int deepest(const Packing& packing) {
  int most = 0;
  for (const Tree& tree : packing.trees) {
    for (size_t v = 0; v < tree.parent.size(); ++v) {
      int depth = 0;
      for (int x = static_cast<int>(v); tree.parent[static_cast<size_t>(x)] >= 0;
           x = tree.parent[static_cast<size_t>(x)]) {
        ++depth;
      }
      most = std::max(most, depth);
    }
  }
  return most;
}

// Trees pipeline their data over tiles, so depth costs time: the exact packer flattens its
// trees. From GPU 0 of a DGX-1V, depth 3 is impossible (every rank's six in-links are all
// used; an exhaustive search finds no packing of depth-3 trees), and the packer reaches 4;
// Lovász's greedy growth alone gave a path of depth 7.
TEST(Packing, ExactArborescencesAreShallow) {
  const topo::Topology v = topo::fromSpec("dgx1v");
  const Packing fromZero = packArborescences(v, 0);
  EXPECT_EQ(fromZero.trees.size(), 6u);
  EXPECT_EQ(fromZero.total.value, topo::Rational(6));
  EXPECT_EQ(deepest(fromZero), 4);
  for (int root = 0; root < 8; ++root) {
    EXPECT_LE(deepest(packArborescences(v, root)), 5) << "dgx1v root " << root;
    EXPECT_EQ(deepest(packArborescences(topo::fromSpec("dgx1p"), root)), 3) << "dgx1p " << root;
  }
  EXPECT_EQ(deepest(packArborescences(topo::fromSpec("dgx1v:0,3,4,7"), 0)), 3);
  EXPECT_LE(deepest(packArborescences(topo::fromSpec("dgx1v:0,1,2,4,5"), 0)), 4);
}

// The emulated mesh's topology: the NVLinks plus a PCIe switch whose ports are half a link
// unit. The trees use rank-to-rank links only, and those are integral, so the packing is
// still the exact one (not the LP's many fractional trees).
TEST(Packing, SlowSwitchPortsKeepThePackingExact) {
  std::string links;
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) {
      if (kDgx1Links[a][b] == 0) continue;
      links += "{\"from\": " + std::to_string(a) + ", \"to\": " + std::to_string(b) +
               ", \"gbps\": 25, \"count\": " + std::to_string(kDgx1Links[a][b]) + "},";
    }
  }
  for (int r = 0; r < 8; ++r) {
    links += "{\"from\": " + std::to_string(r) + ", \"to\": \"pcie\", \"gbps\": 12.5}";
    links += r < 7 ? "," : "";
  }
  std::string vertices;
  for (int r = 0; r < 8; ++r) vertices += "{\"rank\": " + std::to_string(r) + "},";
  const topo::Topology t =
      topo::readJson(R"({"name": "mesh", "unit_gbps": 25, "vertices": [)" + vertices +
                     R"({"name": "pcie", "switch": true}], "links": [)" + links + "]}");
  ASSERT_FALSE(t.integral());
  const Packing packing = packArborescences(t, 0);
  ASSERT_TRUE(packing.total.exact);
  EXPECT_EQ(packing.total.value, topo::Rational(6));
  EXPECT_EQ(packing.trees.size(), 6u);
  EXPECT_EQ(deepest(packing), 4);
  checkExactSum(packing, "mesh");
  checkTrees(t, packing, 0, false, "mesh");
}

TEST(Packing, Dgx1pAllEight) {
  const topo::Topology t = topo::fromSpec("dgx1p");
  const topo::Bounds bounds = topo::computeBounds(t);
  for (int root = 0; root < 8; ++root) {
    const Packing packing = packArborescences(t, root);
    EXPECT_EQ(packing.total.value, topo::Rational(4));
    checkExactSum(packing, "dgx1p");
    checkTrees(t, packing, root, false, "dgx1p");
  }
  EXPECT_GE(allreduceRatio(t, bounds, "dgx1p"), 0.99);
  EXPECT_NEAR(bounds.allreduce.units, 16.0 / 7, 1e-12);
}

TEST(Packing, RealValuedCapacities) {
  const topo::Topology t = topo::readJson(R"({"name": "odd", "unit_gbps": 1, "ranks": 4,
    "links": [{"from":"r0","to":"r1","gbps":2.5}, {"from":"r1","to":"r2","gbps":1.0},
              {"from":"r2","to":"r3","gbps":0.7}, {"from":"r3","to":"r0","gbps":2.5},
              {"from":"r0","to":"r2","gbps":1.0},
              {"from":"r1","to":"r3","gbps":0.7, "bidirectional": false}]})");
  ASSERT_FALSE(t.integral());
  const topo::Bounds bounds = topo::computeBounds(t);
  for (int root = 0; root < 4; ++root) {
    const std::string what = "odd root " + std::to_string(root);
    const Packing packing = packArborescences(t, root);
    const double lambda = bounds.lambda[static_cast<size_t>(root)].units;
    EXPECT_FALSE(packing.total.exact) << what;
    EXPECT_GE(packing.total.units, 0.99 * lambda) << what;
    EXPECT_LE(packing.total.units, lambda * (1 + 1e-9)) << what;
    EXPECT_LE(static_cast<int>(packing.trees.size()), PackOptions{}.maxTrees) << what;
    checkTrees(t, packing, root, false, what);
  }
  EXPECT_GE(allreduceRatio(t, bounds, "odd"), 0.99);
}

TEST(Packing, TwoRanks) {
  const topo::Topology t = topo::fromSpec("dgx1v:0,3");  // two NVLinks each way
  const Packing packing = packArborescences(t, 1);
  ASSERT_EQ(packing.trees.size(), 1u);
  EXPECT_EQ(packing.trees[0].parent, (std::vector<int>{1, -1}));
  EXPECT_EQ(packing.trees[0].rate.value, topo::Rational(2));
  EXPECT_EQ(packing.total.value, topo::Rational(2));
  EXPECT_NEAR(packSpanningTrees(t, 0).total.units, 2.0, 1e-9);
  const std::vector<Packing> rsag = packRsAg(t);
  ASSERT_EQ(rsag.size(), 2u);
  EXPECT_NEAR(rsag[0].total.units, 2.0, 1e-9);
  EXPECT_NEAR(rsag[1].total.units, 2.0, 1e-9);
  EXPECT_EQ(rsag[1].trees.at(0).parent, (std::vector<int>{1, -1}));
}

TEST(Packing, OneRank) {
  const topo::Topology t = topo::fromSpec("dgx1v:5");
  for (const Packing& packing : {packArborescences(t, 0), packSpanningTrees(t, 0)}) {
    ASSERT_EQ(packing.trees.size(), 1u);
    EXPECT_EQ(packing.trees[0].parent, (std::vector<int>{-1}));
    EXPECT_EQ(packing.total.value, topo::Rational(1));
  }
  EXPECT_EQ(packRsAg(t).size(), 1u);
}

TEST(Packing, DisconnectedRanksGiveNothing) {
  const topo::Topology t =
      topo::readJson(R"({"ranks": 3, "links": [{"from":"r0","to":"r1","gbps":1}]})");
  EXPECT_TRUE(packArborescences(t, 0).trees.empty());
  EXPECT_EQ(packArborescences(t, 0).total.units, 0.0);
  EXPECT_TRUE(packSpanningTrees(t, 0).trees.empty());
  for (const Packing& packing : packRsAg(t)) EXPECT_TRUE(packing.trees.empty());
}

TEST(Packing, SwitchFabricsNeedAllowSwitches) {
  for (const char* spec : {"dgx2", "h100x8"}) {
    const topo::Topology t = topo::fromSpec(spec);
    const topo::Bounds bounds = topo::computeBounds(t);
    EXPECT_TRUE(packArborescences(t, 0).trees.empty()) << spec;
    PackOptions options;
    options.allowSwitches = true;
    for (int root : {0, t.rankCount() - 1}) {
      const Packing packing = packArborescences(t, root, options);
      EXPECT_GE(packing.total.units, 0.99 * bounds.lambda[static_cast<size_t>(root)].units) << spec;
      checkTrees(t, packing, root, false, spec);
    }
    const int n = t.rankCount();
    const double x = checkRsAg(t, packRsAg(t, options), spec);
    EXPECT_GE(n * x / 2, 0.99 * bounds.rsAg.units) << spec;
    checkTrees(t, packSpanningTrees(t, 0, options), 0, true, spec);
  }
}

TEST(Packing, SmallClusterThroughSwitches) {
  const topo::Topology t = topo::fromSpec("cluster:3x2:100,25,100");
  const topo::Bounds bounds = topo::computeBounds(t);
  PackOptions options;
  options.allowSwitches = true;
  for (int root = 0; root < t.rankCount(); ++root) {
    const Packing packing = packArborescences(t, root, options);
    checkTrees(t, packing, root, false, "cluster");
    EXPECT_GE(packing.total.units, 0.99 * bounds.lambda[static_cast<size_t>(root)].units);
  }
  const double x = checkRsAg(t, packRsAg(t, options), "cluster");
  EXPECT_GE(t.rankCount() * x / 2, 0.99 * bounds.rsAg.units);
}

// 72 ranks: beyond the LP, the multiplicative-weights packer with greedy trees and rail links.
TEST(Packing, LargeClusterThroughSwitches) {
  const topo::Topology t = topo::fromSpec("cluster:9x8");
  const topo::Bounds bounds = topo::computeBounds(t);
  PackOptions options;
  options.allowSwitches = true;
  for (int root : {0, 37}) {
    const Packing packing = packArborescences(t, root, options);
    checkTrees(t, packing, root, false, "cluster:9x8");
    EXPECT_GE(packing.total.units, 0.95 * bounds.lambda[static_cast<size_t>(root)].units);
  }
  checkTrees(t, packSpanningTrees(t, 5, options), 5, true, "cluster:9x8 spanning");
  const double x = checkRsAg(t, packRsAg(t, options), "cluster:9x8");
  EXPECT_GE(t.rankCount() * x / 2, 0.95 * bounds.rsAg.units);
}

TEST(Packing, IsDeterministic) {
  const topo::Topology t = topo::fromSpec("dgx1v:0,1,2,4,5");
  auto same = [](const Packing& a, const Packing& b) {
    ASSERT_EQ(a.trees.size(), b.trees.size());
    for (size_t i = 0; i < a.trees.size(); ++i) {
      EXPECT_EQ(a.trees[i].parent, b.trees[i].parent);
      EXPECT_EQ(a.trees[i].rate.units, b.trees[i].rate.units);
    }
  };
  same(packArborescences(t, 2), packArborescences(t, 2));
  same(packSpanningTrees(t, 1), packSpanningTrees(t, 1));
  const std::vector<Packing> a = packRsAg(t);
  const std::vector<Packing> b = packRsAg(t);
  for (size_t r = 0; r < a.size(); ++r) same(a[r], b[r]);
}

TEST(Packing, RootOutOfRangeIsAnError) {
  const topo::Topology t = topo::fromSpec("dgx1v:0,1,4");
  for (int root : {-1, 3}) {
    try {
      packArborescences(t, root);
      ADD_FAILURE() << "no error for root " << root;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("rootRank " + std::to_string(root)), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(packSpanningTrees(t, 7), Error);
}

}  // namespace
}  // namespace grove::algo
