// Asynchronous collectives on in-process ranks: several Requests in flight at once, waited
// in reverse order, completed by test() polling alone, and wait(deadline) that times out
// while a peer has not joined yet and then completes.
//
// Why: grove starts no threads of its own, so an asynchronous operation advances only when
// some call on its communicator drives progress. These tests pin that contract down: waiting
// on the last request must drive the earlier ones (operations complete in issue order),
// polling alone must finish the work, and a deadline must return control instead of hanging.
#include <atomic>
#include <chrono>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

using Clock = std::chrono::steady_clock;

class MultirankAsync : public ::testing::TestWithParam<int> {};

// Four allreduces and a broadcast, an allgather and a barrier in flight together; waited in
// reverse order of issue.
TEST_P(MultirankAsync, ManyInFlightWaitReverse) {
  const int n = GetParam();
  const std::vector<size_t> counts = {1, 1000 * static_cast<size_t>(n) + 3, 0, 7};
  const std::vector<DataType> types = {DataType::kFloat32, DataType::kInt32, DataType::kFloat16,
                                       DataType::kInt64};
  const size_t castCount = 333;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    std::vector<GuardedBuffer> sends, recvs;
    std::vector<Request> requests;
    for (size_t k = 0; k < counts.size(); ++k) {
      const size_t bytes = counts[k] * dataTypeSize(types[k]);
      sends.emplace_back(bytes);
      recvs.emplace_back(bytes);
    }
    for (size_t k = 0; k < counts.size(); ++k) {
      fillReductionInput(sends[k].data(), counts[k], types[k], ReduceOp::kSum, me);
      requests.push_back(comm.allReduceAsync(sends[k].data(), recvs[k].data(), counts[k], types[k],
                                             ReduceOp::kSum));
    }
    GuardedBuffer cast(castCount * 2);
    if (me == n - 1) fillPattern(cast.data(), cast.size(), n - 1, 0, 9);
    requests.push_back(
        comm.broadcastAsync(cast.data(), cast.data(), castCount, DataType::kBFloat16, n - 1));
    GuardedBuffer mine(castCount);
    fillPattern(mine.data(), castCount, me, 0, 10);
    GuardedBuffer gathered(castCount * n);
    requests.push_back(
        comm.allGatherAsync(mine.data(), gathered.data(), castCount, DataType::kUint8));
    requests.push_back(comm.barrierAsync());
    for (auto& request : requests) EXPECT_TRUE(request.valid());
    for (auto it = requests.rbegin(); it != requests.rend(); ++it) it->wait();

    for (size_t k = 0; k < counts.size(); ++k) {
      const auto expected = expectedReduction(types[k], ReduceOp::kSum, n, counts[k]);
      EXPECT_TRUE(recvs[k].guardsIntact()) << "allreduce " << k;
      EXPECT_EQ(describeDifference(recvs[k].data(), expected.data(), counts[k], types[k]), "")
          << "allreduce " << k;
    }
    std::vector<std::byte> expectedCast(castCount * 2);
    fillPattern(expectedCast.data(), expectedCast.size(), n - 1, 0, 9);
    EXPECT_TRUE(cast.bytes() == expectedCast);
    EXPECT_TRUE(cast.guardsIntact());
    std::vector<std::byte> expectedGather(castCount * n);
    for (int q = 0; q < n; ++q)
      fillPattern(expectedGather.data() + q * castCount, castCount, q, 0, 10);
    EXPECT_TRUE(gathered.bytes() == expectedGather);
    EXPECT_TRUE(gathered.guardsIntact());
  });
}

// Progress made by test() alone: every rank polls until its request completes; a completed
// request keeps answering true.
TEST_P(MultirankAsync, TestPollingCompletes) {
  const int n = GetParam();
  const size_t count = 4099;
  const auto expected = expectedReduction(DataType::kFloat32, ReduceOp::kMax, n, count);
  runRanks(n, [&](Communicator& comm) {
    for (int round = 0; round < 3; ++round) {
      GuardedBuffer send(count * 4);
      GuardedBuffer recv(count * 4);
      fillReductionInput(send.data(), count, DataType::kFloat32, ReduceOp::kMax, comm.rank());
      Request request =
          comm.allReduceAsync(send.data(), recv.data(), count, DataType::kFloat32, ReduceOp::kMax);
      long polls = 0;
      while (!request.test()) {
        ++polls;
        std::this_thread::yield();
      }
      EXPECT_TRUE(request.test()) << "a completed request must stay complete";
      EXPECT_EQ(describeDifference(recv.data(), expected.data(), count, DataType::kFloat32), "")
          << "round " << round << " after " << polls << " polls";
      EXPECT_TRUE(recv.guardsIntact());
    }
  });
}

// wait(deadline) returns false while a peer has not issued its call yet (the peer waits for
// that answer before it does), then the operation completes.
TEST_P(MultirankAsync, WaitDeadlineTimesOutUntilPeerJoins) {
  const int n = GetParam();
  if (n < 2) GTEST_SKIP() << "needs a peer";
  const size_t count = 77;
  const auto expected = expectedReduction(DataType::kInt32, ReduceOp::kSum, n, count);
  std::atomic<bool> timedOut{false};
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    GuardedBuffer send(count * 4);
    GuardedBuffer recv(count * 4);
    fillReductionInput(send.data(), count, DataType::kInt32, ReduceOp::kSum, me);
    if (me == n - 1) {
      // The late rank: joins only once rank 0 has seen its wait time out.
      while (!timedOut.load()) std::this_thread::yield();
      comm.allReduce(send.data(), recv.data(), count, DataType::kInt32, ReduceOp::kSum);
    } else {
      Request request =
          comm.allReduceAsync(send.data(), recv.data(), count, DataType::kInt32, ReduceOp::kSum);
      if (me == 0) {
        EXPECT_FALSE(request.wait(Clock::now() + std::chrono::milliseconds(20)));
        EXPECT_FALSE(request.test());
        // A deadline already in the past also just reports "not yet".
        EXPECT_FALSE(request.wait(Clock::now() - std::chrono::seconds(1)));
        timedOut.store(true);
      }
      bool done = false;
      while (!done) done = request.wait(Clock::now() + std::chrono::milliseconds(5));
      EXPECT_TRUE(request.test());
    }
    EXPECT_EQ(describeDifference(recv.data(), expected.data(), count, DataType::kInt32), "");
    EXPECT_TRUE(recv.guardsIntact());
  });
  EXPECT_TRUE(timedOut.load());
}

// Async point-to-point around a ring; a blocking collective after
// async ones drives them (operations on one communicator complete in issue order).
TEST_P(MultirankAsync, BlockingCallAfterAsyncDrivesThem) {
  const int n = GetParam();
  const size_t count = 1021;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    GuardedBuffer send(count * 8);
    GuardedBuffer recv(count * 8);
    fillPattern(send.data(), send.size(), me, 0, 3);
    Request r1, r2;
    EXPECT_FALSE(r1.valid());
    if (n > 1) {
      // Operations outside a group run in issue order: even ranks send first, odd ranks
      // receive first, so the ring cannot deadlock.
      if (me % 2 == 0) {
        r2 = comm.sendAsync(send.data(), count, DataType::kUint64, (me + 1) % n);
        r1 = comm.recvAsync(recv.data(), count, DataType::kUint64, (me + n - 1) % n);
      } else {
        r1 = comm.recvAsync(recv.data(), count, DataType::kUint64, (me + n - 1) % n);
        r2 = comm.sendAsync(send.data(), count, DataType::kUint64, (me + 1) % n);
      }
    }
    GuardedBuffer a(count * 4), b(count * 4);
    fillReductionInput(a.data(), count, DataType::kInt32, ReduceOp::kSum, me);
    comm.allReduce(a.data(), b.data(), count, DataType::kInt32, ReduceOp::kSum);
    const auto expected = expectedReduction(DataType::kInt32, ReduceOp::kSum, n, count);
    EXPECT_EQ(describeDifference(b.data(), expected.data(), count, DataType::kInt32), "");
    if (n > 1) {
      // The blocking call completed; the earlier operations are therefore complete too.
      EXPECT_TRUE(r1.test());
      EXPECT_TRUE(r2.test());
      std::vector<std::byte> want(count * 8);
      fillPattern(want.data(), want.size(), (me + n - 1) % n, 0, 3);
      EXPECT_TRUE(recv.bytes() == want);
      EXPECT_TRUE(recv.guardsIntact());
      // Moving a request keeps it usable.
      Request moved = std::move(r1);
      EXPECT_TRUE(moved.valid());
      moved.wait();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(RankCounts, MultirankAsync, ::testing::ValuesIn(kRankCounts),
                         rankCountName);

// A Request that outlives its communicator reports the outcome without touching the freed
// state (under ASan this was a use-after-free for a call held by a group that never ended).
TEST(MultirankAsyncLifetime, RequestOutlivingItsCommunicatorFailsCleanly) {
  std::vector<float> in(4, 1), out(4, 0);
  Request queued, held;
  {
    auto comms = Communicator::createInProcess(1);
    queued = comms[0].allReduceAsync(in.data(), out.data(), 4, DataType::kFloat32, ReduceOp::kSum);
    comms[0].groupStart();
    held = comms[0].allReduceAsync(in.data(), out.data(), 4, DataType::kFloat32, ReduceOp::kSum);
  }
  try {
    queued.wait();
    ADD_FAILURE() << "wait on a request of a destroyed communicator succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidUsage) << e.what();
    EXPECT_THAT(e.what(), ::testing::HasSubstr("destroyed")) << e.what();
  }
  try {
    held.test();
    ADD_FAILURE() << "test on a request of a destroyed communicator succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidUsage) << e.what();
    EXPECT_THAT(e.what(), ::testing::HasSubstr("never ran: its communicator was destroyed"));
  }
}

}  // namespace
}  // namespace grove::mr
