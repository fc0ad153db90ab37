// GROVE_COMPRESS's choice of which peers' messages a rank compresses (chooseCompression):
// on and off as told; auto by the slowest known rate on the way to each peer — this host's
// NIC, and the network links of the topology that are known (a host whose NIC rate nobody
// gave has a stand-in rate, which never decides); the codec is measured only when needed.
#include "core/link_compression.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algo/registry.hpp"
#include "algo/select_topology.hpp"
#include "core/comm_topology.hpp"
#include "topo/topology.hpp"

namespace grove::detail {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr double kCodec = 1.2e9;  // bytes/s: what the tests say the codec runs at

struct Choice {
  CompressionChoice choice;
  int codecAsked = 0;
};

Choice choose(const Config& config, int rank, int size, const std::vector<int>& peers,
              const topo::Topology* topology) {
  Choice result;
  result.choice = chooseCompression(config, rank, size, peers, topology, [&result] {
    ++result.codecAsked;
    return kCodec;
  });
  return result;
}

Config autoWith(int64_t nicMbps) {
  Config config;
  config.compress = Config::Compress::kAuto;
  config.nicSpeedMbps = nicMbps;
  config.nicSpeedSource = nicMbps > 0 ? "GROVE_NIC_SPEED" : "eth0 reports no line rate";
  return config;
}

TEST(LinkCompression, OnAndOffAreAsTold) {
  Config config;
  config.compress = Config::Compress::kOn;
  Choice on = choose(config, 0, 3, {1, 2}, nullptr);
  EXPECT_THAT(on.choice.compressTo, ElementsAre(0, 1, 1));
  EXPECT_THAT(on.choice.reasons,
              ElementsAre(Pair("are compressed: GROVE_COMPRESS=on", ElementsAre(1, 2))));
  config.compress = Config::Compress::kOff;
  Choice off = choose(config, 0, 3, {1, 2}, nullptr);
  EXPECT_THAT(off.choice.compressTo, ElementsAre(0, 0, 0));
  EXPECT_THAT(off.choice.reasons,
              ElementsAre(Pair("are not compressed: GROVE_COMPRESS=off", ElementsAre(1, 2))));
  EXPECT_EQ(on.codecAsked + off.codecAsked, 0);
}

TEST(LinkCompression, AutoWithNoRateKnownWaitsForTheTransportsMeasureAndMeasuresNoCodec) {
  constexpr uint8_t kMeasure = exec::kSendCompressedIfMeasuredSlow;
  Choice none = choose(autoWith(0), 1, 2, {0}, nullptr);
  EXPECT_THAT(none.choice.compressTo, ElementsAre(kMeasure, 0));
  EXPECT_THAT(none.choice.reasons,
              ElementsAre(Pair("are raw until the transport measures the link: GROVE_COMPRESS=auto "
                               "and its rate is unknown (no GROVE_NIC_SPEED, no known rate in the "
                               "topology; eth0 reports no line rate); they are compressed while "
                               "its sends drain at under 0.5 of the codec's rate",
                               ElementsAre(0))));
  EXPECT_EQ(none.codecAsked, 0);
  // Two hosts of two ranks whose NICs nobody knows: the topology's stand-in 100 Gbit/s
  // links decide nothing either.
  auto hosts = hostsTopology({"a", "a", "b", "b"}, 0, {0, 0, 0, 0});
  ASSERT_NE(hosts, nullptr);
  Choice stand = choose(autoWith(0), 0, 4, {2, 3}, hosts.get());
  EXPECT_THAT(stand.choice.compressTo, ElementsAre(0, 0, kMeasure, kMeasure));
  EXPECT_EQ(stand.codecAsked, 0);
}

// A link starts compressing when the median of its samples is under half the codec's rate,
// and stops only when even the lowest recent sample reached the codec's rate.
TEST(LinkCompression, AMeasuredLinkCompressesWhenClearlySlowerThanTheCodecAndStopsWhenAllIsFast) {
  using transport::SendRate;
  for (bool compressing : {false, true}) {
    EXPECT_FALSE(measuredSlow(SendRate{}, kCodec, compressing));                // not measured
    EXPECT_FALSE(measuredSlow(SendRate{0.125e9, 0.12e9}, 0, compressing));      // no codec
    EXPECT_TRUE(measuredSlow(SendRate{0.118e9, 0.11e9}, kCodec, compressing));  // 1 Gbit/s
    EXPECT_FALSE(measuredSlow(SendRate{2.6e9, 1.3e9}, kCodec, compressing));    // unshaped veth
  }
  EXPECT_TRUE(measuredSlow(SendRate{0.599e9, 0.5e9}, kCodec, false));
  EXPECT_FALSE(measuredSlow(SendRate{0.6e9, 0.5e9}, kCodec, false));  // half: not clearly slower
  // Compressing: bursts raise the median, one slow sample in the window keeps it compressing.
  EXPECT_TRUE(measuredSlow(SendRate{2.9e9, 0.12e9}, kCodec, true));
  EXPECT_TRUE(measuredSlow(SendRate{2.9e9, 1.19e9}, kCodec, true));
  EXPECT_FALSE(measuredSlow(SendRate{2.9e9, 1.2e9}, kCodec, true));
}

TEST(LinkCompression, AutoComparesThisHostsNicWithTheCodec) {
  Choice slow = choose(autoWith(1000), 0, 2, {1}, nullptr);
  EXPECT_THAT(slow.choice.compressTo, ElementsAre(0, 1));
  EXPECT_THAT(slow.choice.reasons,
              ElementsAre(Pair("are compressed: GROVE_COMPRESS=auto: the path's slowest link "
                               "(0.125 GB/s, this host's NIC, GROVE_NIC_SPEED) is slower than "
                               "the codec (1.200 GB/s to encode a byte and decode one, measured)",
                               ElementsAre(1))));
  EXPECT_EQ(slow.codecAsked, 1);  // once, however many peers
  Choice fast = choose(autoWith(100000), 0, 3, {1, 2}, nullptr);
  EXPECT_THAT(fast.choice.compressTo, ElementsAre(0, 0, 0));
  EXPECT_EQ(fast.codecAsked, 1);
}

// Four hosts of one rank, host 0 behind 1 Gbit/s and the others behind 10: rank 1 compresses
// what it sends to rank 0 (the route crosses host 0's NIC), not what it sends to 2 and 3.
TEST(LinkCompression, AutoFollowsThePeersSlowNicThroughTheHostsTopology) {
  auto hosts = hostsTopology({"h0", "h1", "h2", "h3"}, 1, {1000, 10000, 10000, 10000});
  ASSERT_NE(hosts, nullptr);
  Choice mixed = choose(autoWith(10000), 1, 4, {0, 2, 3}, hosts.get());
  EXPECT_THAT(mixed.choice.compressTo, ElementsAre(1, 0, 0, 0));
  ASSERT_EQ(mixed.choice.reasons.size(), 2u);
  EXPECT_EQ(mixed.choice.reasons[0].first,
            "are compressed: GROVE_COMPRESS=auto: the path's slowest link (0.125 GB/s, the "
            "network link net -> r0 of topology 4 hosts (4 ranks)) is slower than the codec "
            "(1.200 GB/s to encode a byte and decode one, measured)");
  EXPECT_THAT(mixed.choice.reasons[0].second, ElementsAre(0));
  EXPECT_EQ(mixed.choice.reasons[1].first,
            "are not compressed: GROVE_COMPRESS=auto: the path's slowest link (1.250 GB/s, this "
            "host's NIC, GROVE_NIC_SPEED) is not slower than the codec (1.200 GB/s to encode a "
            "byte and decode one, measured)");
  EXPECT_THAT(mixed.choice.reasons[1].second, ElementsAre(2, 3));
}

// Host b's NIC is unknown, host a's is 1 Gbit/s: b's ranks still compress toward a (a's known
// link is on the way), and a's ranks toward b (their own NIC).
TEST(LinkCompression, AKnownPeerNicDecidesWhereThisHostsIsUnknown) {
  auto hosts = hostsTopology({"a", "a", "b", "b"}, 2, {1000, 1000, 0, 0});
  ASSERT_NE(hosts, nullptr);
  Choice fromB = choose(autoWith(0), 2, 4, {0, 1}, hosts.get());
  EXPECT_THAT(fromB.choice.compressTo, ElementsAre(1, 1, 0, 0));
  Choice fromA = choose(autoWith(1000), 0, 4, {2, 3}, hosts.get());
  EXPECT_THAT(fromA.choice.compressTo, ElementsAre(0, 0, 1, 1));
}

TEST(LinkCompression, ATopologyFilesRatesAreKnown) {
  auto file = loadTopology("cluster:2x1:1", 0, 2);
  ASSERT_NE(file, nullptr);
  Choice given = choose(autoWith(0), 0, 2, {1}, file.get());
  EXPECT_THAT(given.choice.compressTo, ElementsAre(0, 1));
  EXPECT_THAT(given.choice.reasons[0].first,
              ::testing::HasSubstr("(0.125 GB/s, the network link r0 -> net of topology "
                                   "cluster:2x1:1) is slower"));
}

// GROVE_DEBUG=INFO's predicted gain (logCompressionGain): the chosen plan simulated with and
// without compressed network messages. Two hosts at 1 Gbit/s: a bfloat16 allreduce of 16 MiB
// over packed trees gains nearly the ratio (the wire dominates; coding at 1.2 GB/s per end
// costs a little); on one host nothing crosses the network and nothing changes.
TEST(LinkCompression, PredictedGainIsTheSimulatorsRawOverCompressedTime) {
  const algo::Algorithm* trees = algo::findAlgorithm(plan::Collective::kAllReduce, "rsag_trees");
  ASSERT_NE(trees, nullptr);
  algo::CostParams params;
  plan::PlanRequest request;
  request.collective = plan::Collective::kAllReduce;
  request.nranks = 2;
  request.type = DataType::kBFloat16;
  request.count = 8u << 20;

  const topo::Topology hosts = topo::fromSpec("cluster:2x1:1");
  request.topology = &hosts;
  const CompressionGain across = predictCompressionGain(*trees, request, params, 1.5, 1.2);
  EXPECT_DOUBLE_EQ(across.rawUs,
                   algo::predictedUs(*trees, request, algo::selectionSimOptions(params, &hosts)));
  EXPECT_GT(across.gain(), 1.4);
  EXPECT_LT(across.gain(), 1.5);
  // A free codec gains the ratio on the wire's share alone, so more than a costly one.
  EXPECT_GT(predictCompressionGain(*trees, request, params, 1.5, 0).gain(), across.gain());
  // Ratio 1 models no compression (the simulator codes nothing then).
  EXPECT_DOUBLE_EQ(predictCompressionGain(*trees, request, params, 1.0, 1.2).gain(), 1.0);

  const topo::Topology oneHost = topo::fromSpec("cluster:1x2");
  request.topology = &oneHost;
  const CompressionGain inside = predictCompressionGain(*trees, request, params, 1.5, 1.2);
  EXPECT_DOUBLE_EQ(inside.compressedUs, inside.rawUs);
}

TEST(LinkCompression, NominalRatiosAreTheMeasuredOnesAndOneForOtherTypes) {
  EXPECT_DOUBLE_EQ(nominalCompressionRatio(DataType::kBFloat16), 1.5);
  EXPECT_DOUBLE_EQ(nominalCompressionRatio(DataType::kFloat32), 1.2);
  EXPECT_DOUBLE_EQ(nominalCompressionRatio(DataType::kFloat16), 1.18);
  EXPECT_DOUBLE_EQ(nominalCompressionRatio(DataType::kFloat64), 1.0);
  EXPECT_DOUBLE_EQ(nominalCompressionRatio(DataType::kInt32), 1.0);
}

}  // namespace
}  // namespace grove::detail
