// How a plan runs in time: the one definition of tiles, step order, `after` dependencies and
// messages, shared by everything that interprets plans (the executor over memory, the
// simulator over a topology, the verifier over symbols).
//
// Every channel repeats its step list once per tile: step 0..n-1 of tile 0, then of tile 1,
// and so on, for as many tiles as its longest chunk needs. Tile t of a chunk of L elements
// is its elements [t * T, (t + 1) * T) ∩ [0, L) for a tile length T; a step exchanges one
// message per tile of its chunk and exactly one, possibly empty, message when the chunk is
// empty (plan.hpp), and does nothing on the tiles past its last message. A step whose
// `after` names another channel's step waits until that step has completed the same tile.
//
// What a chunk's length is depends on who asks: the executor and simulator count elements of
// real or modelled buffers, the verifier gives every chunk one symbol per replayed tile. So
// lengths come from the caller (a function of the step, or a value), never from here.
//
// Everything here is inline, allocation-free and free of virtual calls: the executor's loop
// runs through it on every step of every call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "plan/plan.hpp"

namespace grove::plan {

/// The chunk whose elements a step's messages carry, and so whose length sets how many
/// messages it exchanges (or, for kinds that exchange none, how many tiles it runs): the
/// source for kSend and kRecvReduceSend (their message is made from src) and for signal and
/// wait (the chunk they are about), the destination for every other kind.
inline const ChunkRef& messageChunk(const Step& step) {
  return step.op == OpKind::kSend || step.op == OpKind::kRecvReduceSend || signals(step.op)
             ? step.src
             : step.dst;
}

/// Messages a step moving a chunk of `length` elements exchanges with tiles of `tileElems`:
/// one per tile, and one (empty) when the chunk is empty.
inline uint64_t messagesFor(size_t length, size_t tileElems) {
  return length == 0 ? 1 : (length + tileElems - 1) / tileElems;
}

/// Whether a step over a chunk of `length` elements exchanges a message on `tile` (on later
/// tiles it is skipped: it neither waits nor moves data).
inline bool exchangesOn(size_t length, uint64_t tile, size_t tileElems) {
  return tile < messagesFor(length, tileElems);
}

/// Elements [begin, begin + length) of one tile of a chunk, relative to the chunk's start.
struct TileSpan {
  size_t begin = 0;
  size_t length = 0;
};

/// Tile `tile` of a chunk of `chunkLength` elements: empty (at the chunk's end) past it.
inline TileSpan tileSpan(size_t chunkLength, uint64_t tile, size_t tileElems) {
  const size_t begin = static_cast<size_t>(std::min<uint64_t>(tile * tileElems, chunkLength));
  return {begin, std::min(tileElems, chunkLength - begin)};
}

/// Tiles a channel repeats its steps for: the most messages any of its steps exchanges;
/// 0 for a channel without steps. `steps` is any range of step-like elements and
/// `chunkLength(element)` the length of that step's message chunk (messageChunk).
template <typename Steps, typename ChunkLength>
uint64_t channelTiles(const Steps& steps, const ChunkLength& chunkLength, size_t tileElems) {
  uint64_t tiles = 0;
  for (const auto& step : steps) tiles = std::max(tiles, messagesFor(chunkLength(step), tileElems));
  return tiles;
}

/// Where one channel stands: the step it runs next and the tile it runs it for.
struct ChannelCursor {
  uint64_t tile = 0;
  uint32_t step = 0;
  uint64_t tiles = 0;  ///< Tiles the channel repeats its steps for (channelTiles).

  /// Whether every step has run on every tile.
  bool done() const { return tile >= tiles; }

  /// Moves past the current step of a channel of `steps` steps: the next step, or step 0 of
  /// the next tile. Returns true when this finished the channel.
  bool next(size_t steps) {
    if (++step < steps) return false;
    step = 0;
    return ++tile == tiles;
  }

  /// Whether step `s` of tile `t` has completed (the cursor is past it).
  bool completed(uint64_t t, uint32_t s) const {
    return done() || tile > t || (tile == t && step > s);
  }

  /// Steps completed so far, over all tiles, by a channel of `steps` steps.
  uint64_t completedSteps(size_t steps) const { return tile * steps + step; }
};

/// Whether `step`'s dependency is met for `tile`: it has none, or the step it names has
/// completed that tile on its channel, whose cursor `cursorOf(channel)` returns. A step of
/// the step's own channel that comes before it (the only kind the verifier admits) has
/// always completed the current tile.
template <typename CursorOf>
bool dependencyMet(const Step& step, uint64_t tile, const CursorOf& cursorOf) {
  if (step.after.channel < 0) return true;
  const ChannelCursor& other = cursorOf(step.after.channel);
  return other.completed(tile, static_cast<uint32_t>(step.after.step));
}

}  // namespace grove::plan
