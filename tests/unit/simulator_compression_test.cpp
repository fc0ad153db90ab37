// The simulator's model of compressed network links (SimOptions::compressionRatio and
// codecGBps, GROVE_COMPRESS): messages over network arcs carry 1/ratio of their bytes, other
// links are untouched, and coding costs the sending and receiving steps time.
#include <gtest/gtest.h>

#include <vector>

#include "model/simulator.hpp"
#include "support/test_topologies.hpp"

namespace grove::model {
namespace {

constexpr double kTol = 1e-6;

// Two ranks joined both ways at 10 GB/s (10^4 bytes per us) with 2 us of latency, the links
// of kind `kind`.
topo::Topology pair(topo::LinkKind kind) {
  topo::Topology t = testing::fullMesh(2, 10, 2);
  for (topo::Arc& arc : t.arcs) arc.kind = kind;
  return t;
}

// Rank 0 sends its whole input to rank 1 (one channel).
std::vector<plan::Plan> sendPlans() {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < 2; ++r)
    plans.push_back(testing::emptyPlan(plan::Collective::kSendRecv, r, 2));
  plan::Step s;
  s.op = plan::OpKind::kSend;
  s.sendPeer = 1;
  s.src = {plan::BufferKind::kInput, 0};
  plan::Step d;
  d.op = plan::OpKind::kRecv;
  d.recvPeer = 0;
  d.dst = {plan::BufferKind::kOutput, 0};
  plans[0].channels.push_back({{s}});
  plans[1].channels.push_back({{d}});
  return plans;
}

SimOptions options(double ratio, double codecGBps) {
  SimOptions o;
  o.bytes = 1000000;  // 3 full tiles of 256 KiB and a partial one
  o.elementSize = 4;
  o.tileBytes = 256 * 1024;
  o.fifoDepth = 4;
  o.stepOverheadUs = 0.5;
  o.compressionRatio = ratio;
  o.codecGBps = codecGBps;
  return o;
}

TEST(SimulatorCompression, NetworkLinksCarryOneRatioOfTheBytes) {
  const auto plans = sendPlans();
  const topo::Topology net = pair(topo::LinkKind::kNet);
  // Uncompressed: 0.5 + 10^6 / 10^4 + 2 + 0.5 (the tiles pipeline behind the first).
  const Prediction raw = simulate(plans, net, options(1.0, 0));
  EXPECT_NEAR(raw.timeUs, 103, kTol);
  const Prediction half = simulate(plans, net, options(2.0, 0));
  EXPECT_NEAR(half.timeUs, 0.5 + 50 + 2 + 0.5, kTol);
  EXPECT_NEAR(half.arcBytes[0], 500000, 1.0);  // the four tiles, each rounded down
  // Links that are not network links never compress.
  const Prediction shm = simulate(plans, pair(topo::LinkKind::kShm), options(2.0, 0));
  EXPECT_NEAR(shm.timeUs, 103, kTol);
  EXPECT_EQ(shm.arcBytes[0], 1000000);
}

TEST(SimulatorCompression, CodingCostsTheSenderAndTheReceiverTime) {
  const auto plans = sendPlans();
  const topo::Topology net = pair(topo::LinkKind::kNet);
  const double free = simulate(plans, net, options(2.0, 0)).timeUs;
  const double fast = simulate(plans, net, options(2.0, 1000)).timeUs;
  const double slow = simulate(plans, net, options(2.0, 1)).timeUs;
  EXPECT_GT(fast, free);
  EXPECT_LT(fast, free + 2.0);  // 10^6 bytes at 10^6 bytes per us, each side: ~1 us each
  // At 1 GB/s the codec, not the wire, sets the pace: 10^6 bytes encoded then decoded
  // (pipelined by tile) take at least 10^6 / 10^3 us.
  EXPECT_GT(slow, 1000);
  EXPECT_GT(slow, 2 * free);
}

}  // namespace
}  // namespace grove::model
