// The two-tier topology of ranks placed on hosts: topo::twoTier for any placement, and the
// communicator's hostsTopology, which builds it from the ranks' host identities when no
// GROVE_TOPO_FILE is given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algo/all.hpp"
#include "algo/registry.hpp"
#include "algo/select_topology.hpp"
#include "core/comm_topology.hpp"
#include "grove/error.hpp"
#include "topo/topology.hpp"

namespace grove::topo {
namespace {

using ::testing::HasSubstr;

TEST(TwoTier, HostMajorPlacementIsTheClusterPreset) {
  Topology preset = fromSpec("cluster:2x3:100,25");
  Topology built = twoTier("two", {0, 0, 0, 1, 1, 1}, {100, 25});
  ASSERT_EQ(built.vertices.size(), preset.vertices.size());
  ASSERT_EQ(built.arcs.size(), preset.arcs.size());
  for (size_t v = 0; v < preset.vertices.size(); ++v) {
    EXPECT_EQ(built.vertices[v].name, preset.vertices[v].name);
    EXPECT_EQ(built.vertices[v].host, preset.vertices[v].host);
    EXPECT_EQ(built.vertices[v].rank, preset.vertices[v].rank);
  }
  for (size_t a = 0; a < preset.arcs.size(); ++a) {
    EXPECT_EQ(built.arcs[a].from, preset.arcs[a].from);
    EXPECT_EQ(built.arcs[a].to, preset.arcs[a].to);
    EXPECT_EQ(built.arcs[a].capacityGBps, preset.arcs[a].capacityGBps);
    EXPECT_EQ(built.arcs[a].kind, preset.arcs[a].kind);
  }
  EXPECT_EQ(built.unitGBps, preset.unitGBps);
  EXPECT_EQ(built.name, "two");
}

TEST(TwoTier, RoundRobinPlacementKeepsEachHostsRanksTogether) {
  // Ranks 0 and 2 on host 0, 1 and 3 on host 1 (a launcher that deals ranks round robin).
  Topology t = twoTier("rr", {0, 1, 0, 1}, {100, 100});
  ASSERT_EQ(t.rankCount(), 4);
  EXPECT_EQ(t.vertices[0].host, "host0");
  EXPECT_EQ(t.vertices[1].host, "host1");
  EXPECT_EQ(t.vertices[2].host, "host0");
  EXPECT_EQ(t.arcs[t.arcBetween(0, 2)].kind, LinkKind::kShm);
  EXPECT_EQ(t.arcs[t.arcBetween(1, 3)].kind, LinkKind::kShm);
  EXPECT_LT(t.arcBetween(0, 1), 0);  // across hosts only through the NICs and the switch
  std::vector<int> path = t.route(0, 1);
  ASSERT_EQ(path.size(), 4u);  // rank -> nic0 -> net -> nic1 -> rank
  EXPECT_EQ(t.vertices[t.arcs[path[0]].to].name, "nic0");
  EXPECT_EQ(t.vertices[t.arcs[path[1]].to].name, "net");
  EXPECT_EQ(t.arcs[path[1]].capacityGBps, 12.5);
}

TEST(TwoTier, AHostOfOneRankLinksToTheSwitchDirectly) {
  Topology t = twoTier("uneven", {0, 0, 0, 1}, {100, 40});
  ASSERT_EQ(t.vertices.size(), 6u);  // 4 ranks, net, nic0 (host 1 has no NIC vertex)
  EXPECT_EQ(t.vertices[5].name, "nic0");
  const int net = 4;
  EXPECT_EQ(t.vertices[net].name, "net");
  ASSERT_GE(t.arcBetween(3, net), 0);
  EXPECT_EQ(t.arcs[t.arcBetween(3, net)].capacityGBps, 5);
  EXPECT_EQ(t.route(3, 0).size(), 3u);  // rank 3 -> net -> nic0 -> rank 0
}

TEST(TwoTier, ARankOnAnUnknownHostIsAnError) {
  try {
    twoTier("bad", {0, 2}, {100, 100});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 is on host 2 of 2"));
  }
}

TEST(HostsTopology, BuiltOnlyWhenRanksShareSomeHostsAndNotAll) {
  using detail::hostsTopology;
  EXPECT_EQ(hostsTopology({"a", "a", "a"}, 0), nullptr);  // one host: shm only
  EXPECT_EQ(hostsTopology({"a", "b", "c"}, 0), nullptr);  // a rank per host: no second tier
  EXPECT_EQ(hostsTopology({"a"}, 0), nullptr);
  auto t = hostsTopology({"b", "a", "b", "a", "c"}, 1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name, "3 hosts (5 ranks)");
  ASSERT_EQ(t->rankCount(), 5);
  // Hosts are numbered in order of their lowest rank: "b" is host 0, "a" host 1, "c" host 2.
  EXPECT_EQ(t->vertices[0].host, "host0");
  EXPECT_EQ(t->vertices[1].host, "host1");
  EXPECT_EQ(t->vertices[2].host, "host0");
  EXPECT_EQ(t->vertices[3].host, "host1");
  EXPECT_EQ(t->vertices[4].host, "host2");
  EXPECT_EQ(t->arcs[t->arcBetween(0, 2)].kind, LinkKind::kShm);
  EXPECT_EQ(t->arcs[t->arcBetween(1, 3)].kind, LinkKind::kShm);
  EXPECT_LT(t->arcBetween(0, 1), 0);
  // Every rank builds the same topology from the same identities.
  auto other = hostsTopology({"b", "a", "b", "a", "c"}, 4);
  ASSERT_EQ(other->arcs.size(), t->arcs.size());
  for (size_t a = 0; a < t->arcs.size(); ++a) {
    EXPECT_EQ(other->arcs[a].from, t->arcs[a].from);
    EXPECT_EQ(other->arcs[a].to, t->arcs[a].to);
  }
}

TEST(HostsTopology, NicSpeedsGivePerHostRates) {
  using detail::hostsTopology;
  // Two ranks on each of two hosts; host "b" gives 25000 Mbit/s on one rank only, host "a"
  // nothing (the default rate).
  auto t = hostsTopology({"a", "a", "b", "b"}, 0, {0, 0, 0, 25000});
  ASSERT_NE(t, nullptr);
  const int net = t->rankCount();
  EXPECT_EQ(t->vertices[static_cast<size_t>(net)].name, "net");
  auto nicArc = [&](const std::string& nic) {
    for (const Arc& arc : t->arcs) {
      if (t->vertices[static_cast<size_t>(arc.from)].name == nic && arc.to == net) {
        return arc.capacityGBps;
      }
    }
    return -1.0;
  };
  EXPECT_EQ(nicArc("nic0"), kDefaultNicGbit / 8);
  EXPECT_EQ(nicArc("nic1"), 25000 / 1000.0 / 8);
  // Ranks of one host that disagree: the lower rate counts.
  auto lower = hostsTopology({"a", "a", "b", "b"}, 0, {40000, 10000, 0, 0});
  ASSERT_NE(lower, nullptr);
  EXPECT_EQ(lower->arcs[static_cast<size_t>(lower->route(0, 2)[1])].capacityGBps, 10.0 / 8);
}

TEST(HostsTopology, OneRankPerHostGetsATopologyOnlyWhenTheNicsDiffer) {
  using detail::hostsTopology;
  EXPECT_EQ(hostsTopology({"a", "b", "c"}, 0, {10000, 10000, 10000}), nullptr);
  EXPECT_EQ(hostsTopology({"a", "b", "c"}, 0, {0, 0, 0}), nullptr);
  auto t = hostsTopology({"a", "b", "c", "d"}, 2, {1000, 10000, 10000, 10000});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name, "4 hosts (4 ranks)");
  ASSERT_EQ(t->rankCount(), 4);
  // A host of one rank links to the switch directly, at its NIC's rate.
  const int net = 4;
  EXPECT_EQ(t->arcs[static_cast<size_t>(t->arcBetween(0, net))].capacityGBps, 0.125);
  EXPECT_EQ(t->arcs[static_cast<size_t>(t->arcBetween(net, 0))].capacityGBps, 0.125);
  EXPECT_EQ(t->arcs[static_cast<size_t>(t->arcBetween(1, net))].capacityGBps, 1.25);
}

TEST(HostsTopology, ASlowHostIsRoutedAroundRatherThanRunThroughARing) {
  // Host 0 at 1 Gbit/s, three at 10 Gbit/s, one rank each: a ring pushes 2(n-1)/n of the
  // data through the slow NIC each way, a tree with host 0 as a leaf only its own share in
  // and the result out. The cost model must pick the tree and predict it 1.3x faster.
  auto t = detail::hostsTopology({"a", "b", "c", "d"}, 0, {1000, 10000, 10000, 10000});
  ASSERT_NE(t, nullptr);
  plan::PlanRequest request;
  request.collective = plan::Collective::kAllReduce;
  request.nranks = 4;
  request.rank = 0;
  request.count = size_t{4} << 20;  // 16 MiB of float32
  request.type = DataType::kFloat32;
  request.topology = t.get();
  const algo::Selection chosen = algo::select(request, "", "");
  ASSERT_NE(chosen.algorithm, nullptr);
  EXPECT_NE(chosen.algorithm->name, "ring") << chosen.reason;
  const model::SimOptions options = algo::selectionSimOptions(algo::CostParams{});
  const double ringUs = algo::predictedUs(algo::ringAllReduce(), request, options);
  const double chosenUs = algo::predictedUs(*chosen.algorithm, request, options);
  EXPECT_GE(ringUs / chosenUs, 1.3) << chosen.reason;
}

}  // namespace
}  // namespace grove::topo
