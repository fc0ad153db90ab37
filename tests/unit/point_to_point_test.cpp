// Point-to-point batches as plans: the pieces and channels algo::buildPointToPoint makes,
// the verifier proving the plans of matched batches for 1-17 ranks and catching unmatched
// ones, and core's PointToPointBatch run by the executor over in-memory FIFOs with exact
// bytes, self-sends, empty transfers and a count mismatch named on the receiver.
#include "algo/point_to_point.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/point_to_point.hpp"
#include "plan/verifier.hpp"
#include "support/memory_transport.hpp"

namespace grove {
namespace {

using algo::Piece;
using algo::TransferShape;
using plan::OpKind;
using ::testing::HasSubstr;

struct Built {
  plan::Plan plan;
  std::vector<Piece> pieces;
};

Built build(int rank, int nranks, const std::vector<TransferShape>& batch, size_t tile) {
  Built b;
  algo::buildPointToPoint(rank, nranks, batch, tile, &b.plan, &b.pieces);
  return b;
}

TEST(PointToPointPlan, PiecesOfOneTileAndOneChannelPerPeerAndDirection) {
  // Rank 1 of 3: send 0 bytes to 0, receive 10 from 2, send 8 to 2, send 3 to 0; tile 4.
  const Built b = build(1, 3, {{true, 0, 0}, {false, 2, 10}, {true, 2, 8}, {true, 0, 3}}, 4);
  EXPECT_EQ(b.plan.collective, plan::Collective::kSendRecv);
  EXPECT_EQ(b.plan.algorithm, "sendrecv");
  const std::vector<std::tuple<uint32_t, size_t, size_t>> expected = {
      {0, 0, 0}, {1, 0, 4}, {1, 4, 4}, {1, 8, 2}, {2, 0, 4}, {2, 4, 4}, {3, 0, 3}};
  ASSERT_EQ(b.pieces.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(std::make_tuple(b.pieces[i].transfer, b.pieces[i].offset, b.pieces[i].bytes),
              expected[i])
        << "piece " << i;
  }
  EXPECT_EQ(b.plan.inputBlocks, 7u);
  EXPECT_EQ(b.plan.outputBlocks, 7u);
  ASSERT_EQ(b.plan.channels.size(), 3u);
  auto chunks = [](const plan::Channel& channel) {
    std::vector<uint32_t> out;
    for (const plan::Step& s : channel.steps) {
      out.push_back(s.op == OpKind::kSend ? s.src.chunk : s.dst.chunk);
    }
    return out;
  };
  EXPECT_EQ(chunks(b.plan.channels[0]), (std::vector<uint32_t>{0, 6}));  // sends to 0
  EXPECT_EQ(b.plan.channels[0].steps[0].op, OpKind::kSend);
  EXPECT_EQ(b.plan.channels[0].steps[1].sendPeer, 0);
  EXPECT_EQ(chunks(b.plan.channels[1]), (std::vector<uint32_t>{1, 2, 3}));  // from 2
  EXPECT_EQ(b.plan.channels[1].steps[2].op, OpKind::kRecv);
  EXPECT_EQ(b.plan.channels[1].steps[2].recvPeer, 2);
  EXPECT_EQ(b.plan.channels[1].steps[0].dst.buffer, plan::BufferKind::kOutput);
  EXPECT_EQ(chunks(b.plan.channels[2]), (std::vector<uint32_t>{4, 5}));  // sends to 2
}

TEST(PointToPointPlan, RebuildingTheSameBatchReusesItsStorage) {
  const std::vector<TransferShape> batch = {{true, 1, 100}, {false, 1, 100}, {true, 2, 7}};
  Built b = build(0, 3, batch, 16);
  const plan::Step* steps = b.plan.channels[0].steps.data();
  const Piece* pieces = b.pieces.data();
  algo::buildPointToPoint(0, 3, batch, 16, &b.plan, &b.pieces);
  EXPECT_EQ(b.plan.channels[0].steps.data(), steps);
  EXPECT_EQ(b.pieces.data(), pieces);
  EXPECT_EQ(b.pieces.size(), 7u + 7u + 1u);
  // A smaller batch after a larger one shrinks the plan, and nothing of the old one is left.
  const std::vector<TransferShape> small = {{false, 2, 0}};
  algo::buildPointToPoint(0, 3, small, 16, &b.plan, &b.pieces);
  ASSERT_EQ(b.plan.channels.size(), 1u);
  ASSERT_EQ(b.plan.channels[0].steps.size(), 1u);
  EXPECT_EQ(b.plan.channels[0].steps[0].op, OpKind::kRecv);
  EXPECT_EQ(b.plan.inputBlocks, 1u);
}

// Every rank's plan for a batch in which rank `from` sends bytes(from, to) to every `to` in
// `peers(from)` (itself included when listed) and receives the matching transfers, in the
// order given.
std::vector<plan::Plan> matchedPlans(int n, size_t tile, bool allPairs) {
  auto bytes = [](int from, int to) { return static_cast<size_t>((from * 7 + to * 3) % 13); };
  std::vector<plan::Plan> plans;
  for (int r = 0; r < n; ++r) {
    std::vector<TransferShape> batch;
    for (int s = allPairs ? 0 : 1; s < (allPairs ? n : 2); ++s) {
      const int to = (r + s) % n;
      const int from = (r - s + n) % n;
      batch.push_back({true, to, bytes(r, to)});
      batch.push_back({false, from, bytes(from, r)});
      if (!allPairs) batch.push_back({true, to, bytes(to, r) + 5});  // a second send to `to`
      if (!allPairs) batch.push_back({false, from, bytes(r, from) + 5});
    }
    plans.push_back(build(r, n, batch, tile).plan);
  }
  return plans;
}

TEST(PointToPointPlan, VerifierProvesMatchedBatchesFor1To17Ranks) {
  for (int n = 1; n <= 17; ++n) {
    for (bool allPairs : {false, true}) {
      const std::vector<plan::Plan> plans = matchedPlans(n, 4, allPairs);
      for (int depth : {1, 4}) {
        plan::VerifyOptions options;
        options.fifoDepth = depth;
        const Status status = plan::verify(plans, options);
        EXPECT_TRUE(status.ok()) << n << " ranks, " << (allPairs ? "all pairs" : "ring")
                                 << ", depth " << depth << ": " << status.message();
      }
    }
  }
}

TEST(PointToPointPlan, VerifierNamesBatchesThatDoNotPair) {
  // Rank 0 sends two pieces to rank 1, which receives one.
  std::vector<plan::Plan> plans = {build(0, 2, {{true, 1, 8}}, 4).plan,
                                   build(1, 2, {{false, 0, 4}}, 4).plan};
  const Status status = plan::verify(plans, {});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("the two plans exchange different numbers of messages per "
                        "tile on the connection from rank 0 to rank 1"));

  // Receives of one peer spread over two channels: which gets which message would be timing.
  plans = {build(0, 2, {{true, 1, 8}}, 4).plan, build(1, 2, {{false, 0, 8}}, 4).plan};
  plan::Channel second;
  second.steps.push_back(plans[1].channels[0].steps.back());
  plans[1].channels[0].steps.pop_back();
  plans[1].channels.push_back(second);
  EXPECT_THAT(plan::verify(plans, {}).message(), HasSubstr("a connection belongs to one channel"));

  // Pieces received out of issue order land in the wrong place of the receive buffer.
  plans = {build(0, 2, {{true, 1, 8}}, 4).plan, build(1, 2, {{false, 0, 8}}, 4).plan};
  std::swap(plans[1].channels[0].steps[0], plans[1].channels[0].steps[1]);
  EXPECT_THAT(plan::verify(plans, {}).message(), HasSubstr("rank 1 out[0] (tile 0) holds {(0,1)}"));

  // A reduction has no place in a point-to-point plan.
  plans = {build(0, 2, {{true, 1, 4}}, 4).plan, build(1, 2, {{false, 0, 4}}, 4).plan};
  plans[1].channels[0].steps[0].op = OpKind::kRecvReduce;
  EXPECT_THAT(plan::verify(plans, {}).message(),
              HasSubstr("'rr' in a sendrecv plan, which only sends and receives"));
}

// PointToPointBatch over in-memory FIFOs: each rank's batch runs through exec::Execution.
class Batches {
 public:
  Batches(int n, size_t slotBytes, uint32_t depth) : slot_(slotBytes), world_(n, slotBytes, depth) {
    for (int r = 0; r < n; ++r) ranks_.push_back(std::make_unique<Rank>(world_, r));
  }
  detail::PointToPointBatch& batch(int r) { return ranks_[static_cast<size_t>(r)]->batch; }
  /// Rank r's bound plan of its latest run.
  const exec::BoundPlan* bound(int r) const { return ranks_[static_cast<size_t>(r)]->bound; }

  /// Starts every batch and steps all ranks round-robin until each is done or one fails;
  /// returns the first failure's message (empty when all finished).
  std::string run() {
    for (auto& rank : ranks_) {
      rank->bound = &rank->batch.prepare(rank->transport.rank(), world_.size(), slot_,
                                         rank->transport, &rank->buffers);
      rank->execution.start(*rank->bound, rank->buffers);
    }
    for (int round = 0; round < 100000; ++round) {
      bool all = true;
      for (auto& rank : ranks_) {
        const exec::Progress progress = rank->execution.advance();
        if (progress == exec::Progress::kFailed) return rank->execution.error();
        all = all && progress == exec::Progress::kDone;
      }
      if (all) return {};
    }
    return "did not finish";
  }

 private:
  struct Rank {
    Rank(testing::MemoryWorld& world, int r) : transport(world, r) {}
    testing::MemoryTransport transport;
    detail::PointToPointBatch batch;
    const exec::BoundPlan* bound = nullptr;
    exec::CallBuffers buffers;
    exec::Execution execution;
  };
  size_t slot_;
  testing::MemoryWorld world_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

detail::Transfer transfer(bool isSend, int peer, std::vector<int32_t>& buffer, size_t count) {
  detail::Transfer t;
  t.isSend = isSend;
  t.peer = peer;
  t.buffer = count > 0 ? reinterpret_cast<char*>(buffer.data()) : nullptr;
  t.bytes = count * sizeof(int32_t);
  t.tag.collective = static_cast<uint8_t>(plan::Collective::kSendRecv);
  t.tag.count = count;
  t.tag.type = static_cast<uint8_t>(DataType::kInt32);
  return t;
}

std::vector<int32_t> values(int from, int to, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = from * 100000 + to * 1000 + static_cast<int32_t>(i);
  return v;
}

TEST(PointToPointBatch, RingWithSelfSendsAndEmptyTransfersMovesExactBytes) {
  // 5 ranks, slots of 12 bytes (3 values): rank r sends count(r) values to r+1 and two to
  // itself, receives count(r-1) from r-1 and its own two; count(2) is 0.
  const int n = 5;
  auto count = [](int r) { return static_cast<size_t>(r == 2 ? 0 : r * 4 + 1); };
  std::vector<std::vector<int32_t>> sends(n), received(n), selfSend(n), selfReceived(n);
  Batches batches(n, 12, 2);
  for (int r = 0; r < n; ++r) {
    const int next = (r + 1) % n;
    const int prev = (r + n - 1) % n;
    sends[r] = values(r, next, count(r));
    received[r].assign(count(prev), -1);
    selfSend[r] = values(r, r, 2);
    selfReceived[r].assign(2, -1);
    batches.batch(r).add(transfer(false, prev, received[r], count(prev)));
    batches.batch(r).add(transfer(true, r, selfSend[r], 2));
    batches.batch(r).add(transfer(true, next, sends[r], count(r)));
    batches.batch(r).add(transfer(false, r, selfReceived[r], 2));
  }
  ASSERT_EQ(batches.run(), "");
  for (int r = 0; r < n; ++r) {
    const int prev = (r + n - 1) % n;
    EXPECT_EQ(received[r], values(prev, r, count(prev))) << "rank " << r;
    EXPECT_EQ(selfReceived[r], values(r, r, 2)) << "rank " << r;
  }
}

TEST(PointToPointBatch, TwoSendsToOnePeerArriveInIssueOrder) {
  // Rank 0 sends 7 then 2 values; rank 1 receives them into two buffers in the same order,
  // each whole before the next although the first spans three slots.
  Batches batches(2, 12, 4);
  std::vector<int32_t> a = values(0, 1, 7), b = values(0, 1, 2);
  std::vector<int32_t> gotA(7, -1), gotB(2, -1);
  batches.batch(0).add(transfer(true, 1, a, 7));
  batches.batch(0).add(transfer(true, 1, b, 2));
  batches.batch(1).add(transfer(false, 0, gotA, 7));
  batches.batch(1).add(transfer(false, 0, gotB, 2));
  ASSERT_EQ(batches.run(), "");
  EXPECT_EQ(gotA, a);
  EXPECT_EQ(gotB, b);
}

TEST(PointToPointBatch, TheSameBatchAgainOverNewBuffersMovesTheNewBytes) {
  // A pair exchange issued twice with the same shapes but other buffers: the second run
  // keeps its plan (PointToPointBatch reuses it) yet lays it over the new buffers.
  Batches batches(2, 12, 2);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<int32_t>> sends(2), got(2);
    for (int r = 0; r < 2; ++r) {
      sends[r] = values(r + 10 * round, 1 - r, 5);
      got[r].assign(5, -1);
      batches.batch(r).clear();
      batches.batch(r).add(transfer(true, 1 - r, sends[r], 5));
      batches.batch(r).add(transfer(false, 1 - r, got[r], 5));
    }
    ASSERT_EQ(batches.run(), "");
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(got[r], values(1 - r + 10 * round, r, 5)) << "round " << round << " rank " << r;
      EXPECT_EQ(batches.bound(r)->plan.channels.size(), 2u);
    }
  }
}

TEST(PointToPointBatch, CountMismatchIsNamedWithBothCounts) {
  Batches batches(2, 64, 4);
  std::vector<int32_t> a = values(0, 1, 10), got(12, -1);
  batches.batch(0).add(transfer(true, 1, a, 10));
  batches.batch(1).add(transfer(false, 0, got, 12));
  const std::string error = batches.run();
  EXPECT_THAT(error, HasSubstr("(count differs)"));
  EXPECT_THAT(error, HasSubstr("send/recv (count 10 int32)"));
  EXPECT_THAT(error, HasSubstr("send/recv (count 12 int32)"));
  EXPECT_EQ(got, std::vector<int32_t>(12, -1));  // nothing written
}

}  // namespace
}  // namespace grove
