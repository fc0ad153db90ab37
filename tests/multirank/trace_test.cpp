// GROVE_TRACE writes one Chrome trace per rank whose records add up to what really moved.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grove/communicator.hpp"
#include "multirank/harness.hpp"

namespace grove {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> eventsOf(const nlohmann::json& trace, const std::string& category) {
  std::vector<nlohmann::json> events;
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("cat", "") == category) events.push_back(event);
  }
  return events;
}

TEST(TraceThreads, BroadcastStepsAddUpToTheBytesEveryRankReceived) {
  const fs::path dir = fs::temp_directory_path() / ("grove-trace-" + std::to_string(getpid()));
  fs::create_directories(dir);
  constexpr int kRanks = 3;
  constexpr size_t kCount = 1001;
  {
    auto comms = Communicator::createInProcess(
        kRanks, Options().set("GROVE_TRACE", (dir / "trace-%r.json").string()));
    mr::runOnComms(comms, [&](Communicator& comm) {
      std::vector<float> data(kCount, comm.rank() == 1 ? 2.5f : 0.0f);
      comm.broadcast(data.data(), data.data(), kCount, DataType::kFloat32, 1);
      std::vector<int32_t> in(7, comm.rank() + 1), out(7, 0);
      comm.allReduce(in.data(), out.data(), 7, DataType::kInt32, ReduceOp::kSum);
      EXPECT_EQ(out[6], 6);
    });
  }  // The communicators write their traces when destroyed.

  for (int rank = 0; rank < kRanks; ++rank) {
    std::ifstream in(dir / ("trace-" + std::to_string(rank) + ".json"));
    ASSERT_TRUE(in.good()) << "rank " << rank << " wrote no trace";
    const nlohmann::json trace = nlohmann::json::parse(in);
    EXPECT_EQ(trace["otherData"]["rank"], rank);
    EXPECT_EQ(trace["otherData"]["size"], kRanks);
    EXPECT_EQ(trace["otherData"]["dropped_steps"], 0);

    std::vector<nlohmann::json> calls = eventsOf(trace, "call");
    ASSERT_EQ(calls.size(), 2u) << "rank " << rank;
    EXPECT_EQ(calls[0]["args"]["bytes"], kCount * 4);
    EXPECT_EQ(calls[0]["args"]["root"], 1);
    EXPECT_EQ(calls[0]["args"]["failed"], false);
    EXPECT_EQ(calls[0]["pid"], rank);
    EXPECT_EQ(calls[1]["args"]["bytes"], 7 * 4);
    EXPECT_EQ(calls[1]["args"]["type"], "int32");

    const uint64_t broadcastSequence = calls[0]["args"]["sequence"];
    uint64_t received = 0;
    for (const auto& step : eventsOf(trace, "step")) {
      EXPECT_EQ(step["pid"], rank);
      EXPECT_GE(step["dur"].get<double>(), step["args"]["wait_us"].get<double>());
      EXPECT_GE(step["args"]["wait_us"].get<double>(), 0.0);
      const int from = step["args"]["recv_from"];
      const int to = step["args"]["send_to"];
      EXPECT_TRUE(from >= -1 && from < kRanks && from != rank);
      EXPECT_TRUE(to >= -1 && to < kRanks && to != rank);
      if (step["args"]["call"] == broadcastSequence && from >= 0) {
        received += step["args"]["bytes"].get<uint64_t>();
      }
    }
    // The root receives nothing; every other rank receives the whole buffer exactly once.
    EXPECT_EQ(received, rank == 1 ? 0u : kCount * 4) << "rank " << rank;
  }
  fs::remove_all(dir);
}

TEST(TraceThreads, FullBufferDropsAndCountsLaterSteps) {
  const fs::path dir = fs::temp_directory_path() / ("grove-trace-drop-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    auto comms =
        Communicator::createInProcess(2, Options()
                                             .set("GROVE_TRACE", (dir / "trace-%r.json").string())
                                             .set("GROVE_TRACE_STEPS", "2"));
    mr::runOnComms(comms, [&](Communicator& comm) {
      int32_t value = 1;
      for (int i = 0; i < 3; ++i) {
        comm.allReduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
      }
    });
  }
  std::ifstream in(dir / "trace-0.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(eventsOf(trace, "step").size(), 2u);
  EXPECT_GT(trace["otherData"]["dropped_steps"].get<int>(), 0);
  EXPECT_EQ(eventsOf(trace, "call").size(), 3u);
  fs::remove_all(dir);
}

TEST(TraceThreads, UnwritablePathLeavesTheCallsWorking) {
  auto comms = Communicator::createInProcess(
      2, Options().set("GROVE_TRACE", "/nonexistent-grove-dir/trace-%r.json"));
  mr::runOnComms(comms, [&](Communicator& comm) {
    int32_t value = comm.rank() + 1;
    comm.allReduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(value, 3);
  });
  comms.clear();  // Writing fails with a logged warning, never an exception.
  EXPECT_FALSE(fs::exists("/nonexistent-grove-dir"));
}

}  // namespace
}  // namespace grove
