// Bad input on in-process ranks: every wrong argument is a grove::Error with the right code
// and a message that names the argument, thrown before anything is sent, so no peer is left
// waiting (every rank passes the same bad argument here) and the communicator stays usable.
//
// Why: users meet grove's validation first when they get something wrong; an error that says
// which argument is wrong (instead of a hang or "invalid argument") is worth a lot, and a
// rejected call must not leave the group out of step.
#include <barrier>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

using ::testing::HasSubstr;

// Runs `call` and expects a grove::Error with `code` whose message contains `needle`.
// Asynchronous calls may report at issue or at wait(); `call` covers both.
void expectError(ErrorCode code, const std::string& needle, const std::function<void()>& call,
                 const std::string& what) {
  try {
    call();
    ADD_FAILURE() << what << ": no exception, expected " << toString(code) << " naming '" << needle
                  << "'";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code))
        << what << ": got " << toString(e.code()) << " (" << e.what() << "), expected "
        << toString(code);
    EXPECT_THAT(e.what(), HasSubstr(needle)) << what;
  }
}

// After rejected calls, a correct allreduce still gives the right answer on every rank.
void expectStillUsable(Communicator& comm) {
  int32_t value = comm.rank() + 1;
  int32_t sum = 0;
  comm.allReduce(&value, &sum, 1, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(sum, comm.size() * (comm.size() + 1) / 2) << "communicator unusable after errors";
}

class MultirankBadInput : public ::testing::TestWithParam<int> {};

TEST_P(MultirankBadInput, NullBuffersWithCount) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const auto kIA = ErrorCode::kInvalidArgument;
    const auto f32 = DataType::kFloat32;
    std::vector<float> buf(4 * n, 1.0f);
    float* b = buf.data();
    expectError(
        kIA, "sendbuf", [&] { comm.allReduce(nullptr, b, 4, f32, ReduceOp::kSum); },
        "allReduce send");
    expectError(
        kIA, "recvbuf", [&] { comm.allReduce(b, nullptr, 4, f32, ReduceOp::kSum); },
        "allReduce recv");
    expectError(
        kIA, "recvbuf", [&] { comm.allGather(b, nullptr, 1, f32); }, "allGather recv");
    expectError(
        kIA, "sendbuf", [&] { comm.reduceScatter(nullptr, b, 1, f32, ReduceOp::kSum); },
        "reduceScatter");
    expectError(
        kIA, "sendbuf", [&] { comm.allToAll(nullptr, b, 1, f32); }, "allToAll");
    expectError(
        kIA, "recvbuf", [&] { comm.broadcast(b, nullptr, 3, f32, 0); }, "broadcast");
    // The root of reduce and gather needs a receive buffer (rank 0 is the root; the other
    // ranks pass the bad argument too, where it is allowed, so all still agree).
    if (comm.rank() == 0) {
      expectError(
          kIA, "recvbuf", [&] { comm.reduce(b, nullptr, 2, f32, ReduceOp::kSum, 0); },
          "reduce root");
      expectError(
          kIA, "recvbuf", [&] { comm.gather(b, nullptr, 2, f32, 0); }, "gather root");
    }
    if (n > 1) {
      expectError(
          kIA, "sendbuf", [&] { comm.send(nullptr, 2, f32, (comm.rank() + 1) % n); }, "send");
      expectError(
          kIA, "recvbuf", [&] { comm.recv(nullptr, 2, f32, (comm.rank() + 1) % n); }, "recv");
    }
    expectError(
        kIA, "sendbuf",
        [&] {
          Request r = comm.allReduceAsync(nullptr, b, 4, f32, ReduceOp::kSum);
          r.wait();
        },
        "allReduceAsync");
    // Count 0 with null buffers is fine.
    comm.allReduce(nullptr, nullptr, 0, f32, ReduceOp::kSum);
    comm.allGather(nullptr, nullptr, 0, f32);
    comm.broadcast(nullptr, nullptr, 0, f32, 0);
    expectStillUsable(comm);
  });
}

TEST_P(MultirankBadInput, InvalidTypeAndOp) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const auto kIA = ErrorCode::kInvalidArgument;
    const auto badType = static_cast<DataType>(42);
    const auto badOp = static_cast<ReduceOp>(42);
    std::vector<int64_t> a(4 * n, 1), b(4 * n, 0);
    expectError(
        kIA, "type", [&] { comm.allReduce(a.data(), b.data(), 4, badType, ReduceOp::kSum); },
        "allReduce type");
    expectError(
        kIA, "op", [&] { comm.allReduce(a.data(), b.data(), 4, DataType::kInt64, badOp); },
        "allReduce op");
    expectError(
        kIA, "op",
        [&] { comm.allReduce(a.data(), b.data(), 4, DataType::kInt64, static_cast<ReduceOp>(-1)); },
        "allReduce op -1");
    expectError(
        kIA, "op", [&] { comm.reduce(a.data(), b.data(), 4, DataType::kInt64, badOp, 0); },
        "reduce op");
    expectError(
        kIA, "op", [&] { comm.reduceScatter(a.data(), b.data(), 2, DataType::kInt64, badOp); },
        "reduceScatter op");
    expectError(
        kIA, "type", [&] { comm.broadcast(a.data(), b.data(), 4, badType, 0); }, "broadcast type");
    expectError(
        kIA, "type", [&] { comm.allGather(a.data(), b.data(), 1, badType); }, "allGather type");
    expectError(
        kIA, "type", [&] { comm.allToAll(a.data(), b.data(), 1, badType); }, "allToAll type");
    expectError(
        kIA, "type", [&] { comm.gather(a.data(), b.data(), 1, badType, 0); }, "gather type");
    expectError(
        kIA, "type", [&] { comm.scatter(a.data(), b.data(), 1, badType, 0); }, "scatter type");
    if (n > 1) {
      expectError(
          kIA, "type", [&] { comm.send(a.data(), 1, badType, (comm.rank() + 1) % n); },
          "send type");
    }
    expectStillUsable(comm);
  });
}

TEST_P(MultirankBadInput, RootAndPeerOutOfRange) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const auto kIA = ErrorCode::kInvalidArgument;
    const auto f64 = DataType::kFloat64;
    const int me = comm.rank();
    std::vector<double> a(2 * n, 1), b(2 * n, 0);
    for (int root : {-1, n, n + 100}) {
      const std::string at = " root=" + std::to_string(root);
      expectError(
          kIA, "root", [&] { comm.broadcast(a.data(), b.data(), 2, f64, root); }, "broadcast" + at);
      expectError(
          kIA, "root", [&] { comm.reduce(a.data(), b.data(), 2, f64, ReduceOp::kMax, root); },
          "reduce" + at);
      expectError(
          kIA, "root", [&] { comm.gather(a.data(), b.data(), 2, f64, root); }, "gather" + at);
      expectError(
          kIA, "root", [&] { comm.scatter(a.data(), b.data(), 2, f64, root); }, "scatter" + at);
    }
    for (int peer : {-1, n, me}) {
      const std::string at = " peer=" + std::to_string(peer);
      expectError(
          kIA, "peer", [&] { comm.send(a.data(), 2, f64, peer); }, "send" + at);
      expectError(
          kIA, "peer", [&] { comm.recv(b.data(), 2, f64, peer); }, "recv" + at);
      expectError(
          kIA, "peer",
          [&] {
            Request r = comm.sendAsync(a.data(), 2, f64, peer);
            r.wait();
          },
          "sendAsync" + at);
    }
    expectStillUsable(comm);
  });
}

TEST_P(MultirankBadInput, PartialOverlapIsRejected) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const auto kIA = ErrorCode::kInvalidArgument;
    const auto i32 = DataType::kInt32;
    const size_t count = 4;
    const int me = comm.rank();
    std::vector<int32_t> buf(3 * n * count + 8, 1);
    int32_t* b = buf.data();
    expectError(
        kIA, "overlap", [&] { comm.allReduce(b, b + 1, count, i32, ReduceOp::kSum); },
        "allReduce +1");
    expectError(
        kIA, "overlap", [&] { comm.allReduce(b + 3, b, count, i32, ReduceOp::kSum); },
        "allReduce -3");
    expectError(
        kIA, "overlap", [&] { comm.allGather(b + me * count + 1, b, count, i32); },
        "allGather not at rank * count");
    expectError(
        kIA, "overlap",
        [&] { comm.reduceScatter(b, b + me * count + 1, count, i32, ReduceOp::kSum); },
        "reduceScatter not at rank * count");
    expectError(
        kIA, "overlap", [&] { comm.allToAll(b, b + 1, count, i32); }, "allToAll");
    // The exact in-place forms are fine.
    std::vector<int32_t> inplace(n * count, me + 1);
    comm.allGather(inplace.data() + me * count, inplace.data(), count, i32);
    for (int q = 0; q < n; ++q) EXPECT_EQ(inplace[q * count + count - 1], q + 1);
    std::vector<int32_t> rs(n * count, 1);
    comm.reduceScatter(rs.data(), rs.data() + me * count, count, i32, ReduceOp::kSum);
    EXPECT_EQ(rs[me * count], n);
    expectStillUsable(comm);
  });
}

TEST_P(MultirankBadInput, UnknownAlgorithmAndBadAllToAllvSpans) {
  const int n = GetParam();
  runRanks(n, [&](Communicator& comm) {
    const auto kIA = ErrorCode::kInvalidArgument;
    std::vector<float> a(4 * n, 1), b(4 * n, 0);
    const CallOptions bogus{"no_such_algorithm"};
    expectError(
        kIA, "no_such_algorithm",
        [&] { comm.allReduce(a.data(), b.data(), 4, DataType::kFloat32, ReduceOp::kSum, bogus); },
        "allReduce algorithm");
    expectError(
        kIA, "no_such_algorithm",
        [&] { comm.broadcast(a.data(), b.data(), 4, DataType::kFloat32, 0, bogus); },
        "broadcast algorithm");
    expectError(
        kIA, "no_such_algorithm",
        [&] { comm.allGather(a.data(), b.data(), 1, DataType::kFloat32, bogus); },
        "allGather algorithm");

    std::vector<size_t> ones(n, 1), displs(n), shortSpan(n + 1, 0);
    for (int q = 0; q < n; ++q) displs[q] = q;
    const std::span<const size_t> good(ones), goodDispls(displs);
    const std::span<const size_t> tooShort(shortSpan.data(), n - 1);
    const std::span<const size_t> tooLong(shortSpan.data(), n + 1);
    const auto f32 = DataType::kFloat32;
    expectError(
        kIA, "sendCounts",
        [&] { comm.allToAllv(a.data(), tooShort, goodDispls, b.data(), good, goodDispls, f32); },
        "sendCounts short");
    expectError(
        kIA, "sendDispls",
        [&] { comm.allToAllv(a.data(), good, tooLong, b.data(), good, goodDispls, f32); },
        "sendDispls long");
    expectError(
        kIA, "recvCounts",
        [&] { comm.allToAllv(a.data(), good, goodDispls, b.data(), tooLong, goodDispls, f32); },
        "recvCounts long");
    expectError(
        kIA, "recvDispls",
        [&] { comm.allToAllv(a.data(), good, goodDispls, b.data(), good, tooShort, f32); },
        "recvDispls short");
    // The correct call works.
    for (int q = 0; q < n; ++q) a[q] = static_cast<float>(comm.rank() * 100 + q);
    comm.allToAllv(a.data(), good, goodDispls, b.data(), good, goodDispls, f32);
    for (int q = 0; q < n; ++q) EXPECT_EQ(b[q], static_cast<float>(q * 100 + comm.rank()));
    expectStillUsable(comm);
  });
}

TEST_P(MultirankBadInput, CallsAfterAbortAreInvalidUsage) {
  const int n = GetParam();
  // Nobody aborts before every rank has finished the allreduce before it (an abort fails the
  // peers' operations still in flight, by design).
  std::barrier allDone(n);
  runRanks(n, [&](Communicator& comm) {
    expectStillUsable(comm);
    allDone.arrive_and_wait();
    comm.abort();
    std::vector<float> a(4 * n, 1), b(4 * n, 0);
    const auto kIU = ErrorCode::kInvalidUsage;
    expectError(
        kIU, "abort",
        [&] { comm.allReduce(a.data(), b.data(), 4, DataType::kFloat32, ReduceOp::kSum); },
        "allReduce after abort");
    expectError(
        kIU, "abort", [&] { comm.barrier(); }, "barrier after abort");
    expectError(
        kIU, "abort",
        [&] {
          Request r = comm.broadcastAsync(a.data(), b.data(), 4, DataType::kFloat32, 0);
          r.wait();
        },
        "broadcastAsync after abort");
    if (n > 1) {
      expectError(
          kIU, "abort", [&] { comm.send(a.data(), 1, DataType::kFloat32, (comm.rank() + 1) % n); },
          "send after abort");
    }
    // Aborting twice is harmless.
    comm.abort();
  });
}

INSTANTIATE_TEST_SUITE_P(RankCounts, MultirankBadInput, ::testing::ValuesIn(kRankCounts),
                         rankCountName);

}  // namespace
}  // namespace grove::mr
