// TcpLinks: the rank-facing half of the TCP transport (FIFOs, dialing on first use, failure
// and liveness queries). What it shares with its threads lives in links_state.cpp; the bytes
// move in network_loop.cpp.
#include "transport/tcp/tcp_links.hpp"

#include <fmt/format.h>
#include <sys/socket.h>

#include <mutex>

#include "grove/error.hpp"
#include "transport/tcp/links_state.hpp"

namespace grove::transport {

struct TcpLinks::Impl {
  explicit Impl(bootstrap::Store& store, TcpOptions options, Doorbell& rankBell)
      : state(store, std::move(options), rankBell) {}
  tcp::LinksState state;

  void checkPeer(int peer, int lane, const char* call) const {
    const TcpOptions& o = state.options;
    if (peer < 0 || peer >= o.size || !state.isRemote[static_cast<size_t>(peer)]) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("TcpLinks::{}: rank {}: peer {} is not one of its TCP peers", call,
                              o.rank, peer));
    }
    if (lane < 0 || lane > 0xffff) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("TcpLinks::{}: rank {}: lane {} (peer {}) is outside 0..65535", call,
                              o.rank, lane, peer));
    }
  }
};

TcpLinks::TcpLinks(bootstrap::Store& store, TcpOptions options, Doorbell& rankBell)
    : impl_(std::make_unique<Impl>(store, std::move(options), rankBell)) {
  tcp::LinksState& s = impl_->state;
  s.store.set(fmt::format("{}/tcp/{}", s.options.keyPrefix, s.options.rank), s.published);
  s.startAcceptor();
  s.loop = std::make_unique<tcp::NetworkLoop>(s);
  s.network = std::thread([&s] { s.loop->run(); });
}

TcpLinks::~TcpLinks() {
  tcp::LinksState& s = impl_->state;
  s.stopping = true;
  s.notifyNetwork();
  s.network.join();
  // After the network thread: a peer that connects while this rank drains still gets its
  // bye. Its handoffs from now on are dropped with the state.
  s.acceptor.reset();
  s.cancelHelpers = true;
  {
    std::lock_guard lock(s.mutex);
    for (tcp::Helper& helper : s.helpers) {
      if (helper.fd >= 0) ::shutdown(helper.fd, SHUT_RDWR);
    }
  }
  for (tcp::Helper& helper : s.helpers) helper.thread.join();
  // A clean close takes this rank's address out of the store, so thousands of splits over
  // TCP do not grow it. After a failure the store may be out of reach: leave it.
  if (!s.aborting && s.lowestFailed.load() < 0) {
    try {
      s.store.erase(fmt::format("{}/tcp/{}", s.options.keyPrefix, s.options.rank));
    } catch (const Error&) {
    }
  }
}

Fifo& TcpLinks::sendFifo(int peer, int lane) {
  impl_->checkPeer(peer, lane, "sendFifo");
  tcp::LinksState& s = impl_->state;
  Fifo* fifo = nullptr;
  {
    std::lock_guard lock(s.mutex);
    auto& box = s.sendFifos[{peer, lane}];
    if (box) return box->fifo();
    box = std::make_unique<tcp::FifoBox>(s.options.geometry, &s.rankBell, &s.netBell);
    fifo = &box->fifo();
    s.newLanes.push_back(tcp::NewLane{peer, static_cast<uint16_t>(lane), fifo});
  }
  const int stream = lane % s.options.socketsPerPeer;
  // A lower peer's connection carries this rank's messages (shared connections): dial it
  // only to ask for that connection, when the peer has not opened it already.
  bool needed = true;
  if (s.sendsOnAccepted(peer)) {
    std::lock_guard lock(s.mutex);
    needed = s.accepted.count({peer, stream}) == 0;
  }
  if (needed) s.dialOnce(peer, stream);
  s.notifyNetwork();
  return *fifo;
}

Fifo& TcpLinks::recvFifo(int peer, int lane) {
  impl_->checkPeer(peer, lane, "recvFifo");
  return impl_->state.recvFifo(peer, lane);
}

void TcpLinks::abort(const FailureInfo& info) {
  tcp::LinksState& s = impl_->state;
  {
    std::lock_guard lock(s.mutex);
    if (s.abortPayload.empty()) {
      FailureInfo clean = sanitizeFailure(info);
      tcp::AbortNotice notice;
      notice.origin = static_cast<uint32_t>(
          clean.origin >= 0 && clean.origin < s.options.size ? clean.origin : s.options.rank);
      notice.cause = std::move(clean.cause);
      notice.usageError = clean.usageError;
      s.abortPayload = notice.encode();
    }
  }
  s.aborting = true;
  s.notifyNetwork();
}

void TcpLinks::abort() {
  abort(FailureInfo{impl_->state.options.rank, "the communicator was aborted"});
}

bool TcpLinks::progress() {
  tcp::LinksState& s = impl_->state;
  return s.options.directBytes > 0 && s.loop->driveFromRank();
}

void TcpLinks::handOffProgress() {
  tcp::LinksState& s = impl_->state;
  if (s.rankDrivesUntilNs.exchange(0) != 0) ring(s.controlBell);
}

int TcpLinks::failedPeer() const {
  impl_->state.checkHeartbeats();
  return impl_->state.lowestFailed.load();
}

FailureInfo TcpLinks::failure() const {
  tcp::LinksState& s = impl_->state;
  int peer = s.lowestFailed.load();
  if (peer < 0) return FailureInfo{};
  std::lock_guard lock(s.mutex);
  return s.failures[peer];
}

bool TcpLinks::peerLeft(int peer) const {
  const tcp::LinksState& s = impl_->state;
  if (peer < 0 || peer >= s.options.size) return false;
  // Release by the network thread after the connection's last data reached its FIFO.
  return s.saidBye[peer].load(std::memory_order_acquire) &&
         s.incomingOpen[peer].load(std::memory_order_acquire) == 0;
}

SendRate TcpLinks::drainRate(int peer) const {
  const tcp::LinksState& s = impl_->state;
  if (peer < 0 || peer >= s.options.size) return {};
  return {s.drained[peer].load(std::memory_order_relaxed),
          s.drainedLowest[peer].load(std::memory_order_relaxed)};
}

std::string TcpLinks::address() const { return impl_->state.address; }

}  // namespace grove::transport
