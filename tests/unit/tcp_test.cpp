// The TCP transport's TcpLinks on loopback: two ranks as threads and as fork()ed processes
// exchanging many messages of exact bytes on several lanes both ways (zero-length and
// full-slot ones included) over 1 and 3 sockets per peer; abort, a SIGKILLed peer, garbage
// and silent clients on the listen port, a wrong secret, an oversized frame from an
// authenticated peer, clean shutdown with messages in flight; host:port parsing and dialing.
// Interface choice and the wire's bytes: tcp_wire_test.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/file_store.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"
#include "support/tcp_pair.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/tcp_links.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport {
namespace {

using std::chrono::seconds;
using tcp_pair::awaitFailure;
using tcp_pair::Clock;
using tcp_pair::exchange;
using tcp_pair::kPatience;
using tcp_pair::makeOptions;
using tcp_pair::Rank;
using tcp_pair::TempDir;

/// Calls `attempt` until it returns non-null (or kPatience passes: null), sleeping on `bell`
/// with the doorbell protocol in between, as the executor does.
template <class Attempt>
auto await(Doorbell& bell, Attempt attempt) {
  Clock::time_point deadline = Clock::now() + kPatience;
  for (int round = 0;; ++round) {
    if (auto result = attempt()) return result;
    if (Clock::now() > deadline) return decltype(attempt())(nullptr);
    if (round < 200) continue;
    uint32_t sequence = prepareSleep(bell);
    if (auto result = attempt()) {
      cancelSleep(bell);
      return result;
    }
    sleep(bell, sequence, std::chrono::milliseconds(10));
    cancelSleep(bell);
  }
}

class TcpLinksTest : public testing::TestWithParam<int> {};

TEST_P(TcpLinksTest, ThreadsExchangeExactMessagesOnSeveralLanesBothWays) {
  TempDir dir;
  const int sockets = GetParam();
  const size_t slotBytes = 3000;  // not a power of two
  const std::vector<int> lanes = {0, 1, 2, 5};
  std::string errors[2];
  std::thread threads[2];
  for (int self = 0; self < 2; ++self) {
    threads[self] = std::thread([&, self] {
      Rank rank(dir.path, makeOptions(self, 2, sockets, slotBytes));
      errors[self] = exchange(rank, self, 1 - self, lanes, 300, slotBytes);
      if (errors[self].empty() && rank.links.failedPeer() != -1) errors[self] = "peer failed";
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

TEST_P(TcpLinksTest, ForkedProcessesExchangeExactMessages) {
  TempDir dir;
  const int sockets = GetParam();
  const size_t slotBytes = 4096;
  const std::vector<int> lanes = {0, 1, 3};
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 1;
    try {
      Rank rank(dir.path, makeOptions(1, 3, sockets, slotBytes));
      status = exchange(rank, 1, 0, lanes, 200, slotBytes).empty() ? 0 : 2;
    } catch (...) {
      status = 3;
    }
    ::_exit(status);
  }
  {
    Rank rank(dir.path, makeOptions(0, 3, sockets, slotBytes));
    EXPECT_EQ(exchange(rank, 0, 1, lanes, 200, slotBytes), "");
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Sockets, TcpLinksTest, testing::Values(1, 3),
                         [](const auto& param) { return std::to_string(param.param) + "sockets"; });

TEST(TcpLinks, AbortIsSeenByThePeerOnEitherDirection) {
  for (bool bothWays : {true, false}) {
    TempDir dir;
    Rank zero(dir.path, makeOptions(0, 2, 2));
    Rank one(dir.path, makeOptions(1, 2, 2));
    // Rank 1 always sends to rank 0; rank 0 sends back only in the first round, so in the
    // second the abort has to travel against the direction of the data.
    std::thread peer([&] { EXPECT_EQ(exchange(one, 1, 0, {0}, bothWays ? 3 : 0, 4096), ""); });
    if (bothWays) {
      EXPECT_EQ(exchange(zero, 0, 1, {0}, 3, 4096), "");
    }
    peer.join();
    Fifo& fifo = one.links.sendFifo(0, 0);
    ASSERT_NE(fifo.tryAcquire(), nullptr);
    fifo.commit(0);
    size_t bytes = 1;
    Fifo& inbox = zero.links.recvFifo(1, 0);
    EXPECT_NE(await(zero.bell, [&] { return inbox.tryPeek(&bytes); }), nullptr);
    EXPECT_EQ(bytes, 0u);
    zero.links.abort();
    EXPECT_EQ(awaitFailure(one), 0);
    EXPECT_EQ(zero.links.failedPeer(), -1);
  }
}

TEST(TcpLinks, KilledPeerProcessIsReported) {
  TempDir dir;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Rank rank(dir.path, makeOptions(1, 2, 1));
    int status = exchange(rank, 1, 0, {0, 1}, 10, 4096).empty() ? 0 : 2;
    if (status == 0) ::pause();
    ::_exit(status);
  }
  Rank rank(dir.path, makeOptions(0, 2, 1));
  EXPECT_EQ(exchange(rank, 0, 1, {0, 1}, 10, 4096), "");
  EXPECT_EQ(rank.links.failedPeer(), -1);
  Clock::time_point killed = Clock::now();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(awaitFailure(rank), 1);
  std::printf("failure seen %.1f ms after SIGKILL\n",
              std::chrono::duration<double, std::milli>(Clock::now() - killed).count());
}

TEST(TcpLinks, GarbageAndSilentClientsDoNotHurtTheListener) {
  TempDir dir;
  Rank zero(dir.path, makeOptions(0, 2, 1));
  auto deadline = Clock::now() + seconds(10);
  net::UniqueFd silent = net::dial(zero.links.address(), deadline);
  for (int round = 0; round < 3; ++round) {
    net::UniqueFd garbage = net::dial(zero.links.address(), deadline);
    std::string junk(1000, static_cast<char>('A' + round));
    net::writeExact(garbage.get(), junk.data(), junk.size(), deadline, "garbage");
  }
  Rank one(dir.path, makeOptions(1, 2, 1));
  std::thread peer([&] { EXPECT_EQ(exchange(one, 1, 0, {0, 1}, 50, 4096), ""); });
  EXPECT_EQ(exchange(zero, 0, 1, {0, 1}, 50, 4096), "");
  peer.join();
  EXPECT_EQ(zero.links.failedPeer(), -1);
  EXPECT_EQ(one.links.failedPeer(), -1);
}

TEST(TcpLinks, WrongSecretIsRefused) {
  TempDir dir;
  Rank zero(dir.path, makeOptions(0, 2, 1, 4096, "alpha"));
  Rank one(dir.path, makeOptions(1, 2, 1, 4096, "beta"));
  one.links.sendFifo(0, 0);
  EXPECT_EQ(awaitFailure(one), 0);
  EXPECT_EQ(zero.links.failedPeer(), -1);
}

TEST(TcpLinks, DifferentSlotSizesAreRefusedByTheHello) {
  TempDir dir;
  Rank zero(dir.path, makeOptions(0, 2, 1, 4096));
  Rank one(dir.path, makeOptions(1, 2, 1, 8192));
  one.links.sendFifo(0, 0);
  EXPECT_EQ(awaitFailure(one), 0);
  EXPECT_EQ(zero.links.failedPeer(), -1);
}

TEST(TcpLinks, OversizedFrameFromAnAuthenticatedPeerBreaksOnlyThatPeer) {
  TempDir dir;
  Rank zero(dir.path, makeOptions(0, 3, 1));
  net::UniqueFd socket = tcp_pair::connectAs(zero, 2, 0, 4096);
  tcp_pair::sendRaw(socket, tcp_pair::dataHeader(0, 4097));  // a slot holds 4096 bytes
  EXPECT_EQ(awaitFailure(zero), 2);
}

TEST(TcpLinks, DestructionDeliversCommittedMessagesAndSaysBye) {
  TempDir dir;
  Rank one(dir.path, makeOptions(1, 2, 1));
  {
    Rank zero(dir.path, makeOptions(0, 2, 1));
    // Committed, then destroyed at once: the connection is still being opened, and the
    // destructor must flush the messages before it says bye.
    for (int index = 0; index < 4; ++index) {
      Fifo& fifo = zero.links.sendFifo(1, 0);
      void* slot = fifo.tryAcquire();
      ASSERT_NE(slot, nullptr);
      std::memset(slot, index, 100);
      fifo.commit(100);
    }
  }
  Fifo& inbox = one.links.recvFifo(0, 0);
  for (int index = 0; index < 4; ++index) {
    size_t bytes = 0;
    const void* slot = await(one.bell, [&] { return inbox.tryPeek(&bytes); });
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(bytes, 100u);
    EXPECT_EQ(static_cast<const unsigned char*>(slot)[99], index);
    inbox.release();
  }
  EXPECT_EQ(one.links.failedPeer(), -1);
}

TEST(TcpLinks, RejectsBadArguments) {
  TempDir dir;
  bootstrap::FileStore store(dir.path);
  Doorbell bell;
  TcpOptions options = makeOptions(0, 3, 1);
  options.remoteRanks = {2};
  TcpLinks links(store, options, bell);
  EXPECT_EQ(links.address().rfind("127.0.0.1:", 0), 0u);
  try {
    links.sendFifo(1, 0);
    ADD_FAILURE() << "peer 1 is not remote";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("peer 1"), std::string::npos) << error.what();
  }
  EXPECT_THROW(links.recvFifo(2, 70000), Error);
  options.interfaces = "=no-such-interface";
  EXPECT_THROW(TcpLinks(store, options, bell), Error);
  options = makeOptions(0, 2, 1);
  options.remoteRanks = {0};
  EXPECT_THROW(TcpLinks(store, options, bell), Error);
}

TEST(TcpLinks, ThroughputOfOneStreamFor64MiB) {
  TempDir dir;
  const size_t slotBytes = 256 * 1024;
  const int messages = 64 * 1024 * 1024 / slotBytes;
  Rank zero(dir.path, makeOptions(0, 2, 1, slotBytes));
  Rank one(dir.path, makeOptions(1, 2, 1, slotBytes));
  Fifo& out = zero.links.sendFifo(1, 0);
  Fifo& in = one.links.recvFifo(0, 0);
  // Warm up the connection (and the page tables) with one full FIFO's worth.
  std::thread receiver([&] {
    for (int index = 0; index < messages + 4; ++index) {
      size_t bytes = 0;
      ASSERT_NE(await(one.bell, [&] { return in.tryPeek(&bytes); }), nullptr);
      EXPECT_EQ(bytes, slotBytes);
      in.release();
    }
  });
  Clock::time_point start;
  for (int index = 0; index < messages + 4; ++index) {
    if (index == 4) start = Clock::now();
    void* slot = await(zero.bell, [&] { return out.tryAcquire(); });
    ASSERT_NE(slot, nullptr);
    std::memset(slot, index, 64);
    out.commit(slotBytes);
  }
  receiver.join();
  double secondsTaken = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("64 MiB over one loopback stream: %.2f GB/s\n",
              messages * double(slotBytes) / secondsTaken / 1e9);
}

TEST(TcpLinks, RoundTripOfEightByteMessages) {
  TempDir dir;
  const int rounds = 2000;
  Rank zero(dir.path, makeOptions(0, 2, 1));
  Rank one(dir.path, makeOptions(1, 2, 1));
  auto bounce = [&](Rank& rank, int peer, bool first) {
    Fifo& out = rank.links.sendFifo(peer, 0);
    Fifo& in = rank.links.recvFifo(peer, 0);
    for (int round = 0; round < rounds; ++round) {
      size_t bytes = 0;
      if (!first) {
        ASSERT_NE(await(rank.bell, [&] { return in.tryPeek(&bytes); }), nullptr);
        in.release();
      }
      void* slot = await(rank.bell, [&] { return out.tryAcquire(); });
      ASSERT_NE(slot, nullptr);
      std::memcpy(slot, &round, sizeof round);
      out.commit(8);
      if (first) {
        ASSERT_NE(await(rank.bell, [&] { return in.tryPeek(&bytes); }), nullptr);
        EXPECT_EQ(bytes, 8u);
        in.release();
      }
    }
  };
  std::thread peer([&] { bounce(one, 0, false); });
  Clock::time_point start = Clock::now();
  bounce(zero, 1, true);
  double micros = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  peer.join();
  std::printf("8-byte round trip over loopback: %.1f us\n", micros / rounds);
}

TEST(TcpSocket, HostPortAndIpv6Loopback) {
  EXPECT_EQ(net::formatHostPort("10.1.2.3", 80), "10.1.2.3:80");
  EXPECT_EQ(net::formatHostPort("::1", 443), "[::1]:443");
  net::HostPort v6 = net::parseHostPort("[fd00::2]:9", "test");
  EXPECT_EQ(v6.host, "fd00::2");
  EXPECT_EQ(v6.port, 9);
  EXPECT_EQ(net::parseHostPort("host:65535", "test").port, 65535);
  for (const char* bad :
       {"", "host", "host:", ":80", "host:0", "host:70000", "[::1]80", "h:8x", "::1:80"}) {
    EXPECT_THROW(net::parseHostPort(bad, "test"), Error) << bad;
  }
  uint16_t port = 0;
  net::UniqueFd listener = net::listenOn("::1", 0, &port, "test");
  auto deadline = Clock::now() + seconds(10);
  net::UniqueFd client = net::dial(net::formatHostPort("::1", port), deadline);
  EXPECT_TRUE(client.valid());
}

TEST(TcpSocket, DialCancelledAndRefused) {
  // A port nothing listens on: refused at once, naming the address.
  uint16_t port = 0;
  { net::UniqueFd closed = net::listenOn("127.0.0.1", 0, &port, "test"); }
  const std::string target = net::formatHostPort("127.0.0.1", port);
  try {
    net::dial(target, Clock::now() + seconds(10));
    ADD_FAILURE() << "dial to a closed port succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kSystemError);
    EXPECT_NE(std::string(error.what()).find("cannot connect to " + target), std::string::npos)
        << error.what();
  }
  // A read that a set cancel flag cuts short instead of waiting out its deadline.
  net::UniqueFd listener = net::listenOn("127.0.0.1", 0, &port, "test");
  net::UniqueFd client =
      net::dial(net::formatHostPort("127.0.0.1", port), Clock::now() + seconds(10));
  std::atomic<bool> cancel{true};
  char byte = 0;
  try {
    net::readExact(client.get(), &byte, 1, Clock::now() + seconds(600), "silent peer", &cancel);
    ADD_FAILURE() << "a cancelled read returned";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kSystemError);
    EXPECT_STREQ(error.what(), "silent peer: cancelled");
  }
}

}  // namespace
}  // namespace grove::transport
