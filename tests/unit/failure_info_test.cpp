// Failures that name their origin and cause, and TCP heartbeats: the abort notice's wire
// encoding (capped, invalid sizes and origins rejected), and each transport carrying a
// FailureInfo from the rank that aborted to its peers — forwarded unchanged by a rank that
// failed because of someone else — plus a TCP peer that goes silent being declared failed by
// the heartbeat timeout (not the much longer operation timeout), while an idle but live peer
// is kept alive by heartbeats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "bootstrap/file_store.hpp"
#include "common/socket.hpp"
#include "support/tcp_pair.hpp"
#include "transport/inproc/inproc_transport.hpp"
#include "transport/shm/shm_domain.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/tcp_links.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport {
namespace {

using std::chrono::seconds;
using tcp_pair::awaitFailure;
using tcp_pair::Clock;
using tcp_pair::kPatience;
using tcp_pair::nap;
using tcp_pair::Rank;
using tcp_pair::TempDir;

TEST(AbortNotice, EncodesOriginAndCauseLittleEndian) {
  tcp::AbortNotice notice;
  notice.origin = 0x01020304;
  notice.cause = "boom";
  std::string bytes = notice.encode();
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(bytes, std::string("\x04\x03\x02\x01\x00\x00\x00\x00"
                               "boom",
                               12));
  tcp::AbortNotice back;
  ASSERT_TRUE(tcp::AbortNotice::decode(reinterpret_cast<const unsigned char*>(bytes.data()),
                                       bytes.size(), 0x01020305, &back));
  EXPECT_EQ(back.origin, 0x01020304u);
  EXPECT_EQ(back.cause, "boom");
  EXPECT_FALSE(back.usageError);
  // A usage error (calls that differ between ranks) travels as flag 1.
  notice.usageError = true;
  bytes = notice.encode();
  EXPECT_EQ(bytes.substr(4, 4), std::string("\x01\x00\x00\x00", 4));
  ASSERT_TRUE(tcp::AbortNotice::decode(reinterpret_cast<const unsigned char*>(bytes.data()),
                                       bytes.size(), 0x01020305, &back));
  EXPECT_TRUE(back.usageError);
}

TEST(AbortNotice, CauseIsCappedAndSanitized) {
  tcp::AbortNotice notice;
  notice.origin = 2;
  notice.cause = std::string(500, 'x');
  std::string bytes = notice.encode();
  EXPECT_EQ(bytes.size(), tcp::kAbortNoticeMaxBytes);
  EXPECT_EQ(tcp::kAbortNoticeMaxBytes, 8 + FailureInfo::kMaxCauseBytes);

  std::string odd(
      "\x02\x00\x00\x00\x00\x00\x00\x00"
      "a\nb\x7f\xff"
      "c",
      14);
  tcp::AbortNotice back;
  ASSERT_TRUE(tcp::AbortNotice::decode(reinterpret_cast<const unsigned char*>(odd.data()),
                                       odd.size(), 3, &back));
  EXPECT_EQ(back.origin, 2u);
  EXPECT_EQ(back.cause, "a?b??c");
  // An empty cause is fine: 8 bytes.
  ASSERT_TRUE(
      tcp::AbortNotice::decode(reinterpret_cast<const unsigned char*>(odd.data()), 8, 3, &back));
  EXPECT_EQ(back.cause, "");
}

TEST(AbortNotice, InvalidSizesAndOriginsAreRejected) {
  unsigned char bytes[tcp::kAbortNoticeMaxBytes + 1] = {1, 0, 0, 0};
  tcp::AbortNotice out;
  out.origin = 77;
  for (size_t size : {size_t{0}, size_t{1}, size_t{4}, size_t{7}, tcp::kAbortNoticeMaxBytes + 1}) {
    EXPECT_FALSE(tcp::AbortNotice::decode(bytes, size, 4, &out)) << size;
  }
  EXPECT_FALSE(tcp::AbortNotice::decode(bytes, 8, 1, &out));  // origin 1 of 1 rank
  EXPECT_FALSE(tcp::AbortNotice::decode(bytes, 8, 0, &out));
  bytes[3] = 0x80;  // origin 2^31 + 1: not a rank
  EXPECT_FALSE(tcp::AbortNotice::decode(bytes, 8, 1 << 30, &out));
  bytes[3] = 0;
  bytes[4] = 2;  // an undefined flag
  EXPECT_FALSE(tcp::AbortNotice::decode(bytes, 8, 4, &out));
  EXPECT_EQ(out.origin, 77u);  // untouched
  bytes[4] = 0;
  EXPECT_TRUE(tcp::AbortNotice::decode(bytes, tcp::kAbortNoticeMaxBytes, 2, &out));
  EXPECT_EQ(out.origin, 1u);
  EXPECT_EQ(out.cause.size(), FailureInfo::kMaxCauseBytes);
}

TEST(AbortNotice, HeaderChecksBoundControlPayloads) {
  tcp::FrameRules rules{true, 4096, 1, 0};
  tcp::FrameHeader header;
  header.kind = static_cast<uint16_t>(tcp::FrameKind::kAbort);
  auto check = [&](uint64_t bytes) {
    header.bytes = bytes;
    return tcp::checkFrameHeader(header, rules);
  };
  EXPECT_EQ(check(0), tcp::FrameCheck::kBadControlSize);
  EXPECT_EQ(check(7), tcp::FrameCheck::kBadControlSize);
  EXPECT_EQ(check(8), tcp::FrameCheck::kOk);
  EXPECT_EQ(check(488), tcp::FrameCheck::kOk);
  EXPECT_EQ(check(489), tcp::FrameCheck::kBadControlSize);
  EXPECT_EQ(check(uint64_t{1} << 63), tcp::FrameCheck::kBadControlSize);
  EXPECT_NE(tcp::describeFrameProblem(tcp::FrameCheck::kBadControlSize, header, rules, 5)
                .find("abort frame"),
            std::string::npos);
  header.kind = static_cast<uint16_t>(tcp::FrameKind::kHeartbeat);
  EXPECT_EQ(check(0), tcp::FrameCheck::kOk);
  EXPECT_EQ(check(1), tcp::FrameCheck::kBadControlSize);
  header.kind = 4;
  EXPECT_EQ(check(0), tcp::FrameCheck::kUnknownKind);
}

TEST(FailureInfo, SanitizeCapsAndReplacesUnprintableBytes) {
  FailureInfo info =
      sanitizeFailure(FailureInfo{3, std::string(FailureInfo::kMaxCauseBytes + 100, 'y') + "\n"});
  EXPECT_EQ(info.origin, 3);
  EXPECT_EQ(info.cause, std::string(FailureInfo::kMaxCauseBytes, 'y'));
  EXPECT_EQ(sanitizeFailure(FailureInfo{1, "a\tb"}).cause, "a?b");
}

TEST(FailureInfo, InprocCarriesTheOriginAndForwardsIt) {
  auto world = std::make_shared<InprocWorld>(3, FifoGeometry{4096, 4});
  InprocTransport zero(world, 0);
  InprocTransport one(world, 1);
  InprocTransport two(world, 2);
  EXPECT_EQ(zero.failure().origin, -1);
  two.abort(FailureInfo{2, "disk on fire"});
  two.abort(FailureInfo{2, "second call: ignored"});
  EXPECT_EQ(one.failedPeer(), 2);
  EXPECT_EQ(one.failure().origin, 2);
  EXPECT_EQ(one.failure().cause, "disk on fire");
  one.abort(one.failure());  // rank 1 fails because of rank 2: forwards the original
  EXPECT_EQ(zero.failedPeer(), 1);
  EXPECT_EQ(zero.failure().origin, 2);
  EXPECT_EQ(zero.failure().cause, "disk on fire");
  EXPECT_EQ(two.failedPeer(), 1);
}

std::string randomJobId() {
  std::random_device random;
  return "fi" + std::to_string(::getpid()) + "x" + std::to_string(random() % 1000000);
}

TEST(FailureInfo, ShmNodeSegmentCarriesTheOriginAndCause) {
  std::string job = randomJobId();
  auto options = [&](int rank) {
    ShmOptions o;
    o.jobId = job;
    o.rank = rank;
    o.size = 3;
    o.localRanks = {0, 2};
    o.geometry = {1024, 4};
    o.timeout = seconds(20);
    return o;
  };
  ShmDomain a(options(0));
  ShmDomain b(options(2));
  a.sendFifo(2, 0);  // connect both ways (peers are watched once connected)
  b.sendFifo(0, 0);
  EXPECT_EQ(a.failure().origin, -1);
  b.abort(FailureInfo{1, std::string(FailureInfo::kMaxCauseBytes + 50, 'z') +
                             "\x01"});  // forwarding rank 1's failure
  EXPECT_EQ(a.failedPeer(), 2);
  FailureInfo seen = a.failure();
  EXPECT_EQ(seen.origin, 1);
  EXPECT_EQ(seen.cause, std::string(FailureInfo::kMaxCauseBytes, 'z'));
  b.abort(FailureInfo{2, "later: ignored"});
  EXPECT_EQ(a.failure().origin, 1);
}

/// Rank `rank` of `size` on loopback (one connection per lane), with the given heartbeat
/// timeout and an operation timeout far beyond any wait below.
TcpOptions tcpOptions(int rank, int size, std::chrono::milliseconds heartbeat) {
  TcpOptions options = tcp_pair::makeOptions(rank, size, kStreamsPerLane);
  options.timeout = std::chrono::milliseconds(120'000);
  options.heartbeatTimeout = heartbeat;
  return options;
}

/// Sends one zero-byte message from `from` to `to` and waits until `to` has it.
void deliverOne(Rank& from, int fromRank, Rank& to, int toRank) {
  Fifo& out = from.links.sendFifo(toRank, 0);
  ASSERT_NE(out.tryAcquire(), nullptr);
  out.commit(0);
  Fifo& in = to.links.recvFifo(fromRank, 0);
  size_t bytes = 1;
  Clock::time_point deadline = Clock::now() + kPatience;
  while (in.tryPeek(&bytes) == nullptr && Clock::now() < deadline) nap(to.bell);
  ASSERT_NE(in.tryPeek(&bytes), nullptr);
  in.release();
}

TEST(FailureInfo, TcpAbortFrameCarriesTheOriginAndCause) {
  TempDir dir;
  Rank zero(dir.path, tcpOptions(0, 3, std::chrono::milliseconds(0)));
  Rank one(dir.path, tcpOptions(1, 3, std::chrono::milliseconds(0)));
  deliverOne(one, 1, zero, 0);
  // Rank 0 forwards rank 2's failure; rank 1 must see rank 2 as the origin.
  zero.links.abort(FailureInfo{2, "allreduce #4 timed out\nreceiving from rank 3"});
  zero.links.abort(FailureInfo{0, "second call: ignored"});
  EXPECT_EQ(awaitFailure(one), 0);
  FailureInfo seen = one.links.failure();
  EXPECT_EQ(seen.origin, 2);
  EXPECT_EQ(seen.cause, "allreduce #4 timed out?receiving from rank 3");
  EXPECT_EQ(zero.links.failedPeer(), -1);
}

TEST(FailureInfo, TcpInvalidAbortNoticeBreaksTheConnection) {
  TempDir dir;
  Rank zero(dir.path, tcpOptions(0, 3, std::chrono::milliseconds(0)));
  net::UniqueFd socket = tcp_pair::connectAs(zero, 2, 0, 4096);
  tcp::FrameHeader header;
  header.kind = static_cast<uint16_t>(tcp::FrameKind::kAbort);
  header.bytes = 10;
  std::string frame(tcp::FrameHeader::kBytes, '\0');
  header.encode(reinterpret_cast<unsigned char*>(frame.data()));
  frame += std::string("\x09\0\0\0\0\0\0\0hi", 10);  // origin 9 of 3 ranks
  tcp_pair::sendRaw(socket, frame);
  EXPECT_EQ(awaitFailure(zero), 2);
  FailureInfo seen = zero.links.failure();
  EXPECT_EQ(seen.origin, 2);  // not the bogus rank 9
  EXPECT_NE(seen.cause.find("abort notice naming rank 9"), std::string::npos) << seen.cause;
}

TEST(Heartbeat, SilentPeerIsDeclaredFailedAtTheHeartbeatTimeout) {
  TempDir dir;
  Rank zero(dir.path, tcpOptions(0, 2, std::chrono::milliseconds(2000)));
  // "Rank 1": a peer that connects properly, then never sends another byte (as a stopped
  // process would); its socket stays open, so only the silence can tell.
  net::UniqueFd silent = tcp_pair::connectAs(zero, 1, 0, 4096);
  Clock::time_point start = Clock::now();
  // Rank 0 waits for rank 1 (the operation timeout, 120 s, is far away).
  EXPECT_EQ(awaitFailure(zero), 1);
  std::printf("silent peer declared failed after %.2f s (heartbeat timeout 2 s)\n",
              std::chrono::duration<double>(Clock::now() - start).count());
  FailureInfo seen = zero.links.failure();
  EXPECT_EQ(seen.origin, 1);
  EXPECT_NE(seen.cause.find("no heartbeat from rank 1 for 2 s"), std::string::npos) << seen.cause;
}

TEST(Heartbeat, IdleLivePeerStaysAlive) {
  TempDir dir;
  Rank zero(dir.path, tcpOptions(0, 2, std::chrono::milliseconds(2000)));
  Rank one(dir.path, tcpOptions(1, 2, std::chrono::milliseconds(2000)));
  deliverOne(one, 1, zero, 0);  // one connection, rank 1 -> rank 0, then no data at all
  // Both ranks wait for 3.5 heartbeat timeouts; only heartbeats (both ways on the one
  // connection) keep each side from declaring the other failed.
  Clock::time_point end = Clock::now() + std::chrono::milliseconds(7000);
  while (Clock::now() < end) {
    ASSERT_EQ(zero.links.failedPeer(), -1);
    ASSERT_EQ(one.links.failedPeer(), -1);
    nap(zero.bell);
  }
}

TEST(Heartbeat, SilenceWhileNotWaitingDoesNotCount) {
  TempDir dir;
  Rank zero(dir.path, tcpOptions(0, 2, std::chrono::milliseconds(2000)));
  net::UniqueFd silent = tcp_pair::connectAs(zero, 1, 0, 4096);
  // Rank 0 is busy elsewhere (does not wait) for 4.5 s: the silence before its wait starts
  // is not held against the peer.
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  EXPECT_EQ(zero.links.failedPeer(), -1);
}

}  // namespace
}  // namespace grove::transport
