// Algorithm lookup and selection: the cost model's choice, GROVE_ALGO lists (NCCL_ALGO
// syntax) and per-call forced choices, including every error a user can provoke.
//
// Expectations are written so they keep holding as more algorithms are registered: where
// the cheapest algorithm is expected, it is computed from algorithms() rather than named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "algo/all.hpp"
#include "algo/registry.hpp"
#include "algo/select_topology.hpp"
#include "grove/error.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace grove::algo {
namespace {

using plan::Collective;
using testing::HasSubstr;

plan::PlanRequest makeRequest(Collective collective, int nranks, size_t count, int root = -1) {
  plan::PlanRequest r;
  r.collective = collective;
  r.nranks = nranks;
  r.rank = 0;
  r.root = root;
  r.count = count;
  r.type = DataType::kFloat32;
  return r;
}

/// Name of the cheapest applicable algorithm, computed independently of select().
std::string cheapestName(const plan::PlanRequest& request, std::string_view except = {}) {
  const Algorithm* best = nullptr;
  double bestCost = std::numeric_limits<double>::infinity();
  for (const Algorithm& a : algorithms()) {
    if (a.collective != request.collective || a.name == except) continue;
    if (!a.applies(request).ok()) continue;
    const double cost = a.costUs(request, CostParams{});
    if (cost < bestCost) {
      best = &a;
      bestCost = cost;
    }
  }
  return best == nullptr ? std::string() : std::string(best->name);
}

std::string chosen(const plan::PlanRequest& request, std::string_view forced,
                   std::string_view env) {
  const Selection s = select(request, forced, env);
  EXPECT_NE(s.algorithm, nullptr);
  return s.algorithm == nullptr ? std::string() : std::string(s.algorithm->name);
}

TEST(FindAlgorithm, MatchesCaseInsensitivelyAndThroughAliases) {
  ASSERT_NE(findAlgorithm(Collective::kAllReduce, "ring"), nullptr);
  EXPECT_EQ(findAlgorithm(Collective::kAllReduce, "RING")->name, "ring");
  EXPECT_EQ(findAlgorithm(Collective::kAllReduce, "Rd")->name, "recursive_doubling");
  EXPECT_EQ(findAlgorithm(Collective::kAllGather, "recursive_doubling")->name,
            "recursive_doubling");
  EXPECT_EQ(findAlgorithm(Collective::kAllReduce, "pairwise"), nullptr);
  EXPECT_EQ(findAlgorithm(Collective::kAllToAll, "ring"), nullptr);
  EXPECT_EQ(findAlgorithm(Collective::kAllReduce, ""), nullptr);
  EXPECT_EQ(findAlgorithm(Collective::kAllReduce, "nosuch"), nullptr);
  // "tree" means a different generator per collective, once the trees are registered.
  if (const Algorithm* tree = findAlgorithm(Collective::kAllReduce, "tree")) {
    EXPECT_EQ(tree->name, "double_binary_tree");
  }
  if (const Algorithm* tree = findAlgorithm(Collective::kBroadcast, "TREE")) {
    EXPECT_EQ(tree->name, "binomial_tree");
  }
  EXPECT_EQ(findAlgorithm(Collective::kAllGather, "tree"), nullptr);
}

TEST(Select, CostModelPrefersRecursiveDoublingSmallAndRingLarge) {
  const plan::PlanRequest small = makeRequest(Collective::kAllReduce, 8, 1);
  const plan::PlanRequest large = makeRequest(Collective::kAllReduce, 8, 64 << 20);
  const CostParams params;
  EXPECT_LT(recursiveDoublingAllReduce().costUs(small, params),
            ringAllReduce().costUs(small, params));
  EXPECT_LT(ringAllReduce().costUs(large, params),
            recursiveDoublingAllReduce().costUs(large, params));
}

TEST(Select, DefaultIsTheCheapestAndTheReasonListsEveryCandidate) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 24}) {
    for (int n : {1, 2, 3, 8, 13}) {
      const plan::PlanRequest request = makeRequest(Collective::kAllReduce, n, count);
      const Selection s = select(request, "", "");
      ASSERT_NE(s.algorithm, nullptr);
      EXPECT_EQ(s.algorithm->name, cheapestName(request)) << "n=" << n << " count=" << count;
      EXPECT_THAT(s.reason, HasSubstr(std::string(s.algorithm->name) + ": cheapest"));
      for (const Algorithm& a : algorithms()) {
        if (a.collective == Collective::kAllReduce) {
          EXPECT_THAT(s.reason, HasSubstr(std::string(a.name))) << s.reason;
        }
      }
    }
  }
}

TEST(Select, ReasonSaysWhyAnAlgorithmDeclined) {
  const Selection s = select(makeRequest(Collective::kAllGather, 6, 100), "", "");
  EXPECT_EQ(s.algorithm->name, "ring");
  EXPECT_THAT(s.reason, HasSubstr("recursive_doubling n/a: nranks 6 is not a power of two"));
}

TEST(Select, EveryCollectiveButSendRecvHasAChoice) {
  for (int c = 0; c < plan::kCollectiveCount; ++c) {
    const auto collective = static_cast<Collective>(c);
    if (collective == Collective::kSendRecv) continue;
    if (collective == Collective::kBroadcast || collective == Collective::kReduce) {
      // Registered by the tree generators; skip while they are absent.
      bool any = false;
      for (const Algorithm& a : algorithms()) any = any || a.collective == collective;
      if (!any) continue;
    }
    const int root = (collective == Collective::kBroadcast || collective == Collective::kReduce ||
                      collective == Collective::kGather || collective == Collective::kScatter)
                         ? 2
                         : -1;
    EXPECT_NE(select(makeRequest(collective, 5, 7, root), "", "").algorithm, nullptr)
        << plan::toString(collective);
  }
  try {
    select(makeRequest(Collective::kSendRecv, 2, 7), "", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("sendrecv"));
  }
}

TEST(Select, ForcedChoiceWinsOverEnvironmentAndCost) {
  const plan::PlanRequest small = makeRequest(Collective::kAllReduce, 8, 1);
  EXPECT_EQ(chosen(small, "ring", ""), "ring");
  EXPECT_EQ(chosen(small, "RING", "rd"), "ring");
  EXPECT_EQ(chosen(small, " rd ", "ring"), "recursive_doubling");
  EXPECT_THAT(select(small, "ring", "").reason, HasSubstr("ring: forced by call option"));
}

TEST(Select, UnknownForcedNameIsAnErrorListingValidNames) {
  const plan::PlanRequest request = makeRequest(Collective::kAllReduce, 4, 10);
  for (std::string_view bad : {"nosuch", "pairwise", "linear"}) {
    try {
      select(request, bad, "");
      FAIL() << "expected an error for " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("\"" + std::string(bad) + "\""));
      EXPECT_THAT(e.what(), HasSubstr("allreduce"));
      EXPECT_THAT(e.what(), HasSubstr("ring"));
      EXPECT_THAT(e.what(), HasSubstr("recursive_doubling (rd)"));
    }
  }
}

TEST(Select, ForcedAlgorithmThatDeclinesIsAnError) {
  try {
    select(makeRequest(Collective::kAllGather, 6, 10), "rd", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("not a power of two"));
    EXPECT_THAT(e.what(), HasSubstr("6 ranks"));
  }
}

TEST(Select, EnvironmentListRestrictsTheChoice) {
  const plan::PlanRequest small = makeRequest(Collective::kAllReduce, 8, 1);
  const plan::PlanRequest large = makeRequest(Collective::kAllReduce, 8, 1 << 24);
  EXPECT_EQ(chosen(small, "", "ring"), "ring");
  EXPECT_EQ(chosen(large, "", "rd"), "recursive_doubling");
  EXPECT_EQ(chosen(large, "", "RECURSIVE_DOUBLING"), "recursive_doubling");
  EXPECT_EQ(chosen(small, "", "ring,rd"), "recursive_doubling");
  EXPECT_EQ(chosen(large, "", "ring;rd"), "ring");
  EXPECT_EQ(chosen(small, "", " Ring , "), "ring");
  EXPECT_THAT(select(small, "", "ring").reason, HasSubstr("ring: cheapest allowed by GROVE_ALGO"));
  EXPECT_THAT(select(small, "", "ring").reason, HasSubstr("recursive_doubling " /* cost */));
  EXPECT_THAT(select(small, "", "ring").reason, HasSubstr("(not allowed by GROVE_ALGO)"));
}

TEST(Select, EnvironmentExclusion) {
  const plan::PlanRequest small = makeRequest(Collective::kAllReduce, 8, 1);
  const plan::PlanRequest large = makeRequest(Collective::kAllReduce, 8, 1 << 24);
  EXPECT_NE(chosen(large, "", "^ring"), "ring");
  EXPECT_EQ(chosen(large, "", "^ring"), cheapestName(large, "ring"));
  EXPECT_NE(chosen(small, "", "^rd"), "recursive_doubling");
  EXPECT_EQ(chosen(small, "", "allreduce:^recursive_doubling"),
            cheapestName(small, "recursive_doubling"));
  // Excluding a name another collective uses changes nothing here.
  EXPECT_EQ(chosen(small, "", "^pairwise"), cheapestName(small));
}

TEST(Select, PerCollectiveEntriesOverrideTheGlobalList) {
  const plan::PlanRequest allreduce = makeRequest(Collective::kAllReduce, 8, 1);
  const plan::PlanRequest allgather = makeRequest(Collective::kAllGather, 8, 1);
  EXPECT_EQ(chosen(allreduce, "", "allreduce:ring;allgather:rd"), "ring");
  EXPECT_EQ(chosen(allgather, "", "allreduce:ring;allgather:rd"), "recursive_doubling");
  EXPECT_EQ(chosen(allgather, "", "allreduce:rd;ring"), "ring");
  EXPECT_EQ(chosen(allreduce, "", "ring;allreduce:rd"), "recursive_doubling");
  EXPECT_EQ(chosen(allgather, "", "ring;allreduce:rd"), "ring");
  // Names after "collective:" in one section belong to that collective.
  EXPECT_EQ(chosen(allgather, "", "allreduce:rd,ring"), cheapestName(allgather));
  EXPECT_EQ(chosen(allreduce, "", "ALLREDUCE : Ring"), "ring");
  // Unknown collectives are ignored, and their names with them.
  EXPECT_EQ(chosen(allreduce, "", "allreduc:ring"), cheapestName(allreduce));
}

TEST(Select, InapplicableEnvironmentNamesFallBackToTheCheapest) {
  const plan::PlanRequest allgather6 = makeRequest(Collective::kAllGather, 6, 1);
  const Selection s = select(allgather6, "", "allgather:rd");
  EXPECT_EQ(s.algorithm->name, "ring");
  EXPECT_THAT(s.reason, HasSubstr("allows nothing that applies to allgather"));
  const plan::PlanRequest barrier = makeRequest(Collective::kBarrier, 5, 0);
  EXPECT_EQ(chosen(barrier, "", "ring"), "dissemination");
  EXPECT_EQ(chosen(barrier, "", "tree"), "dissemination");
  EXPECT_EQ(chosen(barrier, "", "^dissemination"), "dissemination");
  EXPECT_EQ(chosen(barrier, "", ";;,,"), "dissemination");
  EXPECT_EQ(chosen(barrier, "", "^"), "dissemination");
}

TEST(Select, TreeAliasFollowsTheCollective) {
  const plan::PlanRequest allreduce = makeRequest(Collective::kAllReduce, 8, 1);
  if (findAlgorithm(Collective::kAllReduce, "double_binary_tree") == nullptr) {
    GTEST_SKIP() << "tree generators not registered yet";
  }
  EXPECT_EQ(chosen(allreduce, "tree", ""), "double_binary_tree");
  EXPECT_EQ(chosen(allreduce, "", "tree"), "double_binary_tree");
  const plan::PlanRequest broadcast = makeRequest(Collective::kBroadcast, 8, 1, 3);
  EXPECT_EQ(chosen(broadcast, "tree", ""), "binomial_tree");
  EXPECT_EQ(chosen(broadcast, "", "allreduce:ring;broadcast:tree"), "binomial_tree");
}

// Predictions are memoized by everything the simulator reads: a topology whose NICs carry
// TCP's payload share of their line rate (Arc::lineRate) and the same one at the full rate,
// or options that compress network messages, are different predictions.
TEST(PredictedUs, MemoKeepsApartLineRatesAndCompression) {
  const Algorithm* ring = findAlgorithm(Collective::kAllReduce, "ring");
  ASSERT_NE(ring, nullptr);
  const topo::Topology line = topo::fromSpec("cluster:2x1:1");
  topo::Topology full = line;
  int lineArcs = 0;
  for (topo::Arc& arc : full.arcs) {
    lineArcs += arc.lineRate ? 1 : 0;
    arc.lineRate = false;
  }
  ASSERT_GT(lineArcs, 0);
  plan::PlanRequest request;
  request.collective = Collective::kAllReduce;
  request.nranks = 2;
  request.type = DataType::kFloat32;
  request.count = 1u << 20;
  const model::SimOptions options = selectionSimOptions(CostParams{}, &line);
  request.topology = &line;
  const double atPayload = predictedUs(*ring, request, options);
  model::SimOptions compressed = options;
  compressed.compressionRatio = 1.5;
  EXPECT_LT(predictedUs(*ring, request, compressed), atPayload);
  request.topology = &full;
  EXPECT_LT(predictedUs(*ring, request, options), atPayload);
}

}  // namespace
}  // namespace grove::algo
