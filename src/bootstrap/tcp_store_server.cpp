// The TCP store server: one thread, epoll, non-blocking sockets (see tcp_store.hpp for why).
//
// Each connection goes through the authentication state machine first, then its bytes are
// parsed as frames; every length is checked against kMaxKeyBytes / kMaxValueBytes as soon
// as it is read, before the buffer may grow further. A `get` for a missing key parks the
// connection in a waiter table (it reads no further requests until answered); a `set` or
// `add` of that key answers it. Anything malformed closes that one connection with a warning.
// A connection may leave "last wills" (onClose): values the server sets, unless the key is
// set already, when it closes without having cancelled them, which is how ranks learn at once that
// a peer's process ended in the middle of the rendezvous.
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <deque>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bootstrap/handshake.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tcp_store_wire.hpp"
#include "common/log.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);
constexpr size_t kReadChunk = 64 * 1024;
// Past this much unsent output a connection's further requests wait (back-pressure).
constexpr size_t kMaxPendingOutput = 1 << 20;

// A frame that breaks the protocol; closes its connection.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Connection {
  net::UniqueFd fd;
  std::string peer;
  std::unique_ptr<Handshake> handshake;  // Null once authenticated.
  net::Clock::time_point handshakeDeadline;
  std::string in;
  std::string out;
  size_t outOffset = 0;
  bool waiting = false;  // A get is parked in the waiter table.
  std::string waitKey;
  uint32_t events = 0;                                       // Current epoll interest.
  std::vector<std::pair<std::string, std::string>> onClose;  // key, value: set when it closes
};

}  // namespace

struct TcpStoreServer::Impl {
  std::string secret;
  uint16_t port = 0;
  net::UniqueFd listener;
  net::UniqueFd epoll;
  net::UniqueFd wake;
  std::atomic<bool> stopping{false};
  std::thread thread;

  std::unordered_map<uint64_t, Connection> connections;
  std::unordered_map<std::string, std::string> values;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters;
  std::deque<uint64_t> runnable;  // Connections whose parked get was answered.
  uint64_t nextId = 2;
  size_t handshaking = 0;

  void run();
  void accept();
  void onEvent(uint64_t id, uint32_t events);
  bool receive(uint64_t id, Connection& c);
  bool advanceHandshake(Connection& c);
  void processFrames(uint64_t id, Connection& c);
  void handleFrame(uint64_t id, Connection& c, uint8_t op, std::string key, std::string value);
  void respond(Connection& c, wire::Status status, std::string_view payload);
  void wakeWaiters(const std::string& key);
  bool flush(Connection& c);
  void updateInterest(uint64_t id, Connection& c);
  void close(uint64_t id, std::string_view why);  // `why` non-empty: logged as a warning.
  void drop(uint64_t id, std::string_view why);   // A peer that went away: logged as info.
  void expireHandshakes();
};

namespace {

void epollAdd(int epoll, int fd, uint64_t id, uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
    throw Error(ErrorCode::kSystemError, "store server: epoll_ctl: " + net::errorText(errno));
  }
}

}  // namespace

TcpStoreServer::TcpStoreServer(const std::string& host, uint16_t port, std::string secret)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.secret = std::move(secret);
  s.listener = net::listenOn(host, port, &s.port, "store server");
  net::setNonBlocking(s.listener.get());
  s.epoll.reset(epoll_create1(EPOLL_CLOEXEC));
  s.wake.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s.epoll.valid() || !s.wake.valid()) {
    throw Error(ErrorCode::kSystemError, "store server: epoll/eventfd: " + net::errorText(errno));
  }
  epollAdd(s.epoll.get(), s.listener.get(), kListenerId, EPOLLIN);
  epollAdd(s.epoll.get(), s.wake.get(), kWakeId, EPOLLIN);
  s.thread = std::thread([&s] { s.run(); });
  log::info(-1, "store server listening on port {}", s.port);
}

TcpStoreServer::~TcpStoreServer() {
  impl_->stopping = true;
  uint64_t one = 1;
  (void)!::write(impl_->wake.get(), &one, sizeof(one));
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t TcpStoreServer::port() const { return impl_->port; }

void TcpStoreServer::Impl::run() {
  std::vector<epoll_event> events(256);
  while (!stopping) {
    int timeout = handshaking > 0 ? 500 : -1;
    int n = epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      log::warn(-1, "store server: epoll_wait failed, stopping: {}", net::errorText(errno));
      return;
    }
    for (int i = 0; i < n && !stopping; ++i) onEvent(events[i].data.u64, events[i].events);
    while (!runnable.empty() && !stopping) {
      uint64_t id = runnable.front();
      runnable.pop_front();
      auto it = connections.find(id);
      if (it != connections.end()) processFrames(id, it->second);
    }
    if (handshaking > 0) expireHandshakes();
  }
}

void TcpStoreServer::Impl::onEvent(uint64_t id, uint32_t events) {
  if (id == kWakeId) {
    uint64_t value = 0;
    (void)!::read(wake.get(), &value, sizeof(value));
    return;
  }
  if (id == kListenerId) {
    accept();
    return;
  }
  auto it = connections.find(id);
  if (it == connections.end()) return;
  Connection& c = it->second;
  if ((events & EPOLLOUT) != 0 && !flush(c)) return drop(id, "the connection broke");
  if ((events & EPOLLIN) != 0 && (c.events & EPOLLIN) != 0) {
    if (!receive(id, c)) return;
  } else if ((events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0) {
    return close(id, "");
  }
  auto again = connections.find(id);
  if (again != connections.end()) processFrames(id, again->second);
}

void TcpStoreServer::Impl::accept() {
  while (true) {
    int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        log::warn(-1, "store server: accept failed: {}", net::errorText(errno));
      }
      return;
    }
    uint64_t id = nextId++;
    Connection& c = connections[id];
    c.fd.reset(fd);
    c.peer = net::peerAddress(fd);
    c.handshake = std::make_unique<Handshake>(secret, true, "store server", c.peer);
    c.handshakeDeadline = net::Clock::now() + kHandshakeTimeout;
    c.out = std::move(c.handshake->output());
    c.handshake->output().clear();
    ++handshaking;
    c.events = EPOLLIN | EPOLLRDHUP;
    epollAdd(epoll.get(), fd, id, c.events);
    if (!flush(c)) {
      drop(id, "the connection broke");
      continue;
    }
    updateInterest(id, c);
  }
}

bool TcpStoreServer::Impl::receive(uint64_t id, Connection& c) {
  char buffer[kReadChunk];
  ssize_t n = ::recv(c.fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
  if (n == 0) {
    close(id, c.in.empty() ? "" : "the peer closed the connection in the middle of a frame");
    return false;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
    drop(id, net::errorText(errno));
    return false;
  }
  c.in.append(buffer, static_cast<size_t>(n));
  if (c.handshake != nullptr && !advanceHandshake(c)) {
    close(id, "");
    return false;
  }
  return true;
}

bool TcpStoreServer::Impl::advanceHandshake(Connection& c) {
  try {
    size_t used = 0;
    while (!c.handshake->done() && used < c.in.size()) {
      size_t take = std::min(c.handshake->wanted(), c.in.size() - used);
      c.handshake->feed(c.in.data() + used, take);
      used += take;
    }
    c.in.erase(0, used);
    c.out += c.handshake->output();
    c.handshake->output().clear();
    if (c.handshake->done()) {
      c.handshake.reset();
      --handshaking;
      log::trace(-1, "store server: {} authenticated", c.peer);
    }
    return flush(c);
  } catch (const Error& error) {
    log::warn(-1, "{}; closing the connection", error.what());
    // Ranks waiting for a peer that never arrives can then say why it did not.
    std::string& refused = values[std::string(kRefusedConnectionsKey)];
    if (refused.size() < 4096) {
      refused += fmt::format("{}{} (connection from {})", refused.empty() ? "" : "; ", error.what(),
                             c.peer);
    }
    wakeWaiters(std::string(kRefusedConnectionsKey));
    const std::string& refusal = c.handshake->output();
    if (!refusal.empty()) {
      (void)::send(c.fd.get(), refusal.data(), refusal.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    return false;
  }
}

void TcpStoreServer::Impl::processFrames(uint64_t id, Connection& c) {
  try {
    while (c.handshake == nullptr && !c.waiting && c.out.size() - c.outOffset < kMaxPendingOutput) {
      wire::DecodedRequest request = wire::decodeRequest(c.in, kMaxKeyBytes, kMaxValueBytes);
      if (request.outcome == wire::DecodedRequest::Outcome::kMalformed) {
        throw ProtocolError(request.error);
      }
      if (request.outcome == wire::DecodedRequest::Outcome::kIncomplete) {
        // Lengths checked by decodeRequest against kMaxKeyBytes / kMaxValueBytes.
        if (request.frameBytes > 0) c.in.reserve(request.frameBytes);
        break;
      }
      uint8_t op = request.op;
      std::string key(request.key);
      std::string value(request.value);
      c.in.erase(0, request.frameBytes);
      handleFrame(id, c, op, std::move(key), std::move(value));
    }
  } catch (const ProtocolError& error) {
    log::warn(-1, "store server: closing the connection from {}: {}", c.peer, error.what());
    return close(id, "");
  }
  if (!flush(c)) return drop(id, "the connection broke");
  updateInterest(id, c);
}

void TcpStoreServer::Impl::handleFrame(uint64_t id, Connection& c, uint8_t op, std::string key,
                                       std::string value) {
  switch (op) {
    case wire::kSet:
      values[key] = std::move(value);
      respond(c, wire::kOk, {});
      wakeWaiters(key);
      return;
    case wire::kGet: {
      if (!value.empty()) throw ProtocolError("a get request carries a value");
      auto it = values.find(key);
      if (it != values.end()) return respond(c, wire::kOk, it->second);
      c.waiting = true;
      c.waitKey = key;
      waiters[key].push_back(id);
      return;
    }
    case wire::kAdd: {
      if (value.size() != 8) throw ProtocolError("an add request's value is not 8 bytes");
      auto delta = static_cast<int64_t>(wire::getU64(value.data()));
      int64_t current = 0;
      auto it = values.find(key);
      if (it != values.end()) {
        const std::string& text = it->second;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), current);
        if (error != std::errc() || end != text.data() + text.size()) {
          return respond(c, wire::kError,
                         fmt::format("add: key '{}' holds a value that is not an integer", key));
        }
      }
      int64_t result = 0;
      if (__builtin_add_overflow(current, delta, &result)) {
        return respond(
            c, wire::kError,
            fmt::format("add: {} + {} overflows 64 bits for key '{}'", current, delta, key));
      }
      values[key] = std::to_string(result);
      std::string payload;
      wire::putU64(payload, static_cast<uint64_t>(result));
      respond(c, wire::kOk, payload);
      wakeWaiters(key);
      return;
    }
    case wire::kCheck:
      if (!value.empty()) throw ProtocolError("a check request carries a value");
      respond(c, wire::kOk,
              values.count(key) != 0 ? std::string_view("\1", 1) : std::string_view("\0", 1));
      return;
    case wire::kErase:
      values.erase(key);
      return respond(c, wire::kOk, {});
    case wire::kOnClose: {
      std::erase_if(c.onClose, [&key](const auto& will) { return will.first == key; });
      if (!value.empty()) {
        if (c.onClose.size() >= wire::kMaxOnClosePerConnection) {
          return respond(c, wire::kError,
                         fmt::format("onClose: a connection may hold at most {} (key '{}')",
                                     wire::kMaxOnClosePerConnection, key));
        }
        c.onClose.emplace_back(std::move(key), std::move(value));
      }
      return respond(c, wire::kOk, {});
    }
    default:
      throw ProtocolError(fmt::format("unknown opcode {:#04x}", op));
  }
}

void TcpStoreServer::Impl::respond(Connection& c, wire::Status status, std::string_view payload) {
  c.out += static_cast<char>(status);
  wire::putU64(c.out, payload.size());
  c.out += payload;
}

void TcpStoreServer::Impl::wakeWaiters(const std::string& key) {
  auto it = waiters.find(key);
  if (it == waiters.end()) return;
  const std::string& value = values[key];
  for (uint64_t id : it->second) {
    auto c = connections.find(id);
    if (c == connections.end() || !c->second.waiting || c->second.waitKey != key) continue;
    c->second.waiting = false;
    c->second.waitKey.clear();
    respond(c->second, wire::kOk, value);
    runnable.push_back(id);  // Flushes the answer and reads its next requests.
  }
  waiters.erase(it);
}

bool TcpStoreServer::Impl::flush(Connection& c) {
  while (c.outOffset < c.out.size()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.outOffset, c.out.size() - c.outOffset,
                       MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.outOffset += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  if (c.outOffset == c.out.size()) {
    c.out.clear();
    c.outOffset = 0;
  } else if (c.outOffset > kMaxPendingOutput) {
    c.out.erase(0, c.outOffset);
    c.outOffset = 0;
  }
  return true;
}

void TcpStoreServer::Impl::updateInterest(uint64_t id, Connection& c) {
  bool blocked = c.waiting || c.out.size() - c.outOffset >= kMaxPendingOutput;
  uint32_t events = EPOLLRDHUP;
  if (!blocked) events |= EPOLLIN;
  if (c.outOffset < c.out.size()) events |= EPOLLOUT;
  if (events == c.events) return;
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  if (epoll_ctl(epoll.get(), EPOLL_CTL_MOD, c.fd.get(), &event) == 0) c.events = events;
}

void TcpStoreServer::Impl::close(uint64_t id, std::string_view why) {
  auto it = connections.find(id);
  if (it == connections.end()) return;
  Connection& c = it->second;
  if (!why.empty()) log::warn(-1, "store server: closing the connection from {}: {}", c.peer, why);
  if (c.handshake != nullptr) --handshaking;
  if (c.waiting) {
    auto w = waiters.find(c.waitKey);
    if (w != waiters.end()) std::erase(w->second, id);
    if (w != waiters.end() && w->second.empty()) waiters.erase(w);
  }
  std::vector<std::pair<std::string, std::string>> wills = std::move(c.onClose);
  connections.erase(it);  // Closing the descriptor also removes it from the epoll set.
  // A will does not overwrite: what was set first (a rank's own, fuller account of its
  // failure, published just before its process ended) stays.
  for (auto& [key, value] : wills) {
    if (values.emplace(key, std::move(value)).second) wakeWaiters(key);
  }
}

void TcpStoreServer::Impl::drop(uint64_t id, std::string_view why) {
  auto it = connections.find(id);
  if (it == connections.end()) return;
  log::info(-1, "store server: lost the connection from {}: {}", it->second.peer, why);
  close(id, "");
}

void TcpStoreServer::Impl::expireHandshakes() {
  auto now = net::Clock::now();
  std::vector<uint64_t> expired;
  for (auto& [id, c] : connections) {
    if (c.handshake != nullptr && now >= c.handshakeDeadline) expired.push_back(id);
  }
  for (uint64_t id : expired) close(id, "the authentication handshake timed out");
}

}  // namespace grove::bootstrap
