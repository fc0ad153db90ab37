// Tests of the topology model: JSON round trips and every error path of the file format,
// the presets against the reference DGX-1 matrix, subsets, routing and cluster specs.
#include "topo/topology.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "grove/error.hpp"

namespace grove::topo {
namespace {

using ::testing::HasSubstr;

// The message of the grove::Error(kInvalidArgument) that `fn` throws.
template <typename Fn>
std::string errorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no grove::Error thrown";
  return {};
}

std::string jsonError(const std::string& text) {
  return errorOf([&] { readJson(text, "t.json"); });
}

constexpr int kDgx1Links[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

TEST(LinkKind, NamesRoundTrip) {
  for (LinkKind k :
       {LinkKind::kNvlink, LinkKind::kPcie, LinkKind::kShm, LinkKind::kNet, LinkKind::kOther}) {
    EXPECT_EQ(parseLinkKind(toString(k)), k);
  }
  EXPECT_EQ(parseLinkKind("infiniband"), std::nullopt);
}

TEST(TopologyJson, ReadsTheDocumentedExample) {
  Topology t = readJson(R"({
    "name": "example", "unit_gbps": 25, "comment": "unknown keys are ignored",
    "vertices": [{"name":"r0","rank":0,"host":"a","numa":0}, {"name":"r1","rank":1},
                 {"name":"sw","switch":true}],
    "links": [{"from":"r0","to":"r1","gbps":25,"count":2,"latency_us":1.5,"kind":"nvlink",
               "address":"198.18.1.2","reverse_address":"198.18.1.1"},
              {"from":"r0","to":"sw","gbps":12.5,"kind":"pcie","bidirectional":false},
              {"from":1,"to":"sw","gbps":10}]
  })");
  EXPECT_EQ(t.name, "example");
  EXPECT_EQ(t.unitGBps, 25);
  ASSERT_EQ(t.vertices.size(), 3u);
  EXPECT_EQ(t.rankCount(), 2);
  EXPECT_EQ(t.vertices[0].host, "a");
  EXPECT_EQ(t.vertices[0].numa, 0);
  EXPECT_EQ(t.vertices[1].numa, -1);
  EXPECT_EQ(t.vertices[2].kind, VertexKind::kSwitch);
  EXPECT_EQ(t.vertices[2].rank, -1);
  ASSERT_EQ(t.arcs.size(), 5u);
  EXPECT_EQ(t.arcs[0].from, 0);
  EXPECT_EQ(t.arcs[0].to, 1);
  EXPECT_EQ(t.arcs[0].capacityGBps, 50);
  EXPECT_EQ(t.arcs[0].latencyUs, 1.5);
  EXPECT_EQ(t.arcs[0].kind, LinkKind::kNvlink);
  EXPECT_EQ(t.arcs[0].address, "198.18.1.2");
  EXPECT_EQ(t.arcs[1].from, 1);
  EXPECT_EQ(t.arcs[1].to, 0);
  EXPECT_EQ(t.arcs[1].capacityGBps, 50);
  EXPECT_EQ(t.arcs[1].address, "198.18.1.1");
  EXPECT_EQ(t.arcs[2].kind, LinkKind::kPcie);
  EXPECT_EQ(t.arcs[2].latencyUs, 1.5);  // the pcie default
  EXPECT_EQ(t.arcs[3].from, 1);         // rank number as a vertex reference
  EXPECT_EQ(t.arcs[3].kind, LinkKind::kOther);
  EXPECT_EQ(t.arcs[4].from, 2);
  EXPECT_EQ(t.arcs[4].address, "");
  EXPECT_FALSE(t.integral());  // 12.5 and 10 are not multiples of 25
}

TEST(TopologyJson, RanksShorthandAndDefaultUnit) {
  Topology t = readJson(R"({"ranks": 3, "links": [{"from":"r0","to":"r2","gbps":4},
                                                 {"from":"r1","to":"r2","gbps":2,"kind":"net"}]})");
  EXPECT_EQ(t.rankCount(), 3);
  EXPECT_EQ(t.vertices[2].name, "r2");
  EXPECT_EQ(t.unitGBps, 2);  // the smallest capacity
  EXPECT_TRUE(t.integral());
  EXPECT_EQ(t.units(0), 2);
  EXPECT_EQ(t.units(2), 1);
  EXPECT_EQ(t.arcs[2].latencyUs, 5.0);  // the net default
}

void expectSame(const Topology& a, const Topology& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.unitGBps, b.unitGBps);
  ASSERT_EQ(a.vertices.size(), b.vertices.size());
  for (size_t i = 0; i < a.vertices.size(); ++i) {
    EXPECT_EQ(a.vertices[i].kind, b.vertices[i].kind) << i;
    EXPECT_EQ(a.vertices[i].name, b.vertices[i].name) << i;
    EXPECT_EQ(a.vertices[i].rank, b.vertices[i].rank) << i;
    EXPECT_EQ(a.vertices[i].host, b.vertices[i].host) << i;
    EXPECT_EQ(a.vertices[i].numa, b.vertices[i].numa) << i;
  }
  ASSERT_EQ(a.arcs.size(), b.arcs.size());
  for (size_t i = 0; i < a.arcs.size(); ++i) {
    EXPECT_EQ(a.arcs[i].from, b.arcs[i].from) << i;
    EXPECT_EQ(a.arcs[i].to, b.arcs[i].to) << i;
    EXPECT_EQ(a.arcs[i].capacityGBps, b.arcs[i].capacityGBps) << i;
    EXPECT_EQ(a.arcs[i].latencyUs, b.arcs[i].latencyUs) << i;
    EXPECT_EQ(a.arcs[i].kind, b.arcs[i].kind) << i;
    EXPECT_EQ(a.arcs[i].address, b.arcs[i].address) << i;
    EXPECT_EQ(a.arcs[i].lineRate, b.arcs[i].lineRate) << i;
  }
}

TEST(TopologyJson, RoundTripsPresetsAndOddArcs) {
  for (const char* spec : {"dgx1v", "dgx1p:3,1,6", "dgx2", "h100x8", "cluster:3x2:100,25,40",
                           "cluster:2x1", "mesh:1", "mesh:5"}) {
    SCOPED_TRACE(spec);
    Topology t = fromSpec(spec);
    expectSame(readJson(toJson(t)), t);
  }
  // One-way arcs, unequal directions, addresses, non-adjacent opposite arcs, awkward doubles.
  Topology t = readJson(R"({"name":"odd","unit_gbps":0.1,"ranks":4,"links":[
      {"from":"r0","to":"r1","gbps":0.30000000000000004,"address":"10.0.0.2",
       "bidirectional":false},
      {"from":"r1","to":"r2","gbps":1e-3,"latency_us":0,"reverse_address":"::1"},
      {"from":"r1","to":"r0","gbps":7,"kind":"shm","address":"x","bidirectional":false},
      {"from":"r2","to":"r0","gbps":1,"kind":"net","line_rate":true,"bidirectional":false},
      {"from":"r0","to":"r2","gbps":1,"kind":"net","line_rate":false,"bidirectional":false},
      {"from":"r3","to":"r2","gbps":1,"kind":"net","line_rate":true}]})");
  ASSERT_EQ(t.arcs.size(), 8u);
  EXPECT_TRUE(t.arcs[4].lineRate);
  EXPECT_FALSE(t.arcs[5].lineRate);  // r0 -> r2 differs from r2 -> r0 only in its line rate
  EXPECT_TRUE(t.arcs[6].lineRate);   // both arcs of a bidirectional link
  EXPECT_TRUE(t.arcs[7].lineRate);
  expectSame(readJson(toJson(t)), t);
}

TEST(TopologyJson, LoadFileNamesThePath) {
  std::string path = ::testing::TempDir() + "grove_topology_test.json";
  {
    std::ofstream file(path);
    file << toJson(fromSpec("dgx1v:0,1,4"));
  }
  expectSame(loadFile(path), fromSpec("dgx1v:0,1,4"));
  expectSame(fromSpec(path), fromSpec("dgx1v:0,1,4"));
  {
    std::ofstream file(path);
    file << R"({"ranks": 2, "links": [{"from":"r0","to":"r1","gbps":-1}]})";
  }
  EXPECT_EQ(errorOf([&] { loadFile(path); }),
            "topology file \"" + path + "\": links[0].gbps: expected a positive number, got -1");
  std::remove(path.c_str());
  EXPECT_THAT(errorOf([&] { loadFile(path); }), HasSubstr("cannot be opened"));
}

TEST(TopologyJson, ErrorsNameThePathAndTheExpectation) {
  EXPECT_THAT(jsonError("{"), HasSubstr("t.json: not valid JSON"));
  EXPECT_EQ(jsonError("[]"), "t.json: (top level): expected a JSON object, got []");
  EXPECT_EQ(jsonError("{}"),
            "t.json: vertices: missing (expected a \"vertices\" array or \"ranks\": N)");
  EXPECT_EQ(jsonError(R"({"ranks": 0})"),
            "t.json: ranks: expected a rank count in 1..65536, got 0");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "name": 3})"), "t.json: name: expected a string, got 3");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "unit_gbps": 0})"),
            "t.json: unit_gbps: expected a positive number of GB/s, got 0");
  EXPECT_EQ(jsonError(R"({"vertices": {}})"),
            "t.json: vertices: expected an array of vertex objects, got {}");
  EXPECT_EQ(jsonError(R"({"vertices": [{"switch": true}]})"),
            "t.json: vertices: no rank vertices (expected at least one vertex with a rank)");
  EXPECT_EQ(jsonError(R"({"vertices": [{"name": "a"}]})"),
            "t.json: vertices[0].rank: missing (expected the rank of this vertex)");
  EXPECT_EQ(jsonError(R"({"vertices": [{"rank": -1}]})"),
            "t.json: vertices[0].rank: expected a rank number >= 0, got -1");
  EXPECT_EQ(jsonError(R"({"vertices": [{"rank": 0}, {"rank": 0, "name": "b"}]})"),
            "t.json: vertices[1].rank: rank 0 already belongs to vertices[0] (expected each rank "
            "exactly once)");
  EXPECT_EQ(jsonError(R"({"vertices": [{"rank": 0}, {"rank": 2}]})"),
            "t.json: vertices[1].rank: rank 2 with only 2 rank vertices (expected ranks 0..1)");
  EXPECT_EQ(jsonError(R"({"vertices": [{"rank": 0}, {"rank": 1, "name": "r0"}]})"),
            "t.json: vertices[1].name: \"r0\" is already the name of vertices[0] (expected "
            "unique names)");
  EXPECT_EQ(jsonError(R"({"vertices": [{"switch": true, "rank": 0}]})"),
            "t.json: vertices[0].rank: a switch vertex has no rank (expected no \"rank\")");
  EXPECT_EQ(jsonError(R"({"vertices": [{"switch": "yes"}]})"),
            "t.json: vertices[0].switch: expected true or false, got \"yes\"");
  EXPECT_EQ(jsonError(R"({"vertices": [{"rank": 0, "numa": -2}]})"),
            "t.json: vertices[0].numa: expected a NUMA node number >= 0 (or -1 for unknown), got "
            "-2");
  EXPECT_EQ(jsonError(R"({"vertices": [{"rank": 0}], "ranks": 2})"),
            "t.json: ranks: says 2 but \"vertices\" has 1 rank vertices");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"to": "r1", "gbps": 1}]})"),
            "t.json: links[0].from: missing (expected a vertex name)");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1"}]})"),
            "t.json: links[0].gbps: missing (expected GB/s per direction)");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": "fast"}]})"),
            "t.json: links[0].gbps: expected a positive number, got \"fast\"");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r9", "gbps": 1}]})"),
            "t.json: links[0].to: expected the name of a vertex, got \"r9\"");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": 5, "to": "r1", "gbps": 1}]})"),
            "t.json: links[0].from: expected an existing rank, got 5");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r0", "gbps": 1}]})"),
            "t.json: links[0]: links \"r0\" to itself (expected two distinct vertices)");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1,
                                                 "kind": "fibre"}]})"),
            "t.json: links[0].kind: expected one of nvlink, pcie, shm, net, other, got \"fibre\"");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1,
                                                 "count": 0}]})"),
            "t.json: links[0].count: expected a whole number of links >= 1, got 0");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1,
                                                 "latency_us": -1}]})"),
            "t.json: links[0].latency_us: expected a number >= 0, got -1");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1,
                                                 "bidirectional": false,
                                                 "reverse_address": "a"}]})"),
            "t.json: links[0].reverse_address: given for a one-way link (expected no "
            "reverse_address when \"bidirectional\" is false)");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1,
                                                 "kind": "shm", "line_rate": true}]})"),
            "t.json: links[0].line_rate: given for a shm link (expected \"line_rate\" only on "
            "net links)");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1,
                                                 "kind": "net", "line_rate": 1}]})"),
            "t.json: links[0].line_rate: expected true or false, got 1");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [{"from": "r0", "to": "r1", "gbps": 1},
                                                {"from": "r1", "to": "r0", "gbps": 2}]})"),
            "t.json: links[1]: a second arc from \"r1\" to \"r0\" (links[0] has one; expected at "
            "most one per direction, use \"count\" for parallel links)");
  EXPECT_EQ(jsonError(R"({"ranks": 2, "links": [3]})"),
            "t.json: links[0]: expected an object, got 3");
}

TEST(TopologyValidate, NamesTheOffendingElement) {
  Topology t = fromSpec("mesh:3");
  t.arcs[1].capacityGBps = 0;
  EXPECT_THAT(errorOf([&] { t.validate(); }),
              HasSubstr("arc 1 from r1 to r0 has capacity 0 GB/s (expected a positive"));
  t = fromSpec("mesh:3");
  t.arcs.push_back(t.arcs[0]);
  EXPECT_THAT(errorOf([&] { t.validate(); }), HasSubstr("arc 6 duplicates the arc from"));
  t = fromSpec("mesh:3");
  t.vertices[2].rank = 0;
  EXPECT_THAT(errorOf([&] { t.validate(); }), HasSubstr("rank 0 appears twice"));
  t = fromSpec("mesh:3");
  t.arcs[0].to = 7;
  EXPECT_THAT(errorOf([&] { t.validate(); }), HasSubstr("arc 0 goes from vertex 0 to vertex 7"));
}

TEST(Presets, Dgx1vIsTheReferenceMatrix) {
  Topology t = fromSpec("dgx1v");
  EXPECT_EQ(t.name, "dgx1v");
  EXPECT_EQ(t.unitGBps, 25);
  EXPECT_EQ(t.rankCount(), 8);
  EXPECT_EQ(t.vertices.size(), 8u);
  EXPECT_TRUE(t.integral());
  int pairs = 0;
  int64_t totalUnits = 0;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      int arc = t.arcBetween(t.vertexOfRank(i), t.vertexOfRank(j));
      if (kDgx1Links[i][j] == 0) {
        EXPECT_EQ(arc, -1) << i << "->" << j;
        continue;
      }
      ++pairs;
      ASSERT_GE(arc, 0) << i << "->" << j;
      EXPECT_EQ(t.units(arc), kDgx1Links[i][j]);
      EXPECT_EQ(t.arcs[arc].capacityGBps, 25.0 * kDgx1Links[i][j]);
      EXPECT_EQ(t.arcs[arc].kind, LinkKind::kNvlink);
      totalUnits += t.units(arc);
    }
  }
  EXPECT_EQ(pairs, 32);  // 16 linked pairs, both directions
  EXPECT_EQ(static_cast<int>(t.arcs.size()), pairs);
  EXPECT_EQ(totalUnits, 48);  // 24 NVLinks, both directions
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(t.outArcs(r).size(), 4u);
    EXPECT_EQ(t.inArcs(r).size(), 4u);
    EXPECT_EQ(t.vertices[r].numa, r < 4 ? 0 : 1);
  }
}

TEST(Presets, Dgx1pHasOneLinkPerPair) {
  Topology t = fromSpec("dgx1p");
  EXPECT_EQ(t.unitGBps, 20);
  EXPECT_EQ(t.arcs.size(), 32u);
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    EXPECT_EQ(t.units(static_cast<int>(a)), 1);
    EXPECT_EQ(t.arcs[a].capacityGBps, 20);
  }
}

TEST(Presets, SwitchedMachines) {
  for (auto [spec, ranks, gbps] : {std::tuple{"dgx2", 16, 150.0}, {"h100x8", 8, 450.0}}) {
    Topology t = fromSpec(spec);
    EXPECT_EQ(t.rankCount(), ranks);
    ASSERT_EQ(t.vertices.size(), static_cast<size_t>(ranks + 1));
    EXPECT_EQ(t.vertices.back().name, "nvswitch");
    EXPECT_EQ(t.vertices.back().kind, VertexKind::kSwitch);
    EXPECT_EQ(t.arcs.size(), static_cast<size_t>(2 * ranks));
    EXPECT_EQ(t.unitGBps, gbps);
    EXPECT_TRUE(t.integral());
    for (const Arc& arc : t.arcs) EXPECT_EQ(arc.capacityGBps, gbps);
  }
}

TEST(Presets, MeshAndList) {
  Topology t = fromSpec("mesh:4");
  EXPECT_EQ(t.rankCount(), 4);
  EXPECT_EQ(t.arcs.size(), 12u);
  EXPECT_EQ(fromSpec("mesh:1").arcs.size(), 0u);
  EXPECT_THAT(errorOf([] { fromSpec("mesh:0"); }), HasSubstr("expected mesh:N"));
  EXPECT_GE(presetList().size(), 6u);
  std::string message = errorOf([] { fromSpec("dgx3"); });
  EXPECT_THAT(message, HasSubstr("\"dgx3\" is neither a preset nor a readable file"));
  EXPECT_THAT(message, HasSubstr("h100x8"));
  EXPECT_THAT(message, HasSubstr("cluster:HxK"));
}

TEST(Subsets, Dgx1v014IsRenumberedAndKeepsOnlyItsLinks) {
  Topology t = fromSpec("dgx1v:0,1,4");
  EXPECT_EQ(t.name, "dgx1v:0,1,4");
  EXPECT_EQ(t.rankCount(), 3);
  ASSERT_EQ(t.vertices.size(), 3u);
  EXPECT_EQ(t.vertices[2].name, "r2");
  EXPECT_EQ(t.vertices[2].numa, 1);  // old GPU 4
  ASSERT_EQ(t.arcs.size(), 4u);      // 0-1 (1 link) and 0-4 (2 links), both ways
  EXPECT_EQ(t.units(t.arcBetween(0, 1)), 1);
  EXPECT_EQ(t.units(t.arcBetween(1, 0)), 1);
  EXPECT_EQ(t.units(t.arcBetween(0, 2)), 2);
  EXPECT_EQ(t.units(t.arcBetween(2, 0)), 2);
  EXPECT_EQ(t.arcBetween(1, 2), -1);
  EXPECT_EQ(t.arcBetween(2, 1), -1);
}

TEST(Subsets, OrderGivenDecidesNumbering) {
  Topology t = fromSpec("dgx1v:4,0,1");
  EXPECT_EQ(t.vertices[0].numa, 1);
  EXPECT_EQ(t.units(t.arcBetween(0, 1)), 2);  // old 4-0
  EXPECT_EQ(t.units(t.arcBetween(1, 2)), 1);  // old 0-1
  EXPECT_EQ(t.arcBetween(0, 2), -1);
  EXPECT_THAT(errorOf([] { fromSpec("dgx1v:0,8"); }), HasSubstr("\"8\" is not a rank"));
  EXPECT_THAT(errorOf([] { fromSpec("dgx1v:0,1,0"); }), HasSubstr("rank 0 listed twice"));
  EXPECT_THAT(errorOf([] { fromSpec("dgx1v:"); }), HasSubstr("\"\" is not a rank"));
}

TEST(Subsets, SwitchesStayOnlyWhileTheyConnectTwoRanks) {
  Topology t = fromSpec("dgx2:3,9");
  ASSERT_EQ(t.vertices.size(), 3u);
  EXPECT_EQ(t.vertices[2].name, "nvswitch");
  EXPECT_EQ(t.arcs.size(), 4u);
  EXPECT_EQ(fromSpec("h100x8:5").vertices.size(), 1u);
  EXPECT_EQ(fromSpec("h100x8:5").arcs.size(), 0u);
  // A cluster subset inside one host keeps only its NIC (it still joins the two ranks);
  // across hosts it keeps the two NICs and the network switch.
  Topology c = fromSpec("cluster:3x2");
  int rank[] = {0, 1};
  Topology inHost = subset(c, rank);
  ASSERT_EQ(inHost.vertices.size(), 3u);
  EXPECT_EQ(inHost.vertices[2].name, "nic0");
  EXPECT_EQ(inHost.route(0, 1), std::vector<int>{inHost.arcBetween(0, 1)});
  int across[] = {5, 0};
  Topology two = subset(c, across);
  ASSERT_EQ(two.vertices.size(), 5u);  // r0, r1, net, nic0, nic2
  EXPECT_EQ(two.vertices[0].host, "host2");
  EXPECT_EQ(two.vertices[2].name, "net");
  EXPECT_EQ(two.vertices[3].name, "nic0");
  EXPECT_EQ(two.vertices[4].name, "nic2");
  EXPECT_EQ(two.route(0, 1).size(), 4u);
}

TEST(Route, DirectLinkOrThroughSwitches) {
  Topology t = fromSpec("dgx1v");
  EXPECT_EQ(t.route(0, 3), std::vector<int>{t.arcBetween(0, 3)});
  EXPECT_TRUE(t.route(2, 2).empty());
  std::string message = errorOf([&] { t.route(0, 5); });
  EXPECT_EQ(message,
            "topology \"dgx1v\": no route from rank 0 to rank 5 (expected a direct link or a "
            "path through switch vertices)");
  EXPECT_THAT(errorOf([&] { t.route(0, 8); }), HasSubstr("no vertex for rank 8"));

  Topology sw = fromSpec("dgx2");
  std::vector<int> path = sw.route(3, 11);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(sw.arcs[path[0]].from, sw.vertexOfRank(3));
  EXPECT_EQ(sw.arcs[path[0]].to, 16);
  EXPECT_EQ(sw.arcs[path[1]].from, 16);
  EXPECT_EQ(sw.arcs[path[1]].to, sw.vertexOfRank(11));

  // Ranks never forward: r0 -> r1 -> r2 is not a route.
  Topology line = readJson(R"({"ranks": 3, "links": [{"from":"r0","to":"r1","gbps":1},
                                                     {"from":"r1","to":"r2","gbps":1}]})");
  EXPECT_THAT(errorOf([&] { line.route(0, 2); }), HasSubstr("no route from rank 0 to rank 2"));
}

TEST(Cluster, ShapeCapacitiesAndUnit) {
  Topology t = fromSpec("cluster:2x3:100,25");
  EXPECT_EQ(t.name, "cluster:2x3:100,25");
  EXPECT_EQ(t.rankCount(), 6);
  ASSERT_EQ(t.vertices.size(), 9u);  // 6 ranks, net, nic0, nic1
  EXPECT_EQ(t.vertices[4].host, "host1");
  EXPECT_EQ(t.vertices[6].name, "net");
  EXPECT_EQ(t.vertices[7].name, "nic0");
  // 2 hosts x 3 shm pairs x 2 + 6 ranks x 2 pcie arcs + 2 NIC links x 2.
  EXPECT_EQ(t.arcs.size(), 12u + 12u + 4u);
  EXPECT_TRUE(t.integral());
  EXPECT_EQ(t.unitGBps, 0.625);  // gcd of 160, 200, 100 and 25 Gbit/s
  const Arc& shm = t.arcs[t.arcBetween(0, 1)];
  EXPECT_EQ(shm.kind, LinkKind::kShm);
  EXPECT_EQ(shm.capacityGBps, 20);
  EXPECT_EQ(shm.latencyUs, 0.3);
  EXPECT_EQ(t.arcs[t.arcBetween(8, 6)].capacityGBps, 25.0 / 8);
  EXPECT_EQ(t.arcs[t.arcBetween(7, 6)].capacityGBps, 12.5);
  EXPECT_EQ(t.arcs[t.arcBetween(7, 6)].kind, LinkKind::kNet);
  EXPECT_TRUE(t.arcs[t.arcBetween(7, 6)].lineRate);  // a NIC's Gbit/s figure, both ways
  EXPECT_TRUE(t.arcs[t.arcBetween(6, 7)].lineRate);
  EXPECT_FALSE(shm.lineRate);
  std::vector<int> path = t.route(1, 4);
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(t.arcs[path[1]].to, 6);

  Topology one = fromSpec("cluster:3x1");  // one rank per host links to the switch directly
  EXPECT_EQ(one.vertices.size(), 4u);
  EXPECT_EQ(one.unitGBps, 12.5);
  EXPECT_EQ(one.route(0, 2).size(), 2u);
  Topology single = fromSpec("cluster:1x4");
  EXPECT_EQ(single.vertices.size(), 4u);
  EXPECT_EQ(single.arcs.size(), 12u);
  EXPECT_EQ(
      fromSpec("cluster:4x2:40").arcs[fromSpec("cluster:4x2:40").arcs.size() - 1].capacityGBps, 5);
  EXPECT_EQ(fromSpec("cluster:32x8").rankCount(), 256);
}

TEST(Cluster, SpecErrorsAreClear) {
  EXPECT_THAT(errorOf([] { fromSpec("cluster:2x"); }),
              HasSubstr("topology spec \"cluster:2x\": ranks per host \"\" is not a whole number "
                        ">= 1 (expected cluster:HxK"));
  EXPECT_THAT(errorOf([] { fromSpec("cluster"); }), HasSubstr("expected cluster:HxK"));
  EXPECT_THAT(errorOf([] { fromSpec("cluster:0x2"); }), HasSubstr("host count \"0\""));
  EXPECT_THAT(errorOf([] { fromSpec("cluster:2"); }), HasSubstr("\"2\" is not of the form HxK"));
  EXPECT_THAT(errorOf([] { fromSpec("cluster:3x2:1,2"); }), HasSubstr("2 NIC speeds for 3 hosts"));
  EXPECT_THAT(errorOf([] { fromSpec("cluster:2x2:1,-3"); }),
              HasSubstr("NIC speed \"-3\" is not a positive number"));
  EXPECT_THAT(errorOf([] { fromSpec("cluster:2x2:1:2"); }), HasSubstr("too many ':' fields"));
}

}  // namespace
}  // namespace grove::topo
