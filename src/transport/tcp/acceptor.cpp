// Pending handshakes of the TCP transport's listener (see acceptor.hpp for why).
//
// Each accepted socket walks kAuth (bootstrap::Handshake, fed exactly the bytes it asks
// for), kHello (Hello::kBytes, judged by answerHello) and kAck (the acknowledgement is
// flushed), then leaves the epoll set and goes to onAccepted. The reads never go past the
// hello: the connector sends nothing more before it has the ack. Everything is
// level-triggered and non-blocking; refusals, garbage, EOF and errors close only that socket.
#include "transport/tcp/acceptor.hpp"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bootstrap/handshake.hpp"
#include "common/log.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"

namespace grove::transport::tcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
// Out of descriptors: stop accepting for this long (the kernel queues meanwhile) rather
// than spin on a listener that stays readable.
constexpr auto kFullPause = std::chrono::milliseconds(100);
constexpr auto kWarningInterval = std::chrono::seconds(1);

}  // namespace

struct Acceptor::Pending {
  enum class Phase { kAuth, kHello, kAck };
  Pending(uint64_t key, net::UniqueFd s, std::string from, const std::string& secret, int rank,
          Clock::time_point end)
      : id(key),
        socket(std::move(s)),
        peer(std::move(from)),
        deadline(end),
        auth(secret, /*isServer=*/true, fmt::format("tcp transport rank {}", rank), peer) {}
  uint64_t id;
  net::UniqueFd socket;
  std::string peer;
  Clock::time_point deadline;
  bootstrap::Handshake auth;
  Phase phase = Phase::kAuth;
  std::string hello;  ///< Hello bytes received so far.
  Hello accepted;
  std::string out;  ///< Bytes to send, in order.
  uint32_t events = 0;
};

Acceptor::Acceptor(int listener, HelloPolicy policy, std::string secret, size_t maxPending,
                   std::chrono::milliseconds deadline, OnAccepted onAccepted)
    : listener_(listener),
      policy_(std::move(policy)),
      secret_(std::move(secret)),
      maxPending_(std::max<size_t>(maxPending, 1)),
      deadline_(deadline),
      onAccepted_(std::move(onAccepted)),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!epoll_.valid() || !wake_.valid()) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("TCP transport rank {}: acceptor epoll/eventfd: {}", policy_.rank,
                            net::errorText(errno)));
  }
  for (auto [fd, id] : {std::pair{listener_, kListenerId}, std::pair{wake_.get(), kWakeId}}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = id;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event);
  }
  thread_ = std::thread([this] { run(); });
}

Acceptor::~Acceptor() {
  stopping_ = true;
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
  pending_.clear();
  if (suppressed_ > 0) {
    log::warn(policy_.rank,
              "TCP transport: {} more warnings about refused connections were not "
              "logged",
              suppressed_);
  }
}

void Acceptor::run() {
  epoll_event events[64];
  while (!stopping_) {
    int count = ::epoll_wait(epoll_.get(), events, 64, waitMs());
    if (count < 0 && errno != EINTR) {
      log::warn(policy_.rank, "TCP transport: acceptor epoll_wait failed, stopping: {}",
                net::errorText(errno));
      return;
    }
    for (int i = 0; i < count && !stopping_; ++i) onEvent(events[i].data.u64, events[i].events);
    expire();
    if (listenerPausedUntil_ != Clock::time_point{} && Clock::now() >= listenerPausedUntil_) {
      listenerPausedUntil_ = {};
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u64 = kListenerId;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_, &event);
    }
  }
}

int Acceptor::waitMs() const {
  Clock::time_point next = Clock::time_point::max();
  if (!pending_.empty()) next = pending_.begin()->second->deadline;  // The oldest ends first.
  if (listenerPausedUntil_ != Clock::time_point{}) next = std::min(next, listenerPausedUntil_);
  if (next == Clock::time_point::max()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

void Acceptor::onEvent(uint64_t id, uint32_t events) {
  if (id == kWakeId) {
    uint64_t value = 0;
    (void)!::read(wake_.get(), &value, sizeof value);
    return;
  }
  if (id == kListenerId) return acceptAll();
  serve(id, events);
}

void Acceptor::serve(uint64_t id, uint32_t events) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& p = *it->second;
  // An ack that waits for room is not read behind, so a hang-up there would fire forever.
  if (p.phase == Pending::Phase::kAck && (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0) {
    return close(id, "");
  }
  try {
    if (!advance(p)) close(id, "");
  } catch (const std::exception& error) {
    // A refusal: tell the peer (best effort) before closing, as authenticate() does.
    p.out += p.auth.output();
    if (!p.out.empty()) {
      (void)::send(p.socket.get(), p.out.data(), p.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    close(id, fmt::format("refused a connection from {}: {}", p.peer, error.what()));
  }
}

// At most half the cap per call: the pending sockets' own events are served between two
// batches, so a burst queued behind a real peer does not push it out before it was heard.
void Acceptor::acceptAll() {
  for (size_t batch = 0; batch < std::max<size_t>(maxPending_ / 2, 1) && !stopping_; ++batch) {
    int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      warnLimited(fmt::format("accept failed ({}); pausing the listener for {} ms",
                              net::errorText(errno), kFullPause.count()));
      listenerPausedUntil_ = Clock::now() + kFullPause;
      epoll_event event{};
      event.data.u64 = kListenerId;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_, &event);
      return;
    }
    net::configureStream(fd);
    while (pending_.size() >= maxPending_) {
      close(pending_.begin()->first,
            fmt::format("closed the connection from {}: {} handshakes pending (the cap), it "
                        "is the oldest",
                        pending_.begin()->second->peer, maxPending_));
    }
    uint64_t id = nextId_++;
    auto p = std::make_unique<Pending>(id, net::UniqueFd(fd), net::peerAddress(fd), secret_,
                                       policy_.rank, Clock::now() + deadline_);
    p->out = std::move(p->auth.output());
    p->auth.output().clear();
    p->events = EPOLLIN | EPOLLRDHUP | EPOLLOUT;
    epoll_event event{};
    event.events = p->events;
    event.data.u64 = id;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event);
    pending_.emplace(id, std::move(p));
    serve(id, 0);  // Its hello may be here already.
  }
}

bool Acceptor::advance(Pending& p) {
  if (!flush(p)) return false;
  while (p.phase != Pending::Phase::kAck) {
    size_t wanted =
        p.phase == Pending::Phase::kAuth ? p.auth.wanted() : Hello::kBytes - p.hello.size();
    char buffer[bootstrap::kHelloBytes + Hello::kBytes];
    ssize_t got = ::recv(p.socket.get(), buffer, std::min(wanted, sizeof buffer), MSG_DONTWAIT);
    if (got == 0) return false;  // The peer went away: nothing to report.
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    if (p.phase == Pending::Phase::kAuth) {
      p.auth.feed(buffer, static_cast<size_t>(got));
      p.out += p.auth.output();
      p.auth.output().clear();
      if (p.auth.done()) p.phase = Pending::Phase::kHello;
    } else {
      p.hello.append(buffer, static_cast<size_t>(got));
      if (p.hello.size() < Hello::kBytes) continue;
      HelloAnswer answer =
          answerHello(reinterpret_cast<const unsigned char*>(p.hello.data()), policy_);
      p.out += answer.ack;
      if (!answer.refusal.empty()) throw Error(ErrorCode::kInvalidUsage, answer.refusal);
      p.accepted = answer.hello;
      p.phase = Pending::Phase::kAck;
    }
    if (!flush(p)) return false;
  }
  if (p.phase == Pending::Phase::kAck && p.out.empty()) {
    // Done: out of this epoll set and over to the network thread.
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.socket.get(), nullptr);
    onAccepted_(std::move(p.socket), p.accepted, p.peer);
    return false;
  }
  uint32_t events = EPOLLRDHUP | (p.out.empty() ? 0U : EPOLLOUT);
  if (p.phase != Pending::Phase::kAck) events |= EPOLLIN;  // An ack waits for room only.
  if (events != p.events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = p.id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, p.socket.get(), &event) == 0) p.events = events;
  }
  return true;
}

bool Acceptor::flush(Pending& p) {
  while (!p.out.empty()) {
    ssize_t sent = ::send(p.socket.get(), p.out.data(), p.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent > 0) {
      p.out.erase(0, static_cast<size_t>(sent));
    } else if (sent < 0 && errno == EINTR) {
      continue;
    } else {
      return sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

void Acceptor::close(uint64_t id, const std::string& why) {
  if (!why.empty()) warnLimited(why);
  pending_.erase(id);  // Closing the descriptor also takes it out of the epoll set.
}

void Acceptor::expire() {
  Clock::time_point now = Clock::now();
  while (!pending_.empty() && pending_.begin()->second->deadline <= now) {
    close(pending_.begin()->first,
          fmt::format("closed the connection from {}: its handshake did not finish within {} ms",
                      pending_.begin()->second->peer, deadline_.count()));
  }
}

// A flood would otherwise log a line per connection: one warning a second, with a count of
// those left out.
void Acceptor::warnLimited(const std::string& message) {
  Clock::time_point now = Clock::now();
  if (lastWarning_ != Clock::time_point{} && now - lastWarning_ < kWarningInterval) {
    ++suppressed_;
    return;
  }
  lastWarning_ = now;
  std::string left =
      suppressed_ == 0
          ? std::string()
          : fmt::format(" ({} more such warnings since the previous one were not logged)",
                        suppressed_);
  suppressed_ = 0;
  log::warn(policy_.rank, "TCP transport: {}{}", message, left);
}

}  // namespace grove::transport::tcp
