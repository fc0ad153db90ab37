// Correctness of the data-movement collectives (broadcast, allGather, allToAll, allToAllv,
// gather, scatter, barrier) on in-process ranks, over every type, every algorithm that
// applies, rank counts 1..8, counts 0, 1, a prime and a non-divisible size, out of place and
// in place (NCCL's forms).
//
// Why: data movement is a matter of offsets — block q of rank p must land at the right place
// on the right rank, no byte beyond the caller's buffers may be touched — so inputs are a
// byte pattern that differs per rank and per position (any misplaced byte shows), receive
// buffers start out as a fill byte (an unwritten element shows) and carry guard bytes.
#include <atomic>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

enum class Kind { kBroadcast, kAllGather, kAllToAll, kGather, kScatter };

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAllGather:
      return "allGather";
    case Kind::kAllToAll:
      return "allToAll";
    case Kind::kGather:
      return "gather";
    case Kind::kScatter:
      return "scatter";
  }
  return "?";
}

plan::Collective collectiveOf(Kind kind) {
  switch (kind) {
    case Kind::kBroadcast:
      return plan::Collective::kBroadcast;
    case Kind::kAllGather:
      return plan::Collective::kAllGather;
    case Kind::kAllToAll:
      return plan::Collective::kAllToAll;
    case Kind::kGather:
      return plan::Collective::kGather;
    case Kind::kScatter:
      return plan::Collective::kScatter;
  }
  return plan::Collective::kBroadcast;
}

bool hasRoot(Kind kind) {
  return kind == Kind::kBroadcast || kind == Kind::kGather || kind == Kind::kScatter;
}

// Every kind has an in-place form (NCCL's): sendbuf == recvbuf for broadcast and allToAll,
// sendbuf == recvbuf + rank * count for allGather, and on the root sendbuf == recvbuf + root *
// count for gather, recvbuf == sendbuf + root * count for scatter.
bool hasInPlace(Kind) { return true; }

struct Case {
  Kind kind = Kind::kBroadcast;
  DataType type = DataType::kFloat32;
  size_t count = 0;
  std::string algorithm;
  bool inPlace = false;
  int root = -1;
  uint32_t salt = 0;
  std::string what;
};

std::vector<Case> makeCases(Kind kind, int nranks) {
  std::vector<Case> cases;
  auto add = [&](DataType type, size_t count) {
    const int root = hasRoot(kind) ? static_cast<int>((cases.size() / 2 + 1) % nranks) : -1;
    for (const auto& algorithm :
         algorithmsFor(collectiveOf(kind), shape(nranks, count, type, ReduceOp::kSum, root))) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !hasInPlace(kind)) continue;
        Case c{kind, type, count, algorithm, inPlace, root, static_cast<uint32_t>(cases.size())};
        c.what = label(kindName(kind), type, count, algorithm, inPlace, nranks,
                       root >= 0 ? "root=" + std::to_string(root) : "");
        cases.push_back(std::move(c));
      }
    }
  };
  for (DataType type : allTypes()) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}}) add(type, count);
  }
  for (DataType type : {DataType::kFloat32, DataType::kInt32}) {
    for (size_t count : {size_t{1021}, size_t{1000} * nranks + 3}) add(type, count);
  }
  return cases;
}

// Runs one case on one rank and checks it against the pattern; returns the output bytes
// (empty where the rank receives nothing).
std::vector<std::byte> runCase(Communicator& comm, const Case& c) {
  const int me = comm.rank();
  const int n = comm.size();
  const size_t block = c.count * dataTypeSize(c.type);  // bytes of one rank's block
  const bool isRoot = me == c.root;
  size_t sendBytes = block;
  size_t recvBytes = block;
  switch (c.kind) {
    case Kind::kBroadcast:
      break;
    case Kind::kAllGather:
      recvBytes = n * block;
      break;
    case Kind::kAllToAll:
      sendBytes = recvBytes = n * block;
      break;
    case Kind::kGather:
      recvBytes = isRoot ? n * block : 0;
      break;
    case Kind::kScatter:
      sendBytes = isRoot ? n * block : 0;
      break;
  }
  GuardedBuffer send(sendBytes);
  fillPattern(send.data(), sendBytes, me, 0, c.salt);
  const auto input = send.bytes();
  GuardedBuffer recv(recvBytes);
  std::byte* sendPtr = send.data();
  std::byte* recvPtr = recv.data();
  if (c.inPlace) {
    switch (c.kind) {
      case Kind::kAllGather:  // sendbuf == recvbuf + rank * count
        fillPattern(recv.data() + me * block, block, me, 0, c.salt);
        sendPtr = recv.data() + me * block;
        break;
      case Kind::kGather:  // on the root: sendbuf == recvbuf + root * count
        if (isRoot) {
          fillPattern(recv.data() + me * block, block, me, 0, c.salt);
          sendPtr = recv.data() + me * block;
        }
        break;
      case Kind::kScatter:  // on the root: recvbuf == sendbuf + root * count
        if (isRoot) recvPtr = send.data() + me * block;
        break;
      default:  // sendbuf == recvbuf
        fillPattern(recv.data(), recvBytes, me, 0, c.salt);
        sendPtr = recv.data();
        break;
    }
  }
  if (c.kind == Kind::kGather && !isRoot && me % 2 == 0) recvPtr = nullptr;

  const CallOptions options{c.algorithm};
  try {
    switch (c.kind) {
      case Kind::kBroadcast:
        comm.broadcast(sendPtr, recvPtr, c.count, c.type, c.root, options);
        break;
      case Kind::kAllGather:
        comm.allGather(sendPtr, recvPtr, c.count, c.type, options);
        break;
      case Kind::kAllToAll:
        comm.allToAll(sendPtr, recvPtr, c.count, c.type, options);
        break;
      case Kind::kGather:
        comm.gather(sendPtr, recvPtr, c.count, c.type, c.root, options);
        break;
      case Kind::kScatter:
        comm.scatter(sendPtr, recvPtr, c.count, c.type, c.root, options);
        break;
    }
  } catch (const Error& e) {
    throw Error(e.code(), c.what + ": " + e.what());
  }

  EXPECT_TRUE(send.guardsIntact()) << c.what << ": bytes written around the send buffer";
  EXPECT_TRUE(recv.guardsIntact()) << c.what << ": bytes written around the receive buffer";
  if (!c.inPlace || c.kind == Kind::kScatter) {
    EXPECT_TRUE(send.bytes() == input) << c.what << ": send buffer modified";
  }

  std::vector<std::byte> expected(recvBytes);
  switch (c.kind) {
    case Kind::kBroadcast:
      fillPattern(expected.data(), block, c.root, 0, c.salt);
      break;
    case Kind::kAllGather:
    case Kind::kGather:
      for (int q = 0; q < n && recvBytes > 0; ++q) {
        fillPattern(expected.data() + q * block, block, q, 0, c.salt);
      }
      break;
    case Kind::kAllToAll:
      for (int q = 0; q < n; ++q)
        fillPattern(expected.data() + q * block, block, q, me * block, c.salt);
      break;
    case Kind::kScatter:
      fillPattern(expected.data(), block, c.root, me * block, c.salt);
      break;
  }
  if (recvPtr == nullptr || recvBytes == 0) return {};
  std::vector<std::byte> got(recvPtr, recvPtr + recvBytes);
  if (got != expected) {
    size_t i = 0;
    while (got[i] == expected[i]) ++i;
    ADD_FAILURE() << c.what << ": byte " << i << " of " << recvBytes << " (block "
                  << (block ? i / block : 0) << ") is " << static_cast<int>(got[i]) << ", expected "
                  << static_cast<int>(expected[i]);
  }
  return got;
}

void runSweep(Kind kind, int nranks) {
  const auto cases = makeCases(kind, nranks);
  std::vector<std::vector<std::vector<std::byte>>> outputs(
      cases.size(), std::vector<std::vector<std::byte>>(nranks));
  runRanks(nranks, [&](Communicator& comm) {
    for (size_t i = 0; i < cases.size(); ++i) outputs[i][comm.rank()] = runCase(comm, cases[i]);
  });
  if (kind != Kind::kBroadcast && kind != Kind::kAllGather) return;
  for (size_t i = 0; i < cases.size(); ++i) {
    for (int r = 1; r < nranks; ++r) {
      EXPECT_TRUE(outputs[i][r] == outputs[i][0])
          << cases[i].what << ": rank " << r << " differs from rank 0";
    }
  }
}

class MultirankCollectives : public ::testing::TestWithParam<int> {};

TEST_P(MultirankCollectives, Broadcast) { runSweep(Kind::kBroadcast, GetParam()); }
TEST_P(MultirankCollectives, AllGather) { runSweep(Kind::kAllGather, GetParam()); }
TEST_P(MultirankCollectives, AllToAll) { runSweep(Kind::kAllToAll, GetParam()); }
TEST_P(MultirankCollectives, Gather) { runSweep(Kind::kGather, GetParam()); }
TEST_P(MultirankCollectives, Scatter) { runSweep(Kind::kScatter, GetParam()); }

// allToAllv with irregular counts (some zero) and displacements that leave gaps and, in the
// second layout, place the peers' blocks in reverse order.
TEST_P(MultirankCollectives, AllToAllvIrregular) {
  const int n = GetParam();
  // Elements rank p sends to rank q.
  auto amount = [](int p, int q, size_t scale) -> size_t {
    if ((p * 3 + q * 5) % 4 == 1) return 0;
    return static_cast<size_t>(p + 2 * q + 1) * scale + static_cast<size_t>((p * q) % 3);
  };
  struct Layout {
    std::vector<size_t> counts, displs;
    size_t total = 0;
  };
  // Gaps of (q % 3) elements between blocks; reversed: peer n-1 first.
  auto layout = [n](const std::vector<size_t>& counts, bool reversed) {
    Layout l{counts, std::vector<size_t>(n), 0};
    for (int k = 0; k < n; ++k) {
      const int q = reversed ? n - 1 - k : k;
      l.total += static_cast<size_t>(q % 3);
      l.displs[q] = l.total;
      l.total += counts[q];
    }
    l.total += 2;
    return l;
  };
  std::vector<std::string> algorithms =
      algorithmsFor(plan::Collective::kAllToAllv, shape(n, 1, DataType::kFloat32));
  runRanks(n, [&](Communicator& comm) {
    const int me = comm.rank();
    uint32_t salt = 1000;
    for (DataType type : allTypes()) {
      const size_t esize = dataTypeSize(type);
      for (size_t scale : {size_t{0}, size_t{1}, size_t{37}}) {
        for (bool reversed : {false, true}) {
          for (const auto& algorithm : algorithms) {
            ++salt;
            std::vector<size_t> sendCounts(n), recvCounts(n);
            for (int q = 0; q < n; ++q) {
              sendCounts[q] = amount(me, q, scale);
              recvCounts[q] = amount(q, me, scale);
            }
            const Layout sendLayout = layout(sendCounts, reversed);
            const Layout recvLayout = layout(recvCounts, !reversed);
            const std::string what = label(
                "allToAllv", type, scale, algorithm, false, n,
                std::string("scale=") + std::to_string(scale) + (reversed ? " reversed" : ""));
            GuardedBuffer send(sendLayout.total * esize);
            fillPattern(send.data(), send.size(), me, 0, salt);
            const auto input = send.bytes();
            GuardedBuffer recv(recvLayout.total * esize);
            try {
              comm.allToAllv(send.data(), sendLayout.counts, sendLayout.displs, recv.data(),
                             recvLayout.counts, recvLayout.displs, type, {algorithm});
            } catch (const Error& e) {
              throw Error(e.code(), what + ": " + e.what());
            }
            EXPECT_TRUE(send.guardsIntact()) << what;
            EXPECT_TRUE(recv.guardsIntact()) << what;
            EXPECT_TRUE(send.bytes() == input) << what << ": send buffer modified";
            // Expected: the fill byte in every gap, rank q's block for me at recvDispls[q].
            std::vector<std::byte> expected = GuardedBuffer(recv.size()).bytes();
            for (int q = 0; q < n; ++q) {
              // Where rank q put my block: recompute q's send layout.
              std::vector<size_t> qCounts(n);
              for (int t = 0; t < n; ++t) qCounts[t] = amount(q, t, scale);
              const Layout qLayout = layout(qCounts, reversed);
              fillPattern(expected.data() + recvLayout.displs[q] * esize,
                          recvLayout.counts[q] * esize, q, qLayout.displs[me] * esize, salt);
            }
            EXPECT_TRUE(recv.bytes() == expected) << what;
          }
        }
      }
    }
  });
}

// Nobody leaves barrier k before everybody has entered it, many times in a row.
TEST_P(MultirankCollectives, BarrierOrdersPhases) {
  const int n = GetParam();
  constexpr int kRounds = 20;
  std::atomic<int> arrived{0};
  runRanks(n, [&](Communicator& comm) {
    for (int k = 0; k < kRounds; ++k) {
      arrived.fetch_add(1);
      comm.barrier();
      EXPECT_GE(arrived.load(), (k + 1) * n) << "left barrier " << k << " early";
    }
  });
  EXPECT_EQ(arrived.load(), kRounds * n);
}

INSTANTIATE_TEST_SUITE_P(RankCounts, MultirankCollectives, ::testing::ValuesIn(kRankCounts),
                         rankCountName);

}  // namespace
}  // namespace grove::mr
