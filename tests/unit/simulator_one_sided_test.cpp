// The simulator's one-sided kinds against closed forms worked out by hand from its documented
// model (simulator.cpp): signal and wait are empty messages that still hold FIFO slots; a get
// moves its tile over the route from the peer read, rall from every peer at once and then
// reduces; a one-sided call pays a prologue (every peer's empty message in) before its first
// step and an epilogue (every peer's "done" message in) after its last.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algo/builder.hpp"
#include "algo/registry.hpp"
#include "grove/error.hpp"
#include "model/simulator.hpp"
#include "support/test_topologies.hpp"

namespace grove::model {
namespace {

using namespace algo::build;
using plan::Collective;
using plan::OpKind;

constexpr double kTol = 1e-9;
constexpr size_t kTile = 512 * 1024;  // The one-sided tile callers pass (exec's constant).

using testing::emptyPlan;
using testing::fullMesh;
using testing::link;
using testing::ranksOnly;
using testing::star;

plan::Step get(int from, plan::ChunkRef src, plan::ChunkRef dst) {
  plan::Step s;
  s.op = OpKind::kGet;
  s.recvPeer = from;
  s.src = src;
  s.dst = dst;
  return s;
}

plan::Step signal(int to, plan::ChunkRef about) {
  plan::Step s;
  s.op = OpKind::kSignal;
  s.sendPeer = to;
  s.src = about;
  return s;
}

plan::Step wait(int from, plan::ChunkRef about) {
  plan::Step s;
  s.op = OpKind::kWait;
  s.recvPeer = from;
  s.src = about;
  return s;
}

/// The "direct" generator's plans for every rank, as with peer memory.
std::vector<plan::Plan> directPlans(Collective collective, int n, size_t count, int root = -1) {
  const algo::Algorithm* direct = algo::findAlgorithm(collective, "direct");
  EXPECT_NE(direct, nullptr);
  std::vector<plan::Plan> plans;
  if (direct == nullptr) return plans;
  for (int r = 0; r < n; ++r) {
    plan::PlanRequest request;
    request.collective = collective;
    request.nranks = n;
    request.rank = r;
    request.root = root;
    request.count = count;
    request.type = DataType::kFloat32;
    request.peerMemory = true;
    plans.push_back(direct->build(request));
  }
  return plans;
}

SimOptions options(size_t bytes) {
  SimOptions o;
  o.bytes = bytes;
  o.elementSize = 4;
  o.tileBytes = kTile;
  o.fifoDepth = 4;
  o.reduceGBps = 20;
  o.copyGBps = 20;
  o.stepOverheadUs = 0.5;
  return o;
}

TEST(SimulatorOneSided, GetOfOneTileIsPrologueOverheadBytesLatencyEpilogue) {
  const double latency = 2;
  const topo::Topology t = fullMesh(2, 10, latency);  // 10 GB/s = 10^4 bytes per us.
  // Rank 1 reads rank 0's input; rank 0 has no step but still takes part in the prologue
  // and epilogue (and so waits for its reader).
  std::vector<plan::Plan> plans{emptyPlan(Collective::kBroadcast, 0, 2),
                                emptyPlan(Collective::kBroadcast, 1, 2)};
  plans[1].channels.push_back({{get(0, in(0), out(0))}});
  ASSERT_TRUE(plans[1].hasOneSidedSteps());
  ASSERT_FALSE(plans[0].hasOneSidedSteps());
  // Prologue L, get o + S / B + L, epilogue L.
  const Prediction p = simulate(plans, t, options(4000));
  EXPECT_NEAR(p.timeUs, latency + 0.5 + 4000 / 1e4 + latency + latency, kTol);
  EXPECT_NEAR(p.timeUs, 6.9, kTol);
  ASSERT_EQ(p.arcBytes.size(), 2u);
  EXPECT_EQ(p.arcBytes[0], 4000);  // 0 -> 1: the read's bytes flow from the rank read.
  EXPECT_EQ(p.arcBytes[1], 0);     // 1 -> 0: the prologue's and epilogue's messages are empty.
  EXPECT_NEAR(p.arcBusy[0], 0.4 / 6.9, kTol);

  // Two tiles: one get per tile, one after the other on the channel.
  const double tau = kTile / 1e4;
  EXPECT_NEAR(simulate(plans, t, options(2 * kTile)).timeUs,
              latency + 2 * (0.5 + tau + latency) + latency, kTol);
  // An empty chunk reads nothing: prologue, the step's overhead, epilogue.
  EXPECT_NEAR(simulate(plans, t, options(0)).timeUs, latency + 0.5 + latency, kTol);

  // The direct broadcast from root 0 is the same read, the root copying its own input
  // meanwhile (L + o + S / copy, done before the reader's epilogue message reaches it).
  const Prediction direct =
      simulate(directPlans(Collective::kBroadcast, 2, 1000, 0), t, options(4000));
  EXPECT_NEAR(direct.timeUs, 6.9, kTol);
  EXPECT_EQ(direct.arcBytes, p.arcBytes);
}

TEST(SimulatorOneSided, SignalAndWaitAreEmptyMessagesHoldingFifoSlots) {
  // Signals alone are not one-sided (nothing reads a peer): no prologue, no epilogue.
  const topo::Topology t = fullMesh(2, 10, 2);
  std::vector<plan::Plan> plans{emptyPlan(Collective::kBroadcast, 0, 2),
                                emptyPlan(Collective::kBroadcast, 1, 2)};
  plans[0].channels.push_back({{signal(1, in(0)), signal(1, in(0))}});
  plans[1].channels.push_back({{wait(0, in(0)), wait(0, in(0))}});
  ASSERT_FALSE(plans[0].hasOneSidedSteps());
  // Depth 4: signals at 0 and 0.5 arrive at 2.5 and 3; the waits take o each.
  SimOptions o = options(4000);
  Prediction p = simulate(plans, t, o);
  EXPECT_NEAR(p.timeUs, 0.5 + 0.5 + 2 + 0.5, kTol);
  EXPECT_EQ(p.arcBytes, (std::vector<double>{0, 0}));
  // Depth 1: the second signal waits for the first wait to free the slot (at 3).
  o.fifoDepth = 1;
  EXPECT_NEAR(simulate(plans, t, o).timeUs, 3 + 0.5 + 2 + 0.5, kTol);

  // One signal about a chunk of two tiles sends two empty messages, whatever the bytes.
  plans[0].channels[0].steps.resize(1);
  plans[1].channels[0].steps.resize(1);
  p = simulate(plans, t, options(2 * kTile));
  EXPECT_NEAR(p.timeUs, 0.5 + 0.5 + 2 + 0.5, kTol);
  EXPECT_EQ(p.arcBytes, (std::vector<double>{0, 0}));
  EXPECT_EQ(p.arcBusy, (std::vector<double>{0, 0}));
}

TEST(SimulatorOneSided, DirectAllReduceOnThreeRanksMatchesHandComputation) {
  const int n = 3;
  const double gbps = 10, latency = 1, overhead = 0.5, reduce = 20;
  const topo::Topology t = fullMesh(n, gbps, latency);
  // One tile per chunk: C = S / 3 = kTile bytes.
  const size_t bytes = n * kTile;
  const auto plans = directPlans(Collective::kAllReduce, n, bytes / 4);
  ASSERT_EQ(plans.size(), 3u);
  ASSERT_TRUE(plans[0].hasOneSidedSteps());
  const double c = static_cast<double>(kTile);
  // Every rank alike (each arc q -> r carries only r's reads of q, never two at once):
  //   prologue                                   L
  //   rall: o, reads of C from both peers, L, C / R   o + C/B + L + C/R
  //   signal r+1, signal r+2                     2o
  //   wait r+1 (its signal to r was its second,
  //     sent at the same time as ours): L + o     L + o
  //   get r+1                                    o + C/B + L
  //   wait r+2 (arrived long ago), get r+2        o + o + C/B + L
  //   epilogue                                   L
  const double hand = 6 * latency + 7 * overhead + 3 * c / (gbps * 1e3) + c / (reduce * 1e3);
  Prediction p = simulate(plans, t, options(bytes));
  EXPECT_NEAR(p.timeUs, hand, kTol);
  EXPECT_NEAR(p.timeUs, 193.0008, kTol);
  EXPECT_NEAR(p.busbwGBps, p.algbwGBps * 4 / 3, kTol);
  // Every arc q -> r carries rank r's two reads of q (rall's and get's); signals carry 0.
  for (size_t a = 0; a < t.arcs.size(); ++a) EXPECT_EQ(p.arcBytes[a], 2 * c) << "arc " << a;

  // Two tiles per chunk: the prologue and epilogue once, everything else per tile (the
  // ranks stay in step, so nothing overlaps across tiles).
  p = simulate(plans, t, options(2 * bytes));
  EXPECT_NEAR(p.timeUs,
              2 * latency + 2 * (4 * latency + 7 * overhead) + 3 * 2 * c / (gbps * 1e3) +
                  2 * c / (reduce * 1e3),
              kTol);
  for (size_t a = 0; a < t.arcs.size(); ++a) EXPECT_EQ(p.arcBytes[a], 4 * c) << "arc " << a;
}

TEST(SimulatorOneSided, RallReadsEveryPeerAtOnceSharingLinks) {
  // Direct reducescatter through a switch: rank r reads block r of both peers at once; every
  // uplink q -> sw and downlink sw -> r carries two reads, each at B / 2.
  const int n = 3;
  const topo::Topology t = star(n, 10, 1);
  const auto plans = directPlans(Collective::kReduceScatter, n, 1000);
  const Prediction p = simulate(plans, t, options(4000));
  // Prologue 2 hops, o, two reads of 4000 at 5 GB/s, 2 hops, reduce 4000 at 20 GB/s,
  // epilogue 2 hops.
  EXPECT_NEAR(p.timeUs, 2 + 0.5 + 0.8 + 2 + 0.2 + 2, kTol);
  for (size_t a = 0; a < t.arcs.size(); ++a) EXPECT_EQ(p.arcBytes[a], 8000) << "arc " << a;
}

TEST(SimulatorOneSided, WaitWithoutSignalDeadlocksAndThePrologueNeedsEveryRoute) {
  const topo::Topology t = fullMesh(2, 10, 1);
  std::vector<plan::Plan> plans{emptyPlan(Collective::kBroadcast, 0, 2),
                                emptyPlan(Collective::kBroadcast, 1, 2)};
  plans[0].channels.push_back({{wait(1, out(0)), get(1, out(0), out(0))}});
  try {
    simulate(plans, t, options(4000));
    ADD_FAILURE() << "expected a deadlock";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what())
                  .find("the plans deadlock: rank 0 channel 0 waits at "
                        "step 0 of tile 0"),
              std::string::npos)
        << error.what();
  }
  // With its signal it runs: prologue L, signal o (arrives at 2.5), wait o, get o + 0.4 + L,
  // epilogue L.
  plans[1].channels.push_back({{signal(0, out(0))}});
  EXPECT_NEAR(simulate(plans, t, options(4000)).timeUs, 1 + 0.5 + 1 + 0.5 + 0.5 + 0.4 + 1 + 1,
              kTol);

  // A line 0 - 1 - 2: rank 0 reads only rank 1, but the prologue needs 0 -> 2 too.
  topo::Topology line = ranksOnly(3);
  link(line, 0, 1, 10, 1);
  link(line, 1, 2, 10, 1);
  std::vector<plan::Plan> three{emptyPlan(Collective::kBroadcast, 0, 3),
                                emptyPlan(Collective::kBroadcast, 1, 3),
                                emptyPlan(Collective::kBroadcast, 2, 3)};
  three[0].channels.push_back({{get(1, in(0), out(0))}});
  try {
    simulate(three, line, options(4000));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("prologue"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace grove::model
