// Tests of the tree shapes (pure rank arithmetic) and of the chain, binomial tree and double
// binary tree generators: shapes are checked exhaustively for every rank count up to 64, and
// every plan is proven by the symbolic verifier over many rank counts and roots, in place and
// out of place, before any byte moves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "algo/all.hpp"
#include "algo/tree_shapes.hpp"
#include "grove/error.hpp"
#include "plan/verifier.hpp"

namespace grove::algo {
namespace {

using plan::BufferKind;
using plan::Collective;
using plan::OpKind;

std::vector<int> rankCounts() {
  std::vector<int> counts;
  for (int n = 1; n <= 17; ++n) counts.push_back(n);
  counts.push_back(32);
  counts.push_back(64);
  return counts;
}

std::vector<int> rootsFor(int n) {
  std::set<int> roots = {0, n - 1, n / 2};
  return {roots.begin(), roots.end()};
}

/// Checks that `nodeOf` describes a tree over 0..n-1 rooted at `root`: parents and children
/// agree, and a walk from the root reaches every rank exactly once. Returns the height.
template <typename NodeOf>
int checkTree(int n, int root, NodeOf nodeOf, const std::string& what) {
  std::vector<TreeNode> nodes;
  for (int r = 0; r < n; ++r) nodes.push_back(nodeOf(r));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(nodes[r].isRoot(), r == root) << what << " rank " << r;
    if (!nodes[r].isRoot()) {
      const int p = nodes[r].parent;
      EXPECT_TRUE(p >= 0 && p < n) << what << " rank " << r << " parent " << p;
      if (p >= 0 && p < n) {
        const auto& siblings = nodes[p].children;
        EXPECT_EQ(std::count(siblings.begin(), siblings.end(), r), 1)
            << what << " rank " << r << " missing from children of " << p;
      }
    }
    for (int c : nodes[r].children) {
      EXPECT_TRUE(c >= 0 && c < n) << what << " rank " << r << " child " << c;
      if (c >= 0 && c < n) {
        EXPECT_EQ(nodes[c].parent, r) << what << " child " << c;
      }
    }
  }
  std::vector<int> depth(n, -1);
  std::queue<int> todo;
  depth[root] = 0;
  todo.push(root);
  int reached = 0;
  int height = 0;
  while (!todo.empty()) {
    const int r = todo.front();
    todo.pop();
    ++reached;
    height = std::max(height, depth[r]);
    for (int c : nodes[r].children) {
      if (c < 0 || c >= n) continue;
      EXPECT_EQ(depth[c], -1) << what << " rank " << c << " reached twice";
      if (depth[c] != -1) continue;
      depth[c] = depth[r] + 1;
      todo.push(c);
    }
  }
  EXPECT_EQ(reached, n) << what;
  return height;
}

TEST(TreeShapes, RelativeRanksRoundTrip) {
  EXPECT_EQ(relativeRank(5, 3, 1), 3);
  EXPECT_EQ(absoluteRank(5, 3, 3), 1);
  for (int n = 1; n <= 9; ++n) {
    for (int root = 0; root < n; ++root) {
      for (int r = 0; r < n; ++r) EXPECT_EQ(absoluteRank(n, root, relativeRank(n, root, r)), r);
    }
  }
  EXPECT_THROW(relativeRank(4, 4, 0), Error);
  EXPECT_THROW(relativeRank(0, 0, 0), Error);
  EXPECT_THROW(binomialTreeNode(4, 0, -1), Error);
  EXPECT_THROW(doubleBinaryTreeNode(4, 2, 0), Error);
}

TEST(TreeShapes, BinomialExactShape) {
  const std::vector<std::vector<int>> children8 = {{1, 2, 4}, {}, {3}, {}, {5, 6}, {}, {7}, {}};
  for (int r = 0; r < 8; ++r) EXPECT_EQ(binomialTreeNode(8, 0, r).children, children8[r]);
  EXPECT_EQ(binomialTreeNode(8, 0, 7).parent, 6);
  EXPECT_EQ(binomialTreeNode(8, 0, 6).parent, 4);
  // Root 3 of 5: relative ranks 0..4 are 3, 4, 0, 1, 2.
  EXPECT_EQ(binomialTreeNode(5, 3, 3).children, (std::vector<int>{4, 0, 2}));
  EXPECT_EQ(binomialTreeNode(5, 3, 0).children, (std::vector<int>{1}));
  EXPECT_EQ(binomialTreeNode(5, 3, 1).parent, 0);
  EXPECT_EQ(binomialTreeNode(5, 3, 2).parent, 3);
  EXPECT_TRUE(binomialTreeNode(1, 0, 0).isRoot());
  EXPECT_TRUE(binomialTreeNode(1, 0, 0).isLeaf());
}

TEST(TreeShapes, BinomialIsATreeOfLogDepth) {
  for (int n = 1; n <= 64; ++n) {
    EXPECT_EQ(binomialTreeRounds(n), static_cast<int>(std::ceil(std::log2(n))));
    for (int root : rootsFor(n)) {
      const std::string what = "binomial n=" + std::to_string(n) + " root=" + std::to_string(root);
      const int height = checkTree(
          n, root, [&](int r) { return binomialTreeNode(n, root, r); }, what);
      EXPECT_LE(height, binomialTreeRounds(n)) << what;
      EXPECT_EQ(binomialTreeNode(n, root, root).children.size(),
                static_cast<size_t>(binomialTreeRounds(n)))
          << what;
    }
  }
}

TEST(TreeShapes, BinaryTreeMatchesNccl) {
  // The figure of NCCL's trees.cc for 13 ranks (shift) and 12 ranks (mirror).
  EXPECT_EQ(binaryTreeNode(13, 0).children, (std::vector<int>{8}));
  EXPECT_EQ(binaryTreeNode(13, 8).children, (std::vector<int>{4, 12}));
  EXPECT_EQ(binaryTreeNode(13, 12).children, (std::vector<int>{10}));
  EXPECT_EQ(binaryTreeNode(13, 10).children, (std::vector<int>{9, 11}));
  EXPECT_EQ(binaryTreeNode(13, 13 - 1).parent, 8);
  EXPECT_EQ(binaryTreeNode(12, 8).children, (std::vector<int>{4, 10}));
  EXPECT_EQ(binaryTreeNode(12, 10).parent, 8);
  EXPECT_EQ(doubleBinaryTreeRoot(12, 1), 11);
  EXPECT_EQ(doubleBinaryTreeNode(12, 1, 11).children, (std::vector<int>{3}));
  EXPECT_EQ(doubleBinaryTreeNode(12, 1, 3).children, (std::vector<int>{7, 1}));
  EXPECT_EQ(doubleBinaryTreeRoot(13, 1), 1);
  EXPECT_EQ(doubleBinaryTreeNode(13, 1, 1).children, (std::vector<int>{9}));
  EXPECT_EQ(doubleBinaryTreeNode(13, 1, 9).children, (std::vector<int>{5, 0}));
  EXPECT_EQ(doubleBinaryTreeNode(13, 1, 0).parent, 9);
  EXPECT_EQ(doubleBinaryTreeRoot(1, 1), 0);
}

TEST(TreeShapes, DoubleTreeLeavesAndInteriorsAreComplementary) {
  for (int n = 1; n <= 64; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      const std::string what =
          "double tree n=" + std::to_string(n) + " tree " + std::to_string(tree);
      const int root = doubleBinaryTreeRoot(n, tree);
      const int height = checkTree(
          n, root, [&](int r) { return doubleBinaryTreeNode(n, tree, r); }, what);
      EXPECT_EQ(height, doubleBinaryTreeHeight(n, tree)) << what;
      // Binary, and logarithmic: root's single child, then an in-order tree.
      EXPECT_LE(height, binomialTreeRounds(n) + 1) << what;
      for (int r = 0; r < n; ++r) {
        EXPECT_LE(doubleBinaryTreeNode(n, tree, r).children.size(), 2u) << what << " rank " << r;
      }
      if (n > 1) {
        EXPECT_EQ(doubleBinaryTreeNode(n, tree, root).children.size(), 1u) << what;
      }
    }
    if (n == 1) continue;
    int interiorInBoth = 0;
    for (int r = 0; r < n; ++r) {
      const bool leaf0 = doubleBinaryTreeNode(n, 0, r).isLeaf();
      const bool leaf1 = doubleBinaryTreeNode(n, 1, r).isLeaf();
      EXPECT_FALSE(leaf0 && leaf1) << "n=" << n << " rank " << r << " is a leaf of both trees";
      if (!leaf0 && !leaf1) ++interiorInBoth;
    }
    // Even n: each rank is a leaf of exactly one tree. Odd n: only rank 0 is interior twice.
    EXPECT_EQ(interiorInBoth, n % 2 == 0 ? 0 : 1) << "n=" << n;
    if (n % 2 == 1) {
      EXPECT_FALSE(doubleBinaryTreeNode(n, 0, 0).isLeaf());
      EXPECT_FALSE(doubleBinaryTreeNode(n, 1, 0).isLeaf());
    }
  }
}

// ---- plans ----

plan::PlanRequest requestFor(Collective collective, int n, int rank, int root, size_t count) {
  plan::PlanRequest request;
  request.collective = collective;
  request.nranks = n;
  request.rank = rank;
  request.root = root;
  request.count = count;
  return request;
}

std::vector<plan::Plan> buildAll(const Algorithm& algorithm, int n, int root, size_t count) {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < n; ++r) {
    const plan::PlanRequest request = requestFor(algorithm.collective, n, r, root, count);
    EXPECT_TRUE(algorithm.applies(request).ok());
    plans.push_back(algorithm.build(request));
  }
  return plans;
}

/// Checks the conventions the executor relies on beyond what the verifier proves.
void checkConventions(const std::vector<plan::Plan>& plans, const std::string& what) {
  const plan::Plan& first = plans[0];
  for (const plan::Plan& p : plans) {
    EXPECT_EQ(p.chunksPerBlock, first.chunksPerBlock) << what;
    EXPECT_EQ(p.inputBlocks, 1u) << what;
    EXPECT_EQ(p.outputBlocks, 1u) << what;
    EXPECT_EQ(p.scratchBlocks, first.scratchBlocks) << what;
    const bool isRoot = p.rank == p.root;
    for (const plan::Channel& channel : p.channels) {
      for (const plan::Step& step : channel.steps) {
        if (p.collective == Collective::kReduce && !isRoot && plan::writesDst(step.op)) {
          EXPECT_NE(step.dst.buffer, BufferKind::kOutput) << what << " rank " << p.rank;
        }
        if (p.collective == Collective::kBroadcast && !isRoot && plan::readsSrc(step.op)) {
          EXPECT_NE(step.src.buffer, BufferKind::kInput) << what << " rank " << p.rank;
        }
      }
    }
  }
}

struct Case {
  const char* label;
  Algorithm (*factory)();
};

const Case kCases[] = {
    {"chain broadcast", chainBroadcast},
    {"chain reduce", chainReduce},
    {"binomial broadcast", binomialTreeBroadcast},
    {"binomial reduce", binomialTreeReduce},
    {"double binary tree allreduce", doubleBinaryTreeAllReduce},
};

TEST(TreePlans, VerifyForManyRankCountsAndRoots) {
  for (const Case& c : kCases) {
    const Algorithm algorithm = c.factory();
    for (int n : rankCounts()) {
      const bool rooted = algorithm.collective != Collective::kAllReduce;
      const std::vector<int> roots = rooted ? rootsFor(n) : std::vector<int>{-1};
      for (int root : roots) {
        const std::vector<plan::Plan> plans = buildAll(algorithm, n, root, 1000);
        const std::string what =
            std::string(c.label) + " n=" + std::to_string(n) + " root=" + std::to_string(root);
        checkConventions(plans, what);
        for (bool inPlace : {false, true}) {
          for (int tiles : {1, 3}) {
            plan::VerifyOptions options;
            options.inPlace = inPlace;
            options.tiles = tiles;
            const Status result = plan::verify(plans, options);
            EXPECT_TRUE(result.ok()) << what << (inPlace ? " in-place" : " out-of-place")
                                     << " tiles=" << tiles << ": " << result.message();
          }
        }
      }
    }
  }
}

TEST(TreePlans, PlansDoNotDependOnCount) {
  // Counts 0, 1 and sizes not divisible by k give the same pattern (chunks may be empty).
  for (const Case& c : kCases) {
    const Algorithm algorithm = c.factory();
    for (int n : {1, 2, 5}) {
      const int root = algorithm.collective == Collective::kAllReduce ? -1 : n - 1;
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}}) {
        const std::vector<plan::Plan> plans = buildAll(algorithm, n, root, count);
        EXPECT_TRUE(plan::verify(plans).ok()) << c.label << " n=" << n << " count=" << count;
        const std::vector<plan::Plan> reference = buildAll(algorithm, n, root, 1000);
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(plans[r].channels.size(), reference[r].channels.size());
          EXPECT_EQ(plans[r].chunksPerBlock, reference[r].chunksPerBlock);
        }
      }
    }
  }
}

TEST(TreePlans, ChainExactSteps) {
  // Broadcast from 2 over 4 ranks: 2 -> 3 -> 0 -> 1.
  const std::vector<plan::Plan> plans = buildAll(chainBroadcast(), 4, 2, 10);
  ASSERT_EQ(plans[2].channels.size(), 1u);
  ASSERT_EQ(plans[2].channels[0].steps.size(), 2u);
  EXPECT_EQ(plans[2].channels[0].steps[0].op, OpKind::kSend);
  EXPECT_EQ(plans[2].channels[0].steps[0].sendPeer, 3);
  EXPECT_EQ(plans[2].channels[0].steps[1].op, OpKind::kCopy);
  const plan::Step& middle = plans[0].channels[0].steps.at(0);
  EXPECT_EQ(middle.op, OpKind::kRecvCopySend);
  EXPECT_EQ(middle.recvPeer, 3);
  EXPECT_EQ(middle.sendPeer, 1);
  EXPECT_EQ(plans[1].channels[0].steps.at(0).op, OpKind::kRecv);

  const std::vector<plan::Plan> reduce = buildAll(chainReduce(), 4, 2, 10);
  EXPECT_EQ(reduce[1].channels[0].steps.at(0).op, OpKind::kSend);
  EXPECT_EQ(reduce[1].channels[0].steps.at(0).sendPeer, 0);
  EXPECT_EQ(reduce[3].channels[0].steps.at(0).op, OpKind::kRecvReduceSend);
  const plan::Step& last = reduce[2].channels[0].steps.at(0);
  EXPECT_EQ(last.op, OpKind::kRecvReduceCopy);
  EXPECT_EQ(last.recvPeer, 3);
  EXPECT_TRUE(last.finalize);
}

TEST(TreePlans, SingleRankIsOneFinalizedCopy) {
  for (const Case& c : kCases) {
    const Algorithm algorithm = c.factory();
    const int root = algorithm.collective == Collective::kAllReduce ? -1 : 0;
    const plan::Plan p = buildAll(algorithm, 1, root, 5)[0];
    ASSERT_EQ(p.channels.size(), 1u) << c.label;
    ASSERT_EQ(p.channels[0].steps.size(), 1u) << c.label;
    EXPECT_EQ(p.channels[0].steps[0].op, OpKind::kCopy) << c.label;
    EXPECT_EQ(p.channels[0].steps[0].finalize, algorithm.collective != Collective::kBroadcast)
        << c.label;
  }
}

TEST(TreePlans, BinomialReduceScratchOnlyWhereNeeded) {
  for (int n : {1, 2, 6}) {
    EXPECT_EQ(buildAll(binomialTreeReduce(), n, 0, 4)[0].scratchBlocks, 0u) << n;
  }
  const std::vector<plan::Plan> plans = buildAll(binomialTreeReduce(), 7, 0, 4);
  EXPECT_EQ(plans[0].scratchBlocks, 1u);
  // Relative rank 4 hears from 5 then 6, accumulating in scratch.
  const auto& steps = plans[4].channels[0].steps;
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].op, OpKind::kRecvReduceCopy);
  EXPECT_EQ(steps[0].recvPeer, 5);
  EXPECT_EQ(steps[0].dst.buffer, BufferKind::kScratch);
  EXPECT_EQ(steps[1].op, OpKind::kRecvReduceSend);
  EXPECT_EQ(steps[1].recvPeer, 6);
  EXPECT_EQ(steps[1].sendPeer, 0);
  EXPECT_EQ(steps[1].src.buffer, BufferKind::kScratch);
}

TEST(TreePlans, DoubleTreeUsesFourChannelsOnDistinctLanes) {
  for (int n : {2, 3, 8, 13}) {
    const std::vector<plan::Plan> plans = buildAll(doubleBinaryTreeAllReduce(), n, -1, 64);
    for (const plan::Plan& p : plans) {
      EXPECT_EQ(p.chunksPerBlock, 2u);
      ASSERT_EQ(p.channels.size(), 4u);
      for (int ch = 0; ch < 4; ++ch) {
        for (const plan::Step& step : p.channels[ch].steps) {
          EXPECT_EQ(step.lane, ch) << "n=" << n << " rank " << p.rank;
          const uint32_t chunk = plan::readsSrc(step.op) ? step.src.chunk : step.dst.chunk;
          EXPECT_EQ(chunk, static_cast<uint32_t>(ch / 2));
        }
      }
      int finalizes = 0;
      for (const plan::Channel& channel : p.channels) {
        for (const plan::Step& step : channel.steps) finalizes += step.finalize ? 1 : 0;
      }
      // Only the two tree roots finalize, each its own chunk once.
      const int expected = (p.rank == doubleBinaryTreeRoot(n, 0) ? 1 : 0) +
                           (p.rank == doubleBinaryTreeRoot(n, 1) ? 1 : 0);
      EXPECT_EQ(finalizes, expected) << "n=" << n << " rank " << p.rank;
      for (int tree = 0; tree < 2; ++tree) {
        if (p.rank != doubleBinaryTreeRoot(n, tree)) continue;
        const plan::Step& first = p.channels[2 * tree + 1].steps.at(0);
        EXPECT_EQ(first.after.channel, 2 * tree);
        EXPECT_EQ(first.after.step, static_cast<int>(p.channels[2 * tree].steps.size()) - 1);
      }
    }
  }
}

TEST(TreePlans, DoubleTreeRootNeedsItsAfterAndFinalize) {
  // Without the wait on the up channel the root would send an output it has not computed.
  std::vector<plan::Plan> plans = buildAll(doubleBinaryTreeAllReduce(), 8, -1, 100);
  plans[0].channels[1].steps[0].after = {};
  EXPECT_FALSE(plan::verify(plans).ok());
  plans = buildAll(doubleBinaryTreeAllReduce(), 8, -1, 100);
  plans[0].channels[0].steps.back().finalize = false;
  EXPECT_FALSE(plan::verify(plans).ok());
}

TEST(TreePlans, Registered) {
  EXPECT_NE(findAlgorithm(Collective::kBroadcast, "chain"), nullptr);
  EXPECT_NE(findAlgorithm(Collective::kReduce, "chain"), nullptr);
  EXPECT_NE(findAlgorithm(Collective::kBroadcast, "binomial_tree"), nullptr);
  EXPECT_NE(findAlgorithm(Collective::kReduce, "binomial_tree"), nullptr);
  const Algorithm* tree = findAlgorithm(Collective::kAllReduce, "double_binary_tree");
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->build(requestFor(Collective::kAllReduce, 3, 1, -1, 9)).algorithm,
            "double_binary_tree");
}

TEST(TreePlans, CostsArePositiveAndOrdered) {
  CostParams params;
  auto cost = [&](const Algorithm& a, int n, size_t bytes) {
    plan::PlanRequest request = requestFor(a.collective, n, 0, 0, bytes / 4);
    if (a.collective == Collective::kAllReduce) request.root = -1;
    return a.costUs(request, params);
  };
  for (const Case& c : kCases) {
    for (int n : {1, 2, 16}) {
      for (size_t bytes : {size_t{0}, size_t{4}, size_t{1} << 26}) {
        const double us = cost(c.factory(), n, bytes);
        EXPECT_TRUE(std::isfinite(us)) << c.label;
        EXPECT_GE(us, 0.0) << c.label;
      }
    }
  }
  // Small messages: log2 n rounds beat n-1 hops; large ones: the pipelined chain wins.
  EXPECT_LT(cost(binomialTreeBroadcast(), 16, 64), cost(chainBroadcast(), 16, 64));
  EXPECT_LT(cost(chainBroadcast(), 16, size_t{1} << 28),
            cost(binomialTreeBroadcast(), 16, size_t{1} << 28));
  EXPECT_LT(cost(chainReduce(), 16, size_t{1} << 28),
            cost(binomialTreeReduce(), 16, size_t{1} << 28));
  EXPECT_LT(cost(chainBroadcast(), 16, 4096), cost(chainBroadcast(), 16, size_t{1} << 20));
}

}  // namespace
}  // namespace grove::algo
