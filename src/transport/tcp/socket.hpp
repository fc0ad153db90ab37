// Small socket helpers for the TCP transport: an owning descriptor, listening and dialing
// with deadlines, and blocking-with-deadline transfers for the connection handshake (the
// data path uses non-blocking calls of its own in connection.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace grove::transport::tcp {

using Deadline = std::chrono::steady_clock::time_point;

/// An owned file descriptor, closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  /// Gives up ownership.
  int release() { return std::exchange(fd_, -1); }
  void reset();

 private:
  int fd_ = -1;
};

/// "host:port", with IPv6 hosts in brackets ("[fd00::2]:4242").
std::string formatHostPort(std::string_view host, int port);
/// Splits "host:port" / "[v6]:port"; throws grove::Error(kInvalidArgument) naming `text`.
std::pair<std::string, int> parseHostPort(std::string_view text);

/// A non-blocking listening socket bound to `host` (numeric) on an ephemeral port; returns
/// it and the port chosen. Throws grove::Error(kSystemError) naming the address.
std::pair<Socket, int> listenOn(const std::string& host);

/// A connected, non-blocking socket with TCP_NODELAY to `hostPort`, within `deadline`.
/// Throws grove::Error (kSystemError, or kTimeout) naming the address. The waits below give
/// up early with kSystemError when `*cancel` becomes true.
Socket dial(std::string_view hostPort, Deadline deadline,
            const std::atomic<bool>* cancel = nullptr);

/// Makes `fd` non-blocking and sets TCP_NODELAY (for accepted sockets).
void configureStream(int fd);

/// Sends all `bytes` of `data` on the (possibly non-blocking) `fd`, polling until
/// `deadline`. Throws grove::Error (kSystemError or kTimeout); `what` names the exchange.
void sendAll(int fd, const void* data, size_t bytes, Deadline deadline, std::string_view what,
             const std::atomic<bool>* cancel = nullptr);
/// Receives exactly `bytes` into `data`, polling until `deadline`; a closed connection is a
/// kSystemError naming `what`.
void receiveAll(int fd, void* data, size_t bytes, Deadline deadline, std::string_view what,
                const std::atomic<bool>* cancel = nullptr);

/// The remote address of a connected socket as "host:port" ("?" when unknown).
std::string peerName(int fd);

}  // namespace grove::transport::tcp
