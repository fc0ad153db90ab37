// Shared connections (GROVE_TCP_SHARED, links_state.hpp): with one interface, the connection
// the lower rank of a pair dials carries both directions. A higher rank that sends first
// dials with kHelloDialBack and sends on the connection dialed back to it; one that finds
// the lower rank's connection already there sends on it without dialing at all. With
// sharing off each direction dials its own connection, as before.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/auth.hpp"
#include "common/socket.hpp"
#include "support/tcp_pair.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport {
namespace {

using tcp_pair::awaitFailure;
using tcp_pair::Clock;
using tcp_pair::kPatience;
using tcp_pair::kSecret;
using tcp_pair::makeOptions;
using tcp_pair::Rank;
using tcp_pair::TempDir;
using tcp_pair::waitOnLane;

constexpr size_t kSlotBytes = 4096;

/// Commits `bytes` to `peer`'s lane 0 of `rank`.
void send(Rank& rank, int peer, const std::string& bytes) {
  Fifo& fifo = rank.links.sendFifo(peer, 0);
  void* slot = nullptr;
  const Clock::time_point deadline = Clock::now() + kPatience;
  while ((slot = fifo.tryAcquire()) == nullptr && Clock::now() < deadline) tcp_pair::nap(rank.bell);
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, bytes.data(), bytes.size());
  fifo.commit(bytes.size());
}

/// Waits for the next message from `peer` on lane 0 of `rank`, returns it and frees its slot
/// ("" with a test failure when none came or a peer failed first).
std::string receive(Rank& rank, int peer) {
  Fifo& inbox = rank.links.recvFifo(peer, 0);
  EXPECT_EQ(waitOnLane(rank, inbox), -1);
  size_t bytes = 0;
  const void* slot = inbox.tryPeek(&bytes);
  if (slot == nullptr) return "";
  std::string message(static_cast<const char*>(slot), bytes);
  inbox.release();
  return message;
}

// Once rank 0's connection reached rank 1, rank 1 answers on it: it never reads rank 0's
// address, which the test spoils first. With sharing off rank 1 dials that address and fails.
TEST(SharedConnections, HigherRankAnswersOnTheLowerRanksConnection) {
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared" : "a connection per direction");
    TempDir dir;
    auto options = [&](int rank) {
      TcpOptions o = makeOptions(rank, 2, 1, kSlotBytes);
      o.sharedConnections = shared;
      o.timeout = std::chrono::milliseconds(3'000);
      return o;
    };
    Rank zero(dir.path, options(0));
    Rank one(dir.path, options(1));
    send(zero, 1, "ping");
    EXPECT_EQ(receive(one, 0), "ping");
    // Nothing listens on port 1 of loopback.
    zero.store.set("job/tcp/0", "127.0.0.1:1");
    send(one, 0, "pong");
    if (shared) {
      EXPECT_EQ(receive(zero, 1), "pong");
      EXPECT_EQ(one.links.failedPeer(), -1);
      EXPECT_EQ(zero.links.failedPeer(), -1);
    } else {
      EXPECT_EQ(awaitFailure(one), 0);
      EXPECT_NE(one.links.failure().cause.find("cannot connect to rank 0 at 127.0.0.1:1"),
                std::string::npos)
          << one.links.failure().cause;
    }
  }
}

/// A hand-made rank 0 that accepts one connection on its own listener (published where
/// rank 0's address goes) and returns the hello it received.
class FakeLowerRank {
 public:
  explicit FakeLowerRank(bootstrap::Store& store) {
    uint16_t port = 0;
    listener_ = net::listenOn("127.0.0.1", 0, &port, "fake rank 0");
    store.set("job/tcp/0", net::formatHostPort("127.0.0.1", port));
  }

  tcp::Hello acceptOne(net::UniqueFd* socket) {
    const net::Deadline deadline = Clock::now() + kPatience;
    *socket = net::UniqueFd(::accept(listener_.get(), nullptr, nullptr));
    EXPECT_TRUE(socket->valid());
    bootstrap::authenticate(socket->get(), kSecret, /*isServer=*/true, "fake rank 0", deadline);
    unsigned char bytes[tcp::Hello::kBytes];
    net::readExact(socket->get(), bytes, sizeof bytes, deadline, "hello");
    tcp::HelloAck ack;
    unsigned char answer[tcp::HelloAck::kBytes];
    ack.encode(answer);
    net::writeExact(socket->get(), answer, sizeof answer, deadline, "hello ack");
    return tcp::Hello::decode(bytes);
  }

 private:
  net::UniqueFd listener_;
};

// A higher rank that sends before the lower one dialed asks to be dialed back, and its
// message then travels on the connection the lower rank opened, not on its own.
TEST(SharedConnections, HigherRankThatSendsFirstIsDialedBackAndSendsThere) {
  TempDir dir;
  Rank one(dir.path, makeOptions(1, 2, 1, kSlotBytes));
  FakeLowerRank zero(one.store);
  send(one, 0, "first");
  net::UniqueFd asked;
  const tcp::Hello hello = zero.acceptOne(&asked);
  EXPECT_EQ(hello.src, 1u);
  EXPECT_EQ(hello.dst, 0u);
  EXPECT_EQ(hello.flags, tcp::kHelloDialBack);

  net::UniqueFd back = tcp_pair::connectAs(one, /*src=*/0, /*dst=*/1, kSlotBytes);
  const net::Deadline deadline = Clock::now() + kPatience;
  unsigned char header[tcp::FrameHeader::kBytes];
  tcp::FrameHeader frame;
  do {  // heartbeats may come first
    net::readExact(back.get(), header, sizeof header, deadline, "frame header");
    frame = tcp::FrameHeader::decode(header);
  } while (frame.kind == static_cast<uint16_t>(tcp::FrameKind::kHeartbeat));
  EXPECT_EQ(frame.kind, static_cast<uint16_t>(tcp::FrameKind::kData));
  EXPECT_EQ(frame.lane, 0);
  ASSERT_EQ(frame.bytes, 5u);
  char payload[5];
  net::readExact(back.get(), payload, sizeof payload, deadline, "payload");
  EXPECT_EQ(std::string(payload, 5), "first");
  EXPECT_EQ(one.links.failedPeer(), -1);
}

// Sharing off: the higher rank dials without the flag, and a hello with an unknown flag is
// refused.
TEST(SharedConnections, PerDirectionDialsWithoutTheFlag) {
  TempDir dir;
  TcpOptions options = makeOptions(1, 2, 1, kSlotBytes);
  options.sharedConnections = false;
  Rank one(dir.path, options);
  FakeLowerRank zero(one.store);
  send(one, 0, "x");
  net::UniqueFd socket;
  EXPECT_EQ(zero.acceptOne(&socket).flags, 0);

  tcp::HelloPolicy policy{0, {1}, 1, kSlotBytes, 1};
  tcp::Hello strange;
  strange.src = 1;
  strange.dst = 0;
  strange.slotBytes = kSlotBytes;
  strange.flags = 4;
  EXPECT_EQ(tcp::checkHello(strange, policy), tcp::HelloStatus::kBadRail);
}

}  // namespace
}  // namespace grove::transport
