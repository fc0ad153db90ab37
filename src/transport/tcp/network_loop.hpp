// The engine that moves the TCP transport's bytes: owns every established connection, pumps
// bytes between sockets and FIFOs, adopts the connections whose handshakes finished (on
// dialing helpers and the acceptor thread), and tends heartbeats. Two threads drive it, one
// at a time (LinksState::pumpMutex):
//
// * The rank's own thread, while it waits for a call (TcpLinks::progress from the rank's
//   poll): it writes the messages it committed straight to their sockets and reads its peers'
//   sockets itself, so a small message crosses no thread hand-off on either side (a wake-up
//   costs 10-250 us on these machines, a syscall about 1 us). While it does, it holds a lease
//   (LinksState::rankDrivesUntilNs) and the network thread sleeps without watching sockets or
//   FIFOs, so it neither wakes per message nor competes for the cores.
// * The network thread, for everything else: bulk frames (above TcpOptions::directBytes,
//   moved while the rank reduces), a rank that computes between calls or went to sleep (its
//   lease ran out, or it handed the lease back before sleeping), heartbeats and shutdown.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "transport/tcp/connection.hpp"

namespace grove::transport::tcp {

struct LinksState;
struct NewLane;
struct Handoff;

class NetworkLoop {
 public:
  explicit NetworkLoop(LinksState& state);
  ~NetworkLoop();
  NetworkLoop(const NetworkLoop&) = delete;
  NetworkLoop& operator=(const NetworkLoop&) = delete;

  /// The network thread's body: steps, sleeps when nothing moves, shuts down when stopping.
  void run();
  /// One step on the rank's thread, without blocking (skipped when the network thread is in
  /// a step); true when any byte or message moved.
  bool driveFromRank();

 private:
  using Clock = std::chrono::steady_clock;

  /// Absorbs changes, pumps every connection (frames up to `maxFrameBytes`), tends liveness
  /// as of `now`; under pumpMutex. True when anything moved.
  bool step(size_t maxFrameBytes, Clock::time_point now);
  /// Marks the connections epoll reported ready (events name connections by serial number,
  /// so an event of a connection retired meanwhile is ignored); under pumpMutex.
  void dispatch(const epoll_event* events, int count);
  void watch(int epollFd, int fd, uint32_t events, uint64_t serial);
  /// Empties the eventfd both bells ring (needs no lock: it touches no connection).
  void drainEventFd();
  /// Whether the rank drives the loop now (its lease runs and no shutdown is under way).
  bool rankHoldsLease() const;
  /// Every kLivenessTick: queues heartbeats on idle connections and records when each peer
  /// was last heard from; true when a heartbeat was queued.
  bool tendLiveness(Clock::time_point now);
  std::string abortPayload();
  bool absorbChanges();
  void adopt(Handoff handoff);
  /// Adds rail `rail` of `connection`, whose socket is `socket`, to it and to epoll.
  void attachRail(Connection& connection, int rail, net::UniqueFd socket);
  bool pumpAll(size_t maxFrameBytes);
  /// Publishes an outgoing connection's drain rate estimate as its peer's (drain_rate.hpp).
  void noteDrain(const Connection& connection);
  void retire(Connection& connection);
  /// Logs (GROVE_DEBUG=INFO) what each socket of an outgoing connection with rails carried.
  void logRails(const Connection& connection) const;
  bool continueShutdown();
  bool unsentData();
  bool waitingData(int peer);

  LinksState& s_;
  std::vector<std::unique_ptr<Connection>> connections_;
  /// Serial -> (connection, rail): the socket epoll names (rail 0: the primary).
  std::map<uint64_t, std::pair<Connection*, int>> bySerial_;
  uint64_t nextSerial_ = 1;                              ///< 0 names the eventfd.
  std::map<std::pair<int, int>, Connection*> outgoing_;  ///< (peer, stream).
  std::map<std::pair<int, int>, Connection*> incoming_;
  std::map<std::pair<int, int>, std::vector<NewLane>> waitingLanes_;
  /// By rank (empty until the first): a connection with it ended with its bye.
  std::vector<bool> byeFrom_;
  /// Rails whose handshake finished before their connection's: (direction, peer, stream).
  std::map<std::tuple<Connection::Direction, int, int>, std::vector<std::pair<int, net::UniqueFd>>>
      waitingRails_;
  /// A frame above the size limit of the current step was left for the network thread.
  bool deferred_ = false;
  bool abortSent_ = false;
  Clock::time_point lastLivenessTick_;
  bool draining_ = false;
  bool byeQueued_ = false;
  Clock::time_point drainDeadline_;
  Clock::time_point lingerStart_;
};

}  // namespace grove::transport::tcp
