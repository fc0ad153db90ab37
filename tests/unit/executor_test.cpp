// The executor driven directly: plans built by hand and by the generators, run by several
// ranks stepped round-robin in one thread over in-memory FIFOs, with exact results and exact
// observations of blocking, back-pressure, failures and `after` dependencies.
#include "exec/executor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "algo/registry.hpp"
#include "support/memory_transport.hpp"

namespace grove {
namespace {

using exec::Progress;
using plan::BufferKind;
using plan::ChunkRef;
using plan::OpKind;

/// Several ranks' executions over one MemoryWorld, with float buffers owned here.
class Cluster {
 public:
  /// Slots hold one tile, or `slotBytes` when given (one-sided plans' hellos need 104).
  Cluster(int nranks, size_t tileElems, uint32_t depth, size_t slotBytes = 0)
      : tileElems_(tileElems),
        world_(nranks, slotBytes > 0 ? slotBytes : tileElems * sizeof(float), depth) {
    for (int r = 0; r < nranks; ++r) {
      ranks_.push_back(std::make_unique<Rank>(world_, r));
    }
  }

  /// Binds every rank's plan and starts it over blocks of counts[r] elements; Input holds
  /// inputs[r] (padded with zeros), Output and Scratch start at -1.
  void start(std::vector<plan::Plan> plans, const std::vector<size_t>& counts,
             const std::vector<std::vector<float>>& inputs) {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      Rank& rank = *ranks_[r];
      const plan::Plan& p = plans[r];
      const size_t count = counts[r];
      rank.input.assign(p.inputBlocks * count, 0.0f);
      std::copy_n(inputs[r].begin(), std::min(inputs[r].size(), rank.input.size()),
                  rank.input.begin());
      rank.output.assign(p.outputBlocks * count, -1.0f);
      rank.scratch.assign(p.scratchBlocks * count, -1.0f);
      const uint32_t k = p.chunksPerBlock;
      rank.bound = exec::BoundPlan::bind(std::move(plans[r]), rank.transport);
      exec::CallBuffers& buffers = rank.buffers;
      buffers = {};
      buffers.input = {bytes(rank.input), count, k};
      buffers.output = {bytes(rank.output), count, k};
      buffers.scratch = {bytes(rank.scratch), count, k};
      buffers.nranks = static_cast<int>(ranks_.size());
      buffers.tileElems = tileElems_;
      // One-sided plans: the buffers as peers find them, and staging for their reductions.
      buffers.inputDescriptor = {reinterpret_cast<uintptr_t>(bytes(rank.input)),
                                 rank.input.size() * sizeof(float)};
      buffers.outputDescriptor = {reinterpret_cast<uintptr_t>(bytes(rank.output)),
                                  rank.output.size() * sizeof(float)};
      rank.staging.resize(exec::OneSided::stagingBytes());
      buffers.staging = rank.staging.data();
      rank.execution.start(rank.bound, buffers);
    }
  }
  void start(std::vector<plan::Plan> plans, size_t count,
             const std::vector<std::vector<float>>& inputs) {
    start(std::move(plans), std::vector<size_t>(ranks_.size(), count), inputs);
  }

  Progress advance(int r) { return ranks_[static_cast<size_t>(r)]->execution.advance(); }

  /// Advances every unfinished rank in turn until all are done (true) or a whole round
  /// moves nothing or one fails (false).
  bool runToEnd() {
    while (true) {
      bool moved = false;
      bool allDone = true;
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (execution(static_cast<int>(r)).done()) continue;
        const Progress progress = advance(static_cast<int>(r));
        if (progress == Progress::kFailed) return false;
        moved |= progress != Progress::kBlocked;
        allDone &= progress == Progress::kDone;
      }
      if (allDone) return true;
      if (!moved) return false;
    }
  }

  exec::Execution& execution(int r) { return ranks_[static_cast<size_t>(r)]->execution; }
  /// Every rank's error and wait point, for failure messages.
  std::string errors() const {
    std::string text;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const exec::WaitPoint w = ranks_[r]->execution.waitPoint();
      text += "rank " + std::to_string(r) + ": '" + ranks_[r]->execution.error() + "' waits on " +
              std::to_string(w.peer) + " channel " + std::to_string(w.channel) + " step " +
              std::to_string(w.step) + (w.what != nullptr ? std::string(" ") + w.what : "") + "\n";
    }
    return text;
  }
  testing::MemoryTransport& transport(int r) { return ranks_[static_cast<size_t>(r)]->transport; }
  const std::vector<float>& output(int r) const { return ranks_[static_cast<size_t>(r)]->output; }
  const std::vector<float>& input(int r) const { return ranks_[static_cast<size_t>(r)]->input; }
  testing::MemoryWorld& world() { return world_; }

 private:
  struct Rank {
    Rank(testing::MemoryWorld& world, int r) : transport(world, r) {}
    testing::MemoryTransport transport;
    std::vector<float> input, output, scratch;
    std::vector<char> staging;
    exec::BoundPlan bound;
    exec::CallBuffers buffers;  ///< What the execution runs over (it refers to them).
    exec::Execution execution;
  };
  static char* bytes(std::vector<float>& values) {
    return values.empty() ? nullptr : reinterpret_cast<char*>(values.data());
  }

  size_t tileElems_;
  testing::MemoryWorld world_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

/// A one-block plan of `channels` empty channels for rank `rank` of `nranks`.
plan::Plan handPlan(int rank, int nranks, size_t channels = 1) {
  plan::Plan p;
  p.collective = plan::Collective::kSendRecv;
  p.algorithm = "hand";
  p.rank = rank;
  p.nranks = nranks;
  p.inputBlocks = 1;
  p.outputBlocks = 1;
  p.channels.resize(channels);
  return p;
}

plan::Step sendStep(int peer, ChunkRef src, uint16_t lane = 0) {
  plan::Step step;
  step.op = OpKind::kSend;
  step.sendPeer = peer;
  step.src = src;
  step.lane = lane;
  return step;
}

plan::Step recvStep(int peer, ChunkRef dst, uint16_t lane = 0) {
  plan::Step step;
  step.op = OpKind::kRecv;
  step.recvPeer = peer;
  step.dst = dst;
  step.lane = lane;
  return step;
}

constexpr ChunkRef kIn0{BufferKind::kInput, 0};
constexpr ChunkRef kOut0{BufferKind::kOutput, 0};

/// Elements 1, 2, ..., n scaled by `scale`: small integers, so float sums are exact.
std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = scale * static_cast<float>(i % 251 + 1);
  return values;
}

/// rank 0 sends its Input to rank 1's Output.
std::vector<plan::Plan> sendRecvPair() {
  std::vector<plan::Plan> plans{handPlan(0, 2), handPlan(1, 2)};
  plans[0].channels[0].steps = {sendStep(1, kIn0)};
  plans[1].channels[0].steps = {recvStep(0, kOut0)};
  return plans;
}

TEST(Executor, SendRecvPairMovesTheBuffer) {
  Cluster cluster(2, 4, 4);
  cluster.start(sendRecvPair(), 10, {ramp(10, 1), {}});
  ASSERT_TRUE(cluster.runToEnd());
  EXPECT_EQ(cluster.output(1), ramp(10, 1));
  EXPECT_EQ(cluster.execution(0).advance(), Progress::kDone);
}

TEST(Executor, EmptyBufferStillExchangesOneMessage) {
  Cluster cluster(2, 4, 4);
  cluster.start(sendRecvPair(), 0, {{}, {}});
  // The sender is done once its one empty message is in the FIFO; the receiver takes it.
  EXPECT_EQ(cluster.advance(0), Progress::kDone);
  size_t bytes = 99;
  EXPECT_NE(cluster.world().fifo(0, 1, 0).tryPeek(&bytes), nullptr);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(cluster.advance(1), Progress::kDone);
}

/// Runs `algorithm`'s allreduce on `n` ranks and checks every rank's sum exactly.
void expectAllReduce(const algo::Algorithm& algorithm, int n, size_t count, size_t tileElems) {
  SCOPED_TRACE(::testing::Message()
               << algorithm.name << " n=" << n << " count=" << count << " tile=" << tileElems);
  std::vector<plan::Plan> plans;
  std::vector<std::vector<float>> inputs;
  std::vector<float> expected(count, 0.0f);
  for (int r = 0; r < n; ++r) {
    plan::PlanRequest request{{plan::Collective::kAllReduce, count}, n, r};
    plans.push_back(algorithm.build(request));
    inputs.push_back(ramp(count, static_cast<float>(r + 1)));
    for (size_t i = 0; i < count; ++i) expected[i] += inputs.back()[i];
  }
  Cluster cluster(n, tileElems, 4);
  cluster.start(std::move(plans), count, inputs);
  ASSERT_TRUE(cluster.runToEnd());
  for (int r = 0; r < n; ++r) EXPECT_EQ(cluster.output(r), expected) << "rank " << r;
}

TEST(Executor, RingAllReduceOnThreeRanks) {
  const algo::Algorithm* ring = algo::findAlgorithm(plan::Collective::kAllReduce, "ring");
  ASSERT_NE(ring, nullptr);
  // 0 and 1 leave chunks empty; 7 and 100 do not divide by 3; tile 4 splits chunks in tiles.
  for (size_t count : {0, 1, 2, 7, 100}) {
    for (size_t tile : {1024, 4, 1}) expectAllReduce(*ring, 3, count, tile);
  }
}

TEST(Executor, EveryPlanAllReduceWithoutTopology) {
  std::set<std::string> ran;
  for (const algo::Algorithm& algorithm : algo::algorithms()) {
    if (algorithm.collective != plan::Collective::kAllReduce) continue;
    for (int n : {2, 3, 5}) {
      plan::PlanRequest request{{plan::Collective::kAllReduce, 37}, n, 0};
      if (!algorithm.applies(request).ok()) continue;
      expectAllReduce(algorithm, n, 37, 5);
      ran.insert(std::string(algorithm.name));
    }
  }
  for (const char* name : {"ring", "recursive_doubling", "one_shot", "double_binary_tree"}) {
    EXPECT_EQ(ran.count(name), 1u) << name;
  }
}

/// Every rank's plan of the one-sided `collective` (algo/direct.cpp) for `count`.
std::vector<plan::Plan> directPlans(plan::Collective collective, int n, size_t count,
                                    int root = -1) {
  const algo::Algorithm* direct = algo::findAlgorithm(collective, "direct");
  EXPECT_NE(direct, nullptr);
  std::vector<plan::Plan> plans;
  for (int r = 0; r < n; ++r) {
    plan::PlanRequest request{{collective, count, DataType::kFloat32, ReduceOp::kSum, root}, n, r};
    request.peerMemory = true;
    plans.push_back(direct->build(request));
  }
  return plans;
}

TEST(Executor, OneSidedPlansReadPeersInPlaceWithExactResults) {
  for (int n : {2, 3, 5}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{100}}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " count=" << count);
      std::vector<std::vector<float>> inputs;
      std::vector<float> sum(count, 0.0f);
      for (int r = 0; r < n; ++r) {
        inputs.push_back(ramp(count * static_cast<size_t>(n), static_cast<float>(r + 1)));
        for (size_t i = 0; i < count; ++i) sum[i] += inputs.back()[i];
      }
      {  // allreduce: tiles of 4 split every chunk of 100 (one chunk per rank)
        Cluster cluster(n, 4, 2, 4096);
        cluster.start(directPlans(plan::Collective::kAllReduce, n, count), count, inputs);
        ASSERT_TRUE(cluster.runToEnd()) << cluster.errors();
        for (int r = 0; r < n; ++r) EXPECT_EQ(cluster.output(r), sum) << "allreduce rank " << r;
      }
      {  // reducescatter: rank r reduces block r of every input
        Cluster cluster(n, 4, 2, 4096);
        cluster.start(directPlans(plan::Collective::kReduceScatter, n, count), count, inputs);
        ASSERT_TRUE(cluster.runToEnd()) << cluster.errors();
        for (int r = 0; r < n; ++r) {
          std::vector<float> block(count, 0.0f);
          for (int q = 0; q < n; ++q) {
            for (size_t i = 0; i < count; ++i) block[i] += inputs[q][r * count + i];
          }
          EXPECT_EQ(cluster.output(r), block) << "reducescatter rank " << r;
        }
      }
      {  // allgather: block q of every output is rank q's input
        Cluster cluster(n, 4, 2, 4096);
        cluster.start(directPlans(plan::Collective::kAllGather, n, count), count, inputs);
        ASSERT_TRUE(cluster.runToEnd()) << cluster.errors();
        std::vector<float> gathered;
        for (int q = 0; q < n; ++q) {
          gathered.insert(gathered.end(), inputs[q].begin(), inputs[q].begin() + count);
        }
        for (int r = 0; r < n; ++r) EXPECT_EQ(cluster.output(r), gathered) << "allgather " << r;
      }
      {  // broadcast from the last rank, which reads nothing but still waits for its readers
        Cluster cluster(n, 4, 2, 4096);
        cluster.start(directPlans(plan::Collective::kBroadcast, n, count, n - 1), count, inputs);
        ASSERT_TRUE(cluster.runToEnd()) << cluster.errors();
        const std::vector<float> root(inputs[n - 1].begin(), inputs[n - 1].begin() + count);
        for (int r = 0; r < n; ++r) EXPECT_EQ(cluster.output(r), root) << "broadcast " << r;
      }
    }
  }
}

TEST(Executor, OneSidedRootWaitsInItsEpilogueUntilEveryReaderIsDone) {
  Cluster cluster(3, 4, 4, 4096);
  cluster.start(directPlans(plan::Collective::kBroadcast, 3, 10, 0), 10, {ramp(10, 1), {}, {}});
  // The root sends its hellos, takes none yet, and cannot return before its readers.
  EXPECT_EQ(cluster.advance(0), Progress::kMoved);
  EXPECT_EQ(cluster.advance(0), Progress::kBlocked);
  EXPECT_EQ(cluster.execution(0).waitPoint().peer, 1);
  EXPECT_STREQ(cluster.execution(0).waitPoint().what,
               "its buffer descriptors, the one-sided prologue");
  EXPECT_EQ(cluster.advance(1), Progress::kMoved);  // hellos sent; rank 2's still missing
  EXPECT_EQ(cluster.advance(2), Progress::kMoved);  // all hellos in; read; done sent
  EXPECT_EQ(cluster.advance(0), Progress::kMoved);  // steps (the copy) done; waits in epilogue
  EXPECT_STREQ(cluster.execution(0).waitPoint().what,
               "it to finish reading this rank's buffers, the one-sided epilogue");
  EXPECT_EQ(cluster.execution(0).waitPoint().peer, 1);
  ASSERT_TRUE(cluster.runToEnd()) << cluster.errors();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(cluster.output(r), ramp(10, 1)) << "rank " << r;
}

TEST(Executor, OneSidedPlanDeclinesOnEveryRankWhenOneCannotReadItsPeers) {
  Cluster cluster(3, 4, 4, 4096);
  cluster.transport(2).sharedPeerMemory().canRead = false;
  cluster.start(directPlans(plan::Collective::kAllReduce, 3, 9), 9,
                {ramp(9, 1), ramp(9, 2), ramp(9, 3)});
  ASSERT_TRUE(cluster.runToEnd()) << cluster.errors();
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(cluster.execution(r).declined()) << "rank " << r;
    EXPECT_EQ(cluster.execution(r).declineReason(), "a rank cannot read its peers' memory");
    EXPECT_EQ(cluster.output(r), std::vector<float>(9, -1.0f)) << "rank " << r << " wrote";
  }
}

TEST(Executor, FullFifoBlocksTheSenderAndResumes) {
  Cluster cluster(2, 1, 2);
  cluster.start(sendRecvPair(), 16, {ramp(16, 1), {}});
  // Two slots: the sender moves two tiles, then waits for space on tile 2.
  EXPECT_EQ(cluster.advance(0), Progress::kMoved);
  EXPECT_EQ(cluster.advance(0), Progress::kBlocked);
  exec::WaitPoint sender = cluster.execution(0).waitPoint();
  EXPECT_EQ(sender.channel, 0);
  EXPECT_EQ(sender.step, 0);
  EXPECT_EQ(sender.tile, 2u);
  EXPECT_EQ(sender.peer, 1);
  EXPECT_TRUE(sender.sending);
  // The receiver takes both and waits for tile 2.
  EXPECT_EQ(cluster.advance(1), Progress::kMoved);
  EXPECT_EQ(cluster.advance(1), Progress::kBlocked);
  exec::WaitPoint receiver = cluster.execution(1).waitPoint();
  EXPECT_EQ(receiver.tile, 2u);
  EXPECT_EQ(receiver.peer, 0);
  EXPECT_FALSE(receiver.sending);
  ASSERT_TRUE(cluster.runToEnd());
  EXPECT_EQ(cluster.output(1), ramp(16, 1));
}

TEST(Executor, MessageSizeMismatchFailsNamingThePeer) {
  Cluster cluster(2, 8, 4);
  // Rank 0 sends 5 elements in one tile; rank 1 expects 4.
  cluster.start(sendRecvPair(), {5, 4}, {ramp(5, 1), {}});
  EXPECT_EQ(cluster.advance(0), Progress::kDone);
  ASSERT_EQ(cluster.advance(1), Progress::kFailed);
  EXPECT_EQ(cluster.execution(1).errorCode(), ErrorCode::kInvalidUsage);
  EXPECT_EQ(cluster.execution(1).error(),
            "channel 0 step 0 tile 0: message size mismatch from rank 0: received 20 bytes, "
            "expected 16 (do all ranks pass the same count and type?)");
}

TEST(Executor, SilentPeerLeavesTheExecutionBlockedWhereItWaits) {
  Cluster cluster(2, 4, 4);
  std::vector<plan::Plan> plans = sendRecvPair();
  // Rank 1 copies its input first, then waits for rank 0, which never runs and fails.
  plan::Step copy;
  copy.op = OpKind::kCopy;
  copy.src = kIn0;
  copy.dst = kOut0;
  plans[1].channels[0].steps.insert(plans[1].channels[0].steps.begin(), copy);
  cluster.start(std::move(plans), 6, {ramp(6, 1), ramp(6, 2)});
  cluster.transport(0).abort("rank 0 stopped");
  EXPECT_EQ(cluster.advance(1), Progress::kMoved);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.advance(1), Progress::kBlocked);
  const exec::WaitPoint point = cluster.execution(1).waitPoint();
  EXPECT_EQ(point.channel, 0);
  EXPECT_EQ(point.step, 1);
  EXPECT_EQ(point.tile, 0u);
  EXPECT_EQ(point.peer, 0);
  EXPECT_FALSE(point.sending);
  EXPECT_EQ(cluster.transport(1).failedPeer(), 0);
  EXPECT_EQ(cluster.transport(1).failure().cause, "rank 0 stopped");
  EXPECT_FALSE(cluster.execution(1).done());
}

/// Rank 1 sends its Input to rank 0 (lane 0); rank 0 forwards what it received back from
/// its Output on another channel (lane 1), which must wait, tile by tile, for the receipt.
std::vector<plan::Plan> echo(bool withAfter) {
  std::vector<plan::Plan> plans{handPlan(0, 2, 2), handPlan(1, 2, 2)};
  plans[0].channels[0].steps = {recvStep(1, kOut0, 0)};
  plans[0].channels[1].steps = {sendStep(1, kOut0, 1)};
  if (withAfter) plans[0].channels[1].steps[0].after = {0, 0};
  plans[1].channels[0].steps = {sendStep(0, kIn0, 0)};
  plans[1].channels[1].steps = {recvStep(0, kOut0, 1)};
  return plans;
}

TEST(Executor, AfterHoldsAStepUntilTheOtherChannelFinishedTheTile) {
  Cluster cluster(2, 2, 4);
  cluster.start(echo(true), 7, {{}, ramp(7, 3)});
  // Nothing has arrived: channel 0 waits for rank 1, channel 1 for channel 0.
  EXPECT_EQ(cluster.advance(0), Progress::kBlocked);
  size_t bytes = 0;
  EXPECT_EQ(cluster.world().fifo(0, 1, 1).tryPeek(&bytes), nullptr);
  EXPECT_EQ(cluster.execution(0).waitPoint().peer, 1);
  ASSERT_TRUE(cluster.runToEnd());
  EXPECT_EQ(cluster.output(0), ramp(7, 3));
  EXPECT_EQ(cluster.output(1), ramp(7, 3));
}

TEST(Executor, WithoutAfterTheForwardRacesAhead) {
  // The same plans without the dependency send Output before it was received.
  Cluster cluster(2, 2, 4);
  cluster.start(echo(false), 7, {{}, ramp(7, 3)});
  EXPECT_EQ(cluster.advance(0), Progress::kMoved);
  ASSERT_TRUE(cluster.runToEnd());
  EXPECT_EQ(cluster.output(0), ramp(7, 3));
  EXPECT_EQ(cluster.output(1), std::vector<float>(7, -1.0f));
}

}  // namespace
}  // namespace grove
