// The socket module (see socket.hpp for why it looks as it does).
#include "common/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "grove/error.hpp"

namespace grove::net {
namespace {

[[noreturn]] void throwSystem(std::string message, int error) {
  throw Error(ErrorCode::kSystemError, message + ": " + errorText(error));
}

// One non-blocking connect attempt to one resolved address, waiting up to `deadline`.
// Returns the connected socket (TCP_NODELAY set), or an invalid one with `*error` set and
// `*timedOut` telling whether the deadline ended the attempt.
UniqueFd tryConnect(const addrinfo& address, Deadline deadline, const std::atomic<bool>* cancel,
                    std::string_view what, std::string* error, bool* timedOut) {
  *timedOut = false;
  UniqueFd fd(socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                     address.ai_protocol));
  if (!fd.valid()) {
    *error = errorText(errno);
    return UniqueFd();
  }
  int rc = ::connect(fd.get(), address.ai_addr, address.ai_addrlen);
  if (rc != 0 && errno != EINPROGRESS) {
    *error = errorText(errno);
    return UniqueFd();
  }
  if (rc != 0) {
    if (!waitForFd(fd.get(), POLLOUT, deadline, cancel, what)) {
      *error = "connection attempt timed out";
      *timedOut = true;
      return UniqueFd();
    }
    int soError = 0;
    socklen_t length = sizeof(soError);
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soError, &length) != 0) soError = errno;
    if (soError != 0) {
      *error = errorText(soError);
      return UniqueFd();
    }
  }
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

std::string describeHost(const std::string& host) {
  return host.empty() ? std::string("all interfaces") : host;
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string errorText(int error) {
  char buffer[256] = {};
  return std::string(strerror_r(error, buffer, sizeof(buffer)));
}

HostPort parseHostPort(std::string_view text, std::string_view what) {
  auto invalid = [&](std::string_view why) {
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("{}='{}' is not a valid address: {} (expected host:port or "
                             "[ipv6]:port with a port in 1..65535)",
                             what, text, why));
  };
  std::string_view host;
  std::string_view portText;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) throw invalid("'[' without a matching ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') throw invalid("no ':port' after ']'");
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) throw invalid("no ':port'");
    host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos) {
      throw invalid("an IPv6 address must be written in brackets");
    }
    portText = text.substr(colon + 1);
  }
  if (host.empty()) throw invalid("the host is empty");
  unsigned port = 0;
  auto [end, error] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  if (portText.empty() || error != std::errc() || end != portText.data() + portText.size() ||
      port == 0 || port > 65535) {
    throw invalid("the port is not a number in 1..65535");
  }
  return HostPort{std::string(host), static_cast<uint16_t>(port)};
}

std::string formatHostPort(std::string_view host, uint16_t port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

int pollTimeoutMs(Deadline deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  auto now = Clock::now();
  if (deadline <= now) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 1'000'000'000));
}

bool waitForFd(int fd, short events, Deadline deadline, const std::atomic<bool>* cancel,
               std::string_view what) {
  // With a cancel flag, poll in slices short enough that a closing transport is not kept
  // waiting.
  constexpr int kCancelSliceMs = 100;
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      throw Error(ErrorCode::kSystemError, fmt::format("{}: cancelled", what));
    }
    int timeoutMs = pollTimeoutMs(deadline);
    if (cancel != nullptr && (timeoutMs < 0 || timeoutMs > kCancelSliceMs)) {
      timeoutMs = kCancelSliceMs;
    }
    pollfd entry{fd, events, 0};
    int rc = ::poll(&entry, 1, timeoutMs);
    if (rc > 0) return true;
    if (rc == 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    if (errno != EINTR) throwSystem(fmt::format("{}: poll", what), errno);
  }
}

UniqueFd connectWithRetry(const std::string& host, uint16_t port, Deadline deadline,
                          std::string_view what) {
  std::string lastError = "no attempt made";
  auto backoff = std::chrono::milliseconds(10);
  const std::string service = std::to_string(port);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
    if (rc != 0 && rc != EAI_AGAIN && rc != EAI_SYSTEM && rc != EAI_MEMORY) {
      // The name does not exist (a typo in GROVE_ROOT or MASTER_ADDR): waiting cannot help.
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("cannot connect to the {} at {}: cannot resolve host '{}': {}", what,
                              formatHostPort(host, port), host, gai_strerror(rc)));
    }
    if (rc != 0) {
      lastError = std::string("cannot resolve host: ") + gai_strerror(rc);
    } else {
      for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
        // One address may not use up the whole deadline when others could answer.
        auto attemptDeadline = std::min(deadline, Clock::now() + std::chrono::seconds(10));
        bool timedOut = false;
        UniqueFd fd = tryConnect(*a, attemptDeadline, nullptr, what, &lastError, &timedOut);
        if (fd.valid()) {
          freeaddrinfo(list);
          return fd;
        }
      }
      freeaddrinfo(list);
    }
    auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
  throw Error(ErrorCode::kTimeout,
              fmt::format("could not connect to the {} at {} before the deadline (last error: {})",
                          what, formatHostPort(host, port), lastError));
}

UniqueFd listenOn(const std::string& host, uint16_t port, uint16_t* boundPort,
                  std::string_view what, int backlog) {
  // Candidate addresses: for every interface, IPv6 dual-stack first, then plain IPv4 (for
  // hosts where IPv6 is absent or disabled); for a named host, what it resolves to.
  std::vector<std::pair<sockaddr_storage, socklen_t>> candidates;
  if (host.empty()) {
    sockaddr_storage v6Address{};
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&v6Address);
    v6->sin6_family = AF_INET6;
    v6->sin6_addr = in6addr_any;
    v6->sin6_port = htons(port);
    candidates.emplace_back(v6Address, sizeof(sockaddr_in6));
    sockaddr_storage v4Address{};
    auto* v4 = reinterpret_cast<sockaddr_in*>(&v4Address);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_ANY);
    v4->sin_port = htons(port);
    candidates.emplace_back(v4Address, sizeof(sockaddr_in));
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* list = nullptr;
    int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
    if (rc != 0 || list == nullptr) {
      throw Error(ErrorCode::kSystemError,
                  fmt::format("{}: cannot listen on port {} of {}: cannot resolve the host: {}",
                              what, port, host, gai_strerror(rc)));
    }
    sockaddr_storage address{};
    std::memcpy(&address, list->ai_addr, list->ai_addrlen);
    candidates.emplace_back(address, list->ai_addrlen);
    freeaddrinfo(list);
  }

  int error = 0;
  for (auto& [address, length] : candidates) {
    UniqueFd fd(socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      error = errno;
      continue;
    }
    int one = 1;
    int zero = 0;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (address.ss_family == AF_INET6 && host.empty()) {
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
      error = errno;
      if (error == EADDRINUSE || error == EACCES) break;  // IPv4 would fail the same way.
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      throwSystem(fmt::format("{}: cannot listen on port {}", what, port), errno);
    }
    sockaddr_storage bound{};
    socklen_t boundLength = sizeof(bound);
    if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &boundLength) != 0) {
      throwSystem(fmt::format("{}: getsockname after listening on port {}", what, port), errno);
    }
    if (boundPort != nullptr) {
      *boundPort = bound.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    return fd;
  }
  std::string hint = error == EADDRINUSE
                         ? fmt::format(" (another process is already using port {})", port)
                         : std::string();
  throw Error(ErrorCode::kSystemError,
              fmt::format("{}: cannot listen on port {} of {}: {}{}", what, port,
                          describeHost(host), errorText(error), hint));
}

void readExact(int fd, void* data, size_t size, Deadline deadline, std::string_view what,
               const std::atomic<bool>* cancel) {
  auto* bytes = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::recv(fd, bytes + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      throw Error(ErrorCode::kSystemError,
                  fmt::format("{}: the peer closed the connection ({} of {} bytes read)", what,
                              done, size));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitForFd(fd, POLLIN, deadline, cancel, what)) {
        throw Error(ErrorCode::kTimeout,
                    fmt::format("{}: timed out waiting for the peer ({} of {} bytes read)", what,
                                done, size));
      }
    } else if (errno != EINTR) {
      throwSystem(std::string(what), errno);
    }
  }
}

void writeExact(int fd, const void* data, size_t size, Deadline deadline, std::string_view what,
                const std::atomic<bool>* cancel) {
  const auto* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::send(fd, bytes + done, size - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitForFd(fd, POLLOUT, deadline, cancel, what)) {
        throw Error(ErrorCode::kTimeout,
                    fmt::format("{}: timed out waiting for the peer to accept data ({} of {} "
                                "bytes written)",
                                what, done, size));
      }
    } else if (errno != EINTR) {
      throwSystem(std::string(what), errno);
    }
  }
}

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throwSystem("fcntl(O_NONBLOCK)", errno);
  }
}

void configureStream(int fd) {
  setNonBlocking(fd);
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    throwSystem("setsockopt(TCP_NODELAY)", errno);
  }
}

UniqueFd dial(std::string_view hostPort, Deadline deadline, const std::atomic<bool>* cancel) {
  const HostPort address = parseHostPort(hostPort, "TCP address");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(address.port);
  if (int rc = getaddrinfo(address.host.c_str(), service.c_str(), &hints, &list);
      rc != 0 || list == nullptr) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("cannot resolve '{}': {}", address.host, gai_strerror(rc)));
  }
  const std::string what = fmt::format("connecting to {}", hostPort);
  std::string failure = "no address to try";
  for (addrinfo* entry = list; entry != nullptr; entry = entry->ai_next) {
    bool timedOut = false;
    UniqueFd fd;
    try {
      fd = tryConnect(*entry, deadline, cancel, what, &failure, &timedOut);
    } catch (...) {
      freeaddrinfo(list);
      throw;
    }
    if (timedOut) {
      freeaddrinfo(list);
      throw Error(ErrorCode::kTimeout, fmt::format("{}: timed out", what));
    }
    if (fd.valid()) {
      freeaddrinfo(list);
      return fd;
    }
  }
  freeaddrinfo(list);
  throw Error(ErrorCode::kSystemError, fmt::format("cannot connect to {}: {}", hostPort, failure));
}

std::string peerAddress(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return "unknown peer";
  }
  if (address.ss_family != AF_INET && address.ss_family != AF_INET6) return "local socket";
  char host[NI_MAXHOST] = {};
  char service[NI_MAXSERV] = {};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof(host), service,
                  sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown peer";
  }
  unsigned port = 0;
  std::from_chars(service, service + std::strlen(service), port);
  return formatHostPort(host, static_cast<uint16_t>(port));
}

}  // namespace grove::net
