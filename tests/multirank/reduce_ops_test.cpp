// Correctness of the reducing collectives (allReduce, reduce, reduceScatter) on in-process
// ranks: every type × every operator × every algorithm that applies × rank counts 1..8 ×
// counts 0, 1, a prime and a non-divisible size, out of place and in place.
//
// Why this shape: the reducing collectives are where plans differ most between algorithms
// (which rank reduces which chunk in which order) and where a wrong chunk boundary, a
// forgotten finalize or a double-counted contribution shows. Inputs are small integers (and
// products of 1s and 2s) so that the exact result is known in every type including fp16 and
// bf16: any difference is a bug, not rounding. Every output is compared with the scalar
// reference and with every other rank's output byte for byte, and the 64 guard bytes around
// every buffer must survive.
#include <cmath>
#include <limits>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

enum class Kind { kAllReduce, kReduce, kReduceScatter };

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "allReduce";
    case Kind::kReduce:
      return "reduce";
    case Kind::kReduceScatter:
      return "reduceScatter";
  }
  return "?";
}

plan::Collective collectiveOf(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return plan::Collective::kAllReduce;
    case Kind::kReduce:
      return plan::Collective::kReduce;
    case Kind::kReduceScatter:
      return plan::Collective::kReduceScatter;
  }
  return plan::Collective::kAllReduce;
}

struct Case {
  Kind kind = Kind::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;
  std::string algorithm;
  bool inPlace = false;
  int root = -1;
  std::vector<std::byte> expected;  // count elements; reduceScatter: nranks * count
  std::string what;
};

std::vector<Case> makeCases(Kind kind, int nranks) {
  std::vector<Case> cases;
  auto add = [&](DataType type, ReduceOp op, size_t count) {
    const int root = kind == Kind::kReduce ? static_cast<int>(cases.size() % nranks) : -1;
    const size_t total = kind == Kind::kReduceScatter ? nranks * count : count;
    const auto expected = expectedReduction(type, op, nranks, total);
    for (const auto& algorithm :
         algorithmsFor(collectiveOf(kind), shape(nranks, count, type, op, root))) {
      for (bool inPlace : {false, true}) {
        Case c{kind, type, op, count, algorithm, inPlace, root, expected};
        c.what = label(
            kindName(kind), type, count, algorithm, inPlace, nranks,
            "op=" + std::string(toString(op)) + (root >= 0 ? " root=" + std::to_string(root) : ""));
        cases.push_back(std::move(c));
      }
    }
  };
  for (DataType type : allTypes()) {
    for (ReduceOp op : allOps()) {
      if (!acceptsOp(type, op)) continue;  // bitwise ops on floats: refused, see below
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}}) add(type, op, count);
    }
  }
  for (DataType type : {DataType::kFloat32, DataType::kInt32}) {
    for (ReduceOp op : allOps()) {
      if (!acceptsOp(type, op)) continue;
      for (size_t count : {size_t{1021}, size_t{1000} * nranks + 3}) add(type, op, count);
    }
  }
  return cases;
}

// Runs one case on one rank, checks it and returns this rank's output (empty when the rank
// writes none).
std::vector<std::byte> runCase(Communicator& comm, const Case& c) {
  const int me = comm.rank();
  const int n = comm.size();
  const size_t esize = dataTypeSize(c.type);
  const size_t sendCount = c.kind == Kind::kReduceScatter ? n * c.count : c.count;
  GuardedBuffer send(sendCount * esize);
  fillReductionInput(send.data(), sendCount, c.type, c.op, me);
  const std::vector<std::byte> input = send.bytes();
  GuardedBuffer recv(c.count * esize);
  const bool writes = c.kind != Kind::kReduce || me == c.root;

  std::byte* recvPtr = recv.data();
  if (c.inPlace) {
    recvPtr = send.data() + (c.kind == Kind::kReduceScatter ? me * c.count * esize : 0);
  } else if (!writes && (c.root + me) % 2 == 0) {
    recvPtr = nullptr;  // non-root ranks may pass no receive buffer
  }
  const CallOptions options{c.algorithm};
  try {
    switch (c.kind) {
      case Kind::kAllReduce:
        comm.allReduce(send.data(), recvPtr, c.count, c.type, c.op, options);
        break;
      case Kind::kReduce:
        comm.reduce(send.data(), recvPtr, c.count, c.type, c.op, c.root, options);
        break;
      case Kind::kReduceScatter:
        comm.reduceScatter(send.data(), recvPtr, c.count, c.type, c.op, options);
        break;
    }
  } catch (const Error& e) {
    throw Error(e.code(), c.what + ": " + e.what());
  }

  EXPECT_TRUE(send.guardsIntact()) << c.what << ": bytes written around the send buffer";
  EXPECT_TRUE(recv.guardsIntact()) << c.what << ": bytes written around the receive buffer";
  const size_t blockOffset = c.kind == Kind::kReduceScatter ? me * c.count * esize : 0;
  if (!c.inPlace) {
    EXPECT_TRUE(send.bytes() == input) << c.what << ": the send buffer was modified";
  } else {
    // Everything of the send buffer outside the in-place output keeps its input.
    // (memcmp of zero bytes still wants valid pointers, which empty buffers do not have)
    EXPECT_TRUE(blockOffset == 0 || std::memcmp(send.data(), input.data(), blockOffset) == 0)
        << c.what << ": send buffer changed before the in-place block";
    const size_t after = blockOffset + c.count * esize;
    EXPECT_TRUE(after >= input.size() ||
                std::memcmp(send.data() + after, input.data() + after, input.size() - after) == 0)
        << c.what << ": send buffer changed after the in-place block";
  }
  if (!writes) {
    if (c.inPlace) {
      EXPECT_TRUE(send.bytes() == input) << c.what << ": non-root in-place buffer was written";
    } else if (recvPtr != nullptr) {
      EXPECT_TRUE(recv.bytes() == GuardedBuffer(c.count * esize).bytes())
          << c.what << ": non-root receive buffer was written";
    }
    return {};
  }
  const std::byte* expected = c.expected.data() + blockOffset;
  EXPECT_EQ(describeDifference(recvPtr, expected, c.count, c.type), "") << c.what;
  return {recvPtr, recvPtr + c.count * esize};
}

void runSweep(Kind kind, int nranks) {
  const auto cases = makeCases(kind, nranks);
  std::vector<std::vector<std::vector<std::byte>>> outputs(
      cases.size(), std::vector<std::vector<std::byte>>(nranks));
  runRanks(nranks, [&](Communicator& comm) {
    for (size_t i = 0; i < cases.size(); ++i) outputs[i][comm.rank()] = runCase(comm, cases[i]);
  });
  // allReduce: every rank holds the same bytes. (reduce and reduceScatter outputs differ by
  // rank by design and were each compared with the reference above.)
  if (kind != Kind::kAllReduce) return;
  for (size_t i = 0; i < cases.size(); ++i) {
    for (int r = 1; r < nranks; ++r) {
      EXPECT_TRUE(outputs[i][r] == outputs[i][0])
          << cases[i].what << ": rank " << r << " differs from rank 0";
    }
  }
}

class MultirankReduceOps : public ::testing::TestWithParam<int> {};

TEST_P(MultirankReduceOps, AllReduceEveryTypeOpAlgorithm) {
  runSweep(Kind::kAllReduce, GetParam());
}

TEST_P(MultirankReduceOps, ReduceEveryTypeOpAlgorithmRoot) { runSweep(Kind::kReduce, GetParam()); }

TEST_P(MultirankReduceOps, ReduceScatterEveryTypeOpAlgorithm) {
  runSweep(Kind::kReduceScatter, GetParam());
}

INSTANTIATE_TEST_SUITE_P(RankCounts, MultirankReduceOps, ::testing::ValuesIn(kRankCounts),
                         rankCountName);

// One large allreduce (1 Mi + 5 elements, so that many tiles pipeline and the last one is
// partial) per algorithm, on a power-of-two and an odd rank count.
TEST(MultirankReduceOpsLarge, AllReduceManyTilesEveryAlgorithm) {
  const size_t count = (size_t{1} << 20) + 5;
  for (int n : {3, 4}) {
    const auto expected = expectedReduction(DataType::kFloat32, ReduceOp::kSum, n, count);
    const auto algorithms = algorithmsFor(plan::Collective::kAllReduce,
                                          shape(n, count, DataType::kFloat32, ReduceOp::kSum));
    std::vector<std::vector<std::byte>> outputs(n);
    runRanks(n, [&](Communicator& comm) {
      for (const auto& algorithm : algorithms) {
        const std::string what =
            label("allReduce", DataType::kFloat32, count, algorithm, false, n, "op=sum");
        GuardedBuffer send(count * 4);
        GuardedBuffer recv(count * 4);
        fillReductionInput(send.data(), count, DataType::kFloat32, ReduceOp::kSum, comm.rank());
        comm.allReduce(send.data(), recv.data(), count, DataType::kFloat32, ReduceOp::kSum,
                       {algorithm});
        EXPECT_TRUE(recv.guardsIntact()) << what;
        EXPECT_EQ(describeDifference(recv.data(), expected.data(), count, DataType::kFloat32), "")
            << what;
        // In place on the result: a second allreduce multiplies every element by n.
        comm.allReduce(recv.data(), recv.data(), count, DataType::kFloat32, ReduceOp::kSum,
                       {algorithm});
        EXPECT_TRUE(recv.guardsIntact()) << what;
        const auto* out = reinterpret_cast<const float*>(recv.data());
        const auto* want = reinterpret_cast<const float*>(expected.data());
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) wrong += out[i] != want[i] * static_cast<float>(n);
        EXPECT_EQ(wrong, 0u) << what << " (second, in-place call)";
        outputs[comm.rank()] = recv.bytes();
      }
    });
    for (int r = 1; r < n; ++r) EXPECT_TRUE(outputs[r] == outputs[0]) << "rank " << r;
  }
}

// min and max propagate NaN (PyTorch's rule); the other elements stay exact.
TEST(MultirankReduceOpsNaN, MinMaxPropagateNaN) {
  const size_t count = 7;
  for (int n : {2, 3, 4}) {
    for (DataType type :
         {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
      for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
        const auto expected = expectedReduction(type, op, n, count);
        const size_t esize = dataTypeSize(type);
        for (const auto& algorithm :
             algorithmsFor(plan::Collective::kAllReduce, shape(n, count, type, op))) {
          const std::string what = label("allReduce", type, count, algorithm, false, n,
                                         "op=" + std::string(toString(op)) + " with NaN");
          std::vector<std::vector<std::byte>> outputs(n);
          runRanks(n, [&](Communicator& comm) {
            const int me = comm.rank();
            GuardedBuffer send(count * esize);
            GuardedBuffer recv(count * esize);
            fillReductionInput(send.data(), count, type, op, me);
            const double nan = std::numeric_limits<double>::quiet_NaN();
            if (me == 1) test::storeElement(send.data(), 2, type, nan);
            if (me == n - 1) test::storeElement(send.data(), 5, type, nan);
            if (me == 0) test::storeElement(send.data(), 0, type, nan);
            comm.allReduce(send.data(), recv.data(), count, type, op, {algorithm});
            EXPECT_TRUE(recv.guardsIntact()) << what;
            for (size_t i = 0; i < count; ++i) {
              const double got = test::loadElement(recv.data(), i, type);
              if (i == 0 || i == 2 || i == 5) {
                EXPECT_TRUE(std::isnan(got)) << what << ": element " << i << " is " << got;
              } else {
                EXPECT_EQ(got, test::loadElement(expected.data(), i, type))
                    << what << ": element " << i;
              }
            }
            outputs[me] = recv.bytes();
          });
          for (int r = 1; r < n; ++r) EXPECT_TRUE(outputs[r] == outputs[0]) << what;
        }
        // reduce to the last rank as well
        runRanks(n, [&](Communicator& comm) {
          const int me = comm.rank();
          GuardedBuffer send(count * esize);
          GuardedBuffer recv(count * esize);
          fillReductionInput(send.data(), count, type, op, me);
          if (me == 0) test::storeElement(send.data(), 3, type, std::nan(""));
          comm.reduce(send.data(), me == n - 1 ? recv.data() : nullptr, count, type, op, n - 1);
          if (me == n - 1) {
            EXPECT_TRUE(std::isnan(test::loadElement(recv.data(), 3, type)))
                << "reduce " << toString(type) << " " << toString(op) << " n=" << n;
          }
        });
      }
    }
  }
}

// avg of integers divides with truncation toward zero (C's rule), not flooring.
TEST(MultirankReduceOpsAvg, IntegerAvgTruncatesTowardZero) {
  const int n = 3;
  // Per element: the three ranks' inputs and the expected average.
  struct Column {
    int64_t inputs[3];
    int64_t average;
  };
  const std::vector<Column> signedColumns = {{{-1, -1, 0}, 0},   {{5, 0, 0}, 1}, {{-5, 0, 0}, -1},
                                             {{-2, -2, -2}, -2}, {{7, 1, 0}, 2}, {{-7, -1, 0}, -2},
                                             {{1, 1, 0}, 0},     {{-4, 2, 0}, 0}};
  const std::vector<Column> unsignedColumns = {{{7, 0, 0}, 2}, {{2, 0, 0}, 0}, {{9, 9, 8}, 8}};
  for (DataType type : {DataType::kInt8, DataType::kInt32, DataType::kInt64, DataType::kUint8,
                        DataType::kUint32, DataType::kUint64}) {
    const auto& columns = isSigned(type) ? signedColumns : unsignedColumns;
    const size_t count = columns.size();
    const size_t esize = dataTypeSize(type);
    for (const auto& algorithm :
         algorithmsFor(plan::Collective::kAllReduce, shape(n, count, type, ReduceOp::kAvg))) {
      runRanks(n, [&](Communicator& comm) {
        GuardedBuffer send(count * esize);
        GuardedBuffer recv(count * esize);
        for (size_t i = 0; i < count; ++i) {
          test::storeElement(send.data(), i, type,
                             static_cast<double>(columns[i].inputs[comm.rank()]));
        }
        comm.allReduce(send.data(), recv.data(), count, type, ReduceOp::kAvg, {algorithm});
        for (size_t i = 0; i < count; ++i) {
          EXPECT_EQ(test::loadElement(recv.data(), i, type),
                    static_cast<double>(columns[i].average))
              << "type " << toString(type) << " algo '" << algorithm << "' element " << i;
        }
        EXPECT_TRUE(recv.guardsIntact());
      });
    }
  }
}

// Bitwise operators need an integer type: on a floating type every rank's call is refused
// before anything moves, naming the op and the type, and the communicator stays usable.
TEST(ReduceOps, BitwiseOnFloatIsRefusedOnEveryRank) {
  runRanks(3, [](Communicator& comm) {
    float x[2] = {1.0f, 2.0f};
    try {
      comm.allReduce(x, x, 2, DataType::kFloat32, ReduceOp::kBxor);
      ADD_FAILURE() << "bxor on float32 was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("op bxor needs an integer type"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(comm.rank())),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(x[0], 1.0f);
    uint32_t bits = 1u << comm.rank();
    comm.allReduce(&bits, &bits, 1, DataType::kUint32, ReduceOp::kBor);
    EXPECT_EQ(bits, 7u);
  });
}

}  // namespace
}  // namespace grove::mr
