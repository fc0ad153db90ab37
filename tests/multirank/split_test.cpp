// Communicator splitting and concurrent communicators on in-process ranks: colors and keys
// decide membership and order, color -1 gives no communicator, and a parent and its child (or
// two unrelated groups) carry collectives at the same time from different threads without
// mixing their messages.
//
// Why: frameworks build data-, tensor- and pipeline-parallel groups by splitting one world
// communicator and then drive them from different threads; a message of one group delivered
// to another, or a rank order that disagrees with (key, old rank), corrupts training silently.
#include <thread>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

// Each rank contributes its old rank; the child allgathers them, which shows the new order.
std::vector<int32_t> gatherOldRanks(Communicator& child, int oldRank) {
  std::vector<int32_t> out(child.size(), -1);
  int32_t mine = oldRank;
  child.allGather(&mine, out.data(), 1, DataType::kInt32);
  return out;
}

class MultirankSplit : public ::testing::TestWithParam<int> {};

// Even and odd ranks form two groups; keys reverse the order inside each.
TEST_P(MultirankSplit, OddEvenColorsReversedKeys) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    Communicator child = comm.split(me % 2, -me);
    if (!child.valid()) throw std::runtime_error("split with color >= 0 gave no communicator");
    std::vector<int32_t> members;  // old ranks of my color, in the expected new order
    for (int r = n - 1; r >= 0; --r) {
      if (r % 2 == me % 2) members.push_back(r);
    }
    EXPECT_EQ(child.size(), static_cast<int>(members.size()));
    const auto position = std::find(members.begin(), members.end(), me) - members.begin();
    EXPECT_EQ(child.rank(), position);
    EXPECT_EQ(gatherOldRanks(child, me), members);
    // A reduction over the child only sees its members.
    int64_t value = me + 1;
    int64_t sum = 0;
    child.allReduce(&value, &sum, 1, DataType::kInt64, ReduceOp::kSum);
    int64_t want = 0;
    for (int r : members) want += r + 1;
    EXPECT_EQ(sum, want);
    // The parent still works after the split.
    comm.allReduce(&value, &sum, 1, DataType::kInt64, ReduceOp::kSum);
    EXPECT_EQ(sum, static_cast<int64_t>(n) * (n + 1) / 2);
  });
}

// Equal keys order by old rank; color -1 opts out; a child can be split again.
TEST_P(MultirankSplit, NegativeColorTiesAndNestedSplit) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    const bool out = me % 3 == 2;
    Communicator child = comm.split(out ? -1 : 7, 0);
    EXPECT_EQ(child.valid(), !out);
    std::vector<int32_t> members;
    for (int r = 0; r < n; ++r) {
      if (r % 3 != 2) members.push_back(r);
    }
    if (!out) {
      EXPECT_EQ(child.size(), static_cast<int>(members.size()));
      EXPECT_EQ(gatherOldRanks(child, me), members);
      // Split the child again: first half and second half, keys by old rank.
      const int half = child.rank() < child.size() / 2 ? 0 : 1;
      Communicator grandchild = child.split(half, me);
      if (!grandchild.valid()) throw std::runtime_error("nested split gave no communicator");
      std::vector<int32_t> expected;
      for (size_t i = 0; i < members.size(); ++i) {
        const int h = static_cast<int>(i) < static_cast<int>(members.size()) / 2 ? 0 : 1;
        if (h == half) expected.push_back(members[i]);
      }
      EXPECT_EQ(gatherOldRanks(grandchild, me), expected);
    }
    comm.barrier();
  });
}

// The parent and the child carry interleaved collectives at the same time, each driven by its
// own thread on every rank.
TEST_P(MultirankSplit, ParentAndChildConcurrentThreads) {
  const int n = GetParam();
  constexpr int kRounds = 25;
  const size_t count = 1003;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    Communicator child = comm.split(me % 2, me);
    const int childSize = child.size();
    std::exception_ptr childError;
    std::thread childThread([&] {
      try {
        for (int k = 0; k < kRounds; ++k) {
          std::vector<int32_t> send(count, me + k), recv(count, -1);
          child.allReduce(send.data(), recv.data(), count, DataType::kInt32, ReduceOp::kSum);
          int32_t want = 0;
          for (int r = me % 2; r < n; r += 2) want += r + k;
          EXPECT_EQ(std::count(recv.begin(), recv.end(), want), static_cast<long>(count))
              << "child round " << k;
          int32_t root = -1;
          if (child.rank() == k % childSize) root = me;
          child.broadcast(&root, &root, 1, DataType::kInt32, k % childSize);
          EXPECT_EQ(root % 2, me % 2) << "child broadcast round " << k;
        }
      } catch (...) {
        childError = std::current_exception();
        child.abort();
      }
    });
    try {
      for (int k = 0; k < kRounds; ++k) {
        std::vector<int64_t> send(count, 2 * me + k), recv(count, -1);
        comm.allReduce(send.data(), recv.data(), count, DataType::kInt64, ReduceOp::kSum);
        const int64_t want = static_cast<int64_t>(n) * (n - 1) + static_cast<int64_t>(n) * k;
        EXPECT_EQ(std::count(recv.begin(), recv.end(), want), static_cast<long>(count))
            << "parent round " << k;
        std::vector<int16_t> mine(3, static_cast<int16_t>(me)), all(3 * n, -1);
        comm.allGather(mine.data(), all.data(), 3, DataType::kBFloat16);  // bytes only
        for (int q = 0; q < n; ++q) EXPECT_EQ(all[3 * q + 2], q) << "parent round " << k;
      }
    } catch (...) {
      childThread.join();
      throw;
    }
    childThread.join();
    if (childError) std::rethrow_exception(childError);
  });
}

INSTANTIATE_TEST_SUITE_P(RankCounts, MultirankSplit, ::testing::ValuesIn(kRankCounts),
                         rankCountName);

// Two unrelated in-process groups (3 and 5 ranks) run collectives at the same time.
TEST(ConcurrentComms, TwoIndependentGroups) {
  constexpr int kRounds = 30;
  auto work = [&](int n, int32_t offset) {
    runRanks(n, [&](Communicator& comm) {
      for (int k = 0; k < kRounds; ++k) {
        const size_t count = 257 + k;
        std::vector<int32_t> send(count, offset + comm.rank()), recv(count, -1);
        comm.allReduce(send.data(), recv.data(), count, DataType::kInt32, ReduceOp::kMax);
        EXPECT_EQ(std::count(recv.begin(), recv.end(), offset + n - 1), static_cast<long>(count))
            << "group of " << n << " round " << k;
        comm.barrier();
      }
    });
  };
  std::exception_ptr errors[2];
  std::thread a([&] {
    try {
      work(3, 1000);
    } catch (...) {
      errors[0] = std::current_exception();
    }
  });
  std::thread b([&] {
    try {
      work(5, 2000);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  a.join();
  b.join();
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace
}  // namespace grove::mr
