// The one socket module: what the store (client and server), the bootstrap's authentication
// handshake and the TCP transport need of sockets — an owning descriptor, addresses,
// connecting and listening, and reads and writes of an exact length with deadlines.
//
// Why deadlines everywhere: no grove call may block forever (design.md, failure model), so
// every helper that can wait takes a steady-clock deadline and waits with poll(); waits that
// a closing transport must be able to cut short also take a cancel flag, polled every
// 100 ms. EINTR is retried and partial reads and writes are continued here, in one place.
// Reads and writes use MSG_DONTWAIT, so the helpers behave the same on blocking and
// non-blocking sockets, and writes MSG_NOSIGNAL, so a closed peer is an error rather than a
// SIGPIPE. The data path of the TCP transport makes its own non-blocking calls
// (transport/tcp/connection.cpp): it never waits.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// Owns one file descriptor (a socket, an epoll or event descriptor); closes it on
/// destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  /// Gives up ownership and returns the descriptor.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes the current descriptor (if any) and owns `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// A host (name, IPv4 or IPv6 address without brackets) and a port.
struct HostPort {
  std::string host;
  uint16_t port = 0;
};

/// Parses "host:port" or "[ipv6]:port" (port in 1..65535). `what` names where the text came
/// from (e.g. "GROVE_ROOT"); the kInvalidArgument error names it and the expected form.
HostPort parseHostPort(std::string_view text, std::string_view what);

/// "host:port", with brackets around an IPv6 address: "[::1]:29500".
std::string formatHostPort(std::string_view host, uint16_t port);

/// The text of errno value `error` (strerror, thread-safe).
std::string errorText(int error);

/// Milliseconds from now to `deadline` for poll(): 0 when past, -1 for time_point::max().
int pollTimeoutMs(Deadline deadline);

/// Waits until `fd` reports one of `events` (POLLIN, POLLOUT) or an error/hang-up; false when
/// the deadline passed first. Throws kSystemError when poll fails, or ("WHAT: cancelled")
/// when `*cancel` becomes true.
bool waitForFd(int fd, short events, Deadline deadline, const std::atomic<bool>* cancel = nullptr,
               std::string_view what = "waiting for a socket");

/// Connects to host:port, trying every address the name resolves to (IPv4 and IPv6). While
/// the server is not there yet (refused, unreachable, name not resolvable) it retries with
/// backoff until `deadline`, then throws kTimeout naming the address and the last error; a
/// name that does not exist is kInvalidArgument at once. `what` names the peer in messages
/// (e.g. "store server"). The socket is non-blocking and has TCP_NODELAY set.
UniqueFd connectWithRetry(const std::string& host, uint16_t port, Deadline deadline,
                          std::string_view what);

/// Connects to "host:port" once (every address it resolves to, in order), within `deadline`:
/// for peers that are known to listen already. Throws kSystemError naming the address and
/// the last error, kTimeout past the deadline. Non-blocking, TCP_NODELAY.
UniqueFd dial(std::string_view hostPort, Deadline deadline,
              const std::atomic<bool>* cancel = nullptr);

/// Listens on host:port; `port` 0 picks an ephemeral port and `*boundPort` tells which.
/// An empty host listens on every interface (IPv6 dual-stack when available, else IPv4).
/// Throws kSystemError naming `what` and the port (e.g. "address already in use").
UniqueFd listenOn(const std::string& host, uint16_t port, uint16_t* boundPort,
                  std::string_view what, int backlog = 1024);

/// Reads exactly `size` bytes. Throws kTimeout past `deadline`, kSystemError on errors or
/// when the peer closes first; `what` names the exchange in messages.
void readExact(int fd, void* data, size_t size, Deadline deadline, std::string_view what,
               const std::atomic<bool>* cancel = nullptr);

/// Writes exactly `size` bytes (errors as readExact).
void writeExact(int fd, const void* data, size_t size, Deadline deadline, std::string_view what,
                const std::atomic<bool>* cancel = nullptr);

/// Sets O_NONBLOCK on `fd` (throws kSystemError on failure).
void setNonBlocking(int fd);

/// Makes a connected stream non-blocking with TCP_NODELAY (accepted sockets).
void configureStream(int fd);

/// "host:port" of the peer of a connected socket, or "unknown peer".
std::string peerAddress(int fd);

}  // namespace grove::net
