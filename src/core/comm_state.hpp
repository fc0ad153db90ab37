// The state behind a Communicator handle: transport, configuration, plan caches, the queue
// of operations in flight and the waiting policy (spin briefly, then sleep on the doorbell).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "algo/registry.hpp"
#include "core/call_guard.hpp"
#include "core/config.hpp"
#include "core/operation.hpp"
#include "core/trace.hpp"
#include "exec/executor.hpp"
#include "exec/link_codec.hpp"
#include "topo/topology.hpp"
#include "transport/transport.hpp"

namespace grove::detail {

class CommState {
 public:
  /// `topology`: the communicator's topology when the caller already has it (the process
  /// bootstrap, split); otherwise it is loaded from config.topoFile (GROVE_TOPO_FILE).
  CommState(std::unique_ptr<transport::Transport> transport, Config config,
            std::shared_ptr<const topo::Topology> topology = nullptr);
  ~CommState();
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Config& config() const { return config_; }
  transport::Transport& transport() { return *transport_; }
  /// The communicator's topology (GROVE_TOPO_FILE), or nullptr; fixed for its life.
  const topo::Topology* topology() const { return topology_.get(); }

  /// An idle operation to fill in (recycled: no allocation once warm).
  std::shared_ptr<Operation> newOperation();

  /// The algorithm for a call shape: `forced` (a call option) or GROVE_ALGO or the cheapest.
  /// Cached per shape; the choice is logged at GROVE_DEBUG=INFO the first time. The
  /// communicator's topology is used whatever `request.topology` says.
  const algo::Algorithm& chooseAlgorithm(const plan::PlanRequest& request, std::string_view forced);
  /// `algorithm`'s plan for this rank bound to this rank's connections; built and cached on
  /// first use, and proved by the verifier first (all ranks' plans replayed) when
  /// GROVE_VERIFY=1.
  const exec::BoundPlan& boundPlan(const algo::Algorithm& algorithm,
                                   const plan::PlanRequest& request);

  /// Queues `op` (or holds it until groupEnd inside a group). Returns the operation whose
  /// completion means `op` is complete: `op` itself, or the group's point-to-point batch it
  /// was merged into.
  std::shared_ptr<Operation> submit(std::shared_ptr<Operation> op);
  /// Advances queued operations until `op` finishes or `until` passes; false on the latter.
  bool waitFor(Operation& op, std::optional<std::chrono::steady_clock::time_point> until);
  /// Advances queued operations without blocking; true if anything moved.
  bool poll();
  /// poll(), then fails the queue if a peer failed or the oldest operation passed its
  /// deadline (what Request::test() does).
  void test(Operation& op);

  // Groups.
  void groupStart();
  /// Ends the outermost group: queues the held operations (point-to-point ones merged into
  /// one concurrent batch); returns the operation that completes last, or nullptr.
  std::shared_ptr<Operation> groupEnd();
  bool inGroup() const { return groupDepth_ > 0; }

  /// Marks this rank failed: in-flight and later calls fail, peers are told.
  void abort();
  /// From a thread that is not inside the communicator (any thread): asks the thread inside
  /// to abort() it, which it does where it waits (waitFor checks every few microseconds of
  /// polling and is woken from its sleep). Communicator::abort uses it.
  void requestAbort();
  bool abortRequested() const { return abortRequested_.load(std::memory_order_acquire); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  /// Like abort() (in-flight and later calls fail, peers are told) with "revoked" as the
  /// reason; the communicator can still be shrunk (Communicator::shrink). Never blocks.
  void revoke();
  bool revoked() const { return revoked_.load(std::memory_order_acquire); }
  /// Safe from any thread (Communicator::getAsyncError may be polled by a watchdog).
  ErrorCode asyncError() const { return asyncError_.load(std::memory_order_relaxed); }

  /// Which thread is inside this communicator (CallGuard).
  InUseMarker& inUse() { return inUse_; }
  const InUseMarker& inUse() const { return inUse_; }

  /// The algorithm (or "direct") of the latest collective that completed; empty before one.
  std::string_view lastAlgorithm() const { return lastAlgorithm_; }

  /// Only the thread inside the communicator advances it (a plain load and store); others
  /// read it for a CallGuard before they know whether they may enter, hence the atomic.
  uint64_t nextSequence() {
    const uint64_t next = sequence_.load(std::memory_order_relaxed) + 1;
    sequence_.store(next, std::memory_order_relaxed);
    return next;
  }
  /// The number the next operation will get (what a CallGuard quotes for a call).
  uint64_t upcomingSequence() const { return sequence_.load(std::memory_order_relaxed) + 1; }
  /// Numbers collective calls (not send/recv, which involve only some ranks): every rank
  /// gives the same call the same number, which its messages carry (MessageTag::call).
  uint64_t nextCollective() { return ++collectives_; }
  uint64_t nextSplitSequence() { return ++splitSequence_; }
  /// Scratch memory of at least `bytes`, grown (and pre-faulted) only when needed.
  char* scratch(size_t bytes);

 private:
  void start(Operation& op);
  void startPlan(Operation& op);
  exec::Progress advance(Operation& op);
  /// Starts `op`'s fallback plan instead of its declined one-sided plan.
  void runFallback(Operation& op);
  void fail(Operation& op, ErrorCode code, const std::string& message);
  /// GROVE_CHECK: the signatures `check` gathered differ (`message` says how): fails it and
  /// the call it checked on this rank without aborting — every rank sees the same
  /// signatures and fails the same way, so no message of the call is ever sent.
  void failSignatureCheck(Operation& check, const std::string& message);
  void failQueued(ErrorCode code, const std::string& reason);
  /// Sets spin_ and yieldWhileSpinning_ from the configuration and the CPUs the
  /// host's ranks have (comm_wait.cpp).
  void chooseWaitPolicy();
  /// abort() and revoke(): fails everything queued or held with `reason`, tells the peers.
  void quiesce(const char* reason);
  /// GROVE_TRACE: records `op` as a finished call.
  void traceCall(const Operation& op);
  std::string waitDescription(const Operation& op) const;
  /// The peer `op` waits to send to or receive from, or -1 (nothing, or every peer).
  int waitedPeer(const Operation& op) const;
  /// Fails the queue when the head waits on a peer that left (Transport::peerLeft).
  bool failIfPeerLeft();
  bool failIfStuck(std::chrono::steady_clock::time_point now);
  /// Throws kInvalidUsage when `op` is held by a group that has not ended (nothing could
  /// ever complete it).
  void requireQueued(const Operation& op) const;

  int rank_;
  int size_;
  Config config_;
  std::chrono::microseconds spin_;  ///< Polling before sleeping (see Config::spin).
  bool yieldWhileSpinning_;         ///< Ranks outnumber CPUs: give the core away between polls.
  std::unique_ptr<transport::Transport> transport_;
  std::shared_ptr<const topo::Topology> topology_;

  std::deque<std::shared_ptr<Operation>> queue_;
  std::vector<std::shared_ptr<Operation>> pool_;
  int groupDepth_ = 0;
  std::vector<std::shared_ptr<Operation>> grouped_;

  // (collective, count, type, op, root, peer memory, forced algorithm): a call's choice and
  // its fallback without peer memory are cached apart.
  using SelectionKey = std::tuple<int, size_t, int, int, int, bool, std::string>;
  std::map<SelectionKey, const algo::Algorithm*> selections_;
  // (algorithm, root, Algorithm::planVariant).
  std::map<std::tuple<const algo::Algorithm*, int, uint32_t>, std::unique_ptr<exec::BoundPlan>>
      plans_;

  char* scratch_ = nullptr;
  size_t scratchBytes_ = 0;

  std::unique_ptr<Tracer> tracer_;  ///< GROVE_TRACE, or nullptr.
  /// GROVE_COMPRESS (core/link_compression.hpp): nullptr when no peer is over the network.
  std::unique_ptr<exec::LinkCodec> codec_;
  bool oneSidedDeclineLogged_ = false;
  static constexpr int kOneSidedCallsSkippedAfterDecline = 15;
  int oneSidedCallsToSkip_ = 0;
  std::string_view lastAlgorithm_;

  std::atomic<bool> aborted_{false};
  std::atomic<bool> abortRequested_{false};
  std::atomic<bool> revoked_{false};
  std::atomic<ErrorCode> asyncError_{ErrorCode::kSuccess};
  InUseMarker inUse_;
  std::atomic<uint64_t> sequence_{0};
  uint64_t collectives_ = 0;
  uint64_t splitSequence_ = 0;
};

}  // namespace grove::detail
