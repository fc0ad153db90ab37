// Truncated frames from an authenticated TCP peer: it sends a valid data header promising N
// payload bytes and then only part of them, or stops in the middle of a header, and closes
// (or, once, just goes silent). The receiving rank must not deliver the partial message, must
// report that peer as failed — to the rank waiting on that lane, through failedPeer() and
// failure(), with a cause naming it — and must keep serving its other peers; nothing may
// crash (the ASan build runs this too). The peer is hand-made (tests/support/tcp_pair.hpp):
// it passes the real secret handshake and hello as rank 2, so only the frames are wrong.
//
// Every frame is built with FrameHeader (its size is FrameHeader::kBytes, never a literal):
// the header's layout belongs to the wire format and may grow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/tcp_pair.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport {
namespace {

using tcp_pair::Rank;
using tcp_pair::TempDir;
using testing::HasSubstr;

constexpr size_t kSlotBytes = 4096;
constexpr int kFakeRank = 2;  ///< The hand-made peer; rank 0 receives, rank 1 is a bystander.
constexpr int kLane = 3;

/// What the fake rank 2 sends after one complete message on kLane: the first `headerBytes`
/// bytes of a data header promising `promised` payload bytes, then `payloadBytes` of them
/// (only when the header is whole); then it closes the connection.
struct Truncation {
  const char* name;
  size_t headerBytes;
  uint64_t promised;
  size_t payloadBytes;
};

std::string truncatedFrame(const Truncation& cut) {
  std::string header = tcp_pair::dataHeader(kLane, cut.promised);
  std::string out = header.substr(0, cut.headerBytes);
  if (cut.headerBytes == tcp::FrameHeader::kBytes) {
    out += tcp_pair::pattern(kFakeRank, kLane, 1, cut.payloadBytes);
  }
  return out;
}

/// Rank 0 receives from the fake rank 2 one complete message (5 bytes) and then `cut`; the
/// fake keeps the connection open, silent, while `whileOpen` runs (if given), then closes it.
void sendCompleteThenTruncated(Rank& zero, const Truncation& cut,
                               const std::function<void()>& whileOpen = {}) {
  net::UniqueFd fake = tcp_pair::connectAs(zero, kFakeRank, 0, kSlotBytes);
  std::string complete = tcp_pair::dataHeader(kLane, 5) + tcp_pair::pattern(kFakeRank, kLane, 0, 5);
  tcp_pair::sendRaw(fake, complete + truncatedFrame(cut));
  if (whileOpen) whileOpen();
}

/// Message `index` from `src` on `lane`, `bytes` patterned bytes, arrives in rank 0's inbox
/// exactly (whatever else failed meanwhile); it is released.
void expectMessage(Rank& zero, int src, int lane, int index, size_t bytes) {
  Fifo& inbox = zero.links.recvFifo(src, lane);
  size_t got = 0;
  const void* slot = nullptr;
  auto deadline = tcp_pair::Clock::now() + tcp_pair::kPatience;
  while ((slot = inbox.tryPeek(&got)) == nullptr && tcp_pair::Clock::now() < deadline) {
    tcp_pair::nap(zero.bell);
  }
  ASSERT_NE(slot, nullptr) << "message " << index << " from rank " << src << " never arrived";
  ASSERT_EQ(got, bytes);
  EXPECT_EQ(std::string(static_cast<const char*>(slot), got),
            tcp_pair::pattern(src, lane, index, bytes));
  inbox.release();
}

/// The complete message sendCompleteThenTruncated() sent first.
void expectCompleteMessage(Rank& zero) { expectMessage(zero, kFakeRank, kLane, 0, 5); }

class TruncatedFrameTest : public testing::TestWithParam<Truncation> {};

TEST_P(TruncatedFrameTest, BreaksOnlyThatPeerAndNamesIt) {
  const Truncation cut = GetParam();
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  Rank zero(dir.path, tcp_pair::makeOptions(0, 3, 1, kSlotBytes));
  Rank one(dir.path, tcp_pair::makeOptions(1, 3, 1, kSlotBytes));

  // The bystander works before the fault.
  std::thread before([&] {
    EXPECT_EQ(tcp_pair::exchange(one, 1, 0, {0, kLane}, 12, kSlotBytes), "");
  });
  EXPECT_EQ(tcp_pair::exchange(zero, 0, 1, {0, kLane}, 12, kSlotBytes), "");
  before.join();

  sendCompleteThenTruncated(zero, cut);
  expectCompleteMessage(zero);

  // The rank waiting on that lane gets the failure, naming rank 2, and no partial message.
  Fifo& inbox = zero.links.recvFifo(kFakeRank, kLane);
  EXPECT_EQ(tcp_pair::waitOnLane(zero, inbox), kFakeRank);
  EXPECT_EQ(zero.links.failedPeer(), kFakeRank);
  FailureInfo failure = zero.links.failure();
  EXPECT_EQ(failure.origin, kFakeRank);
  EXPECT_THAT(failure.cause, HasSubstr("connection to rank 2 closed unexpectedly"));
  size_t bytes = 0;
  EXPECT_EQ(inbox.tryPeek(&bytes), nullptr) << "a partial message was delivered";

  // The bystander is unaffected: exact messages both ways on the same lanes, no failure of
  // its own on either side (failedPeer() reports the lowest failed rank, so 1 would show).
  std::thread after([&] {
    EXPECT_EQ(tcp_pair::exchange(one, 1, 0, {0, kLane}, 30, kSlotBytes), "");
  });
  EXPECT_EQ(tcp_pair::exchange(zero, 0, 1, {0, kLane}, 30, kSlotBytes), "");
  after.join();
  EXPECT_EQ(zero.links.failedPeer(), kFakeRank);
  EXPECT_EQ(one.links.failedPeer(), -1);
}

const size_t kHeader = tcp::FrameHeader::kBytes;

INSTANTIATE_TEST_SUITE_P(
    Cuts, TruncatedFrameTest,
    testing::Values(
        // A whole header, then part of the payload it promised.
        Truncation{"HeaderThenNoPayload", kHeader, 1000, 0},
        Truncation{"OneOfSevenBytes", kHeader, 7, 1},
        Truncation{"HalfOfAnOddMessage", kHeader, 1001, 500},
        Truncation{"AllButOneOfAFullSlot", kHeader, kSlotBytes, kSlotBytes - 1},
        // Part of a header (the rest of the stream never comes).
        Truncation{"OneHeaderByte", 1, 100, 0}, Truncation{"HalfAHeader", kHeader / 2, 100, 0},
        Truncation{"AllButOneHeaderByte", kHeader - 1, 100, 0}),
    [](const auto& param) { return std::string(param.param.name); });

TEST(TruncatedFrame, PeerThatStopsMidPayloadWithoutClosingIsFoundByHeartbeats) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  TcpOptions options = tcp_pair::makeOptions(0, 3, 1, kSlotBytes);
  options.heartbeatTimeout = std::chrono::milliseconds(500);
  Rank zero(dir.path, options);
  const Truncation cut{"HalfOfAnOddMessage", kHeader, 1001, 500};
  sendCompleteThenTruncated(zero, cut, [&] {
    expectCompleteMessage(zero);
    Fifo& inbox = zero.links.recvFifo(kFakeRank, kLane);
    EXPECT_EQ(tcp_pair::waitOnLane(zero, inbox), kFakeRank);
    FailureInfo failure = zero.links.failure();
    EXPECT_EQ(failure.origin, kFakeRank);
    EXPECT_THAT(failure.cause, HasSubstr("no heartbeat from rank 2"));
    size_t bytes = 0;
    EXPECT_EQ(inbox.tryPeek(&bytes), nullptr) << "a partial message was delivered";
  });
}

TEST(TruncatedFrame, TwoFakePeersEachBreakOnlyTheirOwnConnection) {
  // Ranks 1 and 2 both hand-made: rank 2 cuts a payload short, then rank 1 (still fine)
  // sends a complete message that must arrive; then rank 1 cuts a header short.
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  Rank zero(dir.path, tcp_pair::makeOptions(0, 3, 1, kSlotBytes));
  net::UniqueFd good = tcp_pair::connectAs(zero, 1, 0, kSlotBytes);
  {
    net::UniqueFd bad = tcp_pair::connectAs(zero, kFakeRank, 0, kSlotBytes);
    tcp_pair::sendRaw(bad, tcp_pair::dataHeader(0, 64) + tcp_pair::pattern(kFakeRank, 0, 0, 63));
  }
  EXPECT_EQ(tcp_pair::awaitFailure(zero), kFakeRank);
  tcp_pair::sendRaw(good, tcp_pair::dataHeader(0, 9) + tcp_pair::pattern(1, 0, 0, 9));
  expectMessage(zero, 1, 0, 0, 9);
  EXPECT_EQ(zero.links.failedPeer(), kFakeRank);

  tcp_pair::sendRaw(good, tcp_pair::dataHeader(0, 9).substr(0, 3));
  good.reset();
  auto deadline = tcp_pair::Clock::now() + tcp_pair::kPatience;
  while (zero.links.failedPeer() != 1 && tcp_pair::Clock::now() < deadline) {
    tcp_pair::nap(zero.bell);
  }
  EXPECT_EQ(zero.links.failedPeer(), 1);
  FailureInfo failure = zero.links.failure();
  EXPECT_EQ(failure.origin, 1);
  EXPECT_THAT(failure.cause, HasSubstr("connection to rank 1 closed unexpectedly"));
}

}  // namespace
}  // namespace grove::transport
