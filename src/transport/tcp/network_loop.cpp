// The network loop of the TCP transport (network_loop.hpp): the network thread's body, the
// rank's step (the latency path), pumping, adopting finished handshakes, liveness, shutdown.
//
// Sleeping follows the doorbell protocol: prepareSleep, re-check the FIFOs and the change
// flag, then epoll_wait; a rank that commits or releases meanwhile rings the doorbell, which
// writes the eventfd epoll watches, so no wake-up is lost. Before sleeping the thread polls
// for a few microseconds (yielding the CPU between polls, for hosts with more threads than
// cores), which saves a wake-up per message when a rank answers quickly. While the rank
// drives the loop (its lease runs) the thread sleeps on controlBell alone, in quietEpoll,
// until the lease ends, the rank hands it back, or something changes.
//
// Liveness: every 250 ms the loop queues a heartbeat on each connection that wrote nothing
// for TcpLinks::kHeartbeatInterval and notes, per peer, when something last arrived (or that
// the peer's data waits for this rank's free slots); the rank thread compares that with
// GROVE_HEARTBEAT_TIMEOUT while it waits (LinksState::checkHeartbeats).
//
// Shutdown (the TcpLinks destructor) is network_shutdown.cpp's.
#include <fmt/format.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/log.hpp"
#include "transport/tcp/links_state.hpp"

namespace grove::transport::tcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSpin = std::chrono::microseconds(20);
constexpr auto kLivenessTick = std::chrono::milliseconds(250);
// How long the rank's lease lasts after its last step: a rank between two calls keeps the
// loop this long (the next call usually follows within it), then the network thread takes
// over what arrives while the rank computes.
constexpr int64_t kRankLeaseNs = 1'000'000;
constexpr uint64_t kEventSerial = 0;
constexpr size_t kAnyFrame = SIZE_MAX;

}  // namespace

NetworkLoop::NetworkLoop(LinksState& state) : s_(state) {
  watch(s_.epoll.get(), s_.eventFd.get(), EPOLLIN, kEventSerial);
  watch(s_.quietEpoll.get(), s_.eventFd.get(), EPOLLIN, kEventSerial);
}

NetworkLoop::~NetworkLoop() = default;

void NetworkLoop::run() {
  Clock::time_point lastProgress = Clock::now();
  epoll_event events[64];
  for (;;) {
    bool progress = false;
    {
      // While the rank holds its lease it steps the loop in a tight cycle; blocking on the
      // mutex here would make every one of its unlocks a futex wake of this thread (a
      // syscall and a context switch per call on the latency path). So only try, and sleep
      // out the lease when the rank has the loop.
      std::unique_lock lock(s_.pumpMutex, std::defer_lock);
      if (rankHoldsLease()) {
        static_cast<void>(lock.try_lock());
      } else {
        lock.lock();
      }
      if (lock.owns_lock()) {
        progress = step(kAnyFrame, Clock::now());
        if (s_.stopping && !continueShutdown()) break;
      }
    }
    int timeoutMs = 0;
    int epollFd = s_.epoll.get();
    Clock::time_point now = Clock::now();
    const bool rankDrives = s_.rankDrivesUntilNs.load() > steadyNs();
    if (progress) {
      lastProgress = now;
    } else if (now - lastProgress > kSpin || rankDrives) {
      prepareSleep(s_.controlBell);
      // After announcing the sleep (a rank handing the loop back rings controlBell).
      const int64_t leaseNs = s_.rankDrivesUntilNs.load() - steadyNs();
      const bool quiet = leaseNs > 0 && !s_.stopping;
      if (!quiet) prepareSleep(s_.netBell);
      bool more = s_.changed.load();
      if (!more && !quiet) {
        std::lock_guard lock(s_.pumpMutex);
        more = pumpAll(kAnyFrame);
      }
      if (more) {
        lastProgress = now;
      } else if (quiet) {
        epollFd = s_.quietEpoll.get();
        timeoutMs =
            static_cast<int>(std::min<int64_t>(leaseNs / 1'000'000 + 1, kLivenessTick.count()));
      } else {
        timeoutMs = s_.stopping ? 10 : static_cast<int>(kLivenessTick.count());
      }
    } else {
      ::sched_yield();  // polling, but let the ranks run first on an oversubscribed host
    }
    int count = ::epoll_wait(epollFd, events, 64, timeoutMs);
    cancelSleep(s_.netBell);
    cancelSleep(s_.controlBell);
    if (count > 0 && epollFd == s_.quietEpoll.get()) {
      drainEventFd();  // the quiet epoll holds the eventfd alone: no connection to mark
    } else if (count > 0) {
      std::lock_guard lock(s_.pumpMutex);
      dispatch(events, count);
    }
  }
  std::lock_guard lock(s_.pumpMutex);
  for (const auto& connection : connections_) logRails(*connection);
  connections_.clear();
  bySerial_.clear();
}

bool NetworkLoop::driveFromRank() {
  std::unique_lock lock(s_.pumpMutex, std::try_to_lock);
  if (!lock.owns_lock() || s_.stopping) return false;
  // What the rank just committed goes out before anything else costs a syscall; then the
  // sockets that became ready, and a second pass when any did.
  // One clock read per step: the liveness tick and the lease both use it.
  const Clock::time_point now = Clock::now();
  bool progress = step(s_.options.directBytes, now);  // resets deferred_; pumpAll adds to it
  epoll_event events[64];
  int count = ::epoll_wait(s_.epoll.get(), events, 64, 0);
  if (count > 0) {
    dispatch(events, count);
    progress = pumpAll(s_.options.directBytes) || progress;
  }
  if (!deferred_) {
    s_.rankDrivesUntilNs.store(now.time_since_epoch() / std::chrono::nanoseconds(1) + kRankLeaseNs);
  } else if (s_.rankDrivesUntilNs.exchange(0) != 0 || count > 0) {
    // A bulk frame waits: the network thread's, at once — also when this step took the
    // socket events that would have woken it (edge-triggered: epoll reports each once).
    ring(s_.controlBell);
  }
  return progress;
}

bool NetworkLoop::step(size_t maxFrameBytes, Clock::time_point now) {
  deferred_ = false;
  bool progress = absorbChanges();
  progress = pumpAll(maxFrameBytes) || progress;
  progress = tendLiveness(now) || progress;
  return progress;
}

void NetworkLoop::watch(int epollFd, int fd, uint32_t events, uint64_t serial) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = serial;
  ::epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &event);
}

void NetworkLoop::dispatch(const epoll_event* events, int count) {
  for (int i = 0; i < count; ++i) {
    const epoll_event& event = events[i];
    if (event.data.u64 == kEventSerial) {
      drainEventFd();
      continue;
    }
    auto found = bySerial_.find(event.data.u64);
    if (found == bySerial_.end()) continue;  // retired since epoll reported it
    auto [connection, rail] = found->second;
    if (event.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) connection->markReadable(rail);
    if (event.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) connection->markHangup(rail);
    if (event.events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) connection->markWritable(rail);
  }
}

void NetworkLoop::drainEventFd() {
  uint64_t value = 0;
  while (::read(s_.eventFd.get(), &value, sizeof value) > 0) {
  }
}

bool NetworkLoop::rankHoldsLease() const {
  return !s_.stopping && s_.rankDrivesUntilNs.load() > steadyNs();
}

bool NetworkLoop::tendLiveness(Clock::time_point now) {
  if (now - lastLivenessTick_ < kLivenessTick) return false;
  lastLivenessTick_ = now;
  bool queued = false;
  for (auto& connection : connections_) {
    if (connection->state() != Connection::State::kOpen) continue;
    if (now - connection->lastSend() >= TcpLinks::kHeartbeatInterval) {
      connection->sendHeartbeat();
      queued = true;
    }
    Clock::time_point heard = connection->waitingForSlot() ? now : connection->lastReceive();
    s_.heard(connection->peer(), heard.time_since_epoch() / std::chrono::nanoseconds(1));
  }
  return queued;
}

/// This rank's abort notice (encoded), for abort frames.
std::string NetworkLoop::abortPayload() {
  std::lock_guard lock(s_.mutex);
  if (!s_.abortPayload.empty()) return s_.abortPayload;
  AbortNotice notice;
  notice.origin = static_cast<uint32_t>(s_.options.rank);
  notice.cause = "the communicator was aborted";
  return notice.encode();
}

/// Takes the new send lanes, finished handshakes and the abort request; true if any.
bool NetworkLoop::absorbChanges() {
  if (!s_.changed.exchange(false)) return false;
  std::vector<NewLane> lanes;
  std::vector<Handoff> handoffs;
  {
    std::lock_guard lock(s_.mutex);
    lanes.swap(s_.newLanes);
    handoffs.swap(s_.handoffs);
  }
  s_.reapHelpers();
  for (const NewLane& lane : lanes) {
    std::pair key{lane.peer, lane.lane % s_.options.socketsPerPeer};
    auto& carriers = s_.sendsOnAccepted(lane.peer) ? incoming_ : outgoing_;
    auto found = carriers.find(key);
    if (found != carriers.end()) {
      found->second->addSendLane(lane.fifo, lane.lane);
    } else {
      waitingLanes_[key].push_back(lane);
    }
  }
  for (Handoff& handoff : handoffs) adopt(std::move(handoff));
  if (s_.aborting && !abortSent_) {
    abortSent_ = true;
    std::string payload = abortPayload();
    for (auto& connection : connections_) connection->sendControl(FrameKind::kAbort, payload);
  }
  return true;
}

void NetworkLoop::attachRail(Connection& connection, int rail, net::UniqueFd socket) {
  const int fd = socket.get();
  if (!connection.attachRail(rail, std::move(socket))) {
    log::warn(s_.options.rank,
              "TCP transport: dropped rail {} of the connection {} rank {} "
              "(stream {}): beyond this rank's {} interface(s) or a second one",
              rail, connection.direction() == Connection::Direction::kOutgoing ? "to" : "from",
              connection.peer(), connection.stream(), connection.railLimit());
    return;
  }
  const uint64_t serial = nextSerial_++;
  watch(s_.epoll.get(), fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, serial);
  bySerial_[serial] = {&connection, rail};
}

void NetworkLoop::adopt(Handoff handoff) {
  std::pair key{handoff.peer, handoff.stream};
  bool outgoing = handoff.direction == Connection::Direction::kOutgoing;
  auto& table = outgoing ? outgoing_ : incoming_;
  if (handoff.rail > 0) {
    auto found = table.find(key);
    if (found != table.end()) {
      attachRail(*found->second, handoff.rail, std::move(handoff.socket));
    } else {
      waitingRails_[{handoff.direction, handoff.peer, handoff.stream}].emplace_back(
          handoff.rail, std::move(handoff.socket));
    }
    return;
  }
  if (table.count(key) != 0) {
    log::warn(s_.options.rank,
              "TCP transport: dropped a second connection {} rank {} on "
              "stream {}",
              outgoing ? "to" : "from", handoff.peer, handoff.stream);
    return;
  }
  int peer = handoff.peer;
  auto connection = std::make_unique<Connection>(
      std::move(handoff.socket), peer, handoff.stream, s_.options.socketsPerPeer, handoff.direction,
      s_.options.geometry.slotBytes,
      [this, peer](uint16_t lane) { return &s_.recvFifo(peer, lane); }, s_.options.size,
      s_.options.faultCorruptFrame, s_.rails);
  s_.heard(peer, steadyNs());
  // A higher peer with shared connections sends on the ones this rank dials to it.
  if (outgoing && s_.receivesOnDialed(peer)) connection->acceptData();
  if (outgoing != s_.sendsOnAccepted(peer)) {
    auto waiting = waitingLanes_.find(key);
    if (waiting != waitingLanes_.end()) {
      for (const NewLane& lane : waiting->second) connection->addSendLane(lane.fifo, lane.lane);
      waitingLanes_.erase(waiting);
    }
  }
  if (s_.aborting) connection->sendControl(FrameKind::kAbort, abortPayload());
  if (s_.stopping) connection->discardIncomingData();
  if (byeQueued_) connection->sendControl(FrameKind::kBye);
  const uint64_t serial = nextSerial_++;
  watch(s_.epoll.get(), connection->fd(), EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, serial);
  bySerial_[serial] = {connection.get(), 0};
  table[key] = connection.get();
  auto rails = waitingRails_.find({handoff.direction, peer, handoff.stream});
  if (rails != waitingRails_.end()) {
    for (auto& [rail, socket] : rails->second) attachRail(*connection, rail, std::move(socket));
    waitingRails_.erase(rails);
  }
  if (connection->acceptsData()) s_.incomingOpen[peer].fetch_add(1, std::memory_order_release);
  connections_.push_back(std::move(connection));
}

/// Pumps every connection and retires the ones that ended; true if anything moved.
bool NetworkLoop::pumpAll(size_t maxFrameBytes) {
  bool progress = false;
  for (auto& connection : connections_) {
    progress = connection->pumpWrite(maxFrameBytes) || progress;
    noteDrain(*connection);
    progress = connection->pumpRead(maxFrameBytes) || progress;
    deferred_ = deferred_ || connection->leftBulk();
  }
  auto ended = [](const std::unique_ptr<Connection>& c) {
    return c->state() != Connection::State::kOpen;
  };
  if (std::any_of(connections_.begin(), connections_.end(), ended)) {
    for (auto& connection : connections_) {
      if (ended(connection)) retire(*connection);
    }
    std::erase_if(connections_, ended);
    progress = true;
  }
  return progress;
}

void NetworkLoop::noteDrain(const Connection& connection) {
  if (!connection.hasSendLanes()) return;
  // One writer (under pumpMutex): loads and stores, only when the estimate changed.
  const DrainRate& rate = connection.drainRate();
  if (rate.bytesPerSecond() <= 0) return;
  auto publish = [](std::atomic<double>& slot, double value) {
    if (slot.load(std::memory_order_relaxed) != value) {
      slot.store(value, std::memory_order_relaxed);
    }
  };
  publish(s_.drained[connection.peer()], rate.bytesPerSecond());
  publish(s_.drainedLowest[connection.peer()], rate.lowestBytesPerSecond());
}

void NetworkLoop::logRails(const Connection& connection) const {
  if (connection.direction() != Connection::Direction::kOutgoing || connection.railLimit() < 2)
    return;
  log::info(s_.options.rank, "TCP transport: connection to rank {} (stream {}): {}",
            connection.peer(), connection.stream(), connection.railSummary());
}

void NetworkLoop::retire(Connection& connection) {
  logRails(connection);
  for (int rail = 0; rail < connection.railLimit(); ++rail) {
    if (connection.fd(rail) >= 0)
      ::epoll_ctl(s_.epoll.get(), EPOLL_CTL_DEL, connection.fd(rail), nullptr);
  }
  std::erase_if(bySerial_, [&](const auto& entry) { return entry.second.first == &connection; });
  std::pair key{connection.peer(), connection.stream()};
  bool outgoing = connection.direction() == Connection::Direction::kOutgoing;
  (outgoing ? outgoing_ : incoming_).erase(key);
  const int peer = connection.peer();
  bool clean = connection.state() == Connection::State::kClosed && !connection.hasUnsentData();
  if (connection.state() == Connection::State::kClosed) {
    if (byeFrom_.empty()) byeFrom_.assign(static_cast<size_t>(s_.options.size), false);
    byeFrom_[static_cast<size_t>(peer)] = true;
    // Lanes still waiting for the connection that peer was to dial back: it left first.
    if (clean && waitingData(peer)) clean = false;
  }
  if (connection.acceptsData()) {
    // Everything the peer sent on it is in the FIFOs now (its bye came after its data).
    if (clean) s_.saidBye[peer].store(true, std::memory_order_release);
    s_.incomingOpen[peer].fetch_sub(1, std::memory_order_release);
  }
  if (clean) {
    log::info(s_.options.rank, "TCP transport: {}", connection.error());
  } else if (connection.state() == Connection::State::kAborted || !(s_.stopping || s_.aborting)) {
    // After this rank stopped or aborted, peers closing their ends is expected.
    FailureInfo info;
    if (connection.state() == Connection::State::kAborted) {
      info = FailureInfo{static_cast<int>(connection.abortNotice().origin),
                         connection.abortNotice().cause, connection.abortNotice().usageError};
    }
    std::string reason = connection.error();
    if (connection.state() == Connection::State::kClosed) {
      // A clean close while this rank still had data for it: it left, its calls over.
      reason = "it left (destroyed its communicator) before receiving all this rank sent it";
    }
    s_.markFailed(connection.peer(), reason, std::move(info));
  }
}

}  // namespace grove::transport::tcp
