// Opening a transport connection: the secret handshake, then the hello that says which
// (src rank -> dst rank, stream) the connection carries, checked by the acceptor.
//
// Both run on short-lived helper threads with blocking-with-deadline I/O, so a slow or
// hostile client that connects to the listen port never stalls the network thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/tcp/socket.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport::tcp {

/// What an acceptor expects of a hello.
struct HelloPolicy {
  int rank = 0;                  ///< The acceptor's rank (the hello's dst).
  std::vector<int> remoteRanks;  ///< Allowed sources.
  int streams = 1;               ///< socketsPerPeer.
  size_t slotBytes = 0;
};

/// The acceptor's verdict on `hello` (a pure function).
HelloStatus checkHello(const Hello& hello, const HelloPolicy& policy);

/// Connecting side: dials `address`, authenticates with `secret`, sends `hello` and waits
/// for the acceptance. Throws grove::Error naming the peer on any failure (kInvalidUsage
/// when the acceptor refuses). `onSocket` is told the descriptor as soon as it exists
/// (so a shutdown can interrupt the handshake).
Socket openConnection(std::string_view address, const Hello& hello, std::string_view secret,
                      Deadline deadline, const std::atomic<bool>* cancel,
                      const std::function<void(int)>& onSocket);

/// Accepting side on `fd`: authenticates, reads the hello and answers it. Returns the hello
/// when accepted; throws grove::Error saying why otherwise.
Hello acceptConnection(int fd, const HelloPolicy& policy, std::string_view secret,
                       Deadline deadline, const std::atomic<bool>* cancel);

}  // namespace grove::transport::tcp
