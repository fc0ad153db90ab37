// The plan: one rank's work for one call shape, as plain data.
//
// A plan is what an algorithm produces and what the executor runs; the verifier replays the
// plans of all ranks symbolically and the printer shows them. Nothing here touches memory or
// sockets: a plan speaks of chunks, not bytes.
//
// Buffers and chunks. A call has three buffers: Input (the caller's send buffer), Output
// (the caller's receive buffer) and Scratch (grove's own). Each buffer is a sequence of
// equal-sized *blocks* (for allreduce one block of `count` elements; for allgather's output
// nranks blocks of `count`), and each block is split into `chunksPerBlock` *chunks*. Chunk
// index c of a buffer is part (c % chunksPerBlock) of block (c / chunksPerBlock). Part p of
// a block of E elements covers [p * ceil(E / k), min((p + 1) * ceil(E / k), E)) with k =
// chunksPerBlock, so chunks can be empty when E < k.
//
// Tiles. The executor repeats every channel's step list once per tile: tile t of a chunk is
// its elements [t * T, (t + 1) * T) for a tile length T chosen by the executor. A step
// exchanges one message per tile of its chunk (and exactly one, possibly empty, message
// when the chunk is empty), so both ends of a connection always agree on the messages.
//
// Connections. A step that sends to peer p on lane l writes into the FIFO (me -> p, l); a
// step that receives from p on lane l reads the FIFO (p -> me, l). Messages on one FIFO are
// delivered in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grove/types.hpp"
#include "plan/call_shape.hpp"

namespace grove::topo {
class Topology;
}

namespace grove::plan {

enum class BufferKind : uint8_t { kInput, kOutput, kScratch };

/// One chunk of one buffer.
struct ChunkRef {
  BufferKind buffer = BufferKind::kInput;
  uint32_t chunk = 0;

  friend bool operator==(const ChunkRef&, const ChunkRef&) = default;
};

/// What a step does. "incoming" is the next message from `recvPeer`; "⊕" is the call's
/// reduction operator.
///
/// One-sided kinds (the last four) read peers' buffers in place instead of receiving their
/// data (transport/peer_memory.hpp; MSCCL++'s get is the model). A plan with any of them is
/// *one-sided* (Plan::oneSided): before its first step every rank tells every other where its
/// Input and Output are (the prologue), and after its last step every rank waits until every
/// other has finished reading (the epilogue), so a buffer is read only while its owner is in
/// the call. Inside the call, `signal` and `wait` order a peer's reads after the writes they
/// need and before the writes that would clobber what they read: they exchange empty
/// messages, one per tile of `src` (the chunk they are about: for signal the chunk this rank
/// made ready, for wait the peer's chunk to be read next); nothing is read or written.
enum class OpKind : uint8_t {
  kSend,                ///< message to sendPeer = src
  kRecv,                ///< dst = incoming
  kRecvReduce,          ///< dst = dst ⊕ incoming
  kCopy,                ///< dst = src
  kReduce,              ///< dst = dst ⊕ src
  kRecvReduceSend,      ///< message to sendPeer = src ⊕ incoming
  kRecvCopySend,        ///< dst = incoming; message to sendPeer = incoming
  kRecvReduceCopy,      ///< dst = src ⊕ incoming
  kRecvReduceCopySend,  ///< dst = src ⊕ incoming; message to sendPeer = dst
  kGet,                 ///< dst = src of rank recvPeer, read in place
  kReduceAll,           ///< dst = ⊕ over every rank q, in rank order, of src of rank q
  kSignal,              ///< empty message to sendPeer: src is ready here
  kWait,                ///< takes the empty message from recvPeer that says its src is ready
};

inline constexpr int kOpKindCount = 13;

/// Short name as printed in plans: "send", "recv", "rr", "copy", "reduce", "rrs", "rcs",
/// "rrc", "rrcs", "get", "rall", "signal", "wait".
const char* toString(OpKind op);

/// Which operands a kind uses. receives/sends: it exchanges a message (signal and wait
/// included, whose messages are empty); readsSrc: it names `src` (for signal and wait only
/// to count their tiles); readsPeer: `src` is read from rank recvPeer's buffer (get);
/// readsEveryRank: `src` is read from every rank's buffer, this rank's own included (rall).
/// (Inline: the executor asks them of every step it fires.)
constexpr bool receives(OpKind op) {
  switch (op) {
    case OpKind::kRecv:
    case OpKind::kRecvReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvCopySend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
    case OpKind::kWait:
      return true;
    default:
      return false;
  }
}

constexpr bool sends(OpKind op) {
  switch (op) {
    case OpKind::kSignal:
    case OpKind::kSend:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvCopySend:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

constexpr bool readsSrc(OpKind op) {
  switch (op) {
    case OpKind::kGet:
    case OpKind::kReduceAll:
    case OpKind::kSignal:
    case OpKind::kWait:
    case OpKind::kSend:
    case OpKind::kCopy:
    case OpKind::kReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

constexpr bool writesDst(OpKind op) {
  switch (op) {
    case OpKind::kGet:
    case OpKind::kReduceAll:
    case OpKind::kRecv:
    case OpKind::kRecvReduce:
    case OpKind::kCopy:
    case OpKind::kReduce:
    case OpKind::kRecvCopySend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

constexpr bool reduces(OpKind op) {
  switch (op) {
    case OpKind::kReduceAll:
    case OpKind::kRecvReduce:
    case OpKind::kReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

constexpr bool readsPeer(OpKind op) { return op == OpKind::kGet; }

constexpr bool readsEveryRank(OpKind op) { return op == OpKind::kReduceAll; }
/// Whether the kind reads peers' memory (get, rall): what makes a plan one-sided.
inline bool oneSided(OpKind op) { return readsPeer(op) || readsEveryRank(op); }
/// Whether the kind names a peer in recvPeer (it receives from it or reads from it).
inline bool namesRecvPeer(OpKind op) { return receives(op) || readsPeer(op); }
/// Whether its messages are empty (signal, wait): they order, they carry no data.
inline bool signals(OpKind op) { return op == OpKind::kSignal || op == OpKind::kWait; }

/// Reference to a step of a channel of the same rank's plan.
struct StepRef {
  int32_t channel = -1;  ///< -1: no dependency.
  int32_t step = -1;
};

struct Step {
  OpKind op = OpKind::kSend;
  int32_t recvPeer = -1;  ///< Rank received from, for kinds that receive.
  int32_t sendPeer = -1;  ///< Rank sent to, for kinds that send.
  ChunkRef src;           ///< Read operand, for kinds that read one.
  ChunkRef dst;           ///< Written operand, for kinds that write one.
  uint16_t lane = 0;      ///< Connection lane (see file comment).
  /// The value this step produces is the complete reduction: apply the operator's final
  /// transform (kAvg divides by the number of ranks). Meaningless for data movement.
  bool finalize = false;
  /// Wait until this step of another channel has completed the same tile.
  StepRef after;
};

/// An ordered list of steps; channels of one plan run concurrently.
struct Channel {
  std::vector<Step> steps;
};

/// Tile of one-sided plans, in bytes (the executor runs them in tiles of this size, the
/// simulator models them so). Allreduce's peers copy each reduced tile while it is still in
/// the cache of the rank that reduced it (docs/tuning.md, "direct"), so tiles are larger
/// than FIFO slots but well below a cache's size.
inline constexpr size_t kOneSidedTileBytes = 512 * 1024;

/// One rank's plan for one call shape.
struct Plan {
  Collective collective = Collective::kAllReduce;
  std::string algorithm;  ///< Name of the generator that built it.
  int rank = 0;
  int nranks = 1;
  int root = -1;  ///< -1 when the collective has no root.

  uint32_t chunksPerBlock = 1;
  uint32_t inputBlocks = 0;
  uint32_t outputBlocks = 0;
  uint32_t scratchBlocks = 0;

  std::vector<Channel> channels;

  /// The call reads peers' memory (see OpKind): every rank, whether or not its own steps
  /// read (a broadcast's root does not), runs between a prologue that exchanges buffer
  /// descriptors and an epilogue that waits for every reader. Set by the generator; the same
  /// on every rank, and set wherever a step is one-sided (the verifier checks both).
  bool oneSided = false;

  /// Whether some step of this rank reads peers' memory.
  bool hasOneSidedSteps() const {
    for (const Channel& channel : channels) {
      for (const Step& step : channel.steps) {
        if (plan::oneSided(step.op)) return true;
      }
    }
    return false;
  }

  uint32_t chunks(BufferKind buffer) const {
    switch (buffer) {
      case BufferKind::kInput:
        return inputBlocks * chunksPerBlock;
      case BufferKind::kOutput:
        return outputBlocks * chunksPerBlock;
      case BufferKind::kScratch:
        return scratchBlocks * chunksPerBlock;
    }
    return 0;
  }
};

/// A call placed on one rank of a communicator: its shape (what every rank agrees on) and
/// what the generators need to know of where it runs. allToAllv's shape carries, as its
/// count, the elements its send buffer spans (its plans' cost models use it).
struct PlanRequest : CallShape {
  int nranks = 1;
  int rank = 0;
  /// The communicator's topology (GROVE_TOPO_FILE), or nullptr. Topology-aware generators
  /// (packed trees) apply only when it is set; it stays the same for a communicator's life,
  /// so plans built from it may be cached per (algorithm, root) like any other.
  const topo::Topology* topology = nullptr;
  /// Every rank can read its peers' buffers in place (all on one host, transport with peer
  /// memory) and one-sided plans are allowed (GROVE_DIRECT): what one-sided generators need.
  bool peerMemory = false;
  /// The smallest call (larger of send and receive buffer, in bytes) that one-sided plans
  /// take (GROVE_DIRECT_MIN_BYTES): below it the FIFOs' pipelined plans are as fast.
  size_t oneSidedMinBytes = 0;
};

}  // namespace grove::plan
