// The communicator's topology (GROVE_TOPO_FILE): loading a preset or a JSON file, the errors
// that name the variable, the rank and the rank counts, the per-link addresses the TCP
// transport dials, the sub-topology a split communicator gets, and communicators (in-process
// ranks) that carry a topology running collectives with exact results.
#include "core/comm_topology.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "grove/communicator.hpp"
#include "grove/error.hpp"

namespace grove::detail {
namespace {

// A three-rank triangle with per-link addresses on two of its links, and a switch.
constexpr const char* kTriangle = R"({
  "name": "triangle",
  "unit_gbps": 1,
  "vertices": [{"name": "r0", "rank": 0}, {"name": "r1", "rank": 1}, {"name": "r2", "rank": 2},
               {"name": "pcie", "switch": true}],
  "links": [
    {"from": "r0", "to": "r1", "gbps": 2, "kind": "net",
     "address": "198.18.1.2", "reverse_address": "198.18.1.1"},
    {"from": "r0", "to": "r2", "gbps": 1, "kind": "net", "address": "198.18.2.2"},
    {"from": "r0", "to": "pcie", "gbps": 1, "kind": "pcie"},
    {"from": "r1", "to": "pcie", "gbps": 1, "kind": "pcie"},
    {"from": "r2", "to": "pcie", "gbps": 1, "kind": "pcie"}
  ]
})";

struct TempFile {
  explicit TempFile(const std::string& text) {
    char pattern[] = "/tmp/grove-topo-XXXXXX";
    int fd = ::mkstemp(pattern);
    ::close(fd);
    path = pattern;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

std::string errorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(CommTopology, EmptySpecMeansNone) { EXPECT_EQ(loadTopology("", 0, 4), nullptr); }

TEST(CommTopology, PresetSubsetIsLoadedForItsRankCount) {
  auto topology = loadTopology("dgx1v:0,1,4", 2, 3);
  ASSERT_NE(topology, nullptr);
  EXPECT_EQ(topology->rankCount(), 3);
  EXPECT_TRUE(topology->integral());
  // Ranks 1 and 2 (GPUs 1 and 4) have no NVLink between them; 0-2 (GPUs 0 and 4) has two.
  EXPECT_LT(topology->arcBetween(topology->vertexOfRank(1), topology->vertexOfRank(2)), 0);
  int arc = topology->arcBetween(topology->vertexOfRank(0), topology->vertexOfRank(2));
  ASSERT_GE(arc, 0);
  EXPECT_EQ(topology->units(arc), 2);
}

TEST(CommTopology, WrongRankCountNamesTheVariableTheRankAndBothCounts) {
  std::string message = errorOf([] { loadTopology("dgx1v:0,1,4", 3, 4); });
  EXPECT_NE(message.find("GROVE_TOPO_FILE='dgx1v:0,1,4'"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 3 of 4"), std::string::npos) << message;
  EXPECT_NE(message.find("has 3 ranks, the communicator has 4"), std::string::npos) << message;
}

TEST(CommTopology, UnreadableSpecNamesTheVariableAndTheRank) {
  std::string message = errorOf([] { loadTopology("/no/such/topology.json", 1, 2); });
  EXPECT_NE(message.find("GROVE_TOPO_FILE='/no/such/topology.json'"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 of 2"), std::string::npos) << message;
}

TEST(CommTopology, LinkAddressesFollowTheDirectArcsOnly) {
  TempFile file(kTriangle);
  auto topology = loadTopology(file.path, 0, 3);
  ASSERT_NE(topology, nullptr);
  EXPECT_EQ(linkAddresses(*topology, 0),
            (std::vector<std::string>{"", "198.18.1.2", "198.18.2.2"}));
  EXPECT_EQ(linkAddresses(*topology, 1), (std::vector<std::string>{"198.18.1.1", "", ""}));
  // Rank 2's arc to rank 0 has no address, its route to rank 1 goes through the switch.
  EXPECT_TRUE(linkAddresses(*topology, 2).empty());
  // Presets name no addresses.
  EXPECT_TRUE(linkAddresses(*loadTopology("dgx1v", 0, 8), 0).empty());
}

TEST(CommTopology, SplitGetsTheSubsetRenumberedInMemberOrder) {
  EXPECT_EQ(subsetTopology(nullptr, std::vector<int>{0, 1}, 0), nullptr);
  TempFile file(kTriangle);
  auto topology = loadTopology(file.path, 0, 3);
  std::vector<int> members = {2, 0};
  auto child = subsetTopology(topology.get(), members, 1);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->rankCount(), 2);
  // New rank 1 is old rank 0; its link to new rank 0 (old 2) keeps its address.
  EXPECT_EQ(linkAddresses(*child, 1), (std::vector<std::string>{"198.18.2.2", ""}));
  EXPECT_TRUE(linkAddresses(*child, 0).empty());
}

/// Runs `body(comm)` on every in-process rank, each on its own thread.
void onRanks(std::vector<Communicator>& comms, const std::function<void(Communicator&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(comms.size());
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(comms[r]);
      } catch (const std::exception& error) {
        errors[r] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t r = 0; r < comms.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

Options withTopoFile(const std::string& spec) { return Options().set("GROVE_TOPO_FILE", spec); }

TEST(CommTopology, InProcessCommunicatorRejectsATopologyOfAnotherSize) {
  std::string message =
      errorOf([] { Communicator::createInProcess(4, withTopoFile("dgx1v:0,1,4")); });
  EXPECT_NE(message.find("has 3 ranks, the communicator has 4"), std::string::npos) << message;
}

TEST(CommTopology, CollectivesAndSplitsRunWithATopology) {
  std::vector<Communicator> comms = Communicator::createInProcess(8, withTopoFile("dgx1v"));
  onRanks(comms, [](Communicator& comm) {
    const int me = comm.rank();
    // Odd count, not a multiple of anything.
    std::vector<int32_t> data(1001);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i) * (me + 1);
    comm.allReduce(data.data(), data.data(), data.size(), DataType::kInt32, ReduceOp::kSum);
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i] != static_cast<int32_t>(i) * 36) throw std::runtime_error("wrong allReduce");
    }
    // GPUs {0,1,4} and the rest: the children's topologies are subsets of dgx1v.
    const bool first = me == 0 || me == 1 || me == 4;
    Communicator child = comm.split(first ? 0 : 1, me);
    std::vector<int32_t> value(3, me == 4 || me == 7 ? 40 + me : -1);
    child.broadcast(value.data(), value.data(), value.size(), DataType::kInt32, child.size() - 1);
    if (value != std::vector<int32_t>(3, first ? 44 : 47)) {
      throw std::runtime_error("wrong broadcast in the split communicator");
    }
  });
}

}  // namespace
}  // namespace grove::detail
