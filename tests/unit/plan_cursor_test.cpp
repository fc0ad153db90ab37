// The plan cursor (plan/cursor.hpp): tiles, step order, messages per tile and `after`, the
// rules the executor, the simulator and the verifier all walk plans by.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "plan/cursor.hpp"

namespace grove::plan {
namespace {

TEST(PlanCursor, OneMessagePerTileAndOneForAnEmptyChunk) {
  EXPECT_EQ(messagesFor(0, 4), 1u);
  EXPECT_EQ(messagesFor(1, 4), 1u);
  EXPECT_EQ(messagesFor(4, 4), 1u);
  EXPECT_EQ(messagesFor(5, 4), 2u);
  EXPECT_EQ(messagesFor(9, 1), 9u);
  EXPECT_TRUE(exchangesOn(0, 0, 4));
  EXPECT_FALSE(exchangesOn(0, 1, 4));
  EXPECT_TRUE(exchangesOn(5, 1, 4));
  EXPECT_FALSE(exchangesOn(5, 2, 4));
}

TEST(PlanCursor, TileSpansCoverTheChunkAndAreEmptyPastIt) {
  auto span = [](size_t length, uint64_t tile, size_t tileElems) {
    const TileSpan s = tileSpan(length, tile, tileElems);
    return std::make_pair(s.begin, s.length);
  };
  EXPECT_EQ(span(10, 0, 4), std::make_pair(size_t{0}, size_t{4}));
  EXPECT_EQ(span(10, 2, 4), std::make_pair(size_t{8}, size_t{2}));
  EXPECT_EQ(span(10, 3, 4), std::make_pair(size_t{10}, size_t{0}));
  EXPECT_EQ(span(0, 0, 4), std::make_pair(size_t{0}, size_t{0}));
}

TEST(PlanCursor, MessageChunkIsTheSourceOnlyForSendAndRecvReduceSend) {
  Step step;
  step.src = {BufferKind::kInput, 1};
  step.dst = {BufferKind::kOutput, 2};
  for (OpKind op : {OpKind::kSend, OpKind::kRecvReduceSend}) {
    step.op = op;
    EXPECT_EQ(messageChunk(step), step.src) << toString(op);
  }
  for (OpKind op : {OpKind::kRecv, OpKind::kRecvReduce, OpKind::kCopy, OpKind::kReduce,
                    OpKind::kRecvCopySend, OpKind::kRecvReduceCopy, OpKind::kRecvReduceCopySend}) {
    step.op = op;
    EXPECT_EQ(messageChunk(step), step.dst) << toString(op);
  }
}

TEST(PlanCursor, ChannelTilesFollowTheLongestChunk) {
  const std::vector<size_t> lengths{3, 0, 10};
  const auto identity = [](size_t length) { return length; };
  EXPECT_EQ(channelTiles(lengths, identity, 4), 3u);
  EXPECT_EQ(channelTiles(std::vector<size_t>{0, 0}, identity, 4), 1u);
  EXPECT_EQ(channelTiles(std::vector<size_t>{}, identity, 4), 0u);
}

TEST(PlanCursor, WalksStepsTileAfterTile) {
  ChannelCursor cursor{0, 0, 2};
  std::vector<std::pair<uint64_t, uint32_t>> visited;
  while (!cursor.done()) {
    visited.emplace_back(cursor.tile, cursor.step);
    const bool finished = cursor.next(3);
    EXPECT_EQ(finished, cursor.done());
  }
  const std::vector<std::pair<uint64_t, uint32_t>> expected{{0, 0}, {0, 1}, {0, 2},
                                                            {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(visited, expected);
  EXPECT_EQ(cursor.completedSteps(3), 6u);
  EXPECT_TRUE(ChannelCursor{}.done());  // No tiles: nothing to run.
}

TEST(PlanCursor, AfterIsMetOnceTheNamedStepCompletedTheSameTile) {
  std::vector<ChannelCursor> cursors{{1, 2, 3}, {1, 0, 3}};
  const auto cursorOf = [&](int32_t c) -> const ChannelCursor& {
    return cursors[static_cast<size_t>(c)];
  };
  Step step;
  EXPECT_TRUE(dependencyMet(step, 5, cursorOf));  // No dependency.
  step.after = {0, 1};
  EXPECT_TRUE(dependencyMet(step, 0, cursorOf));   // Channel 0 is past tile 0.
  EXPECT_TRUE(dependencyMet(step, 1, cursorOf));   // At tile 1 step 2: step 1 is done.
  EXPECT_FALSE(dependencyMet(step, 2, cursorOf));  // Tile 2 not begun.
  step.after = {0, 2};
  EXPECT_FALSE(dependencyMet(step, 1, cursorOf));  // Step 2 of tile 1 is running now.
  cursors[0] = {3, 0, 3};
  EXPECT_TRUE(dependencyMet(step, 2, cursorOf));  // A finished channel meets everything.
}

}  // namespace
}  // namespace grove::plan
