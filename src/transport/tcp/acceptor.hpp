// The accepting side of the TCP transport's connection opening: every socket accepted on a
// rank's listener that has not yet proven itself (secret handshake, hello, ack) lives here,
// as a small non-blocking state machine driven by one epoll loop on one thread.
//
// Why: a thread per accepted connection let a stranger who opens thousands of idle
// connections give the rank thousands of threads (and tens of MB, and slower calls). Here a
// flood costs one thread in all, at most `maxPending` sockets, and at most `deadline` of
// each one's time:
// * Cap: past `maxPending` pending handshakes the OLDEST is closed to make room. A real peer
//   finishes in a couple of round trips, so what is oldest is a connection that sat idle;
//   closing the newest instead would let `maxPending` idle sockets lock every peer out for
//   a whole deadline, again and again. A peer closed that way retries (startDial).
// * Deadline: a connection that has not finished by `deadline` after it was accepted is
//   closed.
//
// Why a thread of its own rather than the network thread's epoll: the network thread moves
// the running calls' bytes, and a flood's accept/HMAC/close work would run between its
// pumps; on a thread of its own that work runs beside it, never in its way, and the data
// path's loop stays as it was. The protocol itself is bootstrap::Handshake, the same
// machine the store server drives.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/socket.hpp"
#include "transport/tcp/handshake.hpp"

namespace grove::transport::tcp {

class Acceptor {
 public:
  /// Called on the acceptor thread with each socket whose handshake succeeded (its hello
  /// accepted and acknowledged) and the peer's address; the socket is non-blocking and out
  /// of this epoll set.
  using OnAccepted = std::function<void(net::UniqueFd, const Hello&, const std::string& from)>;

  /// Starts the thread, which accepts on `listener` (non-blocking, owned by the caller,
  /// open until this object is destroyed) and authenticates with `secret`.
  Acceptor(int listener, HelloPolicy policy, std::string secret, size_t maxPending,
           std::chrono::milliseconds deadline, OnAccepted onAccepted);
  /// Stops and joins the thread and closes every pending connection.
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

 private:
  struct Pending;

  void run();
  void acceptAll();
  void onEvent(uint64_t id, uint32_t events);
  /// Moves pending connection `id` on after `events`; closes it when it failed or is done.
  void serve(uint64_t id, uint32_t events);
  /// Reads what the handshake wants, feeds it, answers; false when `p` must be closed.
  bool advance(Pending& p);
  bool flush(Pending& p);
  void close(uint64_t id, const std::string& why);  ///< `why` non-empty: a (limited) warning.
  void expire();
  void warnLimited(const std::string& message);
  int waitMs() const;

  const int listener_;
  const HelloPolicy policy_;
  const std::string secret_;
  const size_t maxPending_;
  const std::chrono::milliseconds deadline_;
  const OnAccepted onAccepted_;
  net::UniqueFd epoll_;
  net::UniqueFd wake_;
  std::atomic<bool> stopping_{false};
  std::map<uint64_t, std::unique_ptr<Pending>> pending_;  ///< By id: oldest first.
  uint64_t nextId_ = 2;
  std::chrono::steady_clock::time_point listenerPausedUntil_{};
  std::chrono::steady_clock::time_point lastWarning_{};
  size_t suppressed_ = 0;
  std::thread thread_;
};

}  // namespace grove::transport::tcp
