// Rails of a TCP connection (transport/tcp/rails.hpp): how frames are split, and connection
// pairs with 1 to 4 sockets moving striped and whole frames exactly, over socketpairs driven by
// hand (the network loop's part: readiness marks); a rail that ends mid-frame, shares the
// receiver cannot take.
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/connection.hpp"
#include "transport/tcp/rails.hpp"

namespace grove::transport {
namespace {

using tcp::Connection;
using tcp::splitFrame;
using Shares = std::array<uint32_t, tcp::kMaxRails - 1>;

TEST(TcpRails, SplitsInProportionOnTheGrain) {
  constexpr uint64_t kSlot = 256 << 10;
  EXPECT_EQ(splitFrame(kSlot, {1, 1, 0, 0}), (Shares{128 << 10, 0, 0}));
  EXPECT_EQ(splitFrame(kSlot, {1, 3, 0, 0}), (Shares{192 << 10, 0, 0}));
  // Shares round down to 4 KiB; the primary takes what is left.
  EXPECT_EQ(splitFrame(100000, {1, 1, 0, 0}), (Shares{49152, 0, 0}));
  EXPECT_EQ(splitFrame(kSlot + 100, {1, 1, 1, 1}), (Shares{65536, 65536, 65536}));
  EXPECT_EQ(splitFrame(kSlot, {2, 1, 0, 1}), (Shares{65536, 0, 65536}));
  // Below the striping size, or with the primary alone: whole on the primary.
  EXPECT_EQ(splitFrame(tcp::kStripeMinBytes - 1, {1, 1, 1, 1}), (Shares{0, 0, 0}));
  EXPECT_EQ(splitFrame(kSlot, {1, 0, 0, 0}), (Shares{0, 0, 0}));
  EXPECT_EQ(splitFrame(0, {1, 1, 0, 0}), (Shares{0, 0, 0}));
  EXPECT_EQ(splitFrame(tcp::kStripeMinBytes, {1, 1, 0, 0}), (Shares{32768, 0, 0}));
}

struct Free {
  void operator()(void* memory) const { std::free(memory); }
};

/// A FIFO on heap memory, as the transport's FifoBox keeps one.
struct TestFifo {
  TestFifo(size_t slotBytes, uint32_t depth) {
    size_t bytes = (Fifo::memoryBytes(slotBytes, depth) + 63) / 64 * 64;
    memory.reset(std::aligned_alloc(64, bytes));
    std::memset(memory.get(), 0, bytes);
    fifo = std::make_unique<Fifo>(memory.get(), slotBytes, depth, &bell, &bell);
  }
  Doorbell bell;
  std::unique_ptr<void, Free> memory;
  std::unique_ptr<Fifo> fifo;
};

std::pair<net::UniqueFd, net::UniqueFd> socketPair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  return {net::UniqueFd(fds[0]), net::UniqueFd(fds[1])};
}

size_t queued(int fd) {
  int bytes = 0;
  return ::ioctl(fd, FIONREAD, &bytes) == 0 ? static_cast<size_t>(bytes) : 0;
}

std::string pattern(int index, size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i)
    out[i] = static_cast<char>((i * 131 + index * 7 + i / 4099) & 0xff);
  return out;
}

/// Rank 1 sends to rank 0 on lane 0 over a connection with `rails` sockets (primary + rails),
/// both ends with `rails` sockets; the test pumps both by hand.
class RailPair {
 public:
  static constexpr size_t kSlot = 256 << 10;

  explicit RailPair(int rails) : out_(kSlot, 4), in_(kSlot, 4) {
    auto [sendEnd, receiveEnd] = socketPair();
    sender_ = std::make_unique<Connection>(
        std::move(sendEnd), 0, 0, 1, Connection::Direction::kOutgoing, kSlot, nullptr, 2, 0, rails);
    receiver_ = std::make_unique<Connection>(
        std::move(receiveEnd), 1, 0, 1, Connection::Direction::kIncoming, kSlot,
        [this](uint16_t) { return in_.fifo.get(); }, 2, 0, rails);
    sender_->addSendLane(out_.fifo.get(), 0);
    for (int rail = 1; rail < rails; ++rail) {
      auto [a, b] = socketPair();
      railFds_.push_back(b.get());
      EXPECT_TRUE(sender_->attachRail(rail, std::move(a)));
      EXPECT_TRUE(receiver_->attachRail(rail, std::move(b)));
    }
  }

  /// Commits `bytes` of pattern `index` to the send FIFO (waits for a free slot by pumping).
  void send(int index, size_t bytes) {
    void* slot = nullptr;
    for (int i = 0; i < 1000 && (slot = out_.fifo->tryAcquire()) == nullptr; ++i) {
      pumpSender();
      pumpReceiver();
    }
    ASSERT_NE(slot, nullptr);
    std::memcpy(slot, pattern(index, bytes).data(), bytes);
    out_.fifo->commit(bytes, MessageTag{});
  }
  void pumpSender() {
    for (int rail = 0; rail < sender_->railLimit(); ++rail) sender_->markWritable(rail);
    sender_->pumpWrite();
  }
  void pumpReceiver() {
    for (int rail = 0; rail < receiver_->railLimit(); ++rail) receiver_->markReadable(rail);
    receiver_->pumpRead();
  }
  /// Pumps both until message `index` (`bytes` bytes) arrived; checks it byte for byte.
  void expect(int index, size_t bytes) {
    size_t got = 0;
    const void* slot = nullptr;
    for (int i = 0; i < 10000 && (slot = in_.fifo->tryPeek(&got)) == nullptr; ++i) {
      pumpSender();
      pumpReceiver();
    }
    ASSERT_NE(slot, nullptr) << "message " << index << " never arrived: " << receiver_->error()
                             << sender_->error();
    ASSERT_EQ(got, bytes);
    EXPECT_TRUE(std::string(static_cast<const char*>(slot), got) == pattern(index, bytes))
        << "message " << index << " differs";
    in_.fifo->release();
  }
  /// Bytes waiting unread on the receiving end of each rail.
  std::vector<size_t> railBacklog() const {
    std::vector<size_t> out;
    for (int fd : railFds_) out.push_back(queued(fd));
    return out;
  }
  Connection& sender() { return *sender_; }
  Connection& receiver() { return *receiver_; }

 private:
  TestFifo out_;
  TestFifo in_;
  std::unique_ptr<Connection> sender_;
  std::unique_ptr<Connection> receiver_;
  std::vector<int> railFds_;
};

TEST(TcpRails, StripedAndWholeFramesArriveExactly) {
  for (int rails : {1, 2, 3, 4}) {
    SCOPED_TRACE(rails);
    RailPair pair(rails);
    // Whole (small) and striped (large, uneven) frames interleaved, and the empty message.
    const std::vector<size_t> sizes = {RailPair::kSlot,    8, 0, (64 << 10) - 1, 64 << 10, 100001,
                                       RailPair::kSlot - 3};
    // Two messages in flight at a time: a frame may start while the one before it still
    // moves on the rails.
    for (size_t i = 0; i < sizes.size() + 2; ++i) {
      if (i < sizes.size()) pair.send(static_cast<int>(i), sizes[i]);
      if (i >= 2) pair.expect(static_cast<int>(i - 2), sizes[i - 2]);
    }
    EXPECT_EQ(pair.sender().state(), Connection::State::kOpen);
    EXPECT_EQ(pair.receiver().state(), Connection::State::kOpen);
  }
}

TEST(TcpRails, ALargeFrameTravelsOnEveryRail) {
  RailPair pair(3);
  pair.send(0, RailPair::kSlot);
  pair.pumpSender();  // the receiver has not read anything yet
  for (size_t backlog : pair.railBacklog()) EXPECT_EQ(backlog, RailPair::kSlot / 3 / 4096 * 4096);
  pair.expect(0, RailPair::kSlot);
  // A small frame leaves the rails alone.
  pair.send(1, 1000);
  pair.pumpSender();
  for (size_t backlog : pair.railBacklog()) EXPECT_EQ(backlog, 0u);
  pair.expect(1, 1000);
}

TEST(TcpRails, ARailClosedMidFrameBreaksTheConnectionNamingIt) {
  auto [sendEnd, receiveEnd] = socketPair();
  auto [railSend, railReceive] = socketPair();
  TestFifo in(RailPair::kSlot, 4);
  Connection receiver(
      std::move(receiveEnd), 1, 0, 1, Connection::Direction::kIncoming, RailPair::kSlot,
      [&](uint16_t) { return in.fifo.get(); }, 2, 0, 2);
  ASSERT_TRUE(receiver.attachRail(1, std::move(railReceive)));
  EXPECT_FALSE(receiver.attachRail(1, socketPair().first));  // already there
  EXPECT_FALSE(receiver.attachRail(2, socketPair().first));  // beyond its 2 sockets
  // A header that gives rail 1 half of 128 KiB; the rail brings 1000 bytes and closes.
  tcp::FrameHeader header;
  header.bytes = 128 << 10;
  header.railBytes[0] = 64 << 10;
  unsigned char bytes[tcp::FrameHeader::kBytes];
  header.encode(bytes);
  std::string primary(reinterpret_cast<char*>(bytes), sizeof bytes);
  primary += std::string(64 << 10, 'p');
  ASSERT_EQ(::send(sendEnd.get(), primary.data(), primary.size(), 0),
            static_cast<ssize_t>(primary.size()));
  std::string piece(1000, 'r');
  ASSERT_EQ(::send(railSend.get(), piece.data(), piece.size(), 0), 1000);
  railSend.reset();
  for (int i = 0; i < 100 && receiver.state() == Connection::State::kOpen; ++i) {
    receiver.markReadable(0);
    receiver.markReadable(1);
    receiver.pumpRead();
  }
  EXPECT_EQ(receiver.state(), Connection::State::kBroken);
  EXPECT_EQ(receiver.error(),
            "receiving from rank 1 failed: rail 1: closed with 64536 bytes of a frame still to "
            "come");
  size_t got = 0;
  EXPECT_EQ(in.fifo->tryPeek(&got), nullptr);  // nothing partial delivered
}

TEST(TcpRails, SharesForARailTheReceiverLacksAreRefused) {
  auto [sendEnd, receiveEnd] = socketPair();
  TestFifo in(RailPair::kSlot, 4);
  Connection receiver(
      std::move(receiveEnd), 1, 0, 1, Connection::Direction::kIncoming, RailPair::kSlot,
      [&](uint16_t) { return in.fifo.get(); }, 2);
  tcp::FrameHeader header;
  header.bytes = 128 << 10;
  header.railBytes[0] = 4096;
  unsigned char bytes[tcp::FrameHeader::kBytes];
  header.encode(bytes);
  ASSERT_EQ(::send(sendEnd.get(), bytes, sizeof bytes, 0), static_cast<ssize_t>(sizeof bytes));
  receiver.markReadable();
  receiver.pumpRead();
  EXPECT_EQ(receiver.state(), Connection::State::kBroken);
  EXPECT_EQ(receiver.error(),
            "rank 1 sent a frame (kind 0, 131072 bytes) with rail shares 4096, 0, 0 and reserved "
            "field 0x0 (expected shares only in data frames, at most the frame's bytes in all, "
            "none beyond this connection's 1 socket(s), and a zero reserved field)");
}

TEST(TcpRails, HeaderChecksRefuseBadStripes) {
  tcp::FrameRules rules{true, 4096, 1, 0, 2};
  auto check = [&](auto change) {
    tcp::FrameHeader header;
    header.bytes = 4096;
    change(header);
    return tcp::checkFrameHeader(header, rules);
  };
  EXPECT_EQ(check([](auto& h) { h.railBytes[0] = 4096; }), tcp::FrameCheck::kOk);
  EXPECT_EQ(check([](auto& h) { h.railBytes[0] = 4097; }), tcp::FrameCheck::kBadStripe);
  EXPECT_EQ(check([](auto& h) { h.railBytes[1] = 1; }), tcp::FrameCheck::kBadStripe);
  EXPECT_EQ(check([](auto& h) { h.reserved = 1; }), tcp::FrameCheck::kBadStripe);
  EXPECT_EQ(check([](auto& h) {
              h.kind = static_cast<uint16_t>(tcp::FrameKind::kBye);
              h.railBytes[0] = 1;
            }),
            tcp::FrameCheck::kBadStripe);
  EXPECT_EQ(check([](auto& h) {
              h.kind = static_cast<uint16_t>(tcp::FrameKind::kHeartbeat);
              h.bytes = 0;
              h.railBytes[2] = 1;
            }),
            tcp::FrameCheck::kBadStripe);
}

}  // namespace
}  // namespace grove::transport
