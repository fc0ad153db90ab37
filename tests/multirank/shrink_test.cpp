// Recovery on in-process ranks: revoke() quiesces a communicator, shrink() builds a new one
// among the survivors after a rank died (abort() stands for death here), after an error and
// after a revoke; the new communicator computes exact results and inherits none of the old
// one's failure. Bad excluded lists are argument errors naming the rank and the entry, and
// survivors that disagree on the list fail at the deadline instead of hanging. The C names
// (groveCommRevoke, groveCommShrink) are exercised the same way.
//
// Why: after a failure the old communicator cannot carry the agreement split() needs, so
// shrink has its own path; a leak of the old failed state, a wrong renumbering or a key that
// collides with split()'s would show up as errors or wrong sums on the survivors.
#include <atomic>
#include <cstdlib>
#include <optional>

#include "grove/grove.h"
#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

// Runs `body`, which must throw grove::Error with `code` and a message containing `needle`.
void expectError(const std::function<void()>& body, ErrorCode code, const std::string& needle) {
  try {
    body();
    ADD_FAILURE() << "expected " << toString(code) << " containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_THAT(e.what(), ::testing::HasSubstr(needle));
  }
}

// Each member contributes (oldRank + 1) * 1000 + i at position i; the sum over `members` is
// checked exactly (count 1001: not divisible by any member count used here).
void checkAllReduce(Communicator& comm, int oldRank, const std::vector<int>& members) {
  constexpr size_t kCount = 1001;
  std::vector<int64_t> in(kCount);
  std::vector<int64_t> out(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) in[i] = (oldRank + 1) * 1000 + static_cast<int64_t>(i);
  comm.allReduce(in.data(), out.data(), kCount, DataType::kInt64, ReduceOp::kSum);
  int64_t base = 0;
  for (int r : members) base += (r + 1) * 1000;
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(out[i], base + static_cast<int64_t>(members.size() * i)) << "element " << i;
  }
  // Count 0 and 1 work too.
  comm.allReduce(in.data(), out.data(), 0, DataType::kInt64, ReduceOp::kSum);
  comm.allReduce(in.data(), out.data(), 1, DataType::kInt64, ReduceOp::kSum);
  EXPECT_EQ(out[0], base);
}

std::vector<int> without(int n, std::vector<int> gone) {
  std::vector<int> members;
  for (int r = 0; r < n; ++r) {
    if (std::find(gone.begin(), gone.end(), r) == gone.end()) members.push_back(r);
  }
  return members;
}

// Lets a rank that is about to die (abort) wait until `expected` others have finished the
// calls it takes part in: a collective that completed on one rank may still be in progress
// on another, and an abort then fails it there.
struct Phase {
  std::atomic<int> done{0};
  void arrive() { done.fetch_add(1); }
  void waitFor(int expected) const {
    while (done.load() < expected) std::this_thread::yield();
  }
};

// A survivor's call on the old communicator fails because of the dead rank.
void expectPeerFailure(Communicator& comm) {
  int64_t value = 1;
  int64_t sum = 0;
  try {
    comm.allReduce(&value, &sum, 1, DataType::kInt64, ReduceOp::kSum);
    ADD_FAILURE() << "allReduce with a dead peer succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRemoteError) << e.what();
  }
  EXPECT_NE(comm.getAsyncError(), ErrorCode::kSuccess);
}

TEST(ShrinkThreads, DeadRankExcludedSurvivorsContinueExactly) {
  const int n = 5;
  const int victim = 2;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    if (me == victim) {
      comm.abort();
      return;
    }
    expectPeerFailure(comm);
    const int excluded[] = {victim};
    Communicator next = comm.shrink(excluded);
    ASSERT_TRUE(next.valid());
    EXPECT_EQ(next.size(), n - 1);
    EXPECT_EQ(next.rank(), me < victim ? me : me - 1);
    EXPECT_EQ(next.getAsyncError(), ErrorCode::kSuccess);
    checkAllReduce(next, me, without(n, {victim}));
    // Other collectives on the new communicator: allGather shows the renumbering.
    std::vector<int32_t> olds(next.size(), -1);
    const int32_t mine = me;
    next.allGather(&mine, olds.data(), 1, DataType::kInt32);
    EXPECT_EQ(olds, (std::vector<int32_t>{0, 1, 3, 4}));
    next.barrier();
    // The old communicator stays failed.
    expectError([&] { comm.barrier(); }, ErrorCode::kInvalidUsage, "failed earlier");
  });
}

TEST(ShrinkThreads, ShrinkTwiceChainedAndFromTheSameCommunicator) {
  const int n = 5;
  Phase shrunk;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    if (me == 4) {
      comm.abort();
      return;
    }
    expectPeerFailure(comm);
    const int first[] = {4};
    Communicator a = comm.shrink(first);
    checkAllReduce(a, me, without(n, {4}));
    // Old rank 1 (rank 1 of `a` too) dies next; the others shrink `a` again.
    if (me == 1) {
      shrunk.waitFor(3);
      a.abort();
      return;
    }
    shrunk.arrive();
    expectPeerFailure(a);
    const int second[] = {1};
    Communicator b = a.shrink(second);
    EXPECT_EQ(b.size(), 3);
    checkAllReduce(b, me, without(n, {1, 4}));
    // Shrinking the original communicator a second time works as well (a new key each time).
    const int both[] = {4, 1};
    Communicator c = comm.shrink(both);
    EXPECT_EQ(c.size(), 3);
    EXPECT_EQ(c.rank(), me == 0 ? 0 : me - 1);
    checkAllReduce(c, me, without(n, {1, 4}));
    // Split still works on a shrunk communicator, next to the shrinks.
    Communicator d = c.split(0, -c.rank());
    EXPECT_EQ(d.rank(), 2 - c.rank());
    checkAllReduce(d, me, without(n, {1, 4}));
  });
}

TEST(ShrinkThreads, RevokeThenShrink) {
  const int n = 4;
  Phase checked;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    int64_t value = me;
    int64_t sum = 0;
    Request request = comm.allReduceAsync(&value, &sum, 1, DataType::kInt64, ReduceOp::kSum);
    if (me == 0) {
      comm.revoke();
      expectError([&] { request.wait(); }, ErrorCode::kInvalidUsage,
                  "the communicator was revoked");
    } else {
      expectError([&] { request.wait(); }, ErrorCode::kRemoteError, "rank 0");
      comm.revoke();  // revoking a failed communicator is harmless
    }
    expectError([&] { comm.barrier(); }, ErrorCode::kInvalidUsage, "the communicator was revoked");
    expectError([&] { comm.groupStart(); }, ErrorCode::kInvalidUsage, "revoked");
    Communicator next = comm.shrink({});
    EXPECT_EQ(next.size(), n);
    EXPECT_EQ(next.rank(), me);
    checkAllReduce(next, me, without(n, {}));
    // Revoke the new one too (once every rank is done with it) and shrink it to the odd ranks.
    checked.arrive();
    checked.waitFor(n);
    next.revoke();
    if (me % 2 == 0) return;
    const int evens[] = {2, 0};
    Communicator odd = next.shrink(evens);
    EXPECT_EQ(odd.size(), 2);
    checkAllReduce(odd, me, {1, 3});
  });
}

TEST(ShrinkThreads, BadListsAreArgumentErrors) {
  const int n = 3;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    const std::string who = "rank " + std::to_string(me) + " of 3";
    const int outOfRange[] = {(me + 1) % n, 3};
    expectError([&] { (void)comm.shrink(outOfRange); }, ErrorCode::kInvalidArgument,
                "excludedRanks[1] is 3, out of range (expected 0..2)");
    const int negative[] = {-1};
    expectError([&] { (void)comm.shrink(negative); }, ErrorCode::kInvalidArgument,
                "excludedRanks[0] is -1, out of range");
    const int twice[] = {(me + 1) % n, (me + 1) % n};
    expectError([&] { (void)comm.shrink(twice); }, ErrorCode::kInvalidArgument,
                "excludedRanks[1] is " + std::to_string((me + 1) % n) + ", listed twice");
    const int self[] = {me};
    expectError([&] { (void)comm.shrink(self); }, ErrorCode::kInvalidArgument,
                who + "): excludedRanks[0] is " + std::to_string(me) + ", this rank itself");
    const int everyone[] = {0, 1, 2};
    expectError([&] { (void)comm.shrink(everyone); }, ErrorCode::kInvalidArgument,
                "excludedRanks has 3 entries (expected at most 2");
    comm.groupStart();
    expectError([&] { (void)comm.shrink({}); }, ErrorCode::kInvalidUsage, "inside a group");
    comm.groupEnd();
    // Nothing was consumed by the rejected calls: a valid shrink still agrees.
    Communicator next = comm.shrink({});
    checkAllReduce(next, me, without(n, {}));
    // The healthy original keeps working next to it.
    checkAllReduce(comm, me, without(n, {}));
  });
}

TEST(ShrinkThreads, OneSurvivor) {
  const int n = 3;
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    if (me != 1) {
      comm.abort();
      return;
    }
    expectPeerFailure(comm);
    const int others[] = {2, 0};
    Communicator alone = comm.shrink(others);
    EXPECT_EQ(alone.size(), 1);
    EXPECT_EQ(alone.rank(), 0);
    checkAllReduce(alone, me, {1});
  });
}

// Survivors given different lists never form a communicator: every one of them fails by its
// deadline (GROVE_TIMEOUT, 1 s here; kTimeout, or kRemoteError once a member of its group
// timed out) naming the list it was given.
TEST(ShrinkThreads, DisagreementFailsAtTheDeadline) {
  auto comms = Communicator::createInProcess(3, Options().set("GROVE_TIMEOUT", "1"));
  runOnComms(comms, [&](Communicator& comm) {
    const int me = comm.rank();
    std::vector<int> excluded;
    if (me == 0) excluded = {2};  // ranks 1 and 2 exclude nobody
    try {
      (void)comm.shrink(excluded);
      ADD_FAILURE() << "shrink with disagreeing lists succeeded";
    } catch (const Error& e) {
      // The first rank to time out passes its failure on to its group at once.
      EXPECT_TRUE(e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kRemoteError)
          << e.what();
      EXPECT_THAT(e.what(), ::testing::HasSubstr(
                                "every survivor must call shrink with the same excluded ranks"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr(me == 0 ? "excluding {2}" : "excluding {}"));
    }
  });
}

// The C names on in-process ranks: revoke, shrink, and their argument checks.
TEST(ShrinkCApiThreads, RevokeShrinkAndArguments) {
  const int n = 4;
  std::vector<groveComm_t> comms(n);
  ASSERT_EQ(groveCommInitAll(comms.data(), n, nullptr), groveSuccess);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      groveComm_t comm = comms[r];
      auto check = [&](groveResult_t got, groveResult_t want, const char* what) {
        if (got != want && errors[r].empty()) {
          errors[r] = std::string(what) + ": got " + std::to_string(got) + ", expected " +
                      std::to_string(want) + ": " + groveGetLastError(nullptr);
        }
      };
      if (r == 3) {
        check(groveCommRevoke(comm, 5), groveInvalidArgument, "revoke flags 5");
        check(groveCommRevoke(comm, GROVE_REVOKE_DEFAULT), groveSuccess, "revoke");
        check(groveCommDestroy(comm), groveSuccess, "destroy revoked");
        return;
      }
      int64_t value = r + 1;
      int64_t sum = 0;
      check(groveAllReduce(&value, &sum, 1, groveInt64, groveSum, comm), groveRemoteError,
            "allreduce with rank 3 revoked");
      groveResult_t async = groveSuccess;
      check(groveCommGetAsyncError(comm, &async), groveSuccess, "getAsyncError");
      check(async == groveSuccess ? groveInternalError : groveSuccess, groveSuccess,
            "async error set");
      int gone[] = {3};
      groveComm_t next = nullptr;
      int dummy = 0;
      check(groveCommShrink(comm, gone, 1, &next, &dummy, GROVE_SHRINK_DEFAULT),
            groveInvalidArgument, "config not NULL");
      check(groveCommShrink(comm, gone, 1, &next, nullptr, 7), groveInvalidArgument, "flags 7");
      check(groveCommShrink(comm, gone, -1, &next, nullptr, 0), groveInvalidArgument, "count -1");
      check(groveCommShrink(comm, nullptr, 1, &next, nullptr, 0), groveInvalidArgument,
            "NULL list");
      check(groveCommShrink(comm, gone, 1, nullptr, nullptr, 0), groveInvalidArgument,
            "NULL newcomm");
      int self[] = {r};
      check(groveCommShrink(comm, self, 1, &next, nullptr, 0), groveInvalidArgument, "self");
      check(groveCommShrink(comm, gone, 1, &next, nullptr, GROVE_SHRINK_ABORT), groveSuccess,
            "shrink");
      if (next == nullptr) return;
      int count = 0;
      int rank = -1;
      check(groveCommCount(next, &count), groveSuccess, "count");
      check(groveCommUserRank(next, &rank), groveSuccess, "rank");
      check(count == 3 && rank == r ? groveSuccess : groveInternalError, groveSuccess,
            "new size 3 and same rank");
      check(groveAllReduce(&value, &sum, 1, groveInt64, groveSum, next), groveSuccess,
            "allreduce on the new communicator");
      check(sum == 6 ? groveSuccess : groveInternalError, groveSuccess, "sum 1+2+3");
      check(groveCommGetAsyncError(next, &async), groveSuccess, "getAsyncError new");
      check(async, groveSuccess, "new communicator has no error");
      check(groveCommDestroy(next), groveSuccess, "destroy new");
      check(groveCommDestroy(comm), groveSuccess, "destroy old");
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace
}  // namespace grove::mr
