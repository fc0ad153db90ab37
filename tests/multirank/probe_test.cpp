// topo::probe on in-process ranks: every rank must return the same measured topology, with
// one arc per ordered pair of ranks and positive capacities.
#include "topo/probe.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "multirank/harness.hpp"

namespace grove::topo {
namespace {

std::vector<Topology> probeOn(int nranks, const ProbeOptions& options) {
  std::vector<Topology> results(nranks);
  mr::runRanks(nranks, [&](Communicator& comm) { results[comm.rank()] = probe(comm, options); });
  return results;
}

TEST(Probe, ThreeRanksAgreeOnOneTopology) {
  ProbeOptions options;
  options.largeBytes = 256 << 10;
  options.repetitions = 3;
  std::vector<Topology> results = probeOn(3, options);
  const Topology& t = results[0];
  EXPECT_EQ(t.rankCount(), 3);
  ASSERT_EQ(t.arcs.size(), 6u);
  EXPECT_NO_THROW(t.validate());
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      if (a == b) continue;
      int arc = t.arcBetween(t.vertexOfRank(a), t.vertexOfRank(b));
      ASSERT_GE(arc, 0) << a << "->" << b;
      EXPECT_GT(t.arcs[arc].capacityGBps, 0);
      EXPECT_GE(t.arcs[arc].latencyUs, 0);
      EXPECT_EQ(t.arcs[arc].kind, LinkKind::kShm);  // one host
    }
  }
  EXPECT_GT(t.unitGBps, 0);
  EXPECT_FALSE(t.vertices[0].host.empty());
  EXPECT_EQ(t.vertices[1].host, t.vertices[0].host);
  // The same on every rank, bit for bit, and it survives the file format.
  for (int r = 1; r < 3; ++r) EXPECT_EQ(toJson(results[r]), toJson(t)) << "rank " << r;
  EXPECT_EQ(toJson(readJson(toJson(t))), toJson(t));
}

TEST(Probe, OneRankHasNoArcsAndOptionsAreChecked) {
  std::vector<Topology> results = probeOn(1, ProbeOptions{});
  EXPECT_EQ(results[0].rankCount(), 1);
  EXPECT_TRUE(results[0].arcs.empty());

  ProbeOptions options;
  options.largeBytes = 4 << 10;
  options.repetitions = 1;
  options.unitGBps = 0.5;
  results = probeOn(2, options);
  EXPECT_EQ(results[1].unitGBps, 0.5);
  EXPECT_EQ(results[1].arcs.size(), 2u);

  options.repetitions = 0;
  EXPECT_THROW(probeOn(2, options), Error);
}

}  // namespace
}  // namespace grove::topo
