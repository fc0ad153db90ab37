// The simulator's shared CPUs (SimOptions::cpuGroup and groupCpus): a step's local work runs
// on its rank's one thread, shared by the rank's channels, and the busy ranks of a group share
// its CPUs max-min fairly; without groups every channel works on a CPU of its own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grove/error.hpp"
#include "model/simulator.hpp"
#include "support/test_topologies.hpp"

namespace grove::model {
namespace {

constexpr double kTol = 1e-6;
constexpr double kOverheadUs = 0.5;
// 10^6 bytes copied at 1 GB/s (10^3 bytes per us): 1000 us of one CPU.
constexpr double kCopyUs = 1000;

// Every rank of `n` copies its input block into its output, once per channel
// (`channels` channels, each its own copy): local work only, no message.
std::vector<plan::Plan> copyPlans(int n, int channels) {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < n; ++r) {
    plans.push_back(testing::emptyPlan(plan::Collective::kAllGather, r, n));
    plan::Step copy;
    copy.op = plan::OpKind::kCopy;
    copy.src = {plan::BufferKind::kInput, 0};
    copy.dst = {plan::BufferKind::kOutput, 0};
    for (int c = 0; c < channels; ++c) plans.back().channels.push_back({{copy}});
  }
  return plans;
}

SimOptions options(std::vector<int> cpuGroup = {}, std::vector<double> groupCpus = {}) {
  SimOptions o;
  o.bytes = 1000000;
  o.elementSize = 4;
  o.tileBytes = 1000000;  // one tile: the whole copy is one piece of work
  o.copyGBps = 1;
  o.stepOverheadUs = kOverheadUs;
  o.cpuGroup = std::move(cpuGroup);
  o.groupCpus = std::move(groupCpus);
  return o;
}

double predictedUs(int n, int channels, const SimOptions& o) {
  return simulate(copyPlans(n, channels), testing::fullMesh(n, 10, 2), o).timeUs;
}

TEST(SimulatorCpus, WithoutGroupsEveryChannelHasACpuOfItsOwn) {
  EXPECT_NEAR(predictedUs(4, 1, options()), kOverheadUs + kCopyUs, kTol);
  EXPECT_NEAR(predictedUs(1, 3, options()), kOverheadUs + kCopyUs, kTol);
}

TEST(SimulatorCpus, RanksOfAGroupShareItsCpus) {
  // 4 busy ranks on 2 CPUs: each at half a CPU.
  EXPECT_NEAR(predictedUs(4, 1, options({0, 0, 0, 0}, {2})), kOverheadUs + 2 * kCopyUs, kTol);
  // On 3 CPUs, each at three quarters.
  EXPECT_NEAR(predictedUs(4, 1, options({0, 0, 0, 0}, {3})), kOverheadUs + kCopyUs / 0.75, kTol);
  // A CPU for each: as without groups (a rank's thread uses one CPU, however many there are).
  EXPECT_NEAR(predictedUs(4, 1, options({0, 0, 0, 0}, {4})), kOverheadUs + kCopyUs, kTol);
  EXPECT_NEAR(predictedUs(4, 1, options({0, 0, 0, 0}, {64})), kOverheadUs + kCopyUs, kTol);
}

TEST(SimulatorCpus, GroupsDoNotShareWithEachOther) {
  // Ranks 0 and 1 on one CPU (half each), ranks 2 and 3 on two: the call ends with group 0.
  EXPECT_NEAR(predictedUs(4, 1, options({0, 0, 1, 1}, {1, 2})), kOverheadUs + 2 * kCopyUs, kTol);
  // One rank alone on its CPU while three share another: these set the pace, at a third each.
  EXPECT_NEAR(predictedUs(4, 1, options({1, 0, 0, 0}, {1, 1})), kOverheadUs + 3 * kCopyUs, kTol);
}

TEST(SimulatorCpus, ARanksChannelsShareItsThread) {
  // Three channels of one rank copy one after another on its thread, even with CPUs to spare.
  EXPECT_NEAR(predictedUs(1, 3, options({0}, {8})), kOverheadUs + 3 * kCopyUs, kTol);
  // Two ranks of two channels on 2 CPUs: each rank's thread has a CPU, its channels halve it.
  EXPECT_NEAR(predictedUs(2, 2, options({0, 0}, {2})), kOverheadUs + 2 * kCopyUs, kTol);
  // On 1 CPU the four channels take a quarter each.
  EXPECT_NEAR(predictedUs(2, 2, options({0, 0}, {1})), kOverheadUs + 4 * kCopyUs, kTol);
}

void expectRejected(const SimOptions& o, const std::string& expected) {
  try {
    predictedUs(2, 1, o);
    ADD_FAILURE() << "accepted; expected: " << expected;
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

TEST(SimulatorCpus, BadGroupsAreRejectedByName) {
  expectRejected(options({0}, {2}), "cpuGroup names the CPU group of 1 ranks, expected 2");
  expectRejected(options({0, 1}, {2}), "rank 1 is in CPU group 1, expected one in [0, 1)");
  expectRejected(options({0, -1}, {2}), "rank 1 is in CPU group -1, expected one in [0, 1)");
  expectRejected(options({0, 0}, {0}), "CPU group 0 has 0 CPUs, expected more than 0");
  expectRejected(options({}, {2}), "cpuGroup names the CPU group of 0 ranks, expected 2");
}

}  // namespace
}  // namespace grove::model
