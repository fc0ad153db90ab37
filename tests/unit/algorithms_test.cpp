// Every registered plan generator, proven by the symbolic verifier over many rank counts.
//
// The tests iterate algorithms(), so a generator is covered the moment it is registered. For
// each applicable shape every rank's plan is built and verified out of place and in place;
// shapes an algorithm declines must come with a reason. Layout conventions the executor
// relies on (block counts per collective, equal k on all ranks, no output writes on ranks
// whose output may be null) are checked structurally as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algo/all.hpp"
#include "algo/registry.hpp"
#include "plan/plan.hpp"
#include "plan/printer.hpp"
#include "plan/verifier.hpp"

namespace grove::algo {
namespace {

using plan::BufferKind;
using plan::Collective;
using plan::OpKind;

const std::vector<int> kRankCounts = {1,  2,  3,  4,  5,  6,  7,  8,  9, 10,
                                      11, 12, 13, 14, 15, 16, 17, 32, 64};
const std::vector<size_t> kCounts = {0, 1, 7, 1000};
// FIFO slots per connection the executor provides at least. Rings need two: with fused
// receive-and-send steps every rank holds a full outgoing slot while it waits to receive.
constexpr int kFifoDepth = 2;

bool isRooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

bool isReduction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

std::vector<int> rootsFor(Collective c, int n) {
  if (!isRooted(c)) return {-1};
  std::vector<int> roots = {0, n - 1, n / 2};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

/// Input and output block counts every plan of collective `c` on `n` ranks must have.
std::pair<uint32_t, uint32_t> expectedBlocks(Collective c, int n) {
  const auto un = static_cast<uint32_t>(n);
  switch (c) {
    case Collective::kReduceScatter:
    case Collective::kScatter:
      return {un, 1};
    case Collective::kAllGather:
    case Collective::kGather:
      return {1, un};
    case Collective::kAllToAll:
    case Collective::kAllToAllv:
      return {un, un};
    case Collective::kBarrier:
      return {0, 1};
    default:
      return {1, 1};
  }
}

std::string testName(const testing::TestParamInfo<size_t>& info) {
  const Algorithm& a = algorithms()[info.param];
  return std::string(plan::toString(a.collective)) + "_" + std::string(a.name);
}

class AlgorithmTest : public testing::TestWithParam<size_t> {
 protected:
  // These tests build plans from the call shape alone. Topology-aware algorithms decline
  // every such request; they are proven on real topologies in packed_trees_test.
  void SetUp() override {
    const Status applies = algorithm().applies(request(4, 0, 0, 7));
    if (!applies.ok() && applies.message().find("needs a topology") != std::string::npos) {
      GTEST_SKIP() << algorithm().name << " needs a topology: see packed_trees_test";
    }
  }

  const Algorithm& algorithm() const { return algorithms()[GetParam()]; }

  plan::PlanRequest request(int n, int rank, int root, size_t count) const {
    plan::PlanRequest r;
    r.collective = algorithm().collective;
    r.nranks = n;
    r.rank = rank;
    r.root = root;
    r.count = count;
    r.type = DataType::kFloat32;
    r.op = ReduceOp::kSum;
    r.peerMemory = true;  // one-sided plans (direct) are proved like every other
    return r;
  }

  std::vector<plan::Plan> buildAll(int n, int root, size_t count) const {
    std::vector<plan::Plan> plans;
    for (int rank = 0; rank < n; ++rank)
      plans.push_back(algorithm().build(request(n, rank, root, count)));
    return plans;
  }
};

TEST_P(AlgorithmTest, VerifiesForEveryApplicableShape) {
  const Algorithm& a = algorithm();
  int verified = 0;
  for (int n : kRankCounts) {
    for (int root : rootsFor(a.collective, n)) {
      for (size_t count : kCounts) {
        if (!a.applies(request(n, 0, root, count)).ok()) continue;
        const std::vector<plan::Plan> plans = buildAll(n, root, count);
        for (bool inPlace : {false, true}) {
          plan::VerifyOptions options;
          options.inPlace = inPlace;
          options.fifoDepth = kFifoDepth;
          const Status result = plan::verify(plans, options);
          EXPECT_TRUE(result.ok())
              << a.name << " " << plan::toString(a.collective) << " n=" << n << " root=" << root
              << " count=" << count << (inPlace ? " in-place" : " out-of-place") << ": "
              << result.message() << "\nrank 0 plan:\n"
              << plan::toText(plans[0]);
          if (!result.ok()) return;  // One failing shape is enough to read.
          ++verified;
        }
      }
    }
  }
  EXPECT_GT(verified, 0) << a.name << " applied to no shape at all";
}

TEST_P(AlgorithmTest, PlansFollowTheLayoutConventions) {
  const Algorithm& a = algorithm();
  for (int n : kRankCounts) {
    for (int root : rootsFor(a.collective, n)) {
      if (!a.applies(request(n, 0, root, 7)).ok()) continue;
      const std::vector<plan::Plan> plans = buildAll(n, root, 7);
      const auto [inBlocks, outBlocks] = expectedBlocks(a.collective, n);
      for (int rank = 0; rank < n; ++rank) {
        const plan::Plan& p = plans[static_cast<size_t>(rank)];
        SCOPED_TRACE(std::string(a.name) + " n=" + std::to_string(n) +
                     " root=" + std::to_string(root) + " rank=" + std::to_string(rank));
        EXPECT_EQ(p.collective, a.collective);
        EXPECT_EQ(p.algorithm, a.name);
        EXPECT_EQ(p.rank, rank);
        EXPECT_EQ(p.nranks, n);
        EXPECT_EQ(p.root, root);
        EXPECT_EQ(p.inputBlocks, inBlocks);
        EXPECT_EQ(p.outputBlocks, outBlocks);
        EXPECT_EQ(p.chunksPerBlock, plans[0].chunksPerBlock);
        EXPECT_EQ(p.scratchBlocks, plans[0].scratchBlocks);
        EXPECT_GE(p.chunksPerBlock, 1u);
        if (a.collective == Collective::kAllToAll || a.collective == Collective::kAllToAllv ||
            a.collective == Collective::kBarrier) {
          EXPECT_EQ(p.chunksPerBlock, 1u);
        }
        // Ranks whose output may be null never write it; ranks whose input may be null never
        // read it.
        const bool outputMayBeNull = rank != root && (a.collective == Collective::kReduce ||
                                                      a.collective == Collective::kGather);
        const bool inputMayBeNull = rank != root && (a.collective == Collective::kBroadcast ||
                                                     a.collective == Collective::kScatter);
        for (const plan::Channel& channel : p.channels) {
          for (const plan::Step& step : channel.steps) {
            if (outputMayBeNull && plan::writesDst(step.op)) {
              EXPECT_NE(step.dst.buffer, BufferKind::kOutput);
            }
            // A get's src is the peer's buffer, and signal and wait only name a chunk.
            const bool readsOwnSrc =
                plan::readsSrc(step.op) && !plan::readsPeer(step.op) && !plan::signals(step.op);
            if (inputMayBeNull && readsOwnSrc) {
              EXPECT_NE(step.src.buffer, BufferKind::kInput);
            }
          }
        }
      }
    }
  }
}

TEST_P(AlgorithmTest, OneRankReductionIsOneFinalizingCopy) {
  const Algorithm& a = algorithm();
  if (!isReduction(a.collective)) return;
  const int root = isRooted(a.collective) ? 0 : -1;
  if (!a.applies(request(1, 0, root, 7)).ok()) GTEST_SKIP() << "declines one rank";
  const plan::Plan p = a.build(request(1, 0, root, 7));
  int steps = 0;
  for (const plan::Channel& channel : p.channels) {
    for (const plan::Step& step : channel.steps) {
      ++steps;
      EXPECT_EQ(step.op, OpKind::kCopy);
      EXPECT_EQ(step.src, (plan::ChunkRef{BufferKind::kInput, 0}));
      EXPECT_EQ(step.dst, (plan::ChunkRef{BufferKind::kOutput, 0}));
      EXPECT_TRUE(step.finalize);
    }
  }
  EXPECT_EQ(steps, 1);
}

TEST_P(AlgorithmTest, PlanShapeDoesNotDependOnCount) {
  const Algorithm& a = algorithm();
  for (int n : {3, 8}) {
    const int root = isRooted(a.collective) ? n - 1 : -1;
    if (!a.applies(request(n, 0, root, 0)).ok()) continue;
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_EQ(plan::toText(a.build(request(n, rank, root, 0))),
                plan::toText(a.build(request(n, rank, root, 1000))));
    }
  }
}

TEST_P(AlgorithmTest, DeclinesWithAReason) {
  const Algorithm& a = algorithm();
  for (int n : kRankCounts) {
    for (int root : rootsFor(a.collective, n)) {
      if (const Status applies = a.applies(request(n, 0, root, 7)); !applies.ok()) {
        EXPECT_EQ(applies.code(), ErrorCode::kInvalidArgument) << a.name;
        EXPECT_FALSE(applies.message().empty())
            << a.name << " declined n=" << n << " without a reason";
      }
    }
  }
  if (isRooted(a.collective)) {
    for (int badRoot : {-1, 4}) {
      const Status applies = a.applies(request(4, 0, badRoot, 7));
      EXPECT_FALSE(applies.ok()) << "root " << badRoot;
      EXPECT_FALSE(applies.message().empty());
    }
  }
}

TEST_P(AlgorithmTest, CostIsFiniteAndGrowsWithBytes) {
  const Algorithm& a = algorithm();
  const CostParams params;
  for (int n : {1, 2, 5, 8, 64}) {
    const int root = isRooted(a.collective) ? 0 : -1;
    if (!a.applies(request(n, 0, root, 0)).ok()) continue;
    const double small = a.costUs(request(n, 0, root, 0), params);
    const double large = a.costUs(request(n, 0, root, 1 << 20), params);
    EXPECT_TRUE(std::isfinite(small) && small >= 0) << a.name << " n=" << n << ": " << small;
    EXPECT_TRUE(std::isfinite(large)) << a.name << " n=" << n;
    EXPECT_GE(large, small) << a.name << " n=" << n;
    if (n > 1 && a.collective != Collective::kBarrier) {  // Barrier messages are empty.
      EXPECT_GT(large, small) << a.name << " n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, AlgorithmTest, testing::Range<size_t>(0, algorithms().size()),
                         testName);

// ---- Specific facts about this file's algorithms.

TEST(Algorithms, RecursiveDoublingAllGatherDeclinesNonPowersOfTwo) {
  const Algorithm a = recursiveDoublingAllGather();
  for (int n : {3, 5, 6, 7, 12, 17}) {
    plan::PlanRequest r;
    r.collective = Collective::kAllGather;
    r.nranks = n;
    const Status applies = a.applies(r);
    EXPECT_FALSE(applies.ok()) << n;
    EXPECT_EQ(applies.message(), "nranks " + std::to_string(n) + " is not a power of two");
  }
  for (int n : {1, 2, 4, 8, 64}) {
    plan::PlanRequest r;
    r.collective = Collective::kAllGather;
    r.nranks = n;
    EXPECT_TRUE(a.applies(r).ok()) << n;
  }
}

TEST(Algorithms, RingAllReduceUsesNChunksAndTwoNMinusOneSteps) {
  plan::PlanRequest r;
  r.nranks = 5;
  r.rank = 2;
  r.count = 1000;
  const plan::Plan p = ringAllReduce().build(r);
  ASSERT_EQ(p.channels.size(), 1u);
  EXPECT_EQ(p.chunksPerBlock, 5u);
  const std::vector<plan::Step>& steps = p.channels[0].steps;
  ASSERT_EQ(steps.size(), 9u);  // A send, 2(n−1) receives, the last without a send.
  EXPECT_EQ(steps[0].op, OpKind::kSend);
  EXPECT_EQ(steps[0].sendPeer, 3);
  EXPECT_EQ(steps[0].src.chunk, 2u);
  EXPECT_EQ(steps[4].op, OpKind::kRecvReduceCopySend);
  EXPECT_TRUE(steps[4].finalize);
  EXPECT_EQ(steps[4].dst, (plan::ChunkRef{BufferKind::kOutput, 3}));
  EXPECT_EQ(steps[7].op, OpKind::kRecvCopySend);
  EXPECT_EQ(steps[7].dst, (plan::ChunkRef{BufferKind::kOutput, 0}));
  EXPECT_EQ(steps[8].op, OpKind::kRecv);
  EXPECT_EQ(steps[8].recvPeer, 1);
  EXPECT_EQ(steps[8].dst, (plan::ChunkRef{BufferKind::kOutput, 4}));
  int finalizing = 0;
  for (const plan::Step& s : steps) finalizing += s.finalize ? 1 : 0;
  EXPECT_EQ(finalizing, 1);
}

TEST(Algorithms, CostFormulas) {
  CostParams params;
  params.alphaUs = 2;
  params.betaGBps = 1;    // 1000 bytes per µs
  params.reduceGBps = 4;  // 4000 bytes per µs
  plan::PlanRequest r;
  r.nranks = 4;
  r.count = 1000;  // 4000 bytes of float
  // 2·3·2 + 2·3/4·4 + 3/4·1
  EXPECT_DOUBLE_EQ(ringAllReduce().costUs(r, params), 12 + 6 + 0.75);
  // log2(4)·(2 + 4) + 2·1
  EXPECT_DOUBLE_EQ(recursiveDoublingAllReduce().costUs(r, params), 12 + 2);
  r.nranks = 6;  // p = 4 plus a fold in and a result out: (2 + 2)·(2 + 4) + 3·1
  EXPECT_DOUBLE_EQ(recursiveDoublingAllReduce().costUs(r, params), 24 + 3);
  r.collective = Collective::kAllGather;
  r.nranks = 8;  // 7·2 + 7·4 both: recursive doubling also starts 7 messages in sequence
  EXPECT_DOUBLE_EQ(ringAllGather().costUs(r, params), 14 + 28);
  EXPECT_DOUBLE_EQ(recursiveDoublingAllGather().costUs(r, params), 14 + 28);
  r.collective = Collective::kReduceScatter;  // 7·2 + 7·4 + 7·1
  EXPECT_DOUBLE_EQ(ringReduceScatter().costUs(r, params), 14 + 28 + 7);
  r.collective = Collective::kAllToAll;  // 7·(2 + 4)
  EXPECT_DOUBLE_EQ(pairwiseAllToAll().costUs(r, params), 42);
  r.collective = Collective::kBarrier;
  r.nranks = 9;  // ceil(log2 9) = 4 rounds
  EXPECT_DOUBLE_EQ(disseminationBarrier().costUs(r, params), 8);
  r.collective = Collective::kGather;
  r.nranks = 5;
  r.root = 0;  // 2 + 4·4
  EXPECT_DOUBLE_EQ(linearGather().costUs(r, params), 18);
}

TEST(Algorithms, RegistryNamesAreUniqueLowerCaseAndCoverEveryCollective) {
  for (const Algorithm& a : algorithms()) {
    EXPECT_FALSE(a.name.empty());
    for (char c : a.name) EXPECT_FALSE(c >= 'A' && c <= 'Z') << a.name;
    int same = 0;
    for (const Algorithm& b : algorithms()) {
      same += (a.collective == b.collective && a.name == b.name) ? 1 : 0;
    }
    EXPECT_EQ(same, 1) << a.name << " registered twice for " << plan::toString(a.collective);
  }
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kAllToAll, Collective::kAllToAllv, Collective::kGather,
                       Collective::kScatter, Collective::kBarrier}) {
    EXPECT_TRUE(std::any_of(algorithms().begin(), algorithms().end(), [c](const Algorithm& a) {
      return a.collective == c;
    })) << plan::toString(c);
  }
}

}  // namespace
}  // namespace grove::algo
