// How a rank's calls fail: what a waiting call waits for, the checks that end a wait early
// (a failed peer, a peer that left, the deadline), and failing, aborting or revoking the
// queue so that every peer hears of it with the original origin and cause (docs/failures.md).
#include <fmt/format.h>

#include <algorithm>

#include "core/comm_state.hpp"

namespace grove::detail {

using Clock = std::chrono::steady_clock;

std::string CommState::waitDescription(const Operation& op) const {
  exec::WaitPoint point = op.execution.waitPoint();
  if (point.what != nullptr) {
    return fmt::format("receiving from rank {} (waiting for {})", point.peer, point.what);
  }
  return fmt::format("{} rank {} (channel {}, step {}, tile {})",
                     point.sending ? "sending to" : "receiving from", point.peer, point.channel,
                     point.step, point.tile);
}

int CommState::waitedPeer(const Operation& op) const {
  // Outside a step (a one-sided prologue or epilogue) the peer is not known to be the one
  // the call needs: it waits for all of them.
  const exec::WaitPoint point = op.execution.waitPoint();
  return point.what != nullptr ? -1 : point.peer;
}

bool CommState::failIfPeerLeft() {
  std::shared_ptr<Operation> head = queue_.front();
  const int peer = waitedPeer(*head);
  if (peer < 0 || peer == rank_ || !transport_->peerLeft(peer)) return false;
  // What it sent before leaving is in the FIFOs: one more poll takes it, and only a call
  // still waiting on it afterwards is stuck for good.
  if (poll() || head->finished() || waitedPeer(*head) != peer) return false;
  const std::string where = waitDescription(*head);
  transport_->abort(transport::FailureInfo{
      peer, fmt::format("it destroyed its communicator while rank {} waited for it in {} ({})",
                        rank_, head->describe(), where)});
  failQueued(ErrorCode::kRemoteError,
             fmt::format("rank {} left: it destroyed its communicator (all its calls had ended) "
                         "while this rank waits {}; this rank cannot complete the call",
                         peer, where));
  return true;
}

bool CommState::failIfStuck(Clock::time_point now) {
  if (int peer = transport_->failedPeer(); peer >= 0) {
    // Pass the failure on at once, with its original origin and cause: ranks waiting on
    // this one (and not connected to the failed rank) would otherwise learn of it only at
    // their own deadline, or never — a rank that exits after its error closes its
    // connections cleanly.
    transport::FailureInfo info = transport_->failure();
    if (info.origin < 0) info = transport::FailureInfo{peer, "it failed or aborted"};
    transport_->abort(info);
    // A usage error (calls that differ between ranks) is one on every rank.
    failQueued(info.usageError ? ErrorCode::kInvalidUsage : ErrorCode::kRemoteError,
               info.origin == peer
                   ? fmt::format("rank {} failed: {}; this rank cannot complete the call",
                                 info.origin, info.cause)
                   : fmt::format("rank {} failed: {} (reported by rank {}); this rank cannot "
                                 "complete the call",
                                 info.origin, info.cause, peer));
    return true;
  }
  if (queue_.empty()) return false;
  if (failIfPeerLeft()) return true;
  if (queue_.empty()) return false;  // failIfPeerLeft's poll may have finished the call
  Operation& head = *queue_.front();
  if (now < head.deadline) return false;
  std::string where = waitDescription(head);
  const std::chrono::milliseconds limit = head.timeout.count() > 0 ? head.timeout : config_.timeout;
  fail(head, ErrorCode::kTimeout,
       fmt::format("grove: {} on rank {} of {} timed out after {} s {}", head.describe(), rank_,
                   size_, limit.count() / 1000.0, where));
  return true;
}

void CommState::fail(Operation& op, ErrorCode code, const std::string& message) {
  if (asyncError_ == ErrorCode::kSuccess) asyncError_ = code;
  op.state = Operation::State::kFailed;
  op.error = code;
  op.message = message;
  if (tracer_ != nullptr) traceCall(op);
  // The connections are in an unknown state now: nothing queued can complete, and the
  // peers must hear about it (this rank as the origin, the message as the cause) instead
  // of waiting for this rank.
  std::string_view cause = message;
  if (cause.starts_with("grove: ")) cause.remove_prefix(7);
  transport_->abort(
      transport::FailureInfo{rank_, std::string(cause), code == ErrorCode::kInvalidUsage});
  failQueued(ErrorCode::kRemoteError,
             "an earlier operation on this communicator failed: " + message);
}

void CommState::failSignatureCheck(Operation& check, const std::string& message) {
  auto failOne = [&](Operation& op) {
    op.state = Operation::State::kFailed;
    op.error = ErrorCode::kInvalidUsage;
    op.message = message;
    if (tracer_ != nullptr) traceCall(op);
  };
  failOne(check);
  queue_.pop_front();  // `check` was the head
  if (std::shared_ptr<Operation> call = check.checkedCall; call != nullptr) {
    auto it = std::find(queue_.begin(), queue_.end(), call);
    if (it != queue_.end()) queue_.erase(it);
    if (!call->finished()) failOne(*call);
  }
}

void CommState::failQueued(ErrorCode code, const std::string& reason) {
  if (asyncError_ == ErrorCode::kSuccess && !queue_.empty()) asyncError_ = code;
  for (auto& op : queue_) {
    if (op->finished()) continue;
    op->state = Operation::State::kFailed;
    op->error = code;
    op->message =
        fmt::format("grove: {} on rank {} of {}: {}", op->describe(), rank_, size_, reason);
    if (tracer_ != nullptr && op->started) traceCall(*op);
  }
  queue_.clear();
}

void CommState::abort() { quiesce("the communicator was aborted"); }

void CommState::requestAbort() {
  abortRequested_.store(true, std::memory_order_release);
  transport::ring(transport_->doorbell());  // a waiter asleep on it checks at once
}

void CommState::revoke() {
  revoked_.store(true, std::memory_order_release);
  quiesce("the communicator was revoked");
}

void CommState::quiesce(const char* reason) {
  if (aborted_.exchange(true)) return;
  if (asyncError_ == ErrorCode::kSuccess) asyncError_ = ErrorCode::kInvalidUsage;
  transport_->abort(reason);
  failQueued(ErrorCode::kInvalidUsage, reason);
  for (auto& op : grouped_) {
    op->state = Operation::State::kFailed;
    op->error = ErrorCode::kInvalidUsage;
    op->message = "grove: " + op->describe() + ": " + reason;
  }
  grouped_.clear();
}

}  // namespace grove::detail
