// Integrity of the topology-aware algorithms: every rank receives bit-identical results.
//
// Why: integrity_test.cpp proves bit-identity for every algorithm that runs without a
// topology; the topology-aware ones ("trees", "rsag_trees", "onehop", "hierarchical") only
// apply when GROVE_TOPO_FILE names one, so that sweep never sees them. They are the riskiest:
// many trees of unequal rates split every block into chunk runs, each reduced along its own
// tree, and one tree reducing a chunk in a different order on two ranks (or one rank
// finalizing avg twice) would hand replicas different gradients. Here each of them runs,
// forced by name, on presets where it applies, with the same order-sensitive inputs as
// integrity_test.cpp (tests/support/integrity.hpp: magnitudes ≈1, ≈10, ≈0.1 with full-mantissa
// fractions, so a different order of additions gives different bytes) for floating types and
// exact small integers for integer types.
//
// Checks per call: every rank's output byte-identical to rank 0's (allreduce, reduce followed
// by a broadcast of the root's result, broadcast, allgather); in place byte-identical to out of
// place; a large call repeated gives the same bytes; values within the rounding bound of the
// exact result (min/max and every integer type: exactly the bytes of tests/support/
// reference.hpp; broadcast/allgather: exactly the bytes sent; reducescatter: each rank's
// block, whose reduction has no replica to agree with); guard bytes intact; the send buffer
// untouched out of place. The value check is split across ranks (rank r checks slice r of a
// replicated output), which together with the cross-rank identity covers every element.
//
// Grid (sampled to stay within seconds; see sampled()): broadcast and allgather every type at
// every count; reductions every type × every operator at count 1009 (prime), every operator
// at counts 0 and 1 and at a large count (a prime just above 128 KiB of data, so that with
// 4096-byte slots the larger chunk runs span several tiles) with every floating type. The
// 3- to 6-rank presets run more of the grid than the two 8-rank ones. Everything in place and
// out of place; roots rotate over the ranks.
#include <cstring>

#include "multirank/harness.hpp"
#include "support/integrity.hpp"

namespace grove::mr {
namespace {

constexpr size_t kPrimeCount = 1009;

/// The large count of a type: a prime just above 128 KiB of elements, so that with 4096-byte
/// slots the larger chunk runs span several tiles whatever the element size.
size_t largeCount(DataType type) {
  switch (dataTypeSize(type)) {
    case 1:
      return 131101;
    case 2:
      return 65537;
    case 4:
      return 32771;
    default:
      return 16411;
  }
}

enum class Kind { kAllReduce, kReduceBroadcast, kBroadcast, kAllGather, kReduceScatter };

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "allReduce";
    case Kind::kReduceBroadcast:
      return "reduce+broadcast";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAllGather:
      return "allGather";
    case Kind::kReduceScatter:
      return "reduceScatter";
  }
  return "?";
}

bool reduces(Kind kind) { return kind != Kind::kBroadcast && kind != Kind::kAllGather; }

/// A preset topology and the (collective, algorithm) pairs to sweep on it.
struct Target {
  std::string name;  // gtest parameter name
  std::string spec;  // GROVE_TOPO_FILE
  int nranks = 0;
  std::vector<std::pair<Kind, std::string>> work;
  bool full = true;  // the full grid (see makeCases); false: the sample for 8 ranks
};

const std::vector<std::pair<Kind, std::string>> kTreeWork = {
    {Kind::kBroadcast, "trees"},      {Kind::kReduceBroadcast, "trees"},
    {Kind::kAllReduce, "trees"},      {Kind::kAllReduce, "rsag_trees"},
    {Kind::kAllGather, "rsag_trees"}, {Kind::kReduceScatter, "rsag_trees"},
};
const std::vector<std::pair<Kind, std::string>> kOneHopWork = {{Kind::kAllReduce, "onehop"}};
const std::vector<std::pair<Kind, std::string>> kHierarchicalWork = {
    {Kind::kAllReduce, "hierarchical"}};

const std::vector<Target> kTargets = {
    {"dgx1v_014", "dgx1v:0,1,4", 3, kTreeWork},
    {"dgx1v_023", "dgx1v:0,2,3", 3, kTreeWork},
    {"dgx1v_0347", "dgx1v:0,3,4,7", 4, kTreeWork},
    {"dgx1v_01245", "dgx1v:0,1,2,4,5", 5, kTreeWork},
    {"dgx1v", "dgx1v", 8, kTreeWork, false},
    {"h100x8_025", "h100x8:0,2,5", 3, kOneHopWork},
    {"dgx2_1481115", "dgx2:1,4,8,11,15", 5, kOneHopWork},
    {"h100x8", "h100x8", 8, kOneHopWork, false},
    {"cluster_3x1", "cluster:3x1", 3, kHierarchicalWork},
    {"cluster_2x2", "cluster:2x2", 4, kHierarchicalWork},
    {"cluster_3x2", "cluster:3x2", 6, kHierarchicalWork},
    {"cluster_2x3", "cluster:2x3", 6, kHierarchicalWork},
};

struct Case {
  Kind kind = Kind::kAllReduce;
  std::string algorithm;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;
  bool inPlace = false;
  int root = 0;
  std::string what;
};

/// Whether a reduction runs (type, op, count). Count 1009: every type × every operator.
/// Count 0: each type with one operator (type index mod 5, so every operator appears). Count
/// 1: every operator (full), else one per type (type index + 1 mod 5). The large count:
/// floating types with every operator and integer types with one (type index mod 5) when
/// full, else floating types with two operators each (type index and type index + 2 mod 5,
/// which covers every operator) and no integer type.
bool sampled(bool full, DataType type, ReduceOp op, size_t count) {
  const int t = static_cast<int>(type);
  const int o = static_cast<int>(op);
  // Rotates over the five arithmetic operators; the bitwise ones (integer types only) are
  // reached by the full runs of the integer types.
  constexpr int kArithmeticOps = 5;
  auto rotated = [t](int shift) { return (t + shift) % kArithmeticOps; };
  if (count == kPrimeCount) return true;
  if (count == 0) return o == rotated(0);
  if (count == 1) return full || o == rotated(1);
  if (isFloatingPoint(type)) return full || o == rotated(0) || o == rotated(2);
  return full && o == rotated(0);
}

/// The sampled grid (see the file comment); each in-place case follows its out-of-place twin.
std::vector<Case> makeCases(const Target& target) {
  const int n = target.nranks;
  std::vector<Case> cases;
  int configuration = 0;
  for (const auto& [kind, algorithm] : target.work) {
    for (DataType type : allTypes()) {
      const std::vector<ReduceOp> ops = reduces(kind) ? allOps() : std::vector{ReduceOp::kSum};
      for (ReduceOp op : ops) {
        for (size_t count : {size_t{0}, size_t{1}, kPrimeCount, largeCount(type)}) {
          if (reduces(kind) && !acceptsOp(type, op)) continue;
          if (reduces(kind) && !sampled(target.full, type, op, count)) continue;
          const int root = configuration++ % n;
          for (bool inPlace : {false, true}) {
            Case c{kind, algorithm, type, op, count, inPlace, root, ""};
            std::string extra = "topo=" + target.spec;
            if (reduces(kind)) extra += " op=" + std::string(toString(op));
            if (kind == Kind::kBroadcast || kind == Kind::kReduceBroadcast) {
              extra += " root=" + std::to_string(root);
            }
            c.what = label(kindName(kind), type, count, algorithm, inPlace, n, extra);
            cases.push_back(std::move(c));
          }
        }
      }
    }
  }
  return cases;
}

/// Bytes of the broadcast/allgather payload of rank r (a pattern; no arithmetic touches it).
std::vector<std::byte> payload(int r, size_t bytes) {
  std::vector<std::byte> data(bytes);
  fillPattern(data.data(), bytes, r, 0, 7);
  return data;
}

/// Rank `me`'s send buffer for a case.
std::vector<std::byte> caseInput(const Case& c, int me, int n) {
  const size_t block = c.count * dataTypeSize(c.type);
  switch (c.kind) {
    case Kind::kReduceScatter:
      return makeIntegrityInput(c.type, c.op, me, n * c.count);
    case Kind::kAllGather:
      return payload(me, block);
    case Kind::kBroadcast:
      return me == c.root ? payload(me, block) : std::vector<std::byte>(block, std::byte{0x33});
    default:
      return makeIntegrityInput(c.type, c.op, me, c.count);
  }
}

/// Runs one case on one rank from `input` (caseInput's) and returns the rank's result bytes
/// (the whole allgather output; the reduce+broadcast result after the broadcast).
std::vector<std::byte> runCase(Communicator& comm, const Case& c,
                               const std::vector<std::byte>& input) {
  const int me = comm.rank();
  const int n = comm.size();
  const size_t block = c.count * dataTypeSize(c.type);
  const size_t sendBytes = input.size();
  const size_t recvBytes = c.kind == Kind::kAllGather ? n * block : block;
  GuardedBuffer send(sendBytes);
  GuardedBuffer recv(recvBytes);
  GuardedBuffer temp(block);  // reduce's output out of place
  if (sendBytes > 0) std::memcpy(send.data(), input.data(), sendBytes);  // count 0: no data()
  const CallOptions options{c.algorithm};
  std::byte* result = recv.data();
  try {
    switch (c.kind) {
      case Kind::kAllReduce:
        if (c.inPlace) result = send.data();
        comm.allReduce(send.data(), result, c.count, c.type, c.op, options);
        break;
      case Kind::kReduceBroadcast: {
        std::byte* reduced = c.inPlace ? send.data() : temp.data();
        if (c.inPlace) result = send.data();
        comm.reduce(send.data(), reduced, c.count, c.type, c.op, c.root, options);
        comm.broadcast(reduced, result, c.count, c.type, c.root, options);
        break;
      }
      case Kind::kBroadcast:
        if (c.inPlace) result = send.data();
        comm.broadcast(send.data(), result, c.count, c.type, c.root, options);
        break;
      case Kind::kAllGather: {
        const std::byte* source = send.data();
        if (c.inPlace) {
          if (block > 0) std::memcpy(recv.data() + me * block, input.data(), block);
          source = recv.data() + me * block;
        }
        comm.allGather(source, recv.data(), c.count, c.type, options);
        break;
      }
      case Kind::kReduceScatter:
        if (c.inPlace) result = send.data() + me * block;
        comm.reduceScatter(send.data(), result, c.count, c.type, c.op, options);
        break;
    }
  } catch (const Error& e) {
    throw Error(e.code(), c.what + ": " + e.what());
  }
  expectBuffersIntact(c.what, c.inPlace, send, recv, temp, input);
  const size_t resultBytes = c.kind == Kind::kAllGather ? recvBytes : block;
  return {result, result + resultBytes};
}

/// Checks this rank's share of a case's values: its block of a reducescatter, slice `me` of
/// a replicated output. "" when right.
std::string checkShare(const Case& c, const std::vector<std::byte>& out, int me, int n) {
  const size_t size = dataTypeSize(c.type);
  if (c.kind == Kind::kReduceScatter) {
    return checkIntegrityValues(out.data(), c.type, c.op, n, c.count, me * c.count);
  }
  if (c.kind == Kind::kBroadcast) {
    const auto expected = payload(c.root, c.count * size);
    return describeDifference(out.data(), expected.data(), c.count, c.type);
  }
  if (c.kind == Kind::kAllGather) {
    const auto expected = payload(me, c.count * size);
    const std::string bad =
        describeDifference(out.data() + me * c.count * size, expected.data(), c.count, c.type);
    return bad.empty() ? "" : "block " + std::to_string(me) + ": " + bad;
  }
  const size_t lo = c.count * me / n;
  const size_t hi = c.count * (me + 1) / n;
  return checkIntegrityValues(out.data() + lo * size, c.type, c.op, n, hi - lo, lo);
}

/// Runs every case of `target` twice on its topology; ranks meet at a barrier after each case
/// to compare their outputs (kept in `shared`, one slot per rank).
void runSweep(const Target& target) {
  const int n = target.nranks;
  const std::vector<Case> cases = makeCases(target);
  std::vector<Communicator> comms = Communicator::createInProcess(
      n, Options().set("GROVE_TOPO_FILE", target.spec).set("GROVE_SLOT_BYTES", "4096"));
  std::vector<std::vector<std::byte>> shared(n);
  runOnComms(comms, [&](Communicator& comm) {
    const int me = comm.rank();
    std::vector<std::byte> outOfPlace;  // this rank's result of the previous (twin) case
    for (const Case& c : cases) {
      const std::vector<std::byte> input = caseInput(c, me, n);
      std::vector<std::byte> out = runCase(comm, c, input);
      if (c.count > kPrimeCount) {  // repeat the large calls: same bytes again
        EXPECT_TRUE(runCase(comm, c, input) == out)
            << c.what << ": rank " << me << " differs on repeat";
      }
      EXPECT_EQ(checkShare(c, out, me, n), "") << c.what << " on rank " << me;
      if (c.inPlace) {
        EXPECT_EQ(describeDifference(out.data(), outOfPlace.data(),
                                     out.size() / dataTypeSize(c.type), c.type),
                  "")
            << c.what << ": rank " << me << " in place differs from out of place";
      }
      shared[me] = out;
      comm.barrier();
      if (c.kind != Kind::kReduceScatter && me != 0) {
        EXPECT_EQ(describeDifference(out.data(), shared[0].data(),
                                     out.size() / dataTypeSize(c.type), c.type),
                  "")
            << c.what << ": rank " << me << " differs from rank 0";
      }
      comm.barrier();  // nobody overwrites shared[0] before every rank has compared
      if (!c.inPlace) outOfPlace = std::move(out);
    }
  });
}

class IntegrityTopology : public ::testing::TestWithParam<Target> {};

TEST_P(IntegrityTopology, EveryRankGetsTheSameBytes) { runSweep(GetParam()); }

std::string targetName(const ::testing::TestParamInfo<Target>& param) { return param.param.name; }

INSTANTIATE_TEST_SUITE_P(Presets, IntegrityTopology, ::testing::ValuesIn(kTargets), targetName);

}  // namespace
}  // namespace grove::mr
