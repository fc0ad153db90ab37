// The TCP rendezvous store: a server (run by rank 0, or standalone by `grove store`) and the
// client every rank uses. The wire format is in tcp_store_wire.hpp and docs/bootstrap.md.
//
// Why one server thread with epoll: a job of thousands of ranks connects at once and most
// of them sit in `get` waiting for rank 0's address; one thread with non-blocking sockets
// holds them all cheaply, keeps waiters in a table and answers them when the key is set.
// Every connection is authenticated with the job secret before any request is read, and
// every length on the wire is checked before anything is allocated: a stranger, a port
// scanner or a corrupt frame closes that one connection with a warning, never the server.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "bootstrap/store.hpp"
#include "common/socket.hpp"

namespace grove::bootstrap {

/// Key under which the server records the connections it refused (failed authentication),
/// so ranks waiting for a peer that never arrives can tell the user why.
inline constexpr std::string_view kRefusedConnectionsKey = "store/refused";

/// Serves a Store over TCP from a background thread, from construction until destruction.
class TcpStoreServer {
 public:
  /// Listens on host:port (empty host: every interface; port 0: an ephemeral port, see
  /// port()). Clients must know `secret`. Throws grove::Error(kSystemError) naming the port
  /// when it cannot listen (e.g. the port is in use).
  TcpStoreServer(const std::string& host, uint16_t port, std::string secret);
  /// Stops the server thread and closes every connection.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  /// The port the server listens on.
  uint16_t port() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// A Store whose data lives in a TcpStoreServer. Thread-safe (requests are serialised).
class TcpStoreClient : public Store {
 public:
  /// Connects to host:port, retrying until `timeout` has passed (the server may start
  /// later), and authenticates with `secret`. `timeout` also bounds set, add and check.
  /// Throws kTimeout when the server cannot be reached, kInvalidUsage when it refuses the
  /// secret.
  TcpStoreClient(std::string host, uint16_t port, std::string secret,
                 std::chrono::milliseconds timeout);
  ~TcpStoreClient() override;

  void set(std::string_view key, std::string_view value) override;
  std::string get(std::string_view key, std::chrono::milliseconds timeout) override;
  int64_t add(std::string_view key, int64_t delta) override;
  bool check(std::string_view key) override;
  void erase(std::string_view key) override;
  void setOnClose(std::string_view key, std::string_view value) override;
  void failOnDisconnect() override;
  bool reportsClosedConnections() const override { return true; }

  /// "host:port" of the server (for messages).
  std::string address() const;

 private:
  std::string request(uint8_t op, std::string_view opName, std::string_view key,
                      std::string_view value, std::chrono::milliseconds timeout);
  void connect(net::Clock::time_point deadline);

  std::string host_;
  uint16_t port_;
  std::string secret_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  net::UniqueFd fd_;
  bool failOnDisconnect_ = false;  // See Store::failOnDisconnect.
  std::string lost_;               // Non-empty: the connection was lost for good, and why.
};

}  // namespace grove::bootstrap
