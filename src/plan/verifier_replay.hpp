// The verifier's replay engine: runs the plans of all ranks on symbolic values.
//
// Every chunk of every buffer of every rank, per tile, holds a Value: the multiset of input
// chunks (rank, chunk) it is made of. Input chunk c of rank r starts as {(r, c)}; Output and
// Scratch start undefined, except that a barrier rank's Output chunk 0 starts as its own
// token {(r, 0)} (barrier plans carry token sets in Output chunk 0, outputBlocks = 1,
// chunksPerBlock = 1, and ⊕ on tokens is idempotent set union). Messages carry Values through
// FIFOs keyed (src rank, dst rank, lane) of `fifoDepth` slots. Steps fire whenever they can
// (their `after` step done for the same tile, a message waiting, a free slot); when none can
// and some remain, the plans deadlock. Channels walk their steps tile after tile with the
// executor's cursor (plan/cursor.hpp), every chunk being one symbol per replayed tile. In
// place, aliased Input and Output chunks are one storage cell, so overwriting input that is
// still needed shows up as wrong contributions.
//
// Channels of one rank run concurrently, so two steps of different channels touching the
// same chunk must be ordered by a happens-before path (program order, `after`, messages).
// Vector clocks over all channels of all ranks detect unordered pairs (a write with any other
// access): such a plan is racy even if this replay's schedule happens to give the right sum.
//
// Internal to src/plan: verifier.cpp drives it (run, then the end-of-call checks).
#pragma once

#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plan/cursor.hpp"
#include "plan/plan.hpp"
#include "plan/verifier.hpp"
#include "plan/verifier_model.hpp"

namespace grove::plan::verifier_model {

/// A vector clock: per global channel, how many of its steps happened before.
using Clock = std::vector<uint32_t>;

/// The replay of one verification. Every stage returns the first problem it finds.
class Replay {
 public:
  Replay(const std::vector<Plan>& plans, const VerifyOptions& options);

  /// Fires steps until all are done; fails on a problem or a deadlock.
  Status run();
  /// Fails when a message was never received.
  Status checkFifosEmpty() const;
  /// Fails when an output chunk does not hold what the collective demands.
  Status checkOutputs() const;

 private:
  struct Message {
    Value value;
    uint32_t part = 0;
    uint32_t tile = 0;
    int channel = 0;  // Sender's channel and step, for messages.
    int step = 0;
    Clock clock;
  };

  // Who last wrote a cell (global channel, that channel's clock) and who read it since.
  struct Access {
    int32_t writer = -1;
    uint32_t writerClock = 0;
    int32_t writerStep = -1;
    std::vector<std::pair<int32_t, uint32_t>> reads;
  };

  struct RankState {
    std::vector<uint32_t> cellOf[3];     // Per buffer kind: chunk -> storage cell.
    std::vector<Value> values;           // cell * tiles + tile
    std::vector<Access> access;          // cell * tiles + tile
    std::vector<ChannelCursor> cursors;  // Per channel (plan/cursor.hpp).
    std::vector<std::vector<bool>> isAfterTarget;
    int firstChannel = 0;  // Global id of channel 0.
  };

  const Step& stepAt(int r, int c, uint32_t s) const {
    return plans_[r].channels[static_cast<size_t>(c)].steps[s];
  }
  uint32_t length(int r, int c) const {
    return static_cast<uint32_t>(plans_[r].channels[static_cast<size_t>(c)].steps.size());
  }
  bool done(int r, int c) const { return state_[r].cursors[c].done(); }
  uint64_t fifoKey(int from, int to, uint16_t lane) const {
    return ((static_cast<uint64_t>(from) * nranks_ + static_cast<uint64_t>(to)) << 16) | lane;
  }
  size_t slot(int r, const ChunkRef& ref, uint32_t tile) const {
    return size_t{state_[r].cellOf[static_cast<int>(ref.buffer)][ref.chunk]} * tiles_ + tile;
  }
  /// "rank 1 channel 0 step 3 (rrs from 0 to 2 in[0], tile 1)".
  std::string where(int r, int c, uint32_t s, uint32_t tile) const;

  enum class Block : uint8_t { kNone, kAfter, kRecv, kSend };
  Block blocker(int r, int c) const;
  std::string blockedReason(int r, int c) const;
  Status fire(int r, int c);
  Status read(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref, Value* value);
  Status write(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref, const Value& value);
  Status checkOrdered(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref, int32_t other,
                      uint32_t otherClock, int32_t otherStep, bool otherWrites, bool iWrite) const;
  Status combine(const Value& a, const Value& b, int r, int c, uint32_t s, uint32_t tile,
                 Value* result) const;
  Status finalize(Value& value, int r, int c, uint32_t s, uint32_t tile) const;

  const std::vector<Plan>& plans_;
  int nranks_;
  uint32_t tiles_;
  size_t fifoDepth_;
  Collective collective_;
  bool checkParts_;
  std::vector<RankState> state_;
  std::vector<std::pair<int, int>> channelOwner_;  // Global channel -> (rank, channel).
  std::vector<Clock> clocks_;                      // Per global channel.
  std::unordered_map<uint64_t, std::deque<Message>> fifos_;
  std::unordered_map<uint64_t, Clock> snapshots_;  // (global channel, step, tile) -> clock.
};

}  // namespace grove::plan::verifier_model
