// Socket helpers of the TCP transport (see socket.hpp).
#include "transport/tcp/socket.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "grove/error.hpp"

namespace grove::transport::tcp {
namespace {

std::string errnoText(int error) {
  return fmt::format("{} (errno {})", std::strerror(error), error);
}

int millisecondsUntil(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 100));
}

/// Waits until `fd` is ready for `events`, the deadline passes or `cancel` is set.
void waitFor(int fd, short events, Deadline deadline, std::string_view what,
             const std::atomic<bool>* cancel) {
  for (;;) {
    if (cancel != nullptr && cancel->load()) {
      throw Error(ErrorCode::kSystemError, fmt::format("{}: cancelled", what));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(ErrorCode::kTimeout, fmt::format("{}: timed out", what));
    }
    pollfd entry{fd, events, 0};
    int ready = ::poll(&entry, 1, millisecondsUntil(deadline));
    if (ready > 0) return;
    if (ready < 0 && errno != EINTR) {
      throw Error(ErrorCode::kSystemError, fmt::format("{}: poll: {}", what, errnoText(errno)));
    }
  }
}

addrinfo* resolve(const std::string& host, int port, int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | flags;
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int status = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (status != 0 || result == nullptr) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("cannot resolve '{}': {}", host, gai_strerror(status)));
  }
  return result;
}

}  // namespace

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string formatHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::pair<std::string, int> parseHostPort(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close != std::string_view::npos && close + 1 < text.size() && text[close + 1] == ':') {
      host = text.substr(1, close - 1);
      port = text.substr(close + 2);
    }
  } else if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  int value = 0;
  bool digits = !port.empty() && port.size() <= 5 &&
                std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) value = std::stoi(std::string(port));
  if (host.empty() || !digits || value <= 0 || value > 65535) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("TCP address '{}' is not host:port or [ipv6]:port", text));
  }
  return {std::string(host), value};
}

std::pair<Socket, int> listenOn(const std::string& host) {
  addrinfo* list = resolve(host, 0, AI_NUMERICHOST | AI_PASSIVE);
  Socket socket(::socket(list->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  int error = socket.valid() ? 0 : errno;
  if (error == 0 && ::bind(socket.fd(), list->ai_addr, list->ai_addrlen) != 0) error = errno;
  ::freeaddrinfo(list);
  if (error == 0 && ::listen(socket.fd(), SOMAXCONN) != 0) error = errno;
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (error == 0 && ::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&bound), &length) != 0)
    error = errno;
  if (error != 0) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("cannot listen on {}: {}", host, errnoText(error)));
  }
  int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return {std::move(socket), port};
}

void configureStream(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Socket dial(std::string_view hostPort, Deadline deadline, const std::atomic<bool>* cancel) {
  auto [host, port] = parseHostPort(hostPort);
  addrinfo* list = resolve(host, port, 0);
  std::string failure;
  for (addrinfo* entry = list; entry != nullptr; entry = entry->ai_next) {
    Socket socket(::socket(entry->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket.valid()) {
      failure = errnoText(errno);
      continue;
    }
    int status = ::connect(socket.fd(), entry->ai_addr, entry->ai_addrlen);
    if (status != 0 && errno != EINPROGRESS) {
      failure = errnoText(errno);
      continue;
    }
    if (status != 0) {
      try {
        waitFor(socket.fd(), POLLOUT, deadline, fmt::format("connecting to {}", hostPort), cancel);
      } catch (...) {
        ::freeaddrinfo(list);
        throw;
      }
      int error = 0;
      socklen_t length = sizeof error;
      ::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        failure = errnoText(error);
        continue;
      }
    }
    ::freeaddrinfo(list);
    configureStream(socket.fd());
    return socket;
  }
  ::freeaddrinfo(list);
  throw Error(ErrorCode::kSystemError, fmt::format("cannot connect to {}: {}", hostPort, failure));
}

void sendAll(int fd, const void* data, size_t bytes, Deadline deadline, std::string_view what,
             const std::atomic<bool>* cancel) {
  const char* cursor = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t sent = ::send(fd, cursor, bytes, MSG_NOSIGNAL);
    if (sent > 0) {
      cursor += sent;
      bytes -= static_cast<size_t>(sent);
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFor(fd, POLLOUT, deadline, what, cancel);
    } else if (sent < 0 && errno != EINTR) {
      throw Error(ErrorCode::kSystemError, fmt::format("{}: send: {}", what, errnoText(errno)));
    }
  }
}

void receiveAll(int fd, void* data, size_t bytes, Deadline deadline, std::string_view what,
                const std::atomic<bool>* cancel) {
  char* cursor = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t got = ::recv(fd, cursor, bytes, 0);
    if (got > 0) {
      cursor += got;
      bytes -= static_cast<size_t>(got);
    } else if (got == 0) {
      throw Error(ErrorCode::kSystemError, fmt::format("{}: connection closed by the peer", what));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      waitFor(fd, POLLIN, deadline, what, cancel);
    } else if (errno != EINTR) {
      throw Error(ErrorCode::kSystemError, fmt::format("{}: recv: {}", what, errnoText(errno)));
    }
  }
}

std::string peerName(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "?";
  char host[NI_MAXHOST] = {};
  char service[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof host, service,
                    sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return formatHostPort(host, std::atoi(service));
}

}  // namespace grove::transport::tcp
