// The direct path: single-host collectives that read the peers' buffers in place.
//
// Through FIFOs every byte is copied twice (into a slot by its sender, out of it by its
// receiver). When every peer lives on this host, a rank can instead read its peers' buffers
// itself (transport/peer_memory.hpp: mapped for grove allocations and threads, copied once by
// the kernel otherwise). A call then runs in three rounds of small FIFO messages:
//  1. hello: every rank sends every peer the descriptors of its buffers, and whether it can
//     read all of its peers. If any rank cannot, every rank learns it from the same hellos
//     and the call runs its plan instead (declined()), so the choice is the same everywhere.
//  2. the work, each rank writing only its own output:
//     * allreduce, in rounds of n x 512 KiB: rank r reduces share r of the round's elements
//       from every rank's input (in rank order, so the result does not depend on who
//       reduces), tells its peers ("reduced"), and copies share q from rank q's output as
//       soon as q says it is reduced — while it is still in q's cache;
//     * reducescatter: rank r reduces block r from every rank's input;
//     * allgather: rank r copies each rank's input into block q of its output;
//     * broadcast: every rank copies the root's input.
//  3. done: every rank tells its peers it has finished reading their buffers and returns
//     once all have said so — after that a caller may overwrite its buffers.
// Each input is thus read once and each output written once: for allreduce each rank reads
// n shares and writes one, then reads and writes n - 1 (the issue's "reduce your 1/n share
// from all peers, then gather the shares").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/executor.hpp"  // Progress
#include "grove/error.hpp"
#include "grove/types.hpp"
#include "plan/plan.hpp"
#include "transport/transport.hpp"

namespace grove::exec {

/// The collectives the direct path runs.
bool directSupports(plan::Collective collective);

/// One call: this rank's buffers and arguments.
struct DirectCall {
  plan::Collective collective = plan::Collective::kAllReduce;
  int rank = 0;
  int nranks = 1;
  int root = -1;
  size_t count = 0;  ///< The call's count (per block for allgather and reducescatter).
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  const char* input = nullptr;  ///< nullptr where this rank has none (broadcast non-roots).
  char* output = nullptr;
  transport::BufferDescriptor inputDescriptor;  ///< As peers need them (core/memory).
  transport::BufferDescriptor outputDescriptor;
  transport::MessageTag tag;  ///< The call's tag; its algorithm is set to "direct".
  /// GROVE_DIRECT=2: also run direct when a buffer must be copied by the kernel (ordinary
  /// memory of another process); otherwise such calls decline and run their plans.
  bool allowCopies = false;
  /// At least stagingBytes(): where pieces read from ordinary peer memory land before they
  /// are reduced.
  char* staging = nullptr;
};

class DirectExecution {
 public:
  /// Bytes of staging memory a call needs.
  static size_t stagingBytes();

  /// Prepares a call (no allocation once this object has run a call of as many ranks).
  void start(const DirectCall& call, transport::Transport& transport);
  /// Does everything that can be done now: kDone when finished (or declined), kFailed with
  /// error()/errorCode() set, kBlocked while waiting for a peer's message or FIFO space.
  Progress advance();

  /// The hellos showed a rank that cannot read its peers: nothing was read or written, and
  /// the call must run its plan.
  bool declined() const { return declined_; }
  /// Why, once declined().
  std::string_view declineReason() const { return declineReason_; }
  /// How many peers' buffers were read through the kernel instead of mapped (0 when every
  /// buffer was mapped), once past the hellos.
  int copiedPeers() const { return copiedPeers_; }
  const std::string& error() const { return error_; }
  ErrorCode errorCode() const { return errorCode_; }
  /// "receiving from rank 2 (direct: waiting for its hello)", for timeout messages.
  std::string waitDescription() const;

 private:
  // kFinishing: "done" sent and awaited; kFinished: returned Progress::kDone.
  enum class Phase { kHello, kRounds, kFinishing, kFinished };
  struct Peer {
    transport::Fifo* send = nullptr;
    transport::Fifo* recv = nullptr;
    transport::BufferDescriptor input;  ///< From its hello.
    transport::BufferDescriptor output;
    const char* mappedInput = nullptr;  ///< nullptr: read it with PeerMemory::read.
    const char* mappedOutput = nullptr;
    uint32_t flags = 0;     ///< From its hello.
    uint32_t sent = 0;      ///< Messages of this call sent to it.
    uint32_t received = 0;  ///< Messages of this call received from it.
  };

  bool sendToAll(uint32_t message);
  /// Takes the next message from `q` if there is one and it is the one the protocol expects
  /// next; false when none is there or (error_ set) when it is wrong.
  bool receive(int q);
  bool receiveHellos();
  /// Decides whether the call runs direct (declined_), then maps what it reads of each peer.
  void resolvePeers();
  /// Rank q's buffer mapped here, or nullptr when it must be copied (or is not read:
  /// `needed` is 0). Checks it holds `needed` bytes.
  const char* resolve(int q, const transport::BufferDescriptor& buffer, size_t needed);
  /// What reading peers' memory found: every read succeeded, or rank `unreadable`'s memory
  /// could not be read (its process is gone, or it left the call on a failure and freed its
  /// buffer). Not an error of the call by itself: see blockedOnUnreadable().
  struct [[nodiscard]] ReadStatus {
    int unreadable = -1;
    bool ok() const { return unreadable < 0; }
  };

  /// to[0, end - begin) = the reduction of elements [begin, end) of every rank's input.
  ReadStatus reduceShare(size_t begin, size_t end, char* to);
  /// Copies [offset, offset + bytes) of rank q's input (or output) into `to`.
  ReadStatus copyFrom(int q, bool output, size_t offset, size_t bytes, char* to);
  /// Allreduce's rounds; true once all are done (false with unreadablePeer_ set when a
  /// peer's memory could not be read).
  bool advanceRounds();
  /// Elements [*begin, *end) of the call: rank q's share of allreduce round `round`.
  void shareOfRound(uint32_t round, int q, size_t* begin, size_t* end) const;
  ReadStatus work();
  /// A peer's memory could not be read: report "blocked" so that the communicator's wait
  /// finds the failure and fails the call naming its origin, exactly as when a message from
  /// the peer never comes; after kUnreadableGrace, fail with the read error itself.
  Progress blockedOnUnreadable(int peer);
  void fail(ErrorCode code, std::string message);

  DirectCall call_;
  transport::PeerMemory* memory_ = nullptr;
  transport::Transport* transport_ = nullptr;  ///< For failedPeer() before finishing.
  size_t elementBytes_ = 1;
  std::vector<Peer> peers_;  ///< By rank; this rank's entry is unused.
  Phase phase_ = Phase::kHello;
  size_t roundElems_ = 0;  ///< Allreduce: elements per round (all shares).
  uint32_t rounds_ = 0;    ///< Allreduce: rounds (messages 1..rounds_ say "reduced").
  uint32_t round_ = 0;
  bool roundReduced_ = false;  ///< This rank's share of round_ is reduced.
  bool declined_ = false;
  std::string_view declineReason_;
  int copiedPeers_ = 0;
  int waitingFor_ = -1;
  int unreadablePeer_ = -1;  ///< Set by advanceRounds() when a read failed.
  /// When a peer's buffer first could not be read (see ReadStatus), if it happened.
  std::optional<std::chrono::steady_clock::time_point> unreadableSince_;
  std::string error_;
  ErrorCode errorCode_ = ErrorCode::kInvalidUsage;
};

}  // namespace grove::exec
