// Tests of the verifier on one-sided plans (get, rall, signal, wait): the direct algorithms'
// plans must verify for every rank count, in and out of place, and broken variants must each
// be caught with a message naming the steps involved — races across ranks above all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algo/registry.hpp"
#include "plan/plan.hpp"
#include "plan/printer.hpp"
#include "plan/verifier.hpp"
#include "support/hand_plans.hpp"

namespace grove::plan {
namespace {

using ::testing::HasSubstr;

ChunkRef in(uint32_t c) { return {BufferKind::kInput, c}; }
ChunkRef out(uint32_t c) { return {BufferKind::kOutput, c}; }
ChunkRef scratch(uint32_t c) { return {BufferKind::kScratch, c}; }

Step step(OpKind op, int from, int to, ChunkRef src, ChunkRef dst = {}) {
  Step s;
  s.op = op;
  s.recvPeer = from;
  s.sendPeer = to;
  s.src = src;
  s.dst = dst;
  return s;
}
Step get(int from, ChunkRef src, ChunkRef dst) { return step(OpKind::kGet, from, -1, src, dst); }
Step rall(ChunkRef src, ChunkRef dst) { return step(OpKind::kReduceAll, -1, -1, src, dst); }
Step signal(int to, ChunkRef about) { return step(OpKind::kSignal, -1, to, about); }
Step wait(int from, ChunkRef about) { return step(OpKind::kWait, from, -1, about); }
Step copy(ChunkRef src, ChunkRef dst) { return step(OpKind::kCopy, -1, -1, src, dst); }
Step fin(Step s) {
  s.finalize = true;
  return s;
}

/// Every rank's plan of the direct algorithm for `collective` (count 1000, peer memory).
std::vector<Plan> direct(Collective collective, int n, int root = -1) {
  const algo::Algorithm* algorithm = algo::findAlgorithm(collective, "direct");
  EXPECT_NE(algorithm, nullptr) << toString(collective);
  std::vector<Plan> plans;
  if (algorithm == nullptr) return plans;
  for (int r = 0; r < n; ++r) {
    PlanRequest request;
    request.collective = collective;
    request.nranks = n;
    request.rank = r;
    request.root = root;
    request.count = 1000;
    request.peerMemory = true;
    plans.push_back(algorithm->build(request));
  }
  return plans;
}

// Hand-written plans of one-sided calls.
Plan shape(Collective collective, int r, int n, uint32_t k, uint32_t inBlocks, uint32_t outBlocks,
           uint32_t scratchBlocks = 0, int root = -1) {
  return grove::testing::handPlan(collective, r, n, k, inBlocks, outBlocks, scratchBlocks, root,
                                  true);
}

Status check(const std::vector<Plan>& plans, bool inPlace = false, int tiles = 2, int depth = 1) {
  VerifyOptions options;
  options.inPlace = inPlace;
  options.tiles = tiles;
  options.fifoDepth = depth;
  return verify(plans, options);
}

void expectError(const Status& result, const std::string& part) {
  EXPECT_FALSE(result.ok()) << "expected an error containing: " << part;
  EXPECT_THAT(result.message(), HasSubstr(part));
}

/// Removes every step of `op` from every rank's plan.
void dropSteps(std::vector<Plan>& plans, OpKind op) {
  for (Plan& p : plans) {
    std::vector<Step>& steps = p.channels[0].steps;
    steps.erase(
        std::remove_if(steps.begin(), steps.end(), [op](const Step& s) { return s.op == op; }),
        steps.end());
  }
}

TEST(VerifierOneSided, DirectPlansVerifyForEveryShape) {
  int verified = 0;
  for (int n = 1; n <= 17; ++n) {
    std::vector<std::vector<Plan>> shapes = {direct(Collective::kAllReduce, n),
                                             direct(Collective::kReduceScatter, n),
                                             direct(Collective::kAllGather, n)};
    for (int root : {0, n / 2, n - 1}) shapes.push_back(direct(Collective::kBroadcast, n, root));
    for (const std::vector<Plan>& plans : shapes) {
      for (bool inPlace : {false, true}) {
        for (int tiles : {1, 3}) {
          for (int depth : {1, 4}) {
            const Status result = check(plans, inPlace, tiles, depth);
            EXPECT_TRUE(result.ok())
                << toString(plans[0].collective) << " n=" << n << " root=" << plans[0].root
                << (inPlace ? " in place" : " out of place") << " tiles=" << tiles
                << " depth=" << depth << ": " << result.message() << "\nrank 0 plan:\n"
                << toText(plans[0]);
            verified += result.ok();
          }
        }
      }
    }
  }
  EXPECT_EQ(verified, 17 * 6 * 8);
}

TEST(VerifierOneSided, DirectPlansVerifyForLargeRankCounts) {
  // The shapes algorithms_test proves for every registered algorithm (fifo depth 2).
  for (int n : {32, 64}) {
    for (const std::vector<Plan>& plans :
         {direct(Collective::kAllReduce, n), direct(Collective::kReduceScatter, n),
          direct(Collective::kAllGather, n), direct(Collective::kBroadcast, n, n / 2)}) {
      for (bool inPlace : {false, true}) {
        const Status result = check(plans, inPlace, 2, 2);
        EXPECT_TRUE(result.ok()) << toString(plans[0].collective) << " n=" << n << ": "
                                 << result.message();
      }
    }
  }
}

TEST(VerifierOneSided, GetBeforeTheOwnersWriteIsOrderedIsARace) {
  // Without signal and wait, rank 0 gets rank 1's share before rank 1 has reduced it (the
  // replay reaches the read first: no write can happen-before it).
  std::vector<Plan> plans = direct(Collective::kAllReduce, 3);
  dropSteps(plans, OpKind::kSignal);
  dropSteps(plans, OpKind::kWait);
  expectError(check(plans),
              "rank 0 channel 0 step 1 (get from 1 out[1] -> out[1], tile 0) reads rank 1's "
              "out[1] before rank 1's write by channel 0 step 0 (rall in[1] -> out[1] finalize) "
              "happens-before it: add a signal/wait");

  // Rank 1 alone skips its wait: the replay has run rank 0's rall by then, but nothing
  // orders it before rank 1's get (rank 0's signal is never taken).
  plans = direct(Collective::kAllReduce, 2);
  std::vector<Step>& steps = plans[1].channels[0].steps;
  steps.erase(std::remove_if(steps.begin(), steps.end(),
                             [](const Step& s) { return s.op == OpKind::kWait; }),
              steps.end());
  expectError(check(plans),
              "rank 1 channel 0 step 2 (get from 0 out[0] -> out[0], tile 0) reads rank 0's "
              "out[0] before rank 0's write by channel 0 step 0 (rall in[0] -> out[0] finalize) "
              "happens-before it: add a signal/wait");
}

TEST(VerifierOneSided, InPlaceGetMustNotOverwriteInputAPeerStillReduces) {
  // Each wait moved after its get: in place, rank 0's get writes its out[1], which is its
  // in[1], before rank 1's rall has read it.
  std::vector<Plan> plans = direct(Collective::kAllReduce, 3);
  for (Plan& p : plans) {
    std::vector<Step>& steps = p.channels[0].steps;
    for (size_t s = 0; s + 1 < steps.size(); ++s) {
      if (steps[s].op == OpKind::kWait) std::swap(steps[s], steps[s + 1]), ++s;
    }
  }
  expectError(check(plans, true),
              "rank 1 channel 0 step 0 (rall in[1] -> out[1] finalize, tile 0) reads rank 0's "
              "in[1] before rank 0's write by channel 0 step 3 (get from 1 out[1] -> out[1]) "
              "happens-before it: add a signal/wait");
  // Out of place the same plans read a share before it is reduced.
  expectError(check(plans, false),
              "rank 0 channel 0 step 3 (get from 1 out[1] -> out[1], tile 0) reads rank 1's "
              "out[1] before rank 1's write");
}

TEST(VerifierOneSided, WriteAfterAnUnorderedRemoteReadIsARace) {
  // In place, the root rewrites its input (through scratch) after rank 0 has read it: the
  // value is the same, but nothing orders the read before the write.
  auto build = [](bool ordered) {
    std::vector<Plan> plans;
    for (int r = 0; r < 2; ++r) {
      Plan p = shape(Collective::kBroadcast, r, 2, 1, 1, 1, 1, 1);
      if (r == 0) {
        p.channels[0].steps = {get(1, in(0), out(0))};
        if (ordered) p.channels[0].steps.push_back(signal(1, in(0)));
      } else {
        p.channels[0].steps = {copy(in(0), scratch(0))};
        if (ordered) p.channels[0].steps.push_back(wait(0, in(0)));
        p.channels[0].steps.push_back(copy(scratch(0), out(0)));
      }
      plans.push_back(p);
    }
    return plans;
  };
  expectError(check(build(false), true),
              "rank 1 channel 0 step 1 (copy scratch[0] -> out[0], tile 0) writes out[0] while "
              "rank 0 channel 0 step 0 (get from 1 in[0] -> out[0], tile 0) may still read it: "
              "nothing orders that read before this write (add a signal/wait)");
  EXPECT_TRUE(check(build(false), false).ok()) << check(build(false), false).message();
  for (int tiles : {1, 3}) {
    const Status result = check(build(true), true, tiles);
    EXPECT_TRUE(result.ok()) << result.message();
  }
}

TEST(VerifierOneSided, StructureOfOneSidedSteps) {
  auto broadcast = [](int r) { return shape(Collective::kBroadcast, r, 2, 1, 1, 1, 1, 0); };
  std::vector<Plan> plans = {broadcast(0), broadcast(1)};
  plans[0].channels[0].steps = {copy(in(0), out(0))};
  plans[1].channels[0].steps = {get(1, in(0), out(0))};
  expectError(check(plans),
              "rank 1 channel 0 step 0 (get from 1 in[0] -> out[0]): recvPeer 1 is the step's "
              "own rank; get reads a peer's buffer (use copy)");
  plans[1].channels[0].steps = {get(2, in(0), out(0))};
  expectError(check(plans), "recvPeer 2 is not a rank in [0, 2)");
  plans[1].channels[0].steps = {get(0, scratch(0), out(0))};
  expectError(check(plans),
              "src scratch[0] is scratch, but get reads peers' buffers in place and only in and "
              "out are exposed to peers");
  plans[1].channels[0].steps = {rall(in(0), out(0))};
  expectError(check(plans), "'rall' reduces, but broadcast only moves data");
  plans[1].channels[0].steps = {get(0, in(0), out(0)), signal(1, in(0))};
  expectError(check(plans), "sendPeer 1 is the step's own rank");
  plans[1].channels[0].steps = {wait(1, in(0)), get(0, in(0), out(0))};
  expectError(check(plans), "recvPeer 1 is the step's own rank");

  std::vector<Plan> reduced;
  for (int r = 0; r < 2; ++r) {
    reduced.push_back(shape(Collective::kReduceScatter, r, 2, 1, 2, 1));
    Step step = fin(rall(in(static_cast<uint32_t>(r)), out(0)));
    step.recvPeer = 1 - r;
    reduced.back().channels[0].steps = {step};
  }
  expectError(check(reduced),
              "rall reads every rank's src and takes no peer, but recvPeer is 1 and sendPeer -1");
  for (int r = 0; r < 2; ++r) {
    reduced[static_cast<size_t>(r)].channels[0].steps = {fin(rall(scratch(0), out(0)))};
  }
  expectError(check(reduced), "src scratch[0] is scratch, but rall reads peers' buffers");
}

TEST(VerifierOneSided, SignalsMustBeMatched) {
  // The root also signals rank 1, which never waits (with one tile the slot holds it; with
  // more the root blocks on the full slot).
  std::vector<Plan> plans = direct(Collective::kBroadcast, 2, 0);
  plans[0].channels[0].steps.push_back(signal(1, in(0)));
  expectError(check(plans, false, 1),
              "unmatched send: rank 0 channel 0 step 1 (signal to 1 in[0], tile 0) sent a "
              "message to rank 1 on lane 0 that no step of rank 1 receives");
  // A wait with no signal waits forever.
  plans = direct(Collective::kBroadcast, 2, 0);
  plans[1].channels[0].steps.insert(plans[1].channels[0].steps.begin(), wait(0, in(0)));
  expectError(check(plans),
              "deadlock: no step can run (FIFOs of 1 slot(s), 2 tile(s)); rank 1 channel 0 step "
              "0 (wait from 0 in[0], tile 0) waits for a message from rank 0 on lane 0");
  // Signals carry no data: a receive cannot take one, nor a wait a data message.
  plans = direct(Collective::kBroadcast, 2, 0);
  plans[0].channels[0].steps.push_back(signal(1, in(0)));
  plans[1].channels[0].steps.push_back(step(OpKind::kRecv, 0, -1, {}, out(0)));
  expectError(check(plans),
              "rank 1 channel 0 step 1 (recv from 0 -> out[0], tile 0) takes the empty (signal) "
              "message of rank 0 channel 0 step 1 (signal to 1 in[0]): signals and data must not "
              "share a connection");
  plans = direct(Collective::kBroadcast, 2, 0);
  plans[0].channels[0].steps.push_back(step(OpKind::kSend, -1, 1, in(0)));
  plans[1].channels[0].steps.push_back(wait(0, in(0)));
  expectError(check(plans), "(wait from 0 in[0], tile 0) takes the data message of rank 0");
}

TEST(VerifierOneSided, ReductionRulesApplyToRall) {
  std::vector<Plan> plans = direct(Collective::kReduceScatter, 3);
  for (Plan& p : plans) p.channels[0].steps[0].finalize = false;
  expectError(check(plans),
              "rank 0 out[0] (tile 0) holds every contribution but was never finalized");
  expectError(check(plans, true), "holds every contribution but was never finalized");

  // Reducing the ranks' complete sums once more counts every contribution twice.
  std::vector<Plan> twice;
  for (int r = 0; r < 2; ++r) {
    Plan p = shape(Collective::kAllReduce, r, 2, 1, 1, 1);
    p.channels[0].steps = {rall(in(0), out(0)), signal(1 - r, out(0)), wait(1 - r, out(0)),
                           fin(rall(out(0), out(0)))};
    twice.push_back(p);
  }
  expectError(check(twice),
              "rank 1 channel 0 step 3 (rall out[0] -> out[0] finalize, tile 0) "
              "double counts contribution (0,0)");
  // Finalized values cannot be reduced again.
  for (Plan& p : twice) p.channels[0].steps[0].finalize = true;
  expectError(check(twice), "reduces a value that is already finalized");
}

TEST(VerifierOneSided, InPlaceSelfCopyIsNoAccess) {
  // In place, allgather's copy in[0] -> out[r] is one cell: the executor skips it, so it does
  // not race with the peers' gets of in[0] (a real write there would).
  std::vector<Plan> plans = direct(Collective::kAllGather, 3);
  EXPECT_TRUE(check(plans, true).ok()) << check(plans, true).message();
  // A copy into that cell from elsewhere is a write, unordered with rank 0's get.
  for (Plan& p : plans) p.scratchBlocks = 1;
  std::vector<Step>& steps = plans[2].channels[0].steps;
  steps.insert(steps.begin(), copy(in(0), scratch(0)));
  steps.push_back(copy(scratch(0), out(2)));
  expectError(check(plans, true),
              "rank 2 channel 0 step 4 (copy scratch[0] -> out[2], tile 0) writes out[2] while "
              "rank 0 channel 0 step 2 (get from 2 in[0] -> out[2], tile 0) may still read it");
}

TEST(VerifierOneSided, EveryRankOfAOneSidedCallIsMarkedOneSided) {
  // The broadcast root reads nothing, yet it must run the prologue and epilogue.
  std::vector<Plan> plans = direct(Collective::kBroadcast, 3, 0);
  ASSERT_FALSE(plans[0].hasOneSidedSteps());
  plans[0].oneSided = false;
  expectError(check(plans), "rank 1's plan is one-sided but rank 0's is not");
  for (Plan& p : plans) p.oneSided = false;
  expectError(check(plans), "rank 1 reads peers' memory but its plan is not marked one-sided");
}

}  // namespace
}  // namespace grove::plan
