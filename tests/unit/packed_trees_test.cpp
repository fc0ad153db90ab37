// The topology-aware generators (packed trees, RS+AG trees, onehop, hierarchical), proven by
// the symbolic verifier on every NVLink-connected subset of a DGX-1V and on the switch and
// cluster presets, out of place and in place, with FIFOs of 2 and 4 slots; plus the chunk
// shares (proportional to tree rates) and plans over hand-built trees.
#include "algo/packed_trees.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "algo/packed_plans.hpp"
#include "algo/packing.hpp"
#include "algo/registry.hpp"
#include "grove/error.hpp"
#include "plan/verifier.hpp"
#include "topo/topology.hpp"

namespace grove::algo {
namespace {

using plan::Collective;

plan::PlanRequest requestFor(Collective collective, const topo::Topology* topology, int n,
                             int root = -1) {
  plan::PlanRequest request;
  request.collective = collective;
  request.nranks = n;
  request.root = root;
  request.count = 1000;
  request.topology = topology;
  return request;
}

/// Every rank's plan of `name` for `base`, verified in 4 configurations; "" when all pass.
std::string verifyAll(const std::vector<plan::Plan>& plans) {
  for (bool inPlace : {false, true}) {
    for (int depth : {2, 4}) {
      plan::VerifyOptions options;
      options.inPlace = inPlace;
      options.fifoDepth = depth;
      const Status result = plan::verify(plans, options);
      if (!result.ok()) {
        return (inPlace ? "in place, depth " : "out of place, depth ") + std::to_string(depth) +
               ": " + result.message();
      }
    }
  }
  return "";
}

std::vector<plan::Plan> buildAll(const Algorithm& algorithm, plan::PlanRequest request) {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < request.nranks; ++r) {
    request.rank = r;
    plans.push_back(algorithm.build(request));
  }
  return plans;
}

/// Builds and verifies `name` for `collective` on `topology`; fails the test with context.
void expectProven(std::string_view name, Collective collective, const topo::Topology& topology,
                  int root = -1) {
  const Algorithm* algorithm = findAlgorithm(collective, name);
  ASSERT_NE(algorithm, nullptr) << name;
  const plan::PlanRequest request = requestFor(collective, &topology, topology.rankCount(), root);
  const Status applies = algorithm->applies(request);
  ASSERT_TRUE(applies.ok()) << name << " " << plan::toString(collective) << " on " << topology.name
                            << ": " << applies.message();
  EXPECT_GT(algorithm->costUs(request, CostParams{}), 0.0);
  const std::string error = verifyAll(buildAll(*algorithm, request));
  EXPECT_EQ(error, "") << name << " " << plan::toString(collective) << " root " << root << " on "
                       << topology.name;
}

bool nvlinkConnected(const topo::Topology& t) {
  const int n = t.rankCount();
  std::vector<bool> seen(t.vertices.size(), false);
  std::vector<int> stack = {t.vertexOfRank(0)};
  seen[stack[0]] = true;
  int reached = 1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int a : t.outArcs(v)) {
      const int w = t.arcs[a].to;
      if (seen[w] || t.vertices[w].kind != topo::VertexKind::kRank) continue;
      seen[w] = true;
      ++reached;
      stack.push_back(w);
    }
  }
  return reached == n;
}

std::vector<topo::Topology> connectedDgx1vSubsets() {
  const topo::Topology full = topo::fromSpec("dgx1v");
  std::vector<topo::Topology> subsets;
  for (int mask = 0; mask < 256; ++mask) {
    std::vector<int> ranks;
    for (int r = 0; r < 8; ++r) {
      if (mask & (1 << r)) ranks.push_back(r);
    }
    if (ranks.size() < 2) continue;
    topo::Topology t = topo::subset(full, ranks);
    if (nvlinkConnected(t)) subsets.push_back(std::move(t));
  }
  return subsets;
}

topo::Rate exactRate(topo::Rational value) { return topo::Rate{true, value, value.toDouble()}; }

Tree makeTree(int root, std::vector<int> parent, topo::Rational rate) {
  Tree tree;
  tree.root = root;
  tree.parent = std::move(parent);
  tree.rate.exact = true;
  tree.rate.value = rate;
  tree.rate.units = rate.toDouble();
  return tree;
}

Tree inexactTree(double units) {
  Tree tree = makeTree(0, {-1, 0}, 0);
  tree.rate.exact = false;
  tree.rate.units = units;
  return tree;
}

// ---- Chunk shares ---------------------------------------------------------------------------

TEST(PackedShares, ExactRatesGiveExactShares) {
  const std::vector<Tree> equal = {makeTree(0, {-1, 0}, 1), makeTree(0, {-1, 0}, 1),
                                   makeTree(0, {-1, 0}, 1)};
  EXPECT_EQ(chunksForTrees(equal), 3u);
  EXPECT_EQ(shareChunks(equal, 3), (std::vector<uint32_t>{1, 1, 1}));
  const std::vector<Tree> thirds = {makeTree(0, {-1, 0}, {1, 2}), makeTree(0, {-1, 0}, {1, 3})};
  EXPECT_EQ(chunksForTrees(thirds), 5u);  // shares 3/5 and 2/5
  EXPECT_EQ(shareChunks(thirds, 5), (std::vector<uint32_t>{3, 2}));
  EXPECT_EQ(shareChunks(thirds, 10), (std::vector<uint32_t>{6, 4}));
  const std::vector<Tree> one = {makeTree(0, {-1, 0}, 6)};
  EXPECT_EQ(chunksForTrees(one), 1u);
}

TEST(PackedShares, LargestRemainderAndAtLeastOneChunk) {
  const std::vector<Tree> split = {inexactTree(0.7), inexactTree(0.3)};
  EXPECT_EQ(chunksForTrees(split), kDefaultChunks);
  EXPECT_EQ(shareChunks(split, 60), (std::vector<uint32_t>{42, 18}));
  // 60 * 2/3 = 40, 60 * 1/3 = 20 although the doubles are not exact.
  EXPECT_EQ(shareChunks({inexactTree(2.0 / 3), inexactTree(1.0 / 3)}, 60),
            (std::vector<uint32_t>{40, 20}));
  // Quotas 7/3, 7/3, 7/3 of 7: the first remainder wins the extra chunk.
  EXPECT_EQ(shareChunks({inexactTree(1), inexactTree(1), inexactTree(1)}, 7),
            (std::vector<uint32_t>{3, 2, 2}));
  // A tiny tree still gets one chunk, taken from the largest.
  EXPECT_EQ(shareChunks({inexactTree(1000), inexactTree(1)}, 60), (std::vector<uint32_t>{59, 1}));
  // Shares of exact rates with a denominator above 64 fall back to 60 chunks.
  const std::vector<Tree> odd = {makeTree(0, {-1, 0}, {1, 67}), makeTree(0, {-1, 0}, 1)};
  EXPECT_EQ(chunksForTrees(odd), kDefaultChunks);
  EXPECT_EQ(shareChunks(odd, 60), (std::vector<uint32_t>{1, 59}));
}

TEST(PackedShares, Dgx1vPackingsSplitDataByRate) {
  const topo::Topology t = topo::fromSpec("dgx1v");
  for (int root = 0; root < 8; ++root) {
    const Packing packing = packArborescences(t, root);
    const uint32_t k = chunksForTrees(packing.trees);
    ASSERT_LE(k, kMaxExactChunks);
    const std::vector<TreeRun> runs = runsOf(packing, k);
    uint32_t next = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(runs[i].first, next);
      next += runs[i].count;
      // count / k == rate / total, exactly.
      EXPECT_EQ(topo::Rational(runs[i].count, k), packing.trees[i].rate.value / packing.total.value)
          << "root " << root << " tree " << i;
    }
    EXPECT_EQ(next, k);
    // The broadcast plan uses exactly these chunks, one channel per tree, once the data fills
    // k chunks of kMinChunkBytes (4 MiB of float32 here).
    plan::PlanRequest request = requestFor(Collective::kBroadcast, &t, 8, root);
    request.count = size_t{1} << 20;
    request.rank = root;
    const plan::Plan p = findAlgorithm(Collective::kBroadcast, "trees")->build(request);
    EXPECT_EQ(p.chunksPerBlock, k);
    EXPECT_EQ(p.channels.size(), packing.trees.size());
  }
}

TEST(PackedShares, SmallDataTakesFewerChunks) {
  EXPECT_EQ(chunksForBytes(60, 0), 1u);
  EXPECT_EQ(chunksForBytes(60, kMinChunkBytes - 1), 1u);
  EXPECT_EQ(chunksForBytes(60, 3 * kMinChunkBytes + 5), 3u);
  EXPECT_EQ(chunksForBytes(60, 60.0 * kMinChunkBytes), 60u);
  EXPECT_EQ(chunksForBytes(60, 1e12), 60u);
  EXPECT_EQ(chunksForBytes(1, 1e12), 1u);
  // A 4 KiB RS+AG allreduce on 2 hosts x 2: one chunk per root's shard (4 parts in all, not
  // 60 per shard), 4 MiB the packing's exact chunks; both proven on every rank.
  const topo::Topology t = topo::fromSpec("cluster:2x2:1");
  const Algorithm* rsag = findAlgorithm(Collective::kAllReduce, "rsag_trees");
  ASSERT_NE(rsag, nullptr);
  plan::PlanRequest small = requestFor(Collective::kAllReduce, &t, 4);
  small.count = 1024;
  const std::vector<plan::Plan> few = buildAll(*rsag, small);
  EXPECT_EQ(few[0].chunksPerBlock, 4u);
  EXPECT_EQ(verifyAll(few), "");
  plan::PlanRequest large = small;
  large.count = size_t{1} << 20;
  const std::vector<plan::Plan> many = buildAll(*rsag, large);
  EXPECT_GT(many[0].chunksPerBlock, 4u);
  EXPECT_EQ(many[0].chunksPerBlock % 4, 0u);
  EXPECT_EQ(verifyAll(many), "");
  size_t fewSteps = 0;
  size_t manySteps = 0;
  for (const plan::Channel& c : few[0].channels) fewSteps += c.steps.size();
  for (const plan::Channel& c : many[0].channels) manySteps += c.steps.size();
  EXPECT_LT(fewSteps * 10, manySteps);
}

// ---- Hand-built trees -------------------------------------------------------------------------

TEST(PackedPlans, HandBuiltTreesAllCollectives) {
  // 5 ranks; tree A rooted at 0 is a chain 0-1-2-3-4, tree B a star with a two-child inner
  // rank (0 -> 1 -> {2, 3}, 0 -> 4); rates 2 and 1.
  const Tree chain = makeTree(0, {-1, 0, 1, 2, 3}, 2);
  const Tree star = makeTree(0, {-1, 0, 1, 1, 0}, 1);
  Packing packing{{chain, star}, exactRate(3)};
  const uint32_t k = chunksForTrees(packing.trees);
  ASSERT_EQ(k, 3u);
  for (Collective c : {Collective::kBroadcast, Collective::kReduce, Collective::kAllReduce}) {
    std::vector<plan::Plan> plans;
    for (int r = 0; r < 5; ++r) {
      plan::PlanRequest request = requestFor(c, nullptr, 5, c == Collective::kAllReduce ? -1 : 0);
      request.rank = r;
      plans.push_back(buildTreePlan(request, "test", k, runsOf(packing, k)));
    }
    EXPECT_EQ(verifyAll(plans), "") << plan::toString(c);
    // Reduce needs scratch at rank 1 (two children in the star), so every rank declares it.
    EXPECT_EQ(plans[3].scratchBlocks, c == Collective::kReduce ? 1u : 0u);
  }
  // RS+AG family: every rank roots a rotated chain and a star.
  std::vector<Packing> family;
  for (int b = 0; b < 5; ++b) {
    std::vector<int> rotated(5), starred(5, b);
    for (int i = 0; i < 5; ++i) rotated[(b + i) % 5] = i == 0 ? -1 : (b + i - 1) % 5;
    starred[b] = -1;
    family.push_back(
        Packing{{makeTree(b, rotated, {1, 2}), makeTree(b, starred, {1, 4})}, exactRate({3, 4})});
  }
  for (Collective c :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    const uint32_t m = chunksForTrees(family[0].trees);
    ASSERT_EQ(m, 3u);
    const bool allReduce = c == Collective::kAllReduce;
    std::vector<TreeRun> runs;
    for (int b = 0; b < 5; ++b) {
      for (TreeRun run : runsOf(family[b], m)) {
        if (allReduce) run.first += static_cast<uint32_t>(b) * m;
        runs.push_back(run);
      }
    }
    std::vector<plan::Plan> plans;
    for (int r = 0; r < 5; ++r) {
      plan::PlanRequest request = requestFor(c, nullptr, 5);
      request.rank = r;
      plans.push_back(buildTreePlan(request, "test", allReduce ? 5 * m : m, runs));
    }
    EXPECT_EQ(verifyAll(plans), "") << plan::toString(c);
  }
}

TEST(PackedPlans, RejectsTreesThatDoNotSpan) {
  const Tree broken = makeTree(0, {-1, 2, 1}, 1);  // 1 and 2 point at each other
  plan::PlanRequest request = requestFor(Collective::kBroadcast, nullptr, 3, 0);
  const uint32_t k = 1;
  std::vector<TreeRun> runs = {{&broken, 0, 1}};
  EXPECT_THROW(buildTreePlan(request, "test", k, runs), Error);
}

// ---- Applicability ----------------------------------------------------------------------------

TEST(PackedApplies, NeedsATopologyWithTheRightRankCount) {
  const topo::Topology t = topo::fromSpec("dgx1v:0,1,4");
  for (const Algorithm& algorithm : algorithms()) {
    const std::string name(algorithm.name);
    if (name != "trees" && name != "rsag_trees" && name != "onehop" && name != "hierarchical") {
      continue;
    }
    plan::PlanRequest request = requestFor(algorithm.collective, nullptr, 3, 0);
    EXPECT_EQ(algorithm.applies(request).message(), "needs a topology (GROVE_TOPO_FILE)") << name;
    request.topology = &t;
    request.nranks = 4;
    EXPECT_EQ(algorithm.applies(request).message(),
              "the topology \"dgx1v:0,1,4\" has 3 ranks, the communicator has 4")
        << name;
  }
  const topo::Topology dgx = topo::fromSpec("dgx1v");
  const Status onehop = findAlgorithm(Collective::kAllReduce, "onehop")
                            ->applies(requestFor(Collective::kAllReduce, &dgx, 8));
  EXPECT_FALSE(onehop.ok());
  EXPECT_NE(onehop.message().find("neither a full mesh nor a star"), std::string::npos)
      << onehop.message();
  EXPECT_FALSE(findAlgorithm(Collective::kAllReduce, "hierarchical")
                   ->applies(requestFor(Collective::kAllReduce, &dgx, 8))
                   .ok());
  const Status trees = findAlgorithm(Collective::kBroadcast, "trees")
                           ->applies(requestFor(Collective::kBroadcast, &dgx, 8, 8));
  EXPECT_FALSE(trees.ok());
  EXPECT_EQ(trees.message(), "root 8 is not a rank in [0, 8)");
}

// ---- Every connected DGX-1V subset --------------------------------------------------------------

TEST(PackedTrees, EveryConnectedDgx1vSubset) {
  const std::vector<topo::Topology> subsets = connectedDgx1vSubsets();
  ASSERT_EQ(subsets.size(), 197u);
  for (const topo::Topology& t : subsets) {
    const int n = t.rankCount();
    for (int root = 0; root < n; ++root) {
      expectProven("trees", Collective::kBroadcast, t, root);
      expectProven("trees", Collective::kReduce, t, root);
    }
    expectProven("trees", Collective::kAllReduce, t);
    expectProven("rsag_trees", Collective::kAllReduce, t);
    if (HasFailure()) return;
  }
}

TEST(PackedTrees, RsAgAllGatherAndReduceScatter) {
  for (const char* spec : {"dgx1v", "dgx1v:0,1,4", "dgx1v:0,3,4,7", "dgx1p", "dgx1v:0,1,2,4,5"}) {
    const topo::Topology t = topo::fromSpec(spec);
    expectProven("rsag_trees", Collective::kAllGather, t);
    expectProven("rsag_trees", Collective::kReduceScatter, t);
  }
}

TEST(PackedTrees, Dgx1pAllRoots) {
  const topo::Topology t = topo::fromSpec("dgx1p");
  for (int root = 0; root < 8; ++root) {
    expectProven("trees", Collective::kBroadcast, t, root);
    expectProven("trees", Collective::kReduce, t, root);
  }
  expectProven("trees", Collective::kAllReduce, t);
  expectProven("rsag_trees", Collective::kAllReduce, t);
}

TEST(PackedTrees, SingleRankTopology) {
  const topo::Topology t = topo::fromSpec("dgx1v:3");
  expectProven("trees", Collective::kBroadcast, t, 0);
  expectProven("trees", Collective::kReduce, t, 0);
  expectProven("trees", Collective::kAllReduce, t);
  expectProven("rsag_trees", Collective::kAllReduce, t);
  expectProven("onehop", Collective::kAllReduce, t);
}

// ---- Switches and clusters ----------------------------------------------------------------------

TEST(PackedDirect, OneHopOnSwitchFabrics) {
  for (const char* spec : {"dgx2", "h100x8", "mesh:5", "mesh:2"}) {
    expectProven("onehop", Collective::kAllReduce, topo::fromSpec(spec));
  }
  // Rank 0 of 3: reduce its chunk from 2 then 1, send it to 1 and 2; send inputs; receive.
  const topo::Topology t = topo::fromSpec("mesh:3");
  plan::PlanRequest request = requestFor(Collective::kAllReduce, &t, 3);
  const plan::Plan p = findAlgorithm(Collective::kAllReduce, "onehop")->build(request);
  ASSERT_EQ(p.channels.size(), 3u);
  EXPECT_EQ(p.chunksPerBlock, 3u);
  ASSERT_EQ(p.channels[0].steps.size(), 4u);
  EXPECT_EQ(p.channels[0].steps[0].op, plan::OpKind::kRecvReduceCopy);
  EXPECT_EQ(p.channels[0].steps[0].recvPeer, 2);
  EXPECT_TRUE(p.channels[0].steps[1].finalize);
  EXPECT_EQ(p.channels[0].steps[2].sendPeer, 1);
  EXPECT_EQ(p.channels[0].steps[2].lane, 1);
  EXPECT_EQ(p.channels[1].steps[0].src.chunk, 1u);
}

TEST(PackedDirect, HierarchicalOnClusters) {
  for (const char* spec : {"cluster:2x2", "cluster:3x3", "cluster:4x2:100,25,100,100",
                           "cluster:2x1", "cluster:3x1", "cluster:2x5"}) {
    expectProven("hierarchical", Collective::kAllReduce, topo::fromSpec(spec));
  }
  // Rank 0 leads host 0 of cluster:3x3: chain up from 1, ring with leaders 3 and 6, chain down.
  const topo::Topology t = topo::fromSpec("cluster:3x3");
  plan::PlanRequest request = requestFor(Collective::kAllReduce, &t, 9);
  const plan::Plan p = findAlgorithm(Collective::kAllReduce, "hierarchical")->build(request);
  EXPECT_EQ(p.chunksPerBlock, 3u);
  ASSERT_EQ(p.channels.size(), 3u);
  EXPECT_EQ(p.channels[0].steps[0].recvPeer, 1);
  EXPECT_EQ(p.channels[1].steps[0].sendPeer, 3);
  EXPECT_EQ(p.channels[1].steps[1].recvPeer, 6);
  EXPECT_EQ(p.channels[2].steps[0].sendPeer, 1);
}

TEST(PackedDirect, HierarchicalLeadersRunOneRingPer256KiBUpToFour) {
  const topo::Topology t = topo::fromSpec("cluster:3x3");
  const Algorithm* algorithm = findAlgorithm(Collective::kAllReduce, "hierarchical");
  ASSERT_NE(algorithm, nullptr);
  ASSERT_NE(algorithm->planVariant, nullptr);
  plan::PlanRequest request = requestFor(Collective::kAllReduce, &t, 9);
  // A float32 block of `count` elements is count * 4 bytes: one ring per 65536 elements.
  for (const auto& [count, rings] : {std::pair<size_t, uint32_t>{1000, 1},
                                     {65536 * 2 - 1, 1},
                                     {65536 * 2, 2},
                                     {65536 * 3, 3},
                                     {65536 * 4, 4},
                                     {1 << 24, 4}}) {
    request.count = count;
    request.rank = 0;
    EXPECT_EQ(algorithm->planVariant(request), rings) << "count " << count;
    const plan::Plan leader = algorithm->build(request);
    EXPECT_EQ(leader.chunksPerBlock, 3 * rings) << "count " << count;
    ASSERT_EQ(leader.channels.size(), rings + 2) << "count " << count;
    for (uint32_t j = 0; j < rings; ++j) {
      const std::vector<plan::Step>& ring = leader.channels[1 + j].steps;
      ASSERT_EQ(ring.size(), 5u);  // 2(H - 1) + 1 steps for H = 3 hosts.
      EXPECT_EQ(ring[0].sendPeer, 3);
      EXPECT_EQ(ring[0].src.chunk, j);  // Host 0's part of ring j: chunk 0 * rings + j.
      EXPECT_EQ(ring[1].recvPeer, 6);
      EXPECT_EQ(ring[1].src.chunk, 2 * rings + j);
      EXPECT_EQ(ring[0].lane, 1 + j);
      // Ring step s waits for the chain up's step that brought its chunk (host chunk 0 - s).
      for (int s = 0; s < 3; ++s) {
        EXPECT_EQ(ring[s].after.channel, 0);
        EXPECT_EQ(ring[s].after.step, s * static_cast<int>(rings) + static_cast<int>(j));
        EXPECT_EQ(leader.channels[0].steps[ring[s].after.step].dst.chunk, ring[s].src.chunk);
      }
      // The chain down sends host chunk 1 first (ring step 2 finishes it), then 0, then 2.
      const std::vector<plan::Step>& down = leader.channels[rings + 1].steps;
      for (int u = 0; u < 3; ++u) {
        const plan::Step& step = down[u * rings + j];
        EXPECT_EQ(step.after.channel, static_cast<int>(1 + j));
        EXPECT_EQ(step.after.step, 2 + u);
        EXPECT_EQ(step.src.chunk, ((4 - u) % 3) * rings + j);
      }
    }
    EXPECT_EQ(leader.channels[rings + 1].steps[0].lane, rings + 1);
    request.rank = 4;  // Not a leader: no ring steps.
    const plan::Plan member = algorithm->build(request);
    ASSERT_EQ(member.channels.size(), rings + 2);
    for (uint32_t j = 0; j < rings; ++j) EXPECT_TRUE(member.channels[1 + j].steps.empty());
    EXPECT_EQ(verifyAll(buildAll(*algorithm, request)), "") << "count " << count;
  }
}

TEST(PackedDirect, HierarchicalPlansTwoHundredFiftySixRanks) {
  const topo::Topology t = topo::fromSpec("cluster:32x8");
  const Algorithm* algorithm = findAlgorithm(Collective::kAllReduce, "hierarchical");
  plan::PlanRequest request = requestFor(Collective::kAllReduce, &t, 256);
  ASSERT_TRUE(algorithm->applies(request).ok());
  EXPECT_GT(algorithm->costUs(request, CostParams{}), 0.0);
  const std::vector<plan::Plan> plans = buildAll(*algorithm, request);
  plan::VerifyOptions options;
  options.fifoDepth = 2;
  const Status result = plan::verify(plans, options);
  EXPECT_TRUE(result.ok()) << result.message();
}

}  // namespace
}  // namespace grove::algo
