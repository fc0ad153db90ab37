// Integrity: every rank receives bit-identical results, whatever the algorithm.
//
// Why: a data-parallel job keeps one model replicated on every rank; if an allreduce hands
// rank 3 a gradient that differs from rank 0's in the last bit, the replicas drift apart and
// the divergence surfaces hours later as a loss that is not reproducible. Floating-point
// addition is commutative but not associative, so an algorithm is bit-identical only when
// every rank evaluates the same expression tree. The other reduction tests use small
// integers, whose sums are exact in any order and so cannot see this; here the inputs mix
// magnitudes (≈10, ≈1 and ≈0.1 on ranks r % 3 = 1, 0, 2, with full-mantissa fractions) so
// that the rounding depends on the order of the additions — a first test proves it does
// (the inputs and the value check: tests/support/integrity.hpp, shared with
// integrity_topology_test.cpp).
//
// Every registered algorithm that applies without a topology, for allReduce, reduce followed
// by broadcast, and reduceScatter; rank counts 1..8; float16, bfloat16, float32, float64;
// every operator; counts 1, 7 and 5003 (not divisible by any rank count > 1, and several
// tiles: the communicators run with GROVE_SLOT_BYTES=4096), in place and out of place.
// Checks: outputs byte-identical across ranks (allReduce, reduce+broadcast); in place
// byte-identical to out of place; the same call repeated gives the same bytes; every result
// within the rounding bound of the exact value (min/max: exactly the reference's bytes,
// signed zeros included); guard bytes intact.
#include "support/integrity.hpp"

#include <algorithm>
#include <cstring>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

constexpr size_t kLargeCount = 5003;
constexpr const char* kSlotBytes = "4096";

const std::vector<DataType> kFloatTypes = {DataType::kFloat16, DataType::kBFloat16,
                                           DataType::kFloat32, DataType::kFloat64};

enum class Kind { kAllReduce, kReduceBroadcast, kReduceScatter };

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "allReduce";
    case Kind::kReduceBroadcast:
      return "reduce+broadcast";
    case Kind::kReduceScatter:
      return "reduceScatter";
  }
  return "?";
}

struct Case {
  Kind kind = Kind::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;
  std::string algorithm;  // reduce+broadcast: the reduce's; the broadcast uses the same name
  std::string broadcastAlgorithm;
  bool inPlace = false;
  int root = -1;
  std::string what;
};

std::vector<Case> makeCases(int n) {
  std::vector<Case> cases;
  for (Kind kind : {Kind::kAllReduce, Kind::kReduceBroadcast, Kind::kReduceScatter}) {
    for (DataType type : kFloatTypes) {
      for (ReduceOp op : allOps()) {
        if (!acceptsOp(type, op)) continue;
        for (size_t count : {size_t{1}, size_t{7}, kLargeCount}) {
          const int root = static_cast<int>(cases.size() / 2 % static_cast<size_t>(n));
          const auto request = shape(n, count, type, op, kind == Kind::kAllReduce ? -1 : root);
          std::vector<std::string> names;
          switch (kind) {
            case Kind::kAllReduce:
              names = algorithmsFor(plan::Collective::kAllReduce, request);
              break;
            case Kind::kReduceBroadcast:
              names = algorithmsFor(plan::Collective::kReduce, request);
              break;
            case Kind::kReduceScatter:
              names = algorithmsFor(plan::Collective::kReduceScatter, request);
              break;
          }
          const auto broadcasts = algorithmsFor(plan::Collective::kBroadcast, request);
          for (const auto& name : names) {
            std::string broadcast;
            if (kind == Kind::kReduceBroadcast &&
                std::find(broadcasts.begin(), broadcasts.end(), name) != broadcasts.end()) {
              broadcast = name;
            }
            for (bool inPlace : {false, true}) {
              Case c{kind, type, op, count, name, broadcast, inPlace, root, ""};
              c.what = label(
                  kindName(kind), type, count, name, inPlace, n,
                  "op=" + std::string(toString(op)) +
                      (kind == Kind::kReduceBroadcast ? " root=" + std::to_string(root) : ""));
              cases.push_back(std::move(c));
            }
          }
        }
      }
    }
  }
  return cases;
}

/// Runs one case on one rank; returns the rank's result bytes.
std::vector<std::byte> runCase(Communicator& comm, const Case& c) {
  const int me = comm.rank();
  const int n = comm.size();
  const size_t block = c.count * dataTypeSize(c.type);
  const bool scatter = c.kind == Kind::kReduceScatter;
  const size_t sendBytes = scatter ? n * block : block;
  std::vector<std::byte> input = scatter ? makeIntegrityInput(c.type, c.op, me, n * c.count)
                                         : makeIntegrityInput(c.type, c.op, me, c.count);
  GuardedBuffer send(sendBytes);
  if (sendBytes > 0) std::memcpy(send.data(), input.data(), sendBytes);  // count 0: no data()
  GuardedBuffer recv(block);
  GuardedBuffer temp(block);  // reduce's output out of place
  std::byte* result = c.inPlace ? (scatter ? send.data() + me * block : send.data()) : recv.data();
  try {
    switch (c.kind) {
      case Kind::kAllReduce:
        comm.allReduce(send.data(), result, c.count, c.type, c.op, {c.algorithm});
        break;
      case Kind::kReduceBroadcast: {
        std::byte* reduced = c.inPlace ? send.data() : temp.data();
        comm.reduce(send.data(), reduced, c.count, c.type, c.op, c.root, {c.algorithm});
        comm.broadcast(reduced, result, c.count, c.type, c.root, {c.broadcastAlgorithm});
        break;
      }
      case Kind::kReduceScatter:
        comm.reduceScatter(send.data(), result, c.count, c.type, c.op, {c.algorithm});
        break;
    }
  } catch (const Error& e) {
    throw Error(e.code(), c.what + ": " + e.what());
  }
  expectBuffersIntact(c.what, c.inPlace, send, recv, temp, input);
  const std::string bad =
      checkIntegrityValues(result, c.type, c.op, n, c.count, scatter ? me * c.count : 0);
  EXPECT_EQ(bad, "") << c.what << " on rank " << me;
  return {result, result + block};
}

/// Runs every case on `n` ranks (twice, to see that repeating a call repeats its bytes) and
/// checks the cross-rank and in-place/out-of-place identities.
void runSweep(int n) {
  const auto cases = makeCases(n);
  // outputs[round][case][rank]
  std::vector<std::vector<std::vector<std::vector<std::byte>>>> outputs(
      2, std::vector<std::vector<std::vector<std::byte>>>(cases.size(),
                                                          std::vector<std::vector<std::byte>>(n)));
  auto comms = Communicator::createInProcess(n, Options().set("GROVE_SLOT_BYTES", kSlotBytes));
  runOnComms(comms, [&](Communicator& comm) {
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < cases.size(); ++i) {
        outputs[round][i][comm.rank()] = runCase(comm, cases[i]);
      }
    }
  });
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const auto& out = outputs[0][i];
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(outputs[1][i][r] == out[r]) << c.what << ": rank " << r << " differs on repeat";
    }
    if (c.kind != Kind::kReduceScatter) {
      for (int r = 1; r < n; ++r) {
        const std::string diff = describeDifference(out[r].data(), out[0].data(), c.count, c.type);
        EXPECT_EQ(diff, "") << c.what << ": rank " << r << " differs from rank 0";
      }
    }
    if (c.inPlace) {  // The out-of-place case of the same configuration came just before.
      ASSERT_FALSE(cases[i - 1].inPlace);
      for (int r = 0; r < n; ++r) {
        const std::string diff =
            describeDifference(out[r].data(), outputs[0][i - 1][r].data(), c.count, c.type);
        EXPECT_EQ(diff, "") << c.what << ": rank " << r << " in place differs from out of place";
      }
    }
  }
}

// The inputs have teeth: summing them in rank order and in reverse order gives different
// bytes in every type, so a test that finds all ranks identical has shown something.
TEST(IntegrityThreadsInputs, SumsDependOnTheOrderOfAdditions) {
  for (DataType type : kFloatTypes) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd}) {
      for (int n : {3, 8}) {
        const size_t bytes = kLargeCount * dataTypeSize(type);
        std::vector<std::byte> forward = makeIntegrityInput(type, op, 0, kLargeCount);
        std::vector<std::byte> backward = makeIntegrityInput(type, op, n - 1, kLargeCount);
        for (int r = 1; r < n; ++r) {
          const auto x = makeIntegrityInput(type, op, r, kLargeCount);
          const auto y = makeIntegrityInput(type, op, n - 1 - r, kLargeCount);
          test::referenceReduce(forward.data(), forward.data(), x.data(), kLargeCount, type, op);
          test::referenceReduce(backward.data(), backward.data(), y.data(), kLargeCount, type, op);
        }
        EXPECT_NE(std::memcmp(forward.data(), backward.data(), bytes), 0)
            << toString(type) << " " << toString(op) << " n=" << n;
      }
    }
  }
}

class IntegrityThreads : public ::testing::TestWithParam<int> {};

TEST_P(IntegrityThreads, EveryRankGetsTheSameBytes) { runSweep(GetParam()); }

INSTANTIATE_TEST_SUITE_P(RankCounts, IntegrityThreads, ::testing::Range(1, 9), rankCountName);

}  // namespace
}  // namespace grove::mr
