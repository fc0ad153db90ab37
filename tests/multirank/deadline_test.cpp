// Per-call deadlines: a call whose peer never comes fails with kTimeout naming the call, the
// step and the peer it waited for; its peers then fail with kRemoteError instead of waiting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "grove/communicator.hpp"
#include "grove/error.hpp"

namespace grove {
namespace {

using ::testing::HasSubstr;

TEST(DeadlineThreads, CallTimeoutNamesTheCallTheStepAndThePeer) {
  auto comms = Communicator::createInProcess(3);
  CallOptions options;
  options.timeout = std::chrono::milliseconds(300);
  std::vector<float> data(100, 1.0f);
  // Rank 2 never calls: ranks 0 and 1 must give up after their own 300 ms.
  std::vector<ErrorCode> codes(2, ErrorCode::kSuccess);
  std::vector<std::string> messages(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> mine(data);
      try {
        comms[r].allReduce(mine.data(), mine.data(), mine.size(), DataType::kFloat32,
                           ReduceOp::kSum, options);
      } catch (const Error& error) {
        codes[r] = error.code();
        messages[r] = error.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  // At least one rank timed out by itself; the other either timed out too or heard of it.
  int timedOut = 0;
  for (int r = 0; r < 2; ++r) {
    ASSERT_NE(codes[r], ErrorCode::kSuccess) << "rank " << r;
    EXPECT_THAT(messages[r], HasSubstr("allreduce #"));
    EXPECT_THAT(messages[r], HasSubstr("count 100 float"));
    if (codes[r] == ErrorCode::kTimeout) {
      ++timedOut;
      EXPECT_THAT(messages[r], HasSubstr("timed out after 0.3 s"));
      EXPECT_THAT(messages[r], HasSubstr("rank "));
      EXPECT_THAT(messages[r], HasSubstr("step"));
    } else {
      EXPECT_EQ(codes[r], ErrorCode::kRemoteError) << messages[r];
    }
  }
  EXPECT_GE(timedOut, 1);
  EXPECT_NE(comms[0].getAsyncError(), ErrorCode::kSuccess);
}

TEST(DeadlineThreads, ZeroTimeoutMeansTheCommunicatorsLimit) {
  auto comms = Communicator::createInProcess(2);
  CallOptions options;  // timeout 0
  std::vector<std::thread> threads;
  std::vector<int32_t> results(2, 0);
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      // The later rank arrives well after a tiny per-call limit would have expired.
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      int32_t value = r + 1;
      comms[r].allReduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum, options);
      results[r] = value;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(results[0], 3);
  EXPECT_EQ(results[1], 3);
}

}  // namespace
}  // namespace grove
