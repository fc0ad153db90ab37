// Tests of the symbolic verifier: hand-built plans for every collective that must pass, and
// broken variants that must each be caught with a message naming the culprit.
#include "plan/verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "support/hand_plans.hpp"

namespace grove::plan {
namespace {

using ::testing::HasSubstr;

ChunkRef in(uint32_t c) { return {BufferKind::kInput, c}; }
ChunkRef out(uint32_t c) { return {BufferKind::kOutput, c}; }
ChunkRef scratch(uint32_t c) { return {BufferKind::kScratch, c}; }
uint32_t at(int c, int n) { return static_cast<uint32_t>(((c % n) + n) % n); }

Step step(OpKind op, int from, int to, ChunkRef src, ChunkRef dst) {
  Step s;
  s.op = op;
  s.recvPeer = from;
  s.sendPeer = to;
  s.src = src;
  s.dst = dst;
  return s;
}
Step send(int to, ChunkRef src) { return step(OpKind::kSend, -1, to, src, {}); }
Step recv(int from, ChunkRef dst) { return step(OpKind::kRecv, from, -1, {}, dst); }
Step rr(int from, ChunkRef dst) { return step(OpKind::kRecvReduce, from, -1, {}, dst); }
Step copy(ChunkRef src, ChunkRef dst) { return step(OpKind::kCopy, -1, -1, src, dst); }
Step reduce(ChunkRef src, ChunkRef dst) { return step(OpKind::kReduce, -1, -1, src, dst); }
Step rrs(int from, int to, ChunkRef src) {
  return step(OpKind::kRecvReduceSend, from, to, src, {});
}
Step rcs(int from, int to, ChunkRef dst) { return step(OpKind::kRecvCopySend, from, to, {}, dst); }
Step rrc(int from, ChunkRef src, ChunkRef dst) {
  return step(OpKind::kRecvReduceCopy, from, -1, src, dst);
}
Step rrcs(int from, int to, ChunkRef src, ChunkRef dst) {
  return step(OpKind::kRecvReduceCopySend, from, to, src, dst);
}
Step fin(Step s) {
  s.finalize = true;
  return s;
}
Step after(Step s, int channel, int index) {
  s.after = {channel, index};
  return s;
}

using grove::testing::handPlan;

std::vector<Plan> each(int n, const std::function<Plan(int)>& build) {
  std::vector<Plan> plans;
  for (int r = 0; r < n; ++r) plans.push_back(build(r));
  return plans;
}

Status check(const std::vector<Plan>& plans, bool inPlace = false, int tiles = 2, int depth = 1) {
  VerifyOptions options;
  options.inPlace = inPlace;
  options.tiles = tiles;
  options.fifoDepth = depth;
  return verify(plans, options);
}

// Ring allreduce, k = n: reduce-scatter with rrs, finalize in rrcs, all-gather with rcs.
std::vector<Plan> ringAllReduce(int n, int scratchBlocks = 0) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kAllReduce, r, n, static_cast<uint32_t>(n), 1, 1,
                      static_cast<uint32_t>(scratchBlocks));
    std::vector<Step>& steps = p.channels[0].steps;
    if (n == 1) {
      steps.push_back(fin(copy(in(0), out(0))));
      return p;
    }
    const int next = static_cast<int>(at(r + 1, n));
    const int prev = static_cast<int>(at(r - 1, n));
    steps.push_back(send(next, in(at(r, n))));
    for (int s = 1; s <= n - 2; ++s) steps.push_back(rrs(prev, next, in(at(r - s, n))));
    steps.push_back(fin(rrcs(prev, next, in(at(r + 1, n)), out(at(r + 1, n)))));
    for (int j = 0; j <= n - 3; ++j) steps.push_back(rcs(prev, next, out(at(r - j, n))));
    steps.push_back(recv(prev, out(at(r + 2, n))));
    return p;
  });
}

std::vector<Plan> ringAllGather(int n) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kAllGather, r, n, 1, 1, static_cast<uint32_t>(n));
    std::vector<Step>& steps = p.channels[0].steps;
    steps.push_back(copy(in(0), out(at(r, n))));
    if (n == 1) return p;
    const int next = static_cast<int>(at(r + 1, n));
    const int prev = static_cast<int>(at(r - 1, n));
    steps.push_back(send(next, in(0)));
    for (int j = 1; j <= n - 2; ++j) steps.push_back(rcs(prev, next, out(at(r - j, n))));
    steps.push_back(recv(prev, out(at(r + 1, n))));
    return p;
  });
}

std::vector<Plan> ringReduceScatter(int n) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kReduceScatter, r, n, 1, static_cast<uint32_t>(n), 1);
    std::vector<Step>& steps = p.channels[0].steps;
    if (n == 1) {
      steps.push_back(fin(copy(in(0), out(0))));
      return p;
    }
    const int next = static_cast<int>(at(r + 1, n));
    const int prev = static_cast<int>(at(r - 1, n));
    steps.push_back(send(next, in(at(r - 1, n))));
    for (int s = 1; s <= n - 2; ++s) steps.push_back(rrs(prev, next, in(at(r - s - 1, n))));
    steps.push_back(fin(rrc(prev, in(at(r, n)), out(0))));
    return p;
  });
}

// Chain root -> root+1 -> ..., k = 2 chunks pipelined.
std::vector<Plan> chainBroadcast(int n, int root) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kBroadcast, r, n, 2, 1, 1, 0, root);
    const int pos = static_cast<int>(at(r - root, n));
    const int next = static_cast<int>(at(r + 1, n));
    const int prev = static_cast<int>(at(r - 1, n));
    for (uint32_t c = 0; c < 2; ++c) {
      std::vector<Step>& steps = p.channels[0].steps;
      if (pos == 0) {
        steps.push_back(copy(in(c), out(c)));
        if (n > 1) steps.push_back(send(next, in(c)));
      } else if (pos < n - 1) {
        steps.push_back(rcs(prev, next, out(c)));
      } else {
        steps.push_back(recv(prev, out(c)));
      }
    }
    return p;
  });
}

// Chain root+1 -> root+2 -> ... -> root, k = 2.
std::vector<Plan> chainReduce(int n, int root) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kReduce, r, n, 2, 1, 1, 0, root);
    const int pos = static_cast<int>(at(r - root - 1, n));  // root is last
    const int next = static_cast<int>(at(r + 1, n));
    const int prev = static_cast<int>(at(r - 1, n));
    for (uint32_t c = 0; c < 2; ++c) {
      std::vector<Step>& steps = p.channels[0].steps;
      if (n == 1) {
        steps.push_back(fin(copy(in(c), out(c))));
      } else if (pos == 0) {
        steps.push_back(send(next, in(c)));
      } else if (pos < n - 1) {
        steps.push_back(rrs(prev, next, in(c)));
      } else {
        steps.push_back(fin(rrc(prev, in(c), out(c))));
      }
    }
    return p;
  });
}

std::vector<Plan> pairwiseAllToAll(int n, Collective collective = Collective::kAllToAll) {
  return each(n, [&](int r) {
    Plan p = handPlan(collective, r, n, 1, static_cast<uint32_t>(n), static_cast<uint32_t>(n));
    std::vector<Step>& steps = p.channels[0].steps;
    steps.push_back(copy(in(at(r, n)), out(at(r, n))));
    for (int s = 1; s < n; ++s) {
      steps.push_back(send(static_cast<int>(at(r + s, n)), in(at(r + s, n))));
      steps.push_back(recv(static_cast<int>(at(r - s, n)), out(at(r - s, n))));
    }
    return p;
  });
}

std::vector<Plan> linearGather(int n, int root) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kGather, r, n, 1, 1, static_cast<uint32_t>(n), 0, root);
    std::vector<Step>& steps = p.channels[0].steps;
    if (r != root) {
      steps.push_back(send(root, in(0)));
      return p;
    }
    steps.push_back(copy(in(0), out(at(root, n))));
    for (int s = 1; s < n; ++s)
      steps.push_back(recv(static_cast<int>(at(root + s, n)), out(at(root + s, n))));
    return p;
  });
}

std::vector<Plan> linearScatter(int n, int root) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kScatter, r, n, 1, static_cast<uint32_t>(n), 1, 0, root);
    std::vector<Step>& steps = p.channels[0].steps;
    if (r != root) {
      steps.push_back(recv(root, out(0)));
      return p;
    }
    for (int s = 1; s < n; ++s)
      steps.push_back(send(static_cast<int>(at(root + s, n)), in(at(root + s, n))));
    steps.push_back(copy(in(at(root, n)), out(0)));
    return p;
  });
}

std::vector<Plan> disseminationBarrier(int n, int skipRound = -1) {
  return each(n, [&](int r) {
    Plan p = handPlan(Collective::kBarrier, r, n, 1, 0, 1);
    int round = 0;
    for (int d = 1; d < n; d *= 2, ++round) {
      if (round == skipRound) continue;
      p.channels[0].steps.push_back(send(static_cast<int>(at(r + d, n)), out(0)));
      p.channels[0].steps.push_back(rr(static_cast<int>(at(r - d, n)), out(0)));
    }
    return p;
  });
}

// Two ranks, k = 1: copy, exchange, add the peer's input (finalize).
std::vector<Plan> exchangeAllReduce() {
  return each(2, [](int r) {
    Plan p = handPlan(Collective::kAllReduce, r, 2, 1, 1, 1, 1);
    p.channels[0].steps = {copy(in(0), out(0)), send(1 - r, in(0)), fin(rr(1 - r, out(0)))};
    return p;
  });
}

void expectOk(const std::vector<Plan>& plans, bool inPlace, int tiles, int depth) {
  Status result = check(plans, inPlace, tiles, depth);
  EXPECT_TRUE(result.ok()) << toString(plans[0].collective) << " n=" << plans.size()
                           << " inPlace=" << inPlace << " tiles=" << tiles << ": "
                           << result.message();
}

void expectError(const Status& result, const std::string& part) {
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.message(), HasSubstr(part));
}

TEST(Verifier, RingAllReduceIsCorrectForManyShapes) {
  for (int n = 1; n <= 8; ++n) {
    for (int tiles : {1, 2, 3}) {
      for (bool inPlace : {false, true}) {
        expectOk(ringAllReduce(n), inPlace, tiles, 2);
        expectOk(ringAllReduce(n), inPlace, tiles, 5);
      }
    }
  }
}

TEST(Verifier, EveryCollectiveHasACorrectPlan) {
  for (int n = 1; n <= 7; ++n) {
    for (bool inPlace : {false, true}) {
      for (int tiles : {1, 2}) {
        expectOk(ringAllGather(n), inPlace, tiles, 2);
        expectOk(ringReduceScatter(n), inPlace, tiles, 2);
        expectOk(pairwiseAllToAll(n), inPlace, tiles, 1);
        expectOk(pairwiseAllToAll(n, Collective::kAllToAllv), inPlace, tiles, 1);
        expectOk(disseminationBarrier(n), inPlace, tiles, 1);
        for (int root : {0, n - 1, n / 2}) {
          expectOk(chainBroadcast(n, root), inPlace, tiles, 1);
          expectOk(chainReduce(n, root), inPlace, tiles, 1);
          expectOk(linearGather(n, root), inPlace, tiles, 1);
          expectOk(linearScatter(n, root), inPlace, tiles, 1);
        }
      }
    }
  }
}

TEST(Verifier, SixtyFourRankRingsVerify) {
  expectOk(ringAllReduce(64), false, 2, 2);
  expectOk(ringAllReduce(64), true, 2, 2);
  expectOk(ringAllGather(64), true, 2, 2);
}

TEST(Verifier, FusedRingStepsDeadlockWithOneSlot) {
  // Every rank holds a full outgoing slot while its rrs waits for space downstream.
  Status result = check(ringAllReduce(3), false, 1, 1);
  expectError(result, "deadlock");
  expectError(result,
              "rank 0 channel 0 step 1 (rrs from 2 to 1 in[2], tile 0) waits for rank "
              "1 to take a message on lane 0");
}

TEST(Verifier, MissingContributionIsNamed) {
  std::vector<Plan> plans = ringAllReduce(3, 1);
  plans[1].channels[0].steps[1] = rcs(0, 2, scratch(0));  // forwards without adding in[0]
  expectError(check(plans, false, 2, 2),
              "rank 2 channel 0 step 2 (rrcs from 1 to 0 in[0] -> out[0] finalize, tile 0) "
              "finalizes an incomplete value {(0,0), (2,0)}: missing contribution of rank(s) 1");
}

TEST(Verifier, WrongOutputIsNamed) {
  std::vector<Plan> plans = ringAllGather(2);
  plans[1].channels[0].steps = {copy(in(0), out(0)), send(0, in(0)), recv(0, out(1))};
  expectError(check(plans),
              "rank 1 out[0] (tile 0) holds {(1,0)}, expected {(0,0)}; missing "
              "contribution(s) {(0,0)}; unexpected contribution(s) {(1,0)}; last "
              "written by channel 0 step 0 (copy in[0] -> out[0])");
  plans[1].channels[0].steps = {send(0, in(0)), recv(0, out(0))};
  expectError(check(plans), "rank 1 out[1] (tile 0) was never written; expected {(1,0)}");
}

TEST(Verifier, DoubleCountingIsCaught) {
  std::vector<Plan> plans = exchangeAllReduce();
  ASSERT_TRUE(check(plans).ok());
  plans[1].channels[0].steps.insert(plans[1].channels[0].steps.begin() + 1, reduce(in(0), out(0)));
  expectError(check(plans),
              "rank 1 channel 0 step 1 (reduce in[0] -> out[0], tile 0) double "
              "counts contribution (1,0): {(1,0)} ⊕ {(1,0)}");
}

TEST(Verifier, MissingFinalizeIsCaught) {
  std::vector<Plan> plans = ringAllReduce(3);
  for (Plan& p : plans) {
    for (Step& s : p.channels[0].steps) s.finalize = false;
  }
  expectError(check(plans, false, 2, 2),
              "rank 0 out[0] (tile 0) holds every contribution but "
              "was never finalized");
}

TEST(Verifier, FinalizeRulesAreEnforced) {
  std::vector<Plan> plans = exchangeAllReduce();
  plans[0].channels[0].steps.push_back(fin(copy(out(0), scratch(0))));
  expectError(check(plans),
              "rank 0 channel 0 step 3 (copy out[0] -> scratch[0] finalize, tile "
              "0) finalizes {(0,0), (1,0)} a second time");
  plans = exchangeAllReduce();
  plans[0].channels[0].steps.push_back(reduce(in(0), scratch(0)));
  plans[0].channels[0].steps.insert(plans[0].channels[0].steps.begin() + 3,
                                    copy(out(0), scratch(0)));
  expectError(check(plans), "reduces a value that is already finalized ({(0,0), (1,0)})");
  plans = ringAllGather(2);
  plans[0].channels[0].steps[0].finalize = true;
  expectError(check(plans),
              "rank 0 channel 0 step 0 (copy in[0] -> out[0] finalize): finalize "
              "is set, but allgather only moves data");
  plans[0].channels[0].steps[0] = rr(1, out(0));
  expectError(check(plans), "'rr' reduces, but allgather only moves data");
}

TEST(Verifier, DeadlockListsWhatEachRankWaitsFor) {
  std::vector<Plan> plans = each(2, [](int r) {
    Plan p = handPlan(Collective::kAllGather, r, 2, 1, 1, 2);
    p.channels[0].steps = {recv(1 - r, out(at(1 - r, 2))), copy(in(0), out(at(r, 2))),
                           send(1 - r, in(0))};
    return p;
  });
  expectError(check(plans),
              "deadlock: no step can run (FIFOs of 1 slot(s), 2 tile(s)); rank 0 channel 0 step "
              "0 (recv from 1 -> out[1], tile 0) waits for a message from rank 1 on lane 0; "
              "rank 1 channel 0 step 0 (recv from 0 -> out[0], tile 0) waits for a message from "
              "rank 0 on lane 0");
}

TEST(Verifier, UnmatchedSendIsCaught) {
  std::vector<Plan> plans = ringAllGather(2);
  plans[0].channels[0].steps.push_back(send(1, in(0)));
  expectError(check(plans, false, 1, 2),
              "unmatched send: rank 0 channel 0 step 3 (send to 1 in[0], tile 0) sent a message "
              "to rank 1 on lane 0 that no step of rank 1 receives (1 message(s) left");
}

TEST(Verifier, MessagesOfDifferentTilesAreNotMixed) {
  // Rank 0 sends twice per tile, rank 1 receives once: tile 1 would take tile 0's message.
  std::vector<Plan> plans = ringAllGather(2);
  plans[0].channels[0].steps.push_back(send(1, in(0)));
  expectError(check(plans, false, 2, 2),
              "rank 1 channel 0 step 2 (recv from 0 -> out[0], tile "
              "1) receives the tile 0 message of rank 0 channel 0 "
              "step 3");
}

TEST(Verifier, RangesAreCheckedFirst) {
  std::vector<Plan> plans = ringAllReduce(3);
  plans[1].channels[0].steps[0].sendPeer = 5;
  expectError(check(plans),
              "rank 1 channel 0 step 0 (send to 5 in[1]): sendPeer 5 is not a "
              "rank in [0, 3)");
  plans[1].channels[0].steps[0].sendPeer = 1;
  expectError(check(plans), "sendPeer 1 is the step's own rank");
  plans = ringAllReduce(3);
  plans[2].channels[0].steps[1].recvPeer = -1;
  expectError(check(plans), "rank 2 channel 0 step 1 (rrs from -1 to 0 in[1]): recvPeer -1");
  plans = ringAllReduce(3);
  plans[0].channels[0].steps[0].src = in(7);
  expectError(check(plans),
              "rank 0 channel 0 step 0 (send to 1 in[7]): src in[7] is out of "
              "range: in has 3 chunks");
  plans = ringAllReduce(3);
  plans[0].channels[0].steps.back().dst = in(2);
  expectError(check(plans), "dst in[2] writes the input buffer");
  plans = ringAllReduce(3);
  plans[0].channels[0].steps.back().dst = scratch(0);
  expectError(check(plans), "dst scratch[0] is out of range: scratch has 0 chunks");
  plans = ringAllReduce(3);
  plans[0].channels[0].steps[2].after = {0, 2};
  expectError(check(plans),
              "rank 0 channel 0 step 2 (rrcs from 2 to 1 in[1] -> out[1] finalize "
              "after=0.2): after names step 2 of its own channel");
  plans[0].channels[0].steps[2].after = {1, 0};
  expectError(check(plans), "after.channel 1 does not exist (the plan has 1 channels");
  plans[0].channels[0].steps[2].after = {0, 9};
  expectError(check(plans), "after.step 9 does not exist");
  plans = ringAllReduce(3);
  plans[0].channels[0].steps[0].op = static_cast<OpKind>(42);
  expectError(check(plans), "op 42 is not a step kind");
  plans = ringAllReduce(4);
  plans[1].channels[0].steps[1].src = in(1);  // part 1 into a part-0 message
  expectError(check(plans, false, 1, 2),
              "receives a part 0 chunk from rank 0 channel 0 step 0 "
              "(send to 1 in[0]) into part 1 chunks");
}

TEST(Verifier, PlansMustAgreeOnTheCallShape) {
  expectError(check({}), "no plans to verify");
  std::vector<Plan> plans = ringAllReduce(3);
  expectError(check(plans, false, 0), "VerifyOptions::tiles is 0");
  expectError(check(plans, false, 1, 0), "VerifyOptions::fifoDepth is 0");
  std::swap(plans[0], plans[1]);
  expectError(check(plans), "plans[0].rank is 1, expected 0");
  plans = ringAllReduce(3);
  plans[2].nranks = 4;
  expectError(check(plans), "rank 2: nranks is 4, but 3 plans were given");
  plans = ringAllReduce(3);
  plans[1].collective = Collective::kReduceScatter;
  expectError(check(plans), "rank 1: collective is reducescatter, but rank 0's is allreduce");
  plans = ringAllReduce(3);
  plans[2].chunksPerBlock = 1;
  expectError(check(plans), "rank 2: chunksPerBlock is 1, but rank 0's is 3");
  plans = ringAllReduce(3);
  for (Plan& p : plans) p.outputBlocks = 3;
  expectError(check(plans), "allreduce plans need outputBlocks = 1 for 3 ranks, found 3");
  plans = chainBroadcast(3, 0);
  for (Plan& p : plans) p.root = 3;
  expectError(check(plans), "root 3 is not a rank in [0, 3); broadcast needs a root");
  plans = ringAllGather(2);
  for (Plan& p : plans) p.collective = Collective::kSendRecv;
  expectError(check(plans), "'copy' in a sendrecv plan, which only sends and receives");
}

TEST(Verifier, ReadingUndefinedScratchIsCaught) {
  std::vector<Plan> plans = ringAllReduce(2, 1);
  plans[0].channels[0].steps[0].src = scratch(0);
  expectError(check(plans, false, 1, 2),
              "rank 0 channel 0 step 0 (send to 1 scratch[0], tile 0) reads undefined "
              "scratch[0]: nothing has written it yet");
}

TEST(Verifier, InPlaceAliasingCatchesOverwrittenInput) {
  // Receiving into out[0] before adding in[0] is fine apart, wrong when out[0] is in[0].
  std::vector<Plan> plans = each(2, [](int r) {
    Plan p = handPlan(Collective::kAllReduce, r, 2, 1, 1, 1);
    p.channels[0].steps = {send(1 - r, in(0)), recv(1 - r, out(0)), fin(reduce(in(0), out(0)))};
    return p;
  });
  EXPECT_TRUE(check(plans, false).ok()) << check(plans, false).message();
  expectError(check(plans, true),
              "rank 1 channel 0 step 2 (reduce in[0] -> out[0] finalize, tile "
              "0) double counts contribution (0,0)");
  // Reducescatter in place: out[0] is in[r]; receiving into out[0] destroys in[r].
  plans = each(2, [](int r) {
    Plan p = handPlan(Collective::kReduceScatter, r, 2, 1, 2, 1);
    p.channels[0].steps = {send(1 - r, in(at(1 - r, 2))), recv(1 - r, out(0)),
                           fin(reduce(in(at(r, 2)), out(0)))};
    return p;
  });
  EXPECT_TRUE(check(plans, false).ok()) << check(plans, false).message();
  expectError(check(plans, true), "double counts contribution (0,1)");
}

TEST(Verifier, CrossChannelDependencyIsHonored) {
  // Channel 0 sends out[r], which channel 1 fills: without `after` the send would read it
  // before it is written.
  auto build = [](bool withAfter) {
    return each(2, [withAfter](int r) {
      Plan p = handPlan(Collective::kAllGather, r, 2, 1, 1, 2);
      Step first = send(1 - r, out(at(r, 2)));
      p.channels[0].steps = {withAfter ? after(first, 1, 0) : first};
      p.channels.emplace_back().steps = {copy(in(0), out(at(r, 2))),
                                         recv(1 - r, out(at(1 - r, 2)))};
      return p;
    });
  };
  EXPECT_TRUE(check(build(true)).ok()) << check(build(true)).message();
  expectError(check(build(false)),
              "rank 0 channel 0 step 0 (send to 1 out[0], tile 0) reads "
              "undefined out[0]");
}

TEST(Verifier, UnorderedChannelsRaceEvenWhenTheReplayIsLucky) {
  // Channel 1 reads what channel 0 writes; the replay runs channel 0 first, but nothing
  // makes the executor do so.
  auto build = [](bool withAfter) {
    return each(2, [withAfter](int r) {
      Plan p = handPlan(Collective::kAllGather, r, 2, 1, 1, 2);
      p.channels[0].steps = {copy(in(0), out(at(r, 2))), recv(1 - r, out(at(1 - r, 2)))};
      Step second = send(1 - r, out(at(r, 2)));
      p.channels.emplace_back().steps = {withAfter ? after(second, 0, 0) : second};
      return p;
    });
  };
  EXPECT_TRUE(check(build(true)).ok()) << check(build(true)).message();
  expectError(check(build(false)),
              "rank 0 channel 1 step 0 (send to 1 out[0], tile 0) reads "
              "out[0] while channel 0 step 0 (copy in[0] -> out[0]) writes "
              "it in the same tile, and nothing orders the two");
}

TEST(Verifier, DependencyCyclesDeadlock) {
  std::vector<Plan> plans = each(2, [](int r) {
    Plan p = handPlan(Collective::kAllGather, r, 2, 1, 1, 2);
    p.channels[0].steps = {copy(in(0), out(at(r, 2))), recv(1 - r, out(at(1 - r, 2)))};
    p.channels.emplace_back().steps = {after(send(1 - r, in(0)), 0, 1)};
    return p;
  });
  expectError(check(plans),
              "rank 0 channel 1 step 0 (send to 1 in[0] after=0.1, tile 0) waits "
              "for channel 0 step 1 of tile 0");
}

TEST(Verifier, ConnectionBelongsToOneChannel) {
  std::vector<Plan> plans = each(2, [](int r) {
    Plan p = handPlan(Collective::kAllGather, r, 2, 1, 1, 2);
    p.channels[0].steps = {copy(in(0), out(at(r, 2))), recv(1 - r, out(at(1 - r, 2)))};
    p.channels.emplace_back().steps = {send(1 - r, in(0)), recv(1 - r, out(at(1 - r, 2)))};
    return p;
  });
  expectError(check(plans), "rank 0: channels 0 and 1 both receive from rank 1 on lane 0");
  plans[0].channels[1].steps[1].lane = 1;
  plans[1].channels[1].steps[1].lane = 1;
  expectError(check(plans),
              "rank 0 channel 1 step 1 (recv from 1 -> out[1] lane=1, tile 0) "
              "waits for a message from rank 1 on lane 1");
}

TEST(Verifier, BarrierNeedsEveryToken) {
  expectError(check(disseminationBarrier(5, 1)),
              "rank 0 out[0] (tile 0) lacks the token of "
              "rank 2");
}

TEST(Verifier, RandomCorruptionsNeverCrash) {
  std::mt19937 random(7);
  int failures = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Plan> plans = ringAllReduce(4, 1);
    for (int edits = 0; edits < 3; ++edits) {
      Plan& p = plans[random() % plans.size()];
      Step& s = p.channels[0].steps[random() % p.channels[0].steps.size()];
      switch (random() % 7) {
        case 0:
          s.op = static_cast<OpKind>(random() % 10);
          break;
        case 1:
          s.recvPeer = static_cast<int32_t>(random() % 6) - 1;
          break;
        case 2:
          s.sendPeer = static_cast<int32_t>(random() % 6) - 1;
          break;
        case 3:
          s.src = {static_cast<BufferKind>(random() % 4), static_cast<uint32_t>(random() % 6)};
          break;
        case 4:
          s.dst = {static_cast<BufferKind>(random() % 4), static_cast<uint32_t>(random() % 6)};
          break;
        case 5:
          s.finalize = !s.finalize;
          break;
        case 6:
          s.after = {static_cast<int32_t>(random() % 3) - 1, static_cast<int32_t>(random() % 8)};
          break;
      }
    }
    Status result = check(plans, random() % 2 == 0, 2, 2);
    if (!result.ok()) {
      ++failures;
      EXPECT_FALSE(result.message().empty());
    }
  }
  EXPECT_GT(failures, 1500);
}

}  // namespace
}  // namespace grove::plan
