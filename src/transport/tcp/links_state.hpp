// The insides of TcpLinks, shared by the rank-facing half (tcp_links.cpp), the helpers and
// acceptor (links_state.cpp: dialing, accepting, failure marking) and the network thread
// (network_loop.cpp).
//
// Threads: the rank thread creates FIFOs and starts dials; short-lived helper threads run
// the dialing side of connection handshakes, and the acceptor thread (acceptor.hpp) every
// pending accepted one, and both hand finished sockets over; the network loop (one object,
// network_loop.hpp) owns every established connection and moves bytes, driven by the network
// thread or by the waiting rank's thread, one at a time under `pumpMutex`. They meet in the
// fields under `mutex`, and the network thread learns of changes through `changed` plus a
// ring of controlBell (whose eventfd wakes it from epoll_wait).
//
// One connection carries both directions of a pair's stream when each rank has a single
// interface (`sharedConnections`): the lower rank dials it, and the higher rank sends its
// messages on it too, so that each side's replies carry the acknowledgements of what it
// received (with a connection per direction every small message drew a pure ACK of its
// own, docs/performance.md). The higher rank, needing the stream before the lower one
// dialed, dials with kHelloDialBack: that connection carries heartbeats and control frames
// only, and the lower rank's acceptor dials back at once (LinksState::dialOnce). With rails each
// direction keeps its own dialed connection (a connection stripes its frames over the rails its
// dialer opened).
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/store.hpp"
#include "common/socket.hpp"
#include "transport/fifo.hpp"
#include "transport/tcp/acceptor.hpp"
#include "transport/tcp/connection.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/network_loop.hpp"
#include "transport/tcp/tcp_links.hpp"

namespace grove::transport::tcp {

/// FIFO memory: private anonymous pages, pre-faulted (MAP_POPULATE), and the Fifo over it.
class FifoBox {
 public:
  FifoBox(const FifoGeometry& geometry, Doorbell* senderBell, Doorbell* receiverBell);
  ~FifoBox();
  FifoBox(const FifoBox&) = delete;
  FifoBox& operator=(const FifoBox&) = delete;
  Fifo& fifo() { return *fifo_; }

 private:
  void* memory_;
  size_t bytes_;
  std::unique_ptr<Fifo> fifo_;
};

/// A dialing thread; `fd` is its socket while a shutdown may need to interrupt it.
struct Helper {
  std::thread thread;
  int fd = -1;
  std::atomic<bool> done{false};
};

/// A connection whose handshake finished, waiting for the network thread.
struct Handoff {
  net::UniqueFd socket;
  int peer;
  int stream;
  Connection::Direction direction;
  int rail = 0;  ///< 0: the connection itself; r > 0: its rail r (rails.hpp).
};

/// A send FIFO the network thread has not attached to its connection yet.
struct NewLane {
  int peer;
  uint16_t lane;
  Fifo* fifo;
};

struct LinksState {
  LinksState(bootstrap::Store& store, TcpOptions options, Doorbell& rankBell);
  ~LinksState();

  // --- fixed after construction
  bootstrap::Store& store;
  const TcpOptions options;
  Doorbell& rankBell;
  /// Rung by the FIFOs (the rank committed a message, or freed a receive slot): the network
  /// thread listens to it only while the rank does not drive the loop itself.
  Doorbell netBell;
  /// Rung for changes (notifyNetwork) and when the rank hands the loop back: always heard.
  Doorbell controlBell;
  net::UniqueFd eventFd;     ///< Behind both bells.
  net::UniqueFd epoll;       ///< The sockets and the eventfd.
  net::UniqueFd quietEpoll;  ///< Only the eventfd: where the network thread sleeps meanwhile.
  net::UniqueFd listener;
  std::string address;    ///< host:port of the first interface (for logs).
  std::string published;  ///< What peers read from the store: host:port per interface, by commas.
  /// Sockets per connection: one per interface of GROVE_SOCKET_IFNAME (1..kMaxRails).
  int rails = 1;
  std::vector<InterfaceChoice> railInterfaces;  ///< This rank's interfaces, rail by rail.
  /// GROVE_SOCKET_IFNAME is unset: a peer's rails are matched by subnet (matchRails), not by
  /// position in the named list.
  bool automaticRails = true;
  std::vector<std::string> localAddresses;  ///< Every address of this host's interfaces.
  HelloPolicy policy;
  std::vector<bool> isRemote;  ///< By rank.
  /// One connection per pair and stream carries both directions (see the top): one rail.
  bool sharedConnections = false;

  // --- any thread
  std::unique_ptr<std::atomic<bool>[]> failed;  ///< By rank.
  std::atomic<int> lowestFailed{-1};
  std::atomic<bool> changed{false};
  std::atomic<bool> aborting{false};
  /// By rank: steady-clock ns when something last arrived from it (network thread), 0
  /// before its first connection.
  std::unique_ptr<std::atomic<int64_t>[]> lastHeardNs;
  /// By rank (network thread writes): connections from it that carry its data to this rank
  /// and are still open, and whether one of them ended with its bye. Both together say it
  /// left with everything it sent delivered (TcpLinks::peerLeft).
  std::unique_ptr<std::atomic<int>[]> incomingOpen;
  std::unique_ptr<std::atomic<bool>[]> saidBye;
  /// By rank (network loop writes): the latest estimate of the rate its outgoing
  /// connections' paths deliver this rank's sends at (drain_rate.hpp), bytes/s; 0: none yet.
  std::unique_ptr<std::atomic<double>[]> drained;
  std::unique_ptr<std::atomic<double>[]> drainedLowest;  ///< The window's lowest sample.
  std::atomic<bool> stopping{false};       ///< The destructor runs: drain, say bye, stop.
  std::atomic<bool> cancelHelpers{false};  ///< Handshakes give up.

  // --- under mutex
  std::mutex mutex;
  std::map<std::pair<int, int>, std::unique_ptr<FifoBox>> sendFifos;  ///< (peer, lane).
  std::map<std::pair<int, int>, std::unique_ptr<FifoBox>> recvFifos;
  std::vector<NewLane> newLanes;
  std::vector<Handoff> handoffs;
  /// (peer, stream) of every connection accepted (rail 0), for the rank thread to know it
  /// need not dial a lower peer that already dialed it.
  std::set<std::pair<int, int>> accepted;
  std::list<Helper> helpers;
  std::vector<FailureInfo> failures;  ///< By rank: why it failed (first reason).
  std::string abortPayload;           ///< This rank's encoded AbortNotice, once aborting.

  // --- rank thread (heartbeat checks in failedPeer)
  std::atomic<int64_t> lastCheckNs{0};     ///< The previous failedPeer() call.
  std::atomic<int64_t> waitingSinceNs{0};  ///< Start of the current run of failedPeer() calls.

  /// By peer: where to dial each rail (index 0: the connection itself), at most `rails`.
  std::map<int, std::vector<std::string>> peerAddresses;
  std::set<std::pair<int, int>> dialed;  ///< (peer, stream).

  /// Whether this rank's messages to `peer` travel on the connection `peer` dialed (shared
  /// connections, peer lower) rather than on one this rank dials.
  bool sendsOnAccepted(int peer) const { return sharedConnections && peer < options.rank; }
  /// Whether `peer` sends its messages on the connections this rank dials to it (it is
  /// higher: with shared connections it does; a receiving side cannot tell in advance, so
  /// such connections always accept data frames).
  bool receivesOnDialed(int peer) const { return peer > options.rank; }

  // --- the network loop
  std::unique_ptr<NetworkLoop> loop;
  std::mutex pumpMutex;  ///< Held by whichever thread runs a step of the loop.
  /// Steady-clock ns until which the rank drives the loop (0: it does not): while it does,
  /// the network thread sleeps on controlBell only (network_loop.hpp).
  std::atomic<int64_t> rankDrivesUntilNs{0};

  std::thread network;
  std::unique_ptr<Acceptor> acceptor;  ///< Started by TcpLinks, stopped after the network.

  /// The receive FIFO (peer -> this rank, lane), created on first use (any thread).
  Fifo& recvFifo(int peer, int lane);
  /// Records that `peer` failed (first reason logged, `info` kept; without an origin the
  /// info is {peer, reason}) and wakes the rank.
  void markFailed(int peer, const std::string& reason, FailureInfo info = {});
  /// Notes that something arrived from `peer` at `ns` (network thread).
  void heard(int peer, int64_t ns);
  /// Rank thread: declares failed the peers silent for longer than options.heartbeatTimeout
  /// during the current wait.
  void checkHeartbeats();
  /// Wakes the network thread after publishing a change.
  void notifyNetwork();
  /// Starts a helper thread running `body(helper)`.
  template <class Body>
  void startHelper(Body body) {
    std::lock_guard lock(mutex);
    Helper& helper = helpers.emplace_back();
    helper.thread = std::thread([this, &helper, body = std::move(body)]() mutable {
      body(helper);
      setHelperFd(helper, -1);
      helper.done = true;
      notifyNetwork();
    });
  }
  void setHelperFd(Helper& helper, int fd);
  /// The address to dial `peer` at: its link address from options.linkAddresses (with the
  /// port of `announced`) when there is one, else `announced`; logs the choice.
  std::string dialAddress(int peer, const std::string& announced) const;
  /// Where to dial each rail of `peer`, from what it `announced`: the first address as
  /// dialAddress says, then one per further interface both ranks have (at most `rails`).
  std::vector<std::string> railAddresses(int peer, const std::string& announced) const;
  /// Dials (peer, stream) on a helper thread (openConnectionRetrying): the connection (rail 0)
  /// or its rail `rail`. A rail that cannot be opened is logged and left out, not a failure.
  void startDial(int peer, int stream, std::string peerAddress, int rail = 0);
  /// The body of a dial, on its helper thread.
  void dial(Helper& helper, int peer, int stream, const std::string& peerAddress, int rail);
  /// Where to dial each rail of `peer` (cached; the first call per peer asks the store,
  /// waiting up to options.timeout for the peer to publish). Throws what the store throws.
  std::vector<std::string> addressesOf(int peer);
  /// Dials (peer, stream), every rail of it, unless it was dialed already (any thread: the
  /// rank's first send FIFO on the stream, or the acceptor for a kHelloDialBack hello); the
  /// address is looked up on the helper thread. A peer without an address is marked failed.
  void dialOnce(int peer, int stream);
  /// True (and logged) when a failed dial to `peer` on `stream` was only a request to dial
  /// back (sendsOnAccepted) that the peer's own connection, accepted meanwhile, answered: a
  /// lower rank that dialed, finished and closed before the request reached it is no
  /// failure.
  bool requestAnswered(int peer, int stream, const std::string& why);
  /// Starts the acceptor thread on `listener`.
  void startAcceptor();
  void handOff(net::UniqueFd socket, int peer, int stream, Connection::Direction direction,
               int rail = 0);
  /// Joins helpers that finished (network thread, from time to time).
  void reapHelpers();
};

/// std::chrono::steady_clock now, in ns since its epoch.
int64_t steadyNs();

}  // namespace grove::transport::tcp
