// The authentication handshake (src/bootstrap/auth.hpp): HMAC-SHA256 against RFC 4231,
// matching and mismatching secrets over a socketpair, strangers, silence and closed peers,
// and that the handshake never reads bytes that follow it.
#include "bootstrap/auth.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "bootstrap/handshake.hpp"
#include "bootstrap/random.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

using namespace std::chrono_literals;

struct SocketPair {
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
  net::UniqueFd a;
  net::UniqueFd b;
};

net::Clock::time_point in(std::chrono::milliseconds ms) { return net::Clock::now() + ms; }

// Runs authenticate on `fd` and returns the error it threw (kSuccess when none).
ErrorCode runSide(int fd, std::string secret, bool isServer, std::string* message) {
  try {
    authenticate(fd, secret, isServer, isServer ? "test server" : "test client", in(10s));
    return ErrorCode::kSuccess;
  } catch (const Error& error) {
    *message = error.what();
    return error.code();
  }
}

TEST(HmacSha256, MatchesRfc4231Vectors) {
  EXPECT_EQ(toHex(hmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(toHex(hmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(toHex(hmacSha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(RandomSecret, Is32HexCharactersAndFresh) {
  std::string a = randomSecret();
  std::string b = randomSecret();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(Authenticate, MatchingSecretsSucceedOnBothSides) {
  for (const std::string secret : {"s3cret", ""}) {
    SocketPair pair;
    std::string serverMessage;
    std::string clientMessage;
    auto server =
        std::async(std::launch::async, runSide, pair.a.get(), secret, true, &serverMessage);
    EXPECT_EQ(runSide(pair.b.get(), secret, false, &clientMessage), ErrorCode::kSuccess)
        << clientMessage;
    EXPECT_EQ(server.get(), ErrorCode::kSuccess) << serverMessage;
  }
}

TEST(Authenticate, MismatchedSecretsAreRefusedOnBothSidesWithoutLeakingThem) {
  SocketPair pair;
  std::string serverMessage;
  std::string clientMessage;
  auto server = std::async(std::launch::async, runSide, pair.a.get(), std::string("alpha-key"),
                           true, &serverMessage);
  EXPECT_EQ(runSide(pair.b.get(), "bravo-key", false, &clientMessage), ErrorCode::kInvalidUsage);
  EXPECT_EQ(server.get(), ErrorCode::kInvalidUsage);
  for (const std::string& message : {serverMessage, clientMessage}) {
    EXPECT_NE(message.find("GROVE_SECRET"), std::string::npos) << message;
    EXPECT_NE(message.find("does not know the job secret"), std::string::npos) << message;
    EXPECT_EQ(message.find("alpha-key"), std::string::npos) << message;
    EXPECT_EQ(message.find("bravo-key"), std::string::npos) << message;
  }
  EXPECT_NE(serverMessage.find("test server"), std::string::npos) << serverMessage;
  EXPECT_NE(clientMessage.find("test client"), std::string::npos) << clientMessage;
}

TEST(Authenticate, ClientRefusesAServerThatCannotAnswer) {
  SocketPair pair;
  std::thread fakeServer([&] {
    std::string hello(kHandshakeMagic, sizeof(kHandshakeMagic));
    hello += std::string(kNonceBytes, 'n');
    net::writeExact(pair.a.get(), hello.data(), hello.size(), in(10s), "fake");
    char buffer[kHelloBytes + kMacBytes];
    net::readExact(pair.a.get(), buffer, sizeof(buffer), in(10s), "fake");
    std::string verdict = "\1" + std::string(kMacBytes, 'x');  // Accepts, answers garbage.
    net::writeExact(pair.a.get(), verdict.data(), verdict.size(), in(10s), "fake");
  });
  std::string message;
  EXPECT_EQ(runSide(pair.b.get(), "s3cret", false, &message), ErrorCode::kInvalidUsage);
  EXPECT_NE(message.find("does not know the job secret (GROVE_SECRET)"), std::string::npos)
      << message;
  fakeServer.join();
}

TEST(Authenticate, StrangerIsRefused) {
  SocketPair pair;
  std::string junk(kHelloBytes, 'Z');
  net::writeExact(pair.b.get(), junk.data(), junk.size(), in(10s), "junk");
  std::string message;
  EXPECT_EQ(runSide(pair.a.get(), "s3cret", true, &message), ErrorCode::kInvalidUsage);
  EXPECT_NE(message.find("not a grove process"), std::string::npos) << message;
}

TEST(Authenticate, SilentPeerTimesOut) {
  SocketPair pair;
  try {
    authenticate(pair.a.get(), "s3cret", true, "test server", in(50ms));
    FAIL() << "expected a timeout";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
    EXPECT_NE(std::string(error.what()).find("test server"), std::string::npos);
  }
}

TEST(Authenticate, ClosedPeerIsASystemError) {
  SocketPair pair;
  pair.b.reset();
  try {
    authenticate(pair.a.get(), "s3cret", false, "test client", in(10s));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kSystemError) << error.what();
  }
}

TEST(Authenticate, DoesNotReadBytesThatFollowTheHandshake) {
  SocketPair pair;
  std::thread client([&] {
    authenticate(pair.b.get(), "k", false, "test client", in(10s));
    net::writeExact(pair.b.get(), "PIPELINED", 9, in(10s), "tail");
  });
  authenticate(pair.a.get(), "k", true, "test server", in(10s));
  client.join();
  char tail[9];
  net::readExact(pair.a.get(), tail, sizeof(tail), in(10s), "tail");
  EXPECT_EQ(std::string(tail, sizeof(tail)), "PIPELINED");
}

TEST(Handshake, StateMachineAsksForExactlyWhatItNeeds) {
  Handshake server("k", true, "server", "client");
  Handshake client("k", false, "client", "server");
  EXPECT_EQ(server.wanted(), kHelloBytes);
  EXPECT_EQ(client.wanted(), kHelloBytes);
  std::string toClient = std::exchange(server.output(), {});
  std::string toServer = std::exchange(client.output(), {});
  EXPECT_EQ(toClient.size(), kHelloBytes);
  client.feed(toClient.data(), toClient.size());
  EXPECT_EQ(client.wanted(), 1u);  // The verdict byte.
  toServer += std::exchange(client.output(), {});
  EXPECT_EQ(toServer.size(), kHelloBytes + kMacBytes);
  for (char byte : toServer) server.feed(&byte, 1);  // One byte at a time works too.
  EXPECT_TRUE(server.done());
  toClient = std::exchange(server.output(), {});
  EXPECT_EQ(toClient.size(), 1 + kMacBytes);
  client.feed(toClient.data(), 1);
  EXPECT_EQ(client.wanted(), kMacBytes);
  client.feed(toClient.data() + 1, kMacBytes);
  EXPECT_TRUE(client.done());
  EXPECT_EQ(client.wanted(), 0u);
}

}  // namespace
}  // namespace grove::bootstrap
