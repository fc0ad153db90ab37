// The simulator against closed forms worked out by hand from its documented model: a lone
// message costs overhead + S/B + latency + overhead, flows sharing an arc split it equally,
// a single-channel ring pays its per-hop latencies once per tile, a chain pipelines tiles
// and needs FIFO slots to do so.
#include "model/simulator.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "algo/all.hpp"
#include "algo/builder.hpp"
#include "algo/registry.hpp"
#include "algo/select_topology.hpp"
#include "grove/error.hpp"
#include "support/test_topologies.hpp"

namespace grove::model {
namespace {

using namespace algo::build;
using plan::Collective;

constexpr double kTol = 1e-9;

using testing::emptyPlan;
using testing::fullMesh;
using testing::link;
using testing::ranksOnly;
using testing::star;

std::vector<plan::Plan> plansOf(const algo::Algorithm& algorithm, Collective collective, int n,
                                int root = -1) {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < n; ++r) {
    plan::PlanRequest request;
    request.collective = collective;
    request.nranks = n;
    request.rank = r;
    request.root = root;
    request.count = 1;
    plans.push_back(algorithm.build(request));
  }
  return plans;
}

/// Rank 0 sends its input to rank 1 over `lanes` lanes (one channel each).
std::vector<plan::Plan> sendPlans(int n, int from, int to, int lanes) {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < n; ++r) plans.push_back(emptyPlan(Collective::kSendRecv, r, n));
  for (int lane = 0; lane < lanes; ++lane) {
    plan::Step s = send(to, in(0));
    s.lane = static_cast<uint16_t>(lane);
    plan::Step d = recv(from, out(0));
    d.lane = static_cast<uint16_t>(lane);
    plans[static_cast<size_t>(from)].channels.push_back({{s}});
    plans[static_cast<size_t>(to)].channels.push_back({{d}});
  }
  return plans;
}

SimOptions options(size_t bytes) {
  SimOptions o;
  o.bytes = bytes;
  o.elementSize = 4;
  o.tileBytes = 256 * 1024;
  o.fifoDepth = 4;
  o.reduceGBps = 20;
  o.copyGBps = 20;
  o.stepOverheadUs = 0.5;
  return o;
}

TEST(Simulator, LoneSendIsOverheadPlusBytesOverBandwidthPlusLatency) {
  const topo::Topology t = fullMesh(2, 10, 2);  // 10 GB/s = 10^4 bytes per us.
  const auto plans = sendPlans(2, 0, 1, 1);
  // One tile: 0.5 + 4000 / 10^4 + 2 + 0.5.
  EXPECT_NEAR(simulate(plans, t, options(4000)).timeUs, 3.4, kTol);
  // Count 1 and count 0 (one empty message).
  EXPECT_NEAR(simulate(plans, t, options(4)).timeUs, 3.0004, kTol);
  EXPECT_NEAR(simulate(plans, t, options(0)).timeUs, 3.0, kTol);
  // 250000 elements = 3 full tiles + 53392 elements: the tiles pipeline behind the first.
  const Prediction p = simulate(plans, t, options(1000000));
  EXPECT_NEAR(p.timeUs, 0.5 + 100 + 2 + 0.5, kTol);
  EXPECT_NEAR(p.algbwGBps, 1000000 / (103.0 * 1e3), kTol);
  EXPECT_NEAR(p.busbwGBps, p.algbwGBps, kTol);
  ASSERT_EQ(p.arcBytes.size(), 2u);
  EXPECT_EQ(p.arcBytes[0], 1000000);  // 0 -> 1
  EXPECT_EQ(p.arcBytes[1], 0);
  EXPECT_NEAR(p.arcBusy[0], 100 / 103.0, kTol);
  EXPECT_EQ(p.arcBusy[1], 0);
}

TEST(Simulator, ANicLineRateCarriesTcpPayloadOnly) {
  // A net arc whose capacity is a NIC's line rate moves 1448 payload bytes per 1538 on the
  // wire: 10 GB/s of line carries 10 * 1448 / 1538 GB/s of the message.
  topo::Topology t = fullMesh(2, 10, 2);
  for (topo::Arc& arc : t.arcs) arc.kind = topo::LinkKind::kNet;
  const auto plans = sendPlans(2, 0, 1, 1);
  EXPECT_NEAR(simulate(plans, t, options(4000)).timeUs, 3.4, kTol);  // a measured payload rate
  for (topo::Arc& arc : t.arcs) arc.lineRate = true;
  EXPECT_NEAR(simulate(plans, t, options(4000)).timeUs, 0.5 + 0.4 * 1538 / 1448 + 2 + 0.5, kTol);
  EXPECT_NEAR(simulate(plans, t, options(1000000)).timeUs, 0.5 + 100.0 * 1538 / 1448 + 2 + 0.5,
              kTol);
}

TEST(Simulator, TwoFlowsSharingAnArcTakeTwiceAsLong) {
  SimOptions o = options(1000000);
  o.stepOverheadUs = 0;
  topo::Topology t = fullMesh(2, 10, 0);
  const double one = simulate(sendPlans(2, 0, 1, 1), t, o).timeUs;
  const Prediction two = simulate(sendPlans(2, 0, 1, 2), t, o);
  EXPECT_NEAR(one, 100, kTol);
  EXPECT_NEAR(two.timeUs, 200, kTol);
  EXPECT_EQ(two.arcBytes[0], 2000000);
  EXPECT_NEAR(two.arcBusy[0], 1.0, kTol);

  // Through a switch: ranks 0 and 1 both send to rank 2 and share the arc sw -> 2; each
  // message crosses two hops of 1 us.
  t = star(3, 10, 1);
  std::vector<plan::Plan> plans = sendPlans(3, 0, 2, 1);
  plans[1].channels.push_back({{send(2, in(0))}});
  plans[2].channels.push_back({{recv(1, out(0))}});
  EXPECT_NEAR(simulate(sendPlans(3, 0, 2, 1), t, options(4000)).timeUs, 0.5 + 0.4 + 2 + 0.5, kTol);
  EXPECT_NEAR(simulate(plans, t, options(4000)).timeUs, 0.5 + 0.8 + 2 + 0.5, kTol);
}

TEST(Simulator, RingAllReduceOnThreeRankMeshMatchesClosedForm) {
  const int n = 3;
  const double gbps = 10, latency = 1, overhead = 0.5, reduce = 20;
  const topo::Topology t = fullMesh(n, gbps, latency);
  const auto plans = plansOf(algo::ringAllReduce(), Collective::kAllReduce, n);
  // Each chunk of S/3 holds two full tiles: S = 3 * 2 * 65536 elements.
  const double bytes = 3.0 * 2 * 65536 * 4;
  const Prediction p = simulate(plans, t, options(static_cast<size_t>(bytes)));
  // One channel walks send, rrs, rrcs, rcs, recv per tile: 2(n-1) hops of o + tau + L, the
  // final recv's o, and two reductions per tile; the wire is never idle between hops.
  const int tiles = 2;
  const double closedForm = 2.0 * (n - 1) / n * bytes / (gbps * 1e3) +
                            (n - 1.0) / n * bytes / (reduce * 1e3) +
                            tiles * (2 * (n - 1) * latency + (2 * n - 1) * overhead);
  EXPECT_NEAR(p.timeUs, closedForm, kTol);
  EXPECT_NEAR(p.timeUs, 275.144, kTol);
  EXPECT_NEAR(p.busbwGBps, p.algbwGBps * 4 / 3, kTol);
  // Only the ring's arcs r -> r+1 carry data: 2(n-1)/n * S each.
  double total = 0;
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    const bool forward = t.arcs[a].to == (t.arcs[a].from + 1) % n;
    EXPECT_EQ(p.arcBytes[a], forward ? bytes * 4 / 3 : 0) << "arc " << a;
    total += p.arcBytes[a];
  }
  EXPECT_EQ(total, 2 * (n - 1) * bytes);

  // Count 0: one empty message per step; count 7 (chunks of 3, 3, 1): every chunk still
  // travels 2(n-1) hops.
  EXPECT_NEAR(simulate(plans, t, options(0)).timeUs, 2 * (n - 1) * latency + 5 * overhead, kTol);
  const Prediction odd = simulate(plans, t, options(28));
  total = 0;
  for (double b : odd.arcBytes) total += b;
  EXPECT_EQ(total, 2 * (n - 1) * 28);
}

TEST(Simulator, ChainBroadcastThroughASwitchPipelines) {
  // Root 1 of 4 ranks: 1 -> 2 -> 3 -> 0, every message two hops through the switch.
  const int n = 4;
  const topo::Topology t = star(n, 10, 1);
  const auto plans = plansOf(algo::chainBroadcast(), Collective::kBroadcast, n, 1);
  const double bytes = 4.0 * 262144;  // Four full tiles.
  const Prediction p = simulate(plans, t, options(static_cast<size_t>(bytes)));
  // n overheads, 2 hops of latency per forward, S/B once, and a tile time per middle rank.
  const double tau = 262144 / 1e4;
  EXPECT_NEAR(p.timeUs, n * 0.5 + 2 * (n - 1) * 1.0 + bytes / 1e4 + (n - 2) * tau, kTol);
  EXPECT_NEAR(p.timeUs, 165.2864, kTol);
  // Every rank's uplink except the tail's carries S, every downlink except the root's.
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    const topo::Arc& arc = t.arcs[a];
    const bool up = arc.to == n;
    const int rank = up ? arc.from : arc.to;
    const bool used = up ? rank != 0 : rank != 1;
    EXPECT_EQ(p.arcBytes[a], used ? bytes : 0) << "arc " << a;
  }
  EXPECT_NEAR(p.busbwGBps, p.algbwGBps, kTol);
}

TEST(Simulator, FifoDepthLimitsAPipelinedChain) {
  // Chain broadcast from 0 over three directly linked ranks, 8 tiles, long latency.
  const topo::Topology t = fullMesh(3, 10, 10);
  const auto plans = plansOf(algo::chainBroadcast(), Collective::kBroadcast, 3, 0);
  SimOptions o = options(8 * 262144);
  const double tau = 26.2144;
  // Depth 4 hides the round trip: 3 overheads, 2 latencies, S/B and one tile time.
  EXPECT_NEAR(simulate(plans, t, o).timeUs, 3 * 0.5 + 2 * 10 + 8 * tau + tau, kTol);
  // Depth 1: a slot comes back only after the receiver's step, so every tile waits for a
  // full hop (o + tau + L) of the one before: (m + 1) hops plus m overheads.
  o.fifoDepth = 1;
  EXPECT_NEAR(simulate(plans, t, o).timeUs, 9 * (0.5 + tau + 10) + 8 * 0.5, kTol);
}

TEST(Simulator, StepOverheadAndLocalWork) {
  // A single rank copying in -> out: one step per tile at o + bytes / copy.
  const topo::Topology t = ranksOnly(1);
  std::vector<plan::Plan> plans{emptyPlan(Collective::kBroadcast, 0, 1)};
  plans[0].channels.push_back({{copy(in(0), out(0))}});
  EXPECT_NEAR(simulate(plans, t, options(2 * 262144)).timeUs, 2 * (0.5 + 262144 / 2e4), kTol);
  // A copy onto itself is free but for the overhead.
  plans[0].channels[0].steps[0] = copy(in(0), in(0));
  EXPECT_NEAR(simulate(plans, t, options(2 * 262144)).timeUs, 1.0, kTol);
}

TEST(Simulator, BusbwFactor) {
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kAllReduce, 1), 0);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kReduceScatter, 5), 0.8);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kBroadcast, 8), 1);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kReduce, 8), 1);
  EXPECT_DOUBLE_EQ(busbwFactor(Collective::kSendRecv, 2), 1);
}

TEST(Simulator, AllGatherAlgbwCountsTheWholeOutput) {
  const topo::Topology t = fullMesh(3, 10, 1);
  const auto plans = plansOf(algo::ringAllGather(), Collective::kAllGather, 3);
  const Prediction p = simulate(plans, t, options(4000));
  EXPECT_NEAR(p.algbwGBps, 3 * 4000 / (p.timeUs * 1e3), kTol);
  EXPECT_NEAR(p.busbwGBps, p.algbwGBps * 2 / 3, kTol);
}

TEST(Simulator, IsDeterministic) {
  const topo::Topology t = star(5, 7, 0.3);
  const auto plans = plansOf(algo::ringAllReduce(), Collective::kAllReduce, 5);
  const Prediction a = simulate(plans, t, options(1234567 * 4));
  const Prediction b = simulate(plans, t, options(1234567 * 4));
  EXPECT_EQ(a.timeUs, b.timeUs);
  EXPECT_EQ(a.arcBytes, b.arcBytes);
  EXPECT_EQ(a.arcBusy, b.arcBusy);
}

ErrorCode codeOf(const std::vector<plan::Plan>& plans, const topo::Topology& t) {
  try {
    simulate(plans, t, options(4000));
  } catch (const Error& error) {
    return error.code();
  }
  return ErrorCode::kSuccess;
}

TEST(Simulator, RejectsRankCountMismatchMissingRouteAndDeadlock) {
  const auto plans = sendPlans(2, 0, 1, 1);
  EXPECT_EQ(codeOf(plans, fullMesh(3, 1, 0)), ErrorCode::kInvalidArgument);
  std::vector<plan::Plan> swapped{plans[1], plans[0]};
  EXPECT_EQ(codeOf(swapped, fullMesh(2, 1, 0)), ErrorCode::kInvalidArgument);
  // Ranks 0 and 2 have no link and no switch between them.
  topo::Topology t = ranksOnly(3);
  link(t, 0, 1, 1, 0);
  link(t, 1, 2, 1, 0);
  EXPECT_EQ(codeOf(sendPlans(3, 0, 1, 1), t), ErrorCode::kSuccess);
  EXPECT_EQ(codeOf(sendPlans(3, 0, 2, 1), t), ErrorCode::kInvalidArgument);
  try {
    simulate(sendPlans(3, 0, 2, 1), t, options(4000));
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0 channel 0 step 0"), std::string::npos)
        << error.what();
  }
  // Both ranks receive first: nothing can ever move.
  std::vector<plan::Plan> stuck = sendPlans(2, 0, 1, 1);
  stuck[0].channels[0].steps.insert(stuck[0].channels[0].steps.begin(), recv(1, out(0)));
  stuck[1].channels[0].steps.push_back(send(0, in(0)));
  EXPECT_EQ(codeOf(stuck, fullMesh(2, 1, 0)), ErrorCode::kInvalidArgument);
}

// Selection simulates with the executor's geometry: the communicator's GROVE_SLOT_BYTES and
// GROVE_FIFO_DEPTH, passed in the cost parameters (the table's defaults unless set).
TEST(SelectTopology, SimOptionsFollowTheExecutorsGeometry) {
  algo::CostParams params;
  model::SimOptions options = algo::selectionSimOptions(params, nullptr);
  EXPECT_EQ(options.tileBytes, size_t{256 * 1024});
  EXPECT_EQ(options.fifoDepth, 4);
  params.tileBytes = 65536;
  params.fifoDepth = 16;
  options = algo::selectionSimOptions(params, nullptr);
  EXPECT_EQ(options.tileBytes, size_t{65536});
  EXPECT_EQ(options.fifoDepth, 16);
}

TEST(SelectTopology, SizeBucketsAreQuarterOctaves) {
  EXPECT_EQ(algo::sizeBucket(0), 0u);
  EXPECT_EQ(algo::sizeBucket(1), 1u);
  EXPECT_EQ(algo::sizeBucket(7), 7u);
  EXPECT_EQ(algo::sizeBucket(8), 8u);
  EXPECT_EQ(algo::sizeBucket(9), 10u);
  EXPECT_EQ(algo::sizeBucket(15), 16u);
  EXPECT_EQ(algo::sizeBucket(1000), 1024u);
  EXPECT_EQ(algo::sizeBucket(1025), 1280u);
  EXPECT_EQ(algo::sizeBucket(1792), 1792u);
  EXPECT_EQ(algo::sizeBucket(1793), 2048u);
}

plan::PlanRequest requestOn(const topo::Topology& t, Collective collective, size_t count,
                            int root = -1) {
  plan::PlanRequest request;
  request.collective = collective;
  request.nranks = t.rankCount();
  request.rank = 1;
  request.root = root;
  request.count = count;
  request.topology = &t;
  return request;
}

TEST(SelectTopology, PredictionIsTheSimulationAtTheBucketSize) {
  const topo::Topology t = fullMesh(4, 10, 1);
  const plan::PlanRequest request = requestOn(t, Collective::kAllReduce, 1000);
  const algo::Algorithm ring = algo::ringAllReduce();
  SimOptions o = algo::selectionSimOptions(algo::CostParams{});
  const double predicted = algo::predictedUs(ring, request, o);
  o.bytes = 1024 * 4;
  EXPECT_EQ(predicted, simulate(plansOf(ring, Collective::kAllReduce, 4), t, o).timeUs);
  // Memoized: the same value again, and for any count of the bucket, from any rank.
  plan::PlanRequest other = request;
  other.rank = 3;
  other.count = 1010;
  EXPECT_EQ(algo::predictedUs(ring, other, o), predicted);
}

TEST(SelectTopology, SelectRanksByPrediction) {
  const topo::Topology t = fullMesh(5, 10, 1);
  for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 22}) {
    for (Collective collective : {Collective::kAllReduce, Collective::kBroadcast}) {
      const plan::PlanRequest request =
          requestOn(t, collective, count, collective == Collective::kBroadcast ? 2 : -1);
      std::string best;
      double bestUs = std::numeric_limits<double>::infinity();
      for (const algo::Algorithm& a : algo::algorithms()) {
        if (a.collective != collective || !a.applies(request).ok()) continue;
        const double us = algo::topologyCostUs(a, request, algo::CostParams{});
        if (us < bestUs) {
          bestUs = us;
          best = a.name;
        }
      }
      const algo::Selection s = algo::select(request, "", "");
      ASSERT_NE(s.algorithm, nullptr);
      EXPECT_EQ(s.algorithm->name, best) << s.reason;
    }
  }
}

TEST(SelectTopology, PlansThatCannotRunOnTheTopologyAreNotChosen) {
  // A line 0 - 1 - 2: the ring's hop 2 -> 0 has no route.
  topo::Topology t = ranksOnly(3);
  link(t, 0, 1, 10, 1);
  link(t, 1, 2, 10, 1);
  const plan::PlanRequest request = requestOn(t, Collective::kAllReduce, 1 << 20);
  const algo::Algorithm ring = algo::ringAllReduce();
  EXPECT_EQ(algo::topologyCostUs(ring, request, algo::CostParams{}),
            std::numeric_limits<double>::infinity());
  try {
    algo::predictedUs(ring, request, SimOptions{});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("no route"), std::string::npos) << error.what();
  }
  const algo::Selection s = algo::select(request, "", "");
  ASSERT_NE(s.algorithm, nullptr);
  EXPECT_NE(s.algorithm->name, "ring") << s.reason;
  // Without a topology there is nothing to predict on.
  plan::PlanRequest bare = request;
  bare.topology = nullptr;
  EXPECT_THROW(algo::predictedUs(ring, bare, SimOptions{}), Error);
}

}  // namespace
}  // namespace grove::model
