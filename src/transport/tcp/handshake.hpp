// Opening a transport connection: the secret handshake, then the hello that says which
// (src rank -> dst rank, stream) the connection carries, checked by the acceptor.
//
// The connecting side runs on a short-lived helper thread with blocking-with-deadline I/O
// (dials are bounded by the rank count); the accepting side is the Acceptor's non-blocking
// state machine (acceptor.hpp), which answers the hello with answerHello().
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/socket.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport::tcp {

/// What an acceptor expects of a hello.
struct HelloPolicy {
  int rank = 0;                  ///< The acceptor's rank (the hello's dst).
  std::vector<int> remoteRanks;  ///< Allowed sources.
  int streams = 1;               ///< socketsPerPeer.
  size_t slotBytes = 0;
  int rails = 1;  ///< The acceptor's interfaces: a hello's rail must be below.
};

/// The acceptor's verdict on `hello` (a pure function).
HelloStatus checkHello(const Hello& hello, const HelloPolicy& policy);

/// Connecting side: dials `address`, authenticates with `secret`, sends `hello` and waits
/// for the acceptance. Throws grove::Error naming the peer on any failure (kInvalidUsage
/// when the acceptor refuses). `onSocket` is told the descriptor as soon as it exists
/// (so a shutdown can interrupt the handshake).
net::UniqueFd openConnection(std::string_view address, const Hello& hello, std::string_view secret,
                             net::Deadline deadline, const std::atomic<bool>* cancel,
                             const std::function<void(int)>& onSocket);

/// openConnection, tried again after a growing pause (at most 200 ms) while the connection
/// is closed or reset after it was made and before the acceptance — what the acceptor does
/// to its oldest pending handshake when a flood fills its cap (acceptor.hpp) — until
/// `deadline`; `onRetry` is told why before each new try. A refusal, a failed dial or the
/// deadline end it as openConnection would.
net::UniqueFd openConnectionRetrying(std::string_view address, const Hello& hello,
                                     std::string_view secret, net::Deadline deadline,
                                     const std::atomic<bool>* cancel,
                                     const std::function<void(int)>& onSocket,
                                     const std::function<void(const std::string&)>& onRetry);

/// The acceptor's answer to a received hello.
struct HelloAnswer {
  Hello hello;
  std::string ack;      ///< The acknowledgement to send (empty: the bytes are no grove hello).
  std::string refusal;  ///< Why the hello is refused (send `ack` first); empty when accepted.
};

/// Judges the Hello::kBytes received `bytes` under `policy` (a pure function).
HelloAnswer answerHello(const unsigned char* bytes, const HelloPolicy& policy);

}  // namespace grove::transport::tcp
