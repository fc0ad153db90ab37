// The network loop's shutdown (network_loop.hpp), run by the network thread once the TcpLinks
// destructor set `stopping`: committed messages are still sent (up to the timeout), incoming
// data is read and dropped, then every connection gets a bye frame (or an abort frame after
// abort()), is half-closed, and is closed once the peer closed its end or acknowledged every
// byte (continueShutdown says why).
#include <algorithm>
#include <chrono>

#include "transport/tcp/links_state.hpp"

namespace grove::transport::tcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFlushGrace = std::chrono::seconds(1);

}  // namespace

/// One shutdown step; false when the thread may exit.
///
/// Closing a socket with unread bytes in it (a heartbeat the peer sent while this rank
/// shut down) makes the kernel reset the connection and drop what this rank wrote but
/// the peer's host had not taken yet: its last messages and the bye. So after the bye
/// each connection is half-closed and kept open, its input read and dropped, until the
/// peer closes its end, or, after a grace, until the peer's host acknowledged every byte
/// (the peer reads them even after a reset). Both wait for the peer's network thread only;
/// a peer whose receive slots stay full holds this rank up to the timeout, as unsent
/// messages do.
bool NetworkLoop::continueShutdown() {
  Clock::time_point now = Clock::now();
  if (!byeQueued_) {
    if (!draining_) {
      draining_ = true;
      drainDeadline_ = now + s_.options.timeout;
      for (auto& connection : connections_) connection->discardIncomingData();
    }
    if (!s_.aborting && unsentData() && now < drainDeadline_) return true;
    byeQueued_ = true;
    lingerStart_ = now;
    FrameKind kind = s_.aborting ? FrameKind::kAbort : FrameKind::kBye;
    std::string payload = s_.aborting ? abortPayload() : std::string();
    for (auto& connection : connections_) connection->sendControl(kind, payload);
  }
  if (s_.aborting) {
    // An abort closes fast: the notice gets a grace to go out, the data is dropped.
    bool flushed = std::all_of(connections_.begin(), connections_.end(),
                               [](const auto& c) { return c->controlFlushed(); });
    return !flushed && now < lingerStart_ + kFlushGrace;
  }
  bool settled = true;
  for (auto& connection : connections_) {
    if (s_.failed[connection->peer()]) continue;
    if (!connection->controlFlushed()) {
      settled = false;
      continue;
    }
    connection->finishWriting();
    if (now < lingerStart_ + kFlushGrace || connection->unacknowledgedBytes() > 0) {
      settled = false;
    }
  }
  return !settled && now < drainDeadline_;
}

/// Whether a message committed to a healthy peer has not been written yet (a peer that
/// said bye on a connection no longer dials one back for lanes still waiting for it).
bool NetworkLoop::unsentData() {
  for (auto& connection : connections_) {
    if (!s_.failed[connection->peer()] && connection->hasUnsentData()) return true;
  }
  for (auto& [key, lanes] : waitingLanes_) {
    const int peer = key.first;
    if (s_.failed[peer] || (!byeFrom_.empty() && byeFrom_[static_cast<size_t>(peer)])) continue;
    if (waitingData(peer)) return true;
  }
  return false;
}

/// Whether a send lane to `peer` still waiting for its connection holds a message.
bool NetworkLoop::waitingData(int peer) {
  size_t bytes = 0;
  for (auto& [key, lanes] : waitingLanes_) {
    if (key.first != peer) continue;
    for (const NewLane& lane : lanes) {
      if (lane.fifo->tryPeek(&bytes) != nullptr) return true;
    }
  }
  return false;
}

}  // namespace grove::transport::tcp
