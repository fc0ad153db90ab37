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
// still needed shows up as wrong contributions. A copy whose src and dst are one cell (and
// that does not finalize) neither reads nor writes: the executor skips it.
//
// Channels of one rank run concurrently, so two steps of different channels touching the
// same chunk must be ordered by a happens-before path (program order, `after`, messages).
// Vector clocks over all channels of all ranks detect unordered pairs (a write with any other
// access): such a plan is racy even if this replay's schedule happens to give the right sum.
//
// One-sided steps (verifier_one_sided.cpp). `get` and `rall` read rank q's cell of their src
// chunk in place (the same cell in-place aliasing maps Input and Output chunks to) and write
// the local dst; rall's value is ⊕ over every rank's src in rank order (its own read locally),
// with the usual ⊕ and finalize rules. `signal` sends an empty message (the sender's clock, no
// value) and `wait` takes it and merges the clock, like send/recv without values; a wait that
// takes a data message, or a receive that takes a signal, is an error. The executor runs
// one-sided plans between a prologue (every rank hands every other its buffer descriptors
// before its first step) and an epilogue (every rank waits until every other has finished all
// its steps before returning), so every rank's initial Input happens-before every step of
// every rank, and every step happens-before any rank returns. Inside the call only messages
// (signal/wait and ordinary ones), program order and `after` order steps across ranks, and a
// remote read by rank r of rank q's cell X is valid only if
//  (a) q's last write of X, if any (the initial Input needs none), happens-before the read;
//  (b) every later write of X by q happens-after the read.
// Both are checked in whatever order this replay runs the two steps: at a remote read, (a)
// against the cell's last writer (and a remote read of a still undefined cell fails, naming a
// step of q that writes X if there is one: no write can be ordered before it); at a write, (b)
// against every remote read of the cell since the previous write, which the cell records with
// the reader's channel, clock and step.
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
    bool empty = false;  // A signal's message: it orders, it carries no value.
  };

  // A read of a cell by another rank's step (get, rall): its global channel, clock and step.
  struct RemoteRead {
    int32_t channel = -1;
    uint32_t clock = 0;
    int32_t step = -1;
  };

  // Who last wrote a cell (global channel, that channel's clock) and who read it since: the
  // owner's channels (reads) and other ranks' steps (remoteReads).
  struct Access {
    int32_t writer = -1;
    uint32_t writerClock = 0;
    int32_t writerStep = -1;
    std::vector<std::pair<int32_t, uint32_t>> reads;
    std::vector<RemoteRead> remoteReads;
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

  // One-sided steps (verifier_one_sided.cpp).
  /// Whether `step` is a copy the executor skips: src and dst are one cell, no finalize.
  bool skipsCopy(int r, const Step& step) const;
  /// The value of a get or rall of rank r, read from the peers' cells.
  Status readPeers(int r, int c, uint32_t s, uint32_t tile, const Step& step, Value* value);
  /// Rank r's read of rank q's `ref` (as r names it): rule (a), then records the read.
  Status remoteRead(int r, int c, uint32_t s, uint32_t tile, int q, const ChunkRef& ref,
                    Value* value);
  /// Rule (b) at rank r's write of `ref`: every remote read since the last write precedes it.
  Status checkRemoteReaders(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref,
                            const Access& access) const;

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
