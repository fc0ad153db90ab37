// The executor runs one rank's plan over real memory and a transport, without blocking.
//
// A plan is bound once per call shape (its steps resolved to FIFOs: BoundPlan, cached by the
// communicator); each call then starts an Execution over that binding and the caller's
// buffers. advance() fires every step that can fire now and returns; the caller decides
// when to spin and when to sleep. Channels progress independently, each repeating its step
// list tile after tile, so tiles pipeline through the FIFOs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/one_sided.hpp"
#include "exec/trace_buffer.hpp"
#include "grove/error.hpp"
#include "grove/types.hpp"
#include "plan/cursor.hpp"
#include "plan/layout.hpp"
#include "plan/plan.hpp"
#include "transport/transport.hpp"

namespace grove::exec {

class LinkCodec;

/// A step with its connections resolved.
struct BoundStep {
  plan::Step step;
  transport::Fifo* recv = nullptr;
  transport::Fifo* send = nullptr;
};

/// A plan with every step bound to this rank's FIFOs.
struct BoundPlan {
  plan::Plan plan;
  std::vector<std::vector<BoundStep>> channels;
  // One-sided plans (Plan::oneSided): the transport (peer memory, failures), the lane-0
  // FIFOs to and from every peer (prologue and epilogue; nullptr for this rank), and which
  // kinds of buffers this rank reads, per peer and of any peer (bit 1 << BufferKind).
  bool oneSided = false;
  transport::Transport* transport = nullptr;
  std::vector<transport::Fifo*> peerSend;
  std::vector<transport::Fifo*> peerRecv;
  std::vector<uint8_t> peerReads;
  uint8_t readsOfPeers = 0;

  /// Resolves every step's peers through `transport` (connecting on first use).
  static BoundPlan bind(plan::Plan plan, transport::Transport& transport);
  /// Resolves `plan` (changed in place) again, reusing this binding's storage: for plans
  /// built per call (point-to-point batches).
  void rebind(transport::Transport& via);
};

/// The memory and arithmetic of one call.
struct CallBuffers {
  BufferView input;
  BufferView output;
  BufferView scratch;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int nranks = 1;
  size_t tileElems = 1;  ///< Elements per tile (slot bytes / element size).
  /// GROVE_TRACE: where to record every fired step, or nullptr (tracing off).
  TraceBuffer* trace = nullptr;
  uint64_t sequence = 0;  ///< The call's sequence number, for trace records.
  /// The tag every message of this call carries; received messages must carry the same
  /// (see MessageTag). A tag whose `call` is 0 (untagged: tests of the executor alone) is
  /// not checked.
  transport::MessageTag tag;
  /// Point-to-point plans: the tag of each message chunk (indexed by the chunk a step's
  /// messages carry, plan::messageChunk), used instead of `tag` and always compared: each
  /// transfer carries its own count and type.
  const transport::MessageTag* chunkTags = nullptr;
  /// GROVE_CHECKSUM: sent messages carry a checksum of their payload and received ones are
  /// verified against theirs.
  bool checksum = false;
  /// GROVE_COMPRESS: encodes messages to the peers whose links compress and decodes every
  /// compressed message received (exec/link_codec.hpp); nullptr when no link of this rank
  /// can carry compressed messages.
  LinkCodec* codec = nullptr;
  /// GROVE_FAULT_DELAY_US (tests): sleep this long before committing each sent message.
  std::chrono::microseconds faultDelay{0};
  // One-sided plans (exec/one_sided.hpp): this rank's buffers as its peers find them
  // (core/memory.cpp), whether it runs over kernel copies of ordinary peer memory, and
  // OneSided::stagingBytes() of staging memory.
  transport::BufferDescriptor inputDescriptor;
  transport::BufferDescriptor outputDescriptor;
  bool allowCopies = false;
  char* staging = nullptr;
};

/// What advance() observed.
enum class Progress { kMoved, kBlocked, kDone, kFailed };

/// Where a blocked execution waits, for timeout messages.
struct WaitPoint {
  int channel = -1;
  int step = -1;
  uint64_t tile = 0;
  int peer = -1;
  bool sending = false;
  /// Set where the execution waits outside a step (a one-sided plan's prologue or
  /// epilogue, or a peer's memory that cannot be read): what it waits for.
  const char* what = nullptr;
};

class Execution {
 public:
  /// Prepares to run `plan` over `buffers` (no allocation when reused with the same number
  /// of channels). Both must stay valid and unchanged until the execution is done or
  /// started again: the execution refers to them.
  void start(const BoundPlan& plan, const CallBuffers& buffers);

  /// Fires every step that can fire now.
  Progress advance();

  bool done() const { return finished_; }
  /// A one-sided plan's prologue showed that some rank cannot read what the plan reads
  /// (exec/one_sided.hpp): nothing was read or written, advance() returned kDone, and the
  /// call must run its fallback plan.
  bool declined() const { return isOneSided_ && oneSided_.declined(); }
  /// Why, once declined().
  std::string_view declineReason() const { return oneSided_.declineReason(); }
  /// Message of the failure after advance() returned kFailed.
  const std::string& error() const { return error_; }
  /// Its code: kInvalidUsage (the ranks' calls or buffers disagree) or kSystemError (a
  /// message arrived corrupted).
  ErrorCode errorCode() const { return errorCode_; }
  /// The first step this execution is blocked on (valid after kBlocked).
  WaitPoint waitPoint() const;

 private:
  // A channel's place in the plan (plan/cursor.hpp) and its trace stamps.
  struct Cursor : plan::ChannelCursor {
    // Tracing only: when the current step became current (0: not yet stamped) and when the
    // latest attempt to fire it began.
    int64_t readyNs = 0;
    int64_t attemptNs = 0;
  };
  // kUnreadable: a peer's memory could not be read (OneSided::unreadable decides).
  enum class StepResult { kFired, kBlocked, kFailed, kUnreadable };
  enum class Stage { kPrologue, kSteps, kEpilogue };

  StepResult fire(const BoundStep& bound, uint64_t tile);
  void traceFired(size_t channel, Cursor& cursor, const plan::Step& step);
  size_t messageLength(const plan::Step& step) const;
  char* address(const plan::ChunkRef& ref, uint64_t tile, size_t* elements) const;
  /// Byte offset of tile `tile` of chunk `ref` in its buffer (the same on every rank).
  size_t offsetOf(const plan::ChunkRef& ref, uint64_t tile) const;
  Progress advanceSteps();
  StepResult fireOneSided(const plan::Step& step, uint64_t tile, const char* src, char* dst,
                          size_t elements);

  const BoundPlan* plan_ = nullptr;
  const CallBuffers* buffers_ = nullptr;  ///< The caller's (not copied: start is per call).
  size_t elementBytes_ = 1;
  std::vector<Cursor> cursors_;
  int remainingChannels_ = 0;
  bool tagged_ = false;  ///< buffers_.tag is set: received tags are compared with it.
  bool finished_ = false;
  bool isOneSided_ = false;
  bool unreadable_ = false;  ///< The current blocked step waits for a peer's memory.
  Stage stage_ = Stage::kSteps;
  OneSided oneSided_;
  std::string error_;
  ErrorCode errorCode_ = ErrorCode::kInvalidUsage;
};

}  // namespace grove::exec
