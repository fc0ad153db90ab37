// The harness itself: a failing rank is reported with its rank named, and its peers, blocked
// in a collective with it, are released by its abort instead of hanging the test.
//
// Why: every multi-rank test relies on this; a harness that hangs or loses the rank of a
// failure would make every other failure expensive to read.
#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

using ::testing::HasSubstr;

TEST(MultirankHarness, FailingRankIsNamedAndPeersAreReleased) {
  for (int n : {2, 3, 8}) {
    const int bad = n - 1;
    try {
      runRanks(n, [&](Communicator& comm) {
        if (comm.rank() == bad) throw std::runtime_error("boom");
        std::vector<float> a(1000, 1.0f), b(1000);
        comm.allReduce(a.data(), b.data(), a.size(), DataType::kFloat32, ReduceOp::kSum);
      });
      ADD_FAILURE() << "runRanks did not rethrow (n=" << n << ")";
    } catch (const std::exception& e) {
      EXPECT_THAT(e.what(), HasSubstr("rank " + std::to_string(bad) + ": boom")) << e.what();
    }
  }
}

TEST(MultirankHarness, GroveErrorKeepsItsCode) {
  try {
    runRanks(2, [&](Communicator& comm) {
      float x = 0;
      comm.allReduce(&x, &x, 1, static_cast<DataType>(42), ReduceOp::kSum);
    });
    ADD_FAILURE() << "runRanks did not rethrow";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(ErrorCode::kInvalidArgument));
    EXPECT_THAT(e.what(), HasSubstr("rank 0: "));
  }
}

TEST(MultirankHarness, GuardedBufferSeesWritesOutside) {
  GuardedBuffer buffer(16);
  EXPECT_TRUE(buffer.guardsIntact());
  buffer.data()[16] = std::byte{0};
  EXPECT_FALSE(buffer.guardsIntact());
  GuardedBuffer other(16);
  other.data()[-1] = std::byte{0};
  EXPECT_FALSE(other.guardsIntact());
  GuardedBuffer empty(0);
  EXPECT_NE(empty.data(), nullptr);
  EXPECT_TRUE(empty.guardsIntact());
}

}  // namespace
}  // namespace grove::mr
