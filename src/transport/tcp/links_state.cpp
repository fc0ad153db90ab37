// LinksState (links_state.hpp): what the rank thread, the dialing helpers, the acceptor and
// the network thread share. This file builds it (the listener and its published addresses,
// rails) and holds what it does for them: receive FIFOs, failure marking and heartbeat
// checks, helper threads, dialing a peer and adopting accepted handshakes.
//
// A connection is opened by the rank that needs it, the first time one of its send FIFOs on
// that stream is asked for, and the acceptor only checks and adopts it, so no two ranks ever
// race to open the same connection and nothing needs deduplicating. With shared connections
// (links_state.hpp) a higher rank's dial asks the lower one to dial back, and the lower
// rank's connection is the one both send on.
#include "transport/tcp/links_state.hpp"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "common/log.hpp"
#include "grove/error.hpp"
#include "transport/tcp/interfaces.hpp"

namespace grove::transport::tcp {

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

FifoBox::FifoBox(const FifoGeometry& geometry, Doorbell* senderBell, Doorbell* receiverBell)
    : bytes_(Fifo::memoryBytes(geometry.slotBytes, geometry.depth)) {
  memory_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory_ == MAP_FAILED) {
    throw Error(
        ErrorCode::kSystemError,
        fmt::format("TCP transport: cannot map {} bytes of FIFO memory (errno {})", bytes_, errno));
  }
  fifo_ =
      std::make_unique<Fifo>(memory_, geometry.slotBytes, geometry.depth, senderBell, receiverBell);
}

FifoBox::~FifoBox() {
  fifo_.reset();
  ::munmap(memory_, bytes_);
}

namespace {

// Every lane of every peer has its own socket, so a rank of a wide plan can hold hundreds
// of them: lift this process's soft limit on open files to its hard limit, once.
void raiseOpenFileLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
      limit.rlim_cur = limit.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &limit);
    }
  });
}

}  // namespace

LinksState::LinksState(bootstrap::Store& storeRef, TcpOptions optionsValue, Doorbell& bell)
    : store(storeRef), options(std::move(optionsValue)), rankBell(bell) {
  const TcpOptions& o = options;
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size || o.socketsPerPeer < 1 ||
      o.socketsPerPeer > kStreamsPerLane || o.geometry.slotBytes == 0 || o.geometry.depth < 1) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("TcpLinks: rank {} of {} with {} sockets per peer and {} slots of {} "
                    "bytes: expected 0 <= rank < size, 1..65536 sockets, nonzero geometry",
                    o.rank, o.size, o.socketsPerPeer, o.geometry.depth, o.geometry.slotBytes));
  }
  raiseOpenFileLimit();
  isRemote.assign(static_cast<size_t>(o.size), false);
  for (int peer : o.remoteRanks) {
    if (peer < 0 || peer >= o.size || peer == o.rank) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("TcpLinks: rank {}: remote rank {} is not another rank of 0..{}",
                              o.rank, peer, o.size - 1));
    }
    isRemote[static_cast<size_t>(peer)] = true;
  }
  failed = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(o.size));
  lastHeardNs = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(o.size));
  for (int r = 0; r < o.size; ++r) lastHeardNs[r].store(0, std::memory_order_relaxed);
  incomingOpen = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(o.size));
  saidBye = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(o.size));
  drained = std::make_unique<std::atomic<double>[]>(static_cast<size_t>(o.size));
  drainedLowest = std::make_unique<std::atomic<double>[]>(static_cast<size_t>(o.size));
  for (int r = 0; r < o.size; ++r) {
    incomingOpen[r].store(0, std::memory_order_relaxed);
    saidBye[r].store(false, std::memory_order_relaxed);
    drained[r].store(0, std::memory_order_relaxed);
    drainedLowest[r].store(0, std::memory_order_relaxed);
  }
  failures.resize(static_cast<size_t>(o.size));

  eventFd = net::UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  epoll = net::UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  quietEpoll = net::UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!eventFd.valid() || !epoll.valid() || !quietEpoll.valid()) {
    throw Error(
        ErrorCode::kSystemError,
        fmt::format("TcpLinks rank {}: eventfd/epoll_create1 failed (errno {})", o.rank, errno));
  }
  attachEventFd(netBell, eventFd.get());
  attachEventFd(controlBell, eventFd.get());
  if (!o.linkAddresses.empty() && o.linkAddresses.size() != static_cast<size_t>(o.size)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("TcpLinks: rank {}: {} link addresses for {} ranks (expected none "
                            "or one per rank)",
                            o.rank, o.linkAddresses.size(), o.size));
  }
  const bool perLink = std::any_of(o.linkAddresses.begin(), o.linkAddresses.end(),
                                   [](const std::string& a) { return !a.empty(); });
  // The topology's per-link addresses already say which link each edge takes: no rails.
  std::vector<InterfaceChoice> choices =
      chooseInterfaces(o.interfaces, o.rank, perLink ? 1 : static_cast<size_t>(kMaxRails));
  const InterfaceChoice choice = choices.front();
  const bool v6 = choice.address.find(':') != std::string::npos;
  // One listener serves every rail: the wildcard of the first interface's family.
  std::erase_if(choices, [&](const InterfaceChoice& c) {
    return (c.address.find(':') != std::string::npos) != v6;
  });
  rails = static_cast<int>(choices.size());
  sharedConnections = rails == 1 && o.sharedConnections;
  railInterfaces = choices;
  automaticRails = o.interfaces.find_first_not_of(" \t") == std::string::npos;
  for (const NetInterface& interface : listInterfaces()) {
    localAddresses.insert(localAddresses.end(), interface.addresses.begin(),
                          interface.addresses.end());
  }
  policy = HelloPolicy{o.rank, o.remoteRanks, o.socketsPerPeer, o.geometry.slotBytes, rails};
  // Peers dial the topology's per-link addresses, or one address per rail: accept on all
  // of them (the wildcard).
  const bool wildcard = perLink || rails > 1;
  uint16_t port = 0;
  listener =
      net::listenOn(wildcard ? (v6 ? "::" : "0.0.0.0") : choice.address, 0, &port, "TCP transport");
  net::setNonBlocking(listener.get());
  address = net::formatHostPort(choice.address, port);
  std::string names;
  for (const InterfaceChoice& c : choices) {
    published +=
        fmt::format("{}{}", published.empty() ? "" : ",", net::formatHostPort(c.address, port));
    names += fmt::format("{}{}", names.empty() ? "" : ", ", c.name);
  }
  log::info(o.rank, "TCP transport listens on {} ({}){}", published, names,
            perLink     ? fmt::format(" and on every local address (port {}): the topology gives "
                                          "per-link addresses",
                                      port)
            : rails > 1 ? fmt::format(": {} rails, every connection striped over them", rails)
                        : "");
}

LinksState::~LinksState() = default;

Fifo& LinksState::recvFifo(int peer, int lane) {
  std::lock_guard lock(mutex);
  auto& box = recvFifos[{peer, lane}];
  if (!box) box = std::make_unique<FifoBox>(options.geometry, &netBell, &rankBell);
  return box->fifo();
}

void LinksState::markFailed(int peer, const std::string& reason, FailureInfo info) {
  if (peer < 0 || peer >= options.size) return;
  {
    std::lock_guard lock(mutex);
    if (failures[peer].origin < 0) {
      if (info.origin < 0 || info.origin >= options.size) info = FailureInfo{peer, reason};
      failures[peer] = sanitizeFailure(std::move(info));
    }
  }
  if (!failed[peer].exchange(true)) log::warn(options.rank, "TCP transport: {}", reason);
  int current = lowestFailed.load();
  while ((current < 0 || peer < current) && !lowestFailed.compare_exchange_weak(current, peer)) {
  }
  ring(rankBell);
}

void LinksState::heard(int peer, int64_t ns) {
  std::atomic<int64_t>& last = lastHeardNs[peer];
  int64_t current = last.load(std::memory_order_relaxed);
  while (current < ns && !last.compare_exchange_weak(current, ns, std::memory_order_relaxed)) {
  }
}

void LinksState::checkHeartbeats() {
  if (options.heartbeatTimeout.count() <= 0) return;
  const int64_t now = steadyNs();
  // failedPeer() runs every few milliseconds while the rank waits: a longer gap means a new
  // wait began, and silence before it does not count (the rank may simply have been busy).
  if (now - lastCheckNs.exchange(now) > 1'000'000'000) waitingSinceNs = now;
  const int64_t limit = std::chrono::nanoseconds(options.heartbeatTimeout).count();
  for (int peer : options.remoteRanks) {
    int64_t last = lastHeardNs[peer].load(std::memory_order_relaxed);
    if (last == 0 || failed[peer].load(std::memory_order_relaxed)) continue;
    if (now - std::max(last, waitingSinceNs.load()) <= limit) continue;
    std::string cause = fmt::format(
        "no heartbeat from rank {} for {} s (GROVE_HEARTBEAT_TIMEOUT): stopped, hung or "
        "unreachable",
        peer, std::chrono::duration<double>(options.heartbeatTimeout).count());
    markFailed(peer, cause, FailureInfo{peer, cause});
  }
}

void LinksState::notifyNetwork() {
  changed.store(true);
  ring(controlBell);
}

void LinksState::setHelperFd(Helper& helper, int fd) {
  std::lock_guard lock(mutex);
  helper.fd = fd;
}

void LinksState::reapHelpers() {
  std::list<Helper> finished;
  {
    std::lock_guard lock(mutex);
    for (auto it = helpers.begin(); it != helpers.end();) {
      auto next = std::next(it);
      if (it->done) finished.splice(finished.end(), helpers, it);
      it = next;
    }
  }
  for (Helper& helper : finished) helper.thread.join();
}

void LinksState::handOff(net::UniqueFd socket, int peer, int stream,
                         Connection::Direction direction, int rail) {
  {
    std::lock_guard lock(mutex);
    handoffs.push_back(Handoff{std::move(socket), peer, stream, direction, rail});
  }
  notifyNetwork();
}

void LinksState::startDial(int peer, int stream, std::string peerAddress, int rail) {
  startHelper([this, peer, stream, rail, peerAddress = std::move(peerAddress)](Helper& helper) {
    dial(helper, peer, stream, peerAddress, rail);
  });
}

std::vector<std::string> LinksState::addressesOf(int peer) {
  {
    std::lock_guard lock(mutex);
    auto known = peerAddresses.find(peer);
    if (known != peerAddresses.end()) return known->second;
  }
  // Outside the mutex: the peer may not have published yet.
  std::vector<std::string> addresses = railAddresses(
      peer, store.get(fmt::format("{}/tcp/{}", options.keyPrefix, peer), options.timeout));
  std::lock_guard lock(mutex);
  return peerAddresses.emplace(peer, std::move(addresses)).first->second;
}

bool LinksState::requestAnswered(int peer, int stream, const std::string& why) {
  if (!sendsOnAccepted(peer)) return false;
  {
    std::lock_guard lock(mutex);
    if (accepted.count({peer, stream}) == 0) return false;
  }
  log::info(options.rank,
            "TCP transport: the request to rank {} to dial back (stream {}) did not go out ({}), "
            "but rank {} had dialed this rank already: nothing is lost",
            peer, stream, why, peer);
  return true;
}

void LinksState::dialOnce(int peer, int stream) {
  {
    std::lock_guard lock(mutex);
    if (!dialed.insert({peer, stream}).second) return;
  }
  startHelper([this, peer, stream](Helper& helper) {
    std::vector<std::string> addresses;
    try {
      addresses = addressesOf(peer);
    } catch (const std::exception& error) {
      if (!cancelHelpers && !requestAnswered(peer, stream, error.what())) {
        markFailed(peer, fmt::format("no address for rank {} under '{}/tcp/{}': {}", peer,
                                     options.keyPrefix, peer, error.what()));
      }
      return;
    }
    for (size_t rail = 1; rail < addresses.size(); ++rail) {
      startDial(peer, stream, addresses[rail], static_cast<int>(rail));
    }
    dial(helper, peer, stream, addresses.front(), 0);
  });
}

void LinksState::dial(Helper& helper, int peer, int stream, const std::string& peerAddress,
                      int rail) {
  Hello hello;
  hello.stream = static_cast<uint16_t>(stream);
  hello.rail = static_cast<uint16_t>(rail);
  hello.src = static_cast<uint32_t>(options.rank);
  hello.dst = static_cast<uint32_t>(peer);
  hello.slotBytes = options.geometry.slotBytes;
  hello.flags = sendsOnAccepted(peer) ? kHelloDialBack : 0;
  net::Deadline deadline = std::chrono::steady_clock::now() + options.timeout;
  net::UniqueFd socket;
  try {
    auto onRetry = [&](const std::string& why) {
      setHelperFd(helper, -1);
      log::info(options.rank, "TCP transport: dialing rank {} at {} (stream {}, rail {}) again: {}",
                peer, peerAddress, stream, rail, why);
    };
    socket = openConnectionRetrying(
        peerAddress, hello, options.secret, deadline, &cancelHelpers,
        [&](int fd) { setHelperFd(helper, fd); }, onRetry);
  } catch (const std::exception& error) {
    setHelperFd(helper, -1);
    if (cancelHelpers) return;
    if (rail == 0 && requestAnswered(peer, stream, error.what())) return;
    if (rail > 0) {
      // The connection still moves every byte on its other sockets.
      log::warn(options.rank, "TCP transport: rail {} to rank {} at {} (stream {}) left out: {}",
                rail, peer, peerAddress, stream, error.what());
    } else {
      markFailed(peer, fmt::format("cannot connect to rank {} at {} (stream {}): {}", peer,
                                   peerAddress, stream, error.what()));
    }
    return;
  }
  setHelperFd(helper, -1);
  log::info(options.rank, "TCP transport: connected to rank {} at {} (stream {}, rail {})", peer,
            peerAddress, stream, rail);
  handOff(std::move(socket), peer, stream, Connection::Direction::kOutgoing, rail);
}

void LinksState::startAcceptor() {
  auto onAccepted = [this](net::UniqueFd socket, const Hello& hello, const std::string& from) {
    const bool dialBack = (hello.flags & kHelloDialBack) != 0 && hello.rail == 0;
    log::info(options.rank, "TCP transport: accepted rank {} (stream {}, rail {}) from {}{}",
              hello.src, hello.stream, hello.rail, from,
              dialBack ? "; it sends on the connection this rank dials back" : "");
    const int peer = static_cast<int>(hello.src);
    if (hello.rail == 0) {
      std::lock_guard lock(mutex);
      accepted.insert({peer, hello.stream});
    }
    handOff(std::move(socket), peer, hello.stream, Connection::Direction::kIncoming, hello.rail);
    if (dialBack) dialOnce(peer, hello.stream);
  };
  acceptor = std::make_unique<Acceptor>(listener.get(), policy, options.secret,
                                        TcpLinks::kMaxPendingHandshakes, options.handshakeTimeout,
                                        std::move(onAccepted));
}

}  // namespace grove::transport::tcp
