// Mismatch detection: calls that differ between ranks (another collective, count, type,
// operator, root or order) fail with kInvalidUsage naming both sides' calls — never a hang,
// never a wrong result. Every message carries its call's tag (MessageTag); GROVE_CHECK=1 also
// compares every rank's signature before the call, so every rank fails the call itself and
// the communicator stays usable. GROVE_CHECKSUM=1 must leave results exact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "exec/message_tag.hpp"
#include "grove/communicator.hpp"
#include "grove/error.hpp"
#include "transport/fifo.hpp"

namespace grove {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct Outcome {
  ErrorCode code = ErrorCode::kSuccess;
  std::string message;
};

/// Runs `call(rank, comm)` on every rank; a rank whose call succeeded then makes one more
/// call (a barrier), which must fail if the communicator failed. Returns what each rank saw
/// first.
std::vector<Outcome> runMismatched(std::vector<Communicator>& comms,
                                   const std::function<void(int, Communicator&)>& call) {
  std::vector<Outcome> outcomes(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        call(static_cast<int>(r), comms[r]);
        comms[r].barrier();
      } catch (const Error& error) {
        outcomes[r] = {error.code(), error.what()};
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return outcomes;
}

CallOptions shortTimeout() {
  CallOptions options;
  options.timeout = std::chrono::seconds(20);  // a hang would fail the test, not stall it
  return options;
}

/// Every rank failed with kInvalidUsage saying the calls differ (a rank whose own part of
/// the mismatched call completed — it only sent — fails its next call); the rank that
/// caught the difference names both sides: one rank's message mentions all of `both`.
void expectEveryRankInvalidUsage(const std::vector<Outcome>& outcomes,
                                 const std::vector<std::string>& both) {
  int namingBoth = 0;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(outcomes[r].code, ErrorCode::kInvalidUsage) << outcomes[r].message;
    EXPECT_THAT(outcomes[r].message, HasSubstr("calls differ between ranks"));
    bool all = true;
    for (const std::string& mention : both) {
      all = all && outcomes[r].message.find(mention) != std::string::npos;
    }
    namingBoth += all ? 1 : 0;
  }
  EXPECT_GE(namingBoth, 1) << "no rank's error names: " << ::testing::PrintToString(both);
}

TEST(MismatchThreads, DifferentCollectivesFailOnEveryRankNamingBoth) {
  auto comms = Communicator::createInProcess(3);
  auto outcomes = runMismatched(comms, [](int rank, Communicator& comm) {
    std::vector<float> data(1000, 1.0f);
    if (rank == 0) {
      comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, 0, shortTimeout());
    } else {
      comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum,
                     shortTimeout());
    }
  });
  expectEveryRankInvalidUsage(outcomes, {"broadcast, collective #1 (count 1000 float, root 0",
                                         "allreduce, collective #1 (count 1000 float sum"});
}

TEST(MismatchThreads, SameBytesButAnotherTypeIsCaughtNotMisread) {
  // 1000 float32 and 1000 int32 are the same bytes: without tags this "worked", wrongly.
  auto comms = Communicator::createInProcess(2);
  auto outcomes = runMismatched(comms, [](int rank, Communicator& comm) {
    std::vector<int32_t> data(1000, 1);
    comm.allReduce(data.data(), data.data(), data.size(),
                   rank == 0 ? DataType::kFloat32 : DataType::kInt32, ReduceOp::kSum,
                   shortTimeout());
  });
  expectEveryRankInvalidUsage(outcomes,
                              {"(type differs)", "count 1000 float sum", "count 1000 int32 sum"});
}

TEST(MismatchThreads, CountOperatorAndRootDifferencesAreNamed) {
  struct Case {
    const char* what;
    std::function<void(int, Communicator&)> call;
  };
  const std::vector<Case> cases = {
      {"(count differs)",
       [](int rank, Communicator& comm) {
         std::vector<float> data(101, 1.0f);
         comm.allReduce(data.data(), data.data(), rank == 1 ? 101 : 100, DataType::kFloat32,
                        ReduceOp::kSum, shortTimeout());
       }},
      {"(operator differs)",
       [](int rank, Communicator& comm) {
         std::vector<float> data(64, 1.0f);
         comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32,
                        rank == 2 ? ReduceOp::kMax : ReduceOp::kSum, shortTimeout());
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto comms = Communicator::createInProcess(3);
    expectEveryRankInvalidUsage(runMismatched(comms, c.call), {c.what});
  }
}

TEST(MismatchThreads, RootsThatDifferAreCaughtBeforeTheCallWithChecking) {
  // Rank 0 believes rank 1 is the root, the others rank 0: every rank waits to receive and
  // no message could carry the difference (without GROVE_CHECK: a timeout naming the peer).
  auto comms = Communicator::createInProcess(3, Options().set("GROVE_CHECK", "1"));
  auto outcomes = runMismatched(comms, [](int rank, Communicator& comm) {
    std::vector<float> data(64, 1.0f);
    comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, rank == 0 ? 1 : 0,
                   shortTimeout());
  });
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(outcomes[r].code, ErrorCode::kInvalidUsage) << outcomes[r].message;
    EXPECT_THAT(outcomes[r].message, HasSubstr(r == 0 ? "rank 1 called broadcast, collective #1 "
                                                        "(count 64 float, root 0"
                                                      : "rank 0 called broadcast, collective #1 "
                                                        "(count 64 float, root 1"));
  }
}

TEST(MismatchThreads, CallsInAnotherOrderAreCaught) {
  auto comms = Communicator::createInProcess(4);
  auto outcomes = runMismatched(comms, [](int rank, Communicator& comm) {
    std::vector<float> a(256, 1.0f);
    std::vector<float> b(256 * 4, 0.0f);
    auto allreduce = [&] {
      comm.allReduce(a.data(), a.data(), a.size(), DataType::kFloat32, ReduceOp::kSum,
                     shortTimeout());
    };
    auto allgather = [&] {
      comm.allGather(a.data(), b.data(), a.size(), DataType::kFloat32, shortTimeout());
    };
    if (rank == 3) {
      allgather();
      allreduce();
    } else {
      allreduce();
      allgather();
    }
  });
  expectEveryRankInvalidUsage(outcomes, {"allgather, collective #1", "allreduce, collective #1"});
}

TEST(MismatchThreads, SendAndRecvWithDifferentCountsAreCaught) {
  auto comms = Communicator::createInProcess(2);
  auto outcomes = runMismatched(comms, [](int rank, Communicator& comm) {
    std::vector<int64_t> data(12, 7);
    if (rank == 0) {
      comm.send(data.data(), 10, DataType::kInt64, 1);
    } else {
      comm.recv(data.data(), 12, DataType::kInt64, 0);
    }
  });
  // The receiver sees it; the sender, whose send completed, fails its next call.
  EXPECT_EQ(outcomes[1].code, ErrorCode::kInvalidUsage) << outcomes[1].message;
  EXPECT_THAT(outcomes[1].message,
              AllOf(HasSubstr("(count differs)"), HasSubstr("send/recv (count 10 int64)"),
                    HasSubstr("send/recv (count 12 int64)")));
  EXPECT_EQ(outcomes[0].code, ErrorCode::kInvalidUsage) << outcomes[0].message;
  EXPECT_THAT(outcomes[0].message, HasSubstr("calls differ between ranks"));
}

TEST(MismatchThreads, CheckedSignaturesFailEveryRankAndKeepTheCommunicatorUsable) {
  auto comms = Communicator::createInProcess(3, Options().set("GROVE_CHECK", "1"));
  std::vector<Outcome> outcomes(3);
  std::vector<int32_t> after(3, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::vector<int32_t> data(50, r + 1);
      try {
        // Rank 1 passes count 0: without the check its call would return at once and the
        // others would wait for it until their deadline.
        comms[r].allReduce(data.data(), data.data(), r == 1 ? 0 : 50, DataType::kInt32,
                           ReduceOp::kSum, shortTimeout());
      } catch (const Error& error) {
        outcomes[r] = {error.code(), error.what()};
      }
      // Every rank failed the same way before a byte of the call moved: carry on.
      int32_t value = r + 1;
      comms[r].allReduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
      after[r] = value;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(outcomes[r].code, ErrorCode::kInvalidUsage) << outcomes[r].message;
    EXPECT_THAT(outcomes[r].message, HasSubstr("calls differ between ranks (GROVE_CHECK=1)"));
    if (r == 1) {
      EXPECT_THAT(outcomes[r].message, AllOf(HasSubstr("rank 0 called allreduce, collective #1 "
                                                       "(count 50 int32 sum"),
                                             HasSubstr("rank 2 called")));
    } else {
      EXPECT_THAT(outcomes[r].message,
                  HasSubstr("rank 1 called allreduce, collective #1 (count 0 int32 sum"));
    }
    EXPECT_EQ(after[r], 6);
  }
}

TEST(MismatchThreads, CheckedAndChecksummedCallsGiveExactResults) {
  Options options;
  options.set("GROVE_CHECK", "1").set("GROVE_CHECKSUM", "1").set("GROVE_SLOT_BYTES", "4096");
  for (int n : {1, 2, 3, 5}) {
    auto comms = Communicator::createInProcess(n, options);
    std::vector<std::thread> threads;
    std::vector<std::string> problems(n);
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        const size_t count = 10007;  // several 4 KiB tiles, not a multiple of anything
        std::vector<int32_t> in(count);
        for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(i % 97) + r;
        std::vector<int32_t> out(count * n, -1);
        comms[r].allReduce(in.data(), out.data(), count, DataType::kInt32, ReduceOp::kSum);
        for (size_t i = 0; i < count && problems[r].empty(); ++i) {
          int32_t want = static_cast<int32_t>(i % 97) * n + n * (n - 1) / 2;
          if (out[i] != want) problems[r] = "allreduce element " + std::to_string(i);
        }
        comms[r].allGather(in.data(), out.data(), count, DataType::kInt32);
        for (int q = 0; q < n && problems[r].empty(); ++q) {
          if (out[q * count + 5] != 5 + q) problems[r] = "allgather block " + std::to_string(q);
        }
        std::vector<int32_t> none(1, 3);
        comms[r].allReduce(none.data(), none.data(), 0, DataType::kInt32, ReduceOp::kSum);
        if (n > 1 && r == 0) comms[r].send(in.data(), count, DataType::kInt32, 1);
        if (n > 1 && r == 1) {
          comms[r].recv(out.data(), count, DataType::kInt32, 0);
          for (size_t i = 0; i < count && problems[r].empty(); ++i) {
            if (out[i] != static_cast<int32_t>(i % 97))
              problems[r] = "recv element " + std::to_string(i);
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int r = 0; r < n; ++r) EXPECT_EQ(problems[r], "") << n << " ranks, rank " << r;
  }
}

TEST(MessageTag, ChecksumCatchesACorruptedPayloadAndNamesTheLink) {
  std::vector<char> payload(4096);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  transport::MessageTag mine;
  mine.call = 4;
  mine.count = 1024;
  mine.collective = 0;
  mine.type = static_cast<uint8_t>(DataType::kFloat32);
  transport::MessageTag sent = exec::stamped(mine, true, payload.data(), payload.size());
  EXPECT_EQ(sent.flags, transport::MessageTag::kHasChecksum);
  EXPECT_TRUE(exec::checkReceived(mine, sent, payload.data(), payload.size(), 2, 1).ok());
  payload[1234] ^= 0x04;
  Status problem = exec::checkReceived(mine, sent, payload.data(), payload.size(), 2, 1);
  EXPECT_EQ(problem.code(), ErrorCode::kSystemError);
  EXPECT_THAT(problem.message(),
              AllOf(HasSubstr("corrupted message on the link from rank 2 (lane 1)"),
                    HasSubstr("4096 bytes"), HasSubstr("GROVE_CHECKSUM")));
  // Untagged messages and checksum-less tags pass; another call's tag is a usage error.
  transport::MessageTag other = mine;
  other.call = 5;
  EXPECT_TRUE(exec::checkReceived(mine, other, payload.data(), payload.size(), 2, 1, false).ok());
  problem = exec::checkReceived(mine, other, payload.data(), payload.size(), 2, 1);
  EXPECT_EQ(problem.code(), ErrorCode::kInvalidUsage);
  EXPECT_THAT(problem.message(),
              HasSubstr("(call number differs): rank 2 sent a message of its allreduce, "
                        "collective #5 (count 1024 float sum, algorithm none)"));
}

}  // namespace
}  // namespace grove
