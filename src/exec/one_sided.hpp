// What a one-sided plan needs around and inside its steps (plan.hpp: get, rall, signal,
// wait): the prologue that tells every peer where this rank's buffers are, the peers' buffers
// mapped (or read through the kernel), the reads themselves, and the epilogue that keeps
// every buffer in place until its last reader is done.
//
// Prologue. Every rank sends every peer a hello: its Input and Output descriptors
// (core/memory.cpp), whether it can read all its peers, whether it allows kernel copies of
// ordinary memory, and which kinds of its peers' buffers its plan reads. Every rank sees the
// same hellos, its own included, so every rank reaches the same verdict: the call runs, or it
// is *declined* (nothing read, nothing written) and the communicator runs the call's fallback
// plan instead. It declines when a rank cannot read its peers, or when a buffer some rank
// reads is ordinary memory of another process (only grove::allocate's can be mapped) and not
// every rank allows copying it through the kernel (GROVE_DIRECT=2; always for allgather and
// broadcast, where kernel copies still beat the FIFOs).
//
// Epilogue. After its last step every rank tells every peer "done" and returns once all have
// said so: after that a caller may overwrite or free its buffers.
//
// A peer's memory that cannot be read (its process is gone, or it left the call on a failure
// and freed its buffer) is not an error by itself: the step reports itself blocked so that the
// communicator's wait finds the failure and fails the call naming its origin, exactly as when
// a message from the peer never comes; only after kUnreadableGrace does the read error itself
// fail the call.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grove/error.hpp"
#include "grove/types.hpp"
#include "plan/plan.hpp"
#include "transport/transport.hpp"

namespace grove::exec {

struct BoundPlan;
struct CallBuffers;
enum class Progress;

using plan::kOneSidedTileBytes;

class OneSided {
 public:
  /// Bytes of staging memory (CallBuffers::staging) a call needs: where pieces read from
  /// ordinary peer memory land before they are reduced.
  static size_t stagingBytes();

  /// Prepares a call of `plan` (a one-sided plan) over `buffers`.
  void start(const BoundPlan& plan, const CallBuffers& buffers);
  /// Sends and takes the hellos: kDone once every peer's is in and the verdict is reached
  /// (declined() tells which), kMoved or kBlocked while waiting (whether a message went or
  /// came this time), kFailed with error() set.
  Progress prologue();
  /// Sends and takes the "done" messages: kDone once every peer has said it and no peer is
  /// marked failed, kMoved or kBlocked while waiting, kFailed with error() set.
  Progress epilogue();

  bool declined() const { return declined_; }
  std::string_view declineReason() const { return declineReason_; }
  /// How many peers' buffers are read through the kernel instead of mapped.
  int copiedPeers() const { return copiedPeers_; }

  /// Copies `bytes` bytes at `offset` of peer `peer`'s buffer `buffer` into `to`; false when
  /// the peer's memory could not be read (see unreadable()).
  bool get(int peer, plan::BufferKind buffer, size_t offset, size_t bytes, char* to);
  /// to[0, elements) = ⊕ over every rank q in rank order of `elements` elements at byte
  /// `offset` of q's buffer `buffer` (this rank's own at `own`), finalized when `finalize`;
  /// false when a peer's memory could not be read.
  bool reduceAll(plan::BufferKind buffer, size_t offset, size_t elements, const char* own, char* to,
                 bool finalize);
  /// After get or reduceAll returned false: kBlocked during the grace period (waitingFor()
  /// names the peer), then kFailed with the read error.
  Progress unreadable();

  const std::string& error() const { return error_; }
  ErrorCode errorCode() const { return errorCode_; }
  /// The peer the prologue, the epilogue or a read waits for (-1: none), and what for.
  int waitingFor() const { return waitingFor_; }
  const char* waitingForWhat() const;

 private:
  enum class Phase { kPrologue, kSteps, kEpilogue, kFinished };
  struct Peer {
    transport::BufferDescriptor input;  ///< From its hello.
    transport::BufferDescriptor output;
    const char* mappedInput = nullptr;  ///< nullptr: read it with PeerMemory::read.
    const char* mappedOutput = nullptr;
    uint32_t flags = 0;  ///< From its hello.
    bool helloSent = false;
    bool helloTaken = false;
    bool doneSent = false;
    bool doneTaken = false;
  };

  /// One round of the prologue's hellos (done false) or the epilogue's "done" messages:
  /// sends what is still unsent, takes what has arrived; kDone once every peer's is in.
  Progress exchange(bool done);
  bool sendToAll(bool done);
  /// Takes peer q's next message if it is there and is the expected kind.
  bool take(int q, bool done);
  void decide();
  const char* resolve(int q, const transport::BufferDescriptor& buffer, size_t needed);
  void fail(ErrorCode code, std::string message);

  const BoundPlan* plan_ = nullptr;
  const CallBuffers* buffers_ = nullptr;
  transport::PeerMemory* memory_ = nullptr;
  size_t elementBytes_ = 1;
  std::vector<Peer> peers_;  ///< By rank; this rank's entry is unused.
  Phase phase_ = Phase::kPrologue;
  bool declined_ = false;
  std::string_view declineReason_;
  int copiedPeers_ = 0;
  int waitingFor_ = -1;
  bool moved_ = false;  ///< The prologue or epilogue sent or took a message this time.
  int unreadablePeer_ = -1;
  std::optional<std::chrono::steady_clock::time_point> unreadableSince_;
  std::string error_;
  ErrorCode errorCode_ = ErrorCode::kInvalidUsage;
};

}  // namespace grove::exec
