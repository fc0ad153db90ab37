// The topology-aware plans run for real on in-process ranks: packed trees (broadcast, reduce,
// allreduce), RS+AG trees (allreduce, allgather, reducescatter), onehop and hierarchical
// allreduce, each forced by name on a communicator whose topology comes from GROVE_TOPO_FILE.
//
// Why: the verifier proves the plans symbolically; this checks that the executor runs them
// (many channels and lanes, `after` dependencies, chunk runs of unequal trees, small FIFO
// slots so that every chunk spans several tiles) and produces exact values: inputs are small
// integers, so sums and averages are exact in float32 and every byte is compared.
#include <cstdlib>
#include <optional>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

using plan::Collective;

const std::vector<size_t> kCounts = {0, 1, 7, 1000, 70001};

std::vector<std::byte> int32Pattern(int rank, size_t count) {
  std::vector<std::byte> bytes(count * 4);
  for (size_t i = 0; i < count; ++i) {
    const int32_t value = rank * 100003 + static_cast<int32_t>(i);
    std::memcpy(bytes.data() + i * 4, &value, 4);
  }
  return bytes;
}

void checkAllReduce(Communicator& comm, const std::string& algo, size_t count, ReduceOp op,
                    bool inPlace) {
  const DataType type = DataType::kFloat32;
  const size_t bytes = count * 4;
  GuardedBuffer send(bytes);
  GuardedBuffer recv(bytes);
  fillReductionInput(send.data(), count, type, op, comm.rank());
  void* out = inPlace ? send.data() : recv.data();
  comm.allReduce(send.data(), out, count, type, op, CallOptions{algo});
  const std::vector<std::byte> expected = expectedReduction(type, op, comm.size(), count);
  EXPECT_EQ(describeDifference(out, expected.data(), count, type), "")
      << "allreduce " << algo << " count " << count << (inPlace ? " in place" : "");
  EXPECT_TRUE(send.guardsIntact() && recv.guardsIntact());
}

void checkBroadcast(Communicator& comm, size_t count, int root) {
  const std::vector<std::byte> expected = int32Pattern(root, count);
  GuardedBuffer send(count * 4);
  GuardedBuffer recv(count * 4);
  if (comm.rank() == root && count > 0) std::memcpy(send.data(), expected.data(), count * 4);
  comm.broadcast(send.data(), recv.data(), count, DataType::kInt32, root, CallOptions{"trees"});
  EXPECT_EQ(recv.bytes(), expected) << "broadcast count " << count << " root " << root;
  EXPECT_TRUE(recv.guardsIntact());
}

void checkReduce(Communicator& comm, size_t count, int root) {
  const DataType type = DataType::kFloat32;
  GuardedBuffer send(count * 4);
  GuardedBuffer recv(count * 4);
  fillReductionInput(send.data(), count, type, ReduceOp::kSum, comm.rank());
  comm.reduce(send.data(), recv.data(), count, type, ReduceOp::kSum, root, CallOptions{"trees"});
  if (comm.rank() == root) {
    const std::vector<std::byte> expected =
        expectedReduction(type, ReduceOp::kSum, comm.size(), count);
    EXPECT_EQ(describeDifference(recv.data(), expected.data(), count, type), "")
        << "reduce count " << count << " root " << root;
  }
  EXPECT_TRUE(recv.guardsIntact());
}

void checkAllGather(Communicator& comm, size_t count) {
  const int n = comm.size();
  GuardedBuffer recv(count * 4 * n);
  const std::vector<std::byte> mine = int32Pattern(comm.rank(), count);
  comm.allGather(mine.data(), recv.data(), count, DataType::kInt32, CallOptions{"rsag_trees"});
  std::vector<std::byte> expected;
  for (int q = 0; q < n; ++q) {
    const std::vector<std::byte> block = int32Pattern(q, count);
    expected.insert(expected.end(), block.begin(), block.end());
  }
  EXPECT_EQ(recv.bytes(), expected) << "allgather count " << count;
  EXPECT_TRUE(recv.guardsIntact());
}

void checkReduceScatter(Communicator& comm, size_t count) {
  const DataType type = DataType::kFloat32;
  const int n = comm.size();
  GuardedBuffer send(count * 4 * n);
  GuardedBuffer recv(count * 4);
  fillReductionInput(send.data(), count * n, type, ReduceOp::kSum, comm.rank());
  comm.reduceScatter(send.data(), recv.data(), count, type, ReduceOp::kSum,
                     CallOptions{"rsag_trees"});
  const std::vector<std::byte> expected =
      expectedReduction(type, ReduceOp::kSum, n, count, comm.rank() * count);
  EXPECT_EQ(describeDifference(recv.data(), expected.data(), count, type), "")
      << "reducescatter count " << count;
  EXPECT_TRUE(recv.guardsIntact());
}

/// Runs every listed check on a communicator of `spec`'s topology.
void runOn(const std::string& spec, int nranks, bool rooted,
           const std::vector<std::string>& allReduceAlgos, bool rsagData) {
  SCOPED_TRACE("GROVE_TOPO_FILE=" + spec);
  std::vector<Communicator> comms = Communicator::createInProcess(
      nranks, Options().set("GROVE_TOPO_FILE", spec).set("GROVE_SLOT_BYTES", "4096"));
  runOnComms(comms, [&](Communicator& comm) {
    for (size_t count : kCounts) {
      for (const std::string& algo : allReduceAlgos) {
        checkAllReduce(comm, algo, count, ReduceOp::kSum, false);
        checkAllReduce(comm, algo, count, ReduceOp::kAvg, true);
      }
      if (rooted) {
        for (int root = 0; root < nranks; ++root) {
          checkBroadcast(comm, count, root);
          checkReduce(comm, count, root);
        }
      }
      if (rsagData) {
        checkAllGather(comm, count);
        checkReduceScatter(comm, count);
      }
    }
  });
}

TEST(PackedTreesRun, Dgx1vSubsets) {
  runOn("dgx1v:0,1,4", 3, true, {"trees", "rsag_trees"}, true);
  runOn("dgx1v:0,3,4,7", 4, true, {"trees", "rsag_trees"}, true);
  runOn("dgx1v:0,1,2,4,5", 5, true, {"trees", "rsag_trees"}, true);
}

TEST(PackedTreesRun, Dgx1vAllEight) { runOn("dgx1v", 8, true, {"trees", "rsag_trees"}, true); }

TEST(PackedTreesRun, PlansOfSeveralChunkCountsAlternateOnOneCommunicator) {
  // Packed-tree plans split small data into fewer chunks (kMinChunkBytes), so one
  // communicator holds a plan per chunk count and switches between them call by call:
  // 1 MiB + 12 bytes (16 chunks per shard on 4 ranks), 4000 bytes (1 chunk), and back.
  std::vector<Communicator> comms = Communicator::createInProcess(
      4, Options().set("GROVE_TOPO_FILE", "cluster:2x2:1").set("GROVE_SLOT_BYTES", "16384"));
  runOnComms(comms, [&](Communicator& comm) {
    for (size_t count : {(size_t{1} << 18) + 3, size_t{1000}, (size_t{1} << 18) + 3, size_t{1}}) {
      checkAllReduce(comm, "rsag_trees", count, ReduceOp::kSum, false);
      checkAllReduce(comm, "trees", count, ReduceOp::kSum, true);
      checkAllGather(comm, count);
      checkReduceScatter(comm, count);
    }
  });
}

TEST(PackedTreesRun, OneHop) {
  runOn("mesh:3", 3, false, {"onehop"}, false);
  runOn("h100x8", 8, false, {"onehop"}, false);
}

TEST(PackedTreesRun, Hierarchical) {
  runOn("cluster:2x2", 4, false, {"hierarchical"}, false);
  runOn("cluster:3x3", 9, false, {"hierarchical"}, false);
  runOn("cluster:4x2:100,25,100,100", 8, false, {"hierarchical"}, false);
}

TEST(PackedTreesRun, HierarchicalLeaderRingsAlternateOnOneCommunicator) {
  // Hierarchical's leaders run one ring per 256 KiB of the data, up to 4 (packed_direct.cpp),
  // so one communicator holds a plan per ring count and switches between them call by call:
  // 1 MiB + 12 bytes (4 rings), 512 KiB + 4 bytes (2 rings), 4000 and 28 bytes (1 ring).
  for (const auto& [spec, nranks] :
       {std::pair{"cluster:3x3", 9}, std::pair{"cluster:4x2:1", 8}, std::pair{"cluster:3x1", 3}}) {
    SCOPED_TRACE(spec);
    std::vector<Communicator> comms = Communicator::createInProcess(
        nranks, Options().set("GROVE_TOPO_FILE", spec).set("GROVE_SLOT_BYTES", "16384"));
    runOnComms(comms, [&](Communicator& comm) {
      for (size_t count : {(size_t{1} << 18) + 3, (size_t{1} << 17) + 1, size_t{1000},
                           (size_t{1} << 18) + 3, size_t{7}}) {
        checkAllReduce(comm, "hierarchical", count, ReduceOp::kSum, false);
        checkAllReduce(comm, "hierarchical", count, ReduceOp::kAvg, true);
      }
    });
  }
}

TEST(PackedTreesRun, TreesNeedATopology) {
  std::vector<Communicator> comms = Communicator::createInProcess(2);
  runOnComms(comms, [&](Communicator& comm) {
    float value = 1;
    try {
      comm.allReduce(&value, &value, 1, DataType::kFloat32, ReduceOp::kSum, CallOptions{"trees"});
      ADD_FAILURE() << "allreduce with trees and no topology did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("needs a topology (GROVE_TOPO_FILE)"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace grove::mr
