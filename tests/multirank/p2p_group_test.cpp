// Point-to-point send/recv and groups on in-process ranks: blocking pairs, ring and all-pairs
// exchanges inside groupStart/groupEnd (which only complete if the group runs its sends and
// receives concurrently), several messages to one peer delivered in order, and collectives
// queued in a group.
//
// Why: send/recv is the one operation whose matching is up to the user; the contract is that
// messages between two ranks arrive in the order they were posted and that a group lets every
// rank send before it receives without deadlock.
#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

const std::vector<size_t> kP2pCounts = {0, 1, 7, 1021, 100003};

std::vector<std::byte> expectedPattern(size_t bytes, int rank, uint32_t salt) {
  std::vector<std::byte> out(bytes);
  fillPattern(out.data(), bytes, rank, 0, salt);
  return out;
}

class MultirankP2p : public ::testing::TestWithParam<int> {};

// Ranks 2k and 2k+1 exchange with blocking calls: the even rank sends then receives, the odd
// rank receives then sends. With an odd count of ranks the last one has no partner.
TEST_P(MultirankP2p, BlockingPairs) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    const int partner = me % 2 == 0 ? me + 1 : me - 1;
    if (partner >= n) return;
    uint32_t salt = 0;
    for (DataType type : allTypes()) {
      for (size_t count : kP2pCounts) {
        if (count > 1021 && type != DataType::kFloat32) continue;
        ++salt;
        const size_t bytes = count * dataTypeSize(type);
        GuardedBuffer send(bytes);
        fillPattern(send.data(), bytes, me, 0, salt);
        GuardedBuffer recv(bytes);
        if (me % 2 == 0) {
          comm.send(send.data(), count, type, partner);
          comm.recv(recv.data(), count, type, partner);
        } else {
          comm.recv(recv.data(), count, type, partner);
          comm.send(send.data(), count, type, partner);
        }
        const std::string what = label("send/recv", type, count, "", false, n);
        EXPECT_TRUE(recv.guardsIntact()) << what;
        EXPECT_TRUE(send.guardsIntact()) << what;
        EXPECT_TRUE(recv.bytes() == expectedPattern(bytes, partner, salt)) << what;
      }
    }
  });
}

// Every rank sends to its right neighbour and receives from its left one, inside a group.
TEST_P(MultirankP2p, RingExchangeInGroup) {
  const int n = GetParam();
  if (n < 2) GTEST_SKIP() << "a ring needs two ranks (peer == self is invalid)";
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    const int right = (me + 1) % n;
    const int left = (me + n - 1) % n;
    uint32_t salt = 100;
    for (DataType type :
         {DataType::kInt8, DataType::kFloat16, DataType::kFloat32, DataType::kUint64}) {
      for (size_t count : kP2pCounts) {
        ++salt;
        const size_t bytes = count * dataTypeSize(type);
        GuardedBuffer send(bytes);
        fillPattern(send.data(), bytes, me, 0, salt);
        GuardedBuffer recv(bytes);
        comm.groupStart();
        comm.send(send.data(), count, type, right);
        comm.recv(recv.data(), count, type, left);
        comm.groupEnd();
        const std::string what = label("ring send/recv", type, count, "", false, n);
        EXPECT_TRUE(recv.guardsIntact()) << what;
        EXPECT_TRUE(recv.bytes() == expectedPattern(bytes, left, salt)) << what;
      }
    }
  });
}

// Every rank sends a distinct message to every other rank and receives from each, all in one
// group; receives are posted in the reverse order of sends.
TEST_P(MultirankP2p, AllPairsInGroup) {
  const int n = GetParam();
  const size_t count = 513;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    std::vector<GuardedBuffer> sends, recvs;
    for (int q = 0; q < n; ++q) {
      sends.emplace_back(count * 4);
      fillPattern(sends.back().data(), count * 4, me, 0, static_cast<uint32_t>(q));
      recvs.emplace_back(count * 4);
    }
    comm.groupStart();
    for (int q = 0; q < n; ++q) {
      if (q != me) comm.send(sends[q].data(), count, DataType::kInt32, q);
    }
    for (int q = n - 1; q >= 0; --q) {
      if (q != me) comm.recv(recvs[q].data(), count, DataType::kInt32, q);
    }
    comm.groupEnd();
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      EXPECT_TRUE(recvs[q].guardsIntact()) << "from " << q;
      EXPECT_TRUE(recvs[q].bytes() == expectedPattern(count * 4, q, static_cast<uint32_t>(me)))
          << "message from rank " << q;
    }
  });
}

// Several messages of different sizes to one peer arrive in the order they were sent, whether
// sent asynchronously or queued in a group.
TEST_P(MultirankP2p, SeveralSendsToOnePeerInOrder) {
  const int n = GetParam();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const std::vector<size_t> counts = {5, 0, 1, 4099, 3, 70001, 2};
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    const int sender = 0;
    const int receiver = n - 1;
    for (bool grouped : {false, true}) {
      const uint32_t base = grouped ? 50 : 0;
      if (me == sender) {
        std::vector<GuardedBuffer> sends;
        for (size_t k = 0; k < counts.size(); ++k) {
          sends.emplace_back(counts[k] * 8);
          fillPattern(sends.back().data(), counts[k] * 8, me, 0, base + k);
        }
        if (grouped) {
          comm.groupStart();
          for (size_t k = 0; k < counts.size(); ++k) {
            comm.send(sends[k].data(), counts[k], DataType::kFloat64, receiver);
          }
          comm.groupEnd();
        } else {
          std::vector<Request> requests;
          for (size_t k = 0; k < counts.size(); ++k) {
            requests.push_back(
                comm.sendAsync(sends[k].data(), counts[k], DataType::kFloat64, receiver));
          }
          for (auto& request : requests) request.wait();
        }
      } else if (me == receiver) {
        for (size_t k = 0; k < counts.size(); ++k) {
          GuardedBuffer recv(counts[k] * 8);
          comm.recv(recv.data(), counts[k], DataType::kFloat64, sender);
          EXPECT_TRUE(recv.guardsIntact()) << "message " << k;
          EXPECT_TRUE(recv.bytes() == expectedPattern(counts[k] * 8, sender, base + k))
              << "message " << k << (grouped ? " (grouped)" : " (async)");
        }
      }
    }
  });
}

// Inside a group a rank may send to itself when the matching receive is in the same group
// (outside a group that is an error: see bad_input_test).
TEST_P(MultirankP2p, SelfSendRecvInGroup) {
  const int n = GetParam();
  const size_t count = 1029;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    GuardedBuffer send(count * 2);
    fillPattern(send.data(), send.size(), me, 0, 77);
    GuardedBuffer recv(count * 2);
    comm.groupStart();
    comm.recv(recv.data(), count, DataType::kFloat16, me);
    comm.send(send.data(), count, DataType::kFloat16, me);
    comm.groupEnd();
    EXPECT_TRUE(recv.guardsIntact());
    EXPECT_TRUE(recv.bytes() == expectedPattern(count * 2, me, 77));
  });
}

// Collectives queued in a group run in issue order when the group ends.
TEST_P(MultirankP2p, CollectivesInGroup) {
  const int n = GetParam();
  const size_t count = 1001;
  const auto expected = expectedReduction(DataType::kInt32, ReduceOp::kSum, n, count);
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    GuardedBuffer send(count * 4);
    fillReductionInput(send.data(), count, DataType::kInt32, ReduceOp::kSum, me);
    GuardedBuffer reduced(count * 4);
    GuardedBuffer gathered(n * count * 4);
    comm.groupStart();
    comm.allReduce(send.data(), reduced.data(), count, DataType::kInt32, ReduceOp::kSum);
    // Gathers every rank's result of the allreduce queued just before it.
    comm.allGather(reduced.data(), gathered.data(), count, DataType::kInt32);
    comm.groupEnd();
    EXPECT_TRUE(reduced.guardsIntact());
    EXPECT_TRUE(gathered.guardsIntact());
    EXPECT_EQ(describeDifference(reduced.data(), expected.data(), count, DataType::kInt32), "");
    for (int q = 0; q < n; ++q) {
      EXPECT_EQ(describeDifference(gathered.data() + q * count * 4, expected.data(), count,
                                   DataType::kInt32),
                "")
          << "block " << q;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(RankCounts, MultirankP2p, ::testing::ValuesIn(kRankCounts), rankCountName);

}  // namespace
}  // namespace grove::mr
