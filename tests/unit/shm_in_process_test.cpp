// The shared-memory transport with two ranks in one process: FIFOs between non-contiguous
// local ranks and to oneself, heartbeats of a peer first seen before its first beat,
// messages committed before the peer connects, a single local rank, a node segment whose peer
// never connects, argument checks and geometry mismatches.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "grove/error.hpp"
#include "transport/shm/shm_domain.hpp"
#include "transport/shm/shm_segment.hpp"
#include "unit/shm_test_support.hpp"

namespace grove::transport {
namespace {

using namespace std::chrono_literals;

TEST(ShmDomain, TwoRanksInOneProcessIncludingNonContiguousLocalRanks) {
  std::string job = randomJobId();
  ShmOptions o1 = options(job, 1, {1, 3});
  o1.size = 5;
  ShmOptions o3 = options(job, 3, {1, 3});
  o3.size = 5;
  ShmDomain a(o1);
  ShmDomain b(o3);
  Fifo& send = a.sendFifo(3, 7);
  EXPECT_EQ(&send, &a.sendFifo(3, 7));  // kept
  Fifo& recv = b.recvFifo(1, 7);
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});  // all mapped by both sides
  for (int i = 0; i < 10; ++i) {                           // more messages than slots: wraps around
    void* slot = send.tryAcquire();
    ASSERT_NE(slot, nullptr);
    std::memset(slot, i, i);
    send.commit(i);
    size_t bytes = 0;
    const void* in = recv.tryPeek(&bytes);
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(bytes, static_cast<size_t>(i));
    if (i > 0) {
      EXPECT_EQ(static_cast<const unsigned char*>(in)[i - 1], i);
    }
    recv.release();
  }
  size_t none = 0;
  EXPECT_EQ(recv.tryPeek(&none), nullptr);
  // A FIFO to oneself is private memory; send and receive views are the same object.
  Fifo& self = a.sendFifo(1, 0);
  EXPECT_EQ(&self, &a.recvFifo(1, 0));
  ASSERT_NE(self.tryAcquire(), nullptr);
  self.commit(3);
  size_t bytes = 0;
  EXPECT_NE(self.tryPeek(&bytes), nullptr);
  EXPECT_EQ(bytes, 3u);
  EXPECT_EQ(a.failedPeer(), -1);
  EXPECT_EQ(b.failedPeer(), -1);
  b.abort();
  EXPECT_EQ(a.failedPeer(), 3);
  EXPECT_EQ(b.failedPeer(), -1);
}

// A peer's heartbeat counter starts at 0 and the process's heartbeat thread first advances
// it at its next beat (up to kHeartbeatInterval later). A peer mapped during a wait, and read
// while its counter is still 0, was taken for one whose beat had stood still since the clock's
// epoch, so it was declared silent at once: a false "no heartbeat for 10 s" that failed a
// freshly split communicator's first collective under load.
TEST(ShmDomain, APeerFirstSeenBeforeItsFirstHeartbeatIsNotSilent) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::string job = randomJobId();
    ShmOptions o0 = options(job, 0, {0, 1});
    o0.heartbeatTimeout = 60s;
    ShmDomain a(o0);                     // starts this process's heartbeat thread
    EXPECT_EQ(a.failedPeer(), -1);       // this wait's first check: rank 1 not yet mapped
    std::this_thread::sleep_for(120ms);  // the next check is due (every 100 ms)
    ShmOptions o1 = options(job, 1, {0, 1});
    o1.heartbeatTimeout = 60s;
    ShmDomain b(o1);   // its counter is 0 until the thread's next beat
    a.sendFifo(1, 0);  // maps rank 1's node segment
    EXPECT_EQ(a.failedPeer(), -1) << "attempt " << attempt;
    EXPECT_EQ(a.failure().cause, "") << "attempt " << attempt;
  }
}

TEST(ShmDomain, MessagesCommittedBeforeThePeerConnectsAreKept) {
  // The second view of a FIFO must not reset counters the first side already advanced.
  std::string job = randomJobId();
  ShmDomain a(options(job, 0, {0, 1}));
  ShmDomain b(options(job, 1, {0, 1}));
  Fifo& send = a.sendFifo(1, 2);
  for (int i = 0; i < 3; ++i) {
    void* slot = send.tryAcquire();
    ASSERT_NE(slot, nullptr);
    std::memset(slot, 'a' + i, 1);
    send.commit(1);
  }
  Fifo& recv = b.recvFifo(0, 2);
  for (int i = 0; i < 3; ++i) {
    size_t bytes = 0;
    const void* in = recv.tryPeek(&bytes);
    ASSERT_NE(in, nullptr) << i;
    EXPECT_EQ(bytes, 1u);
    EXPECT_EQ(*static_cast<const char*>(in), 'a' + i);
    recv.release();
  }
  // And the receiver's releases reach the sender: the ring has room for `depth` again.
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(send.tryAcquire(), nullptr) << i;
    send.commit(0);
  }
  EXPECT_EQ(send.tryAcquire(), nullptr);
}

TEST(ShmDomain, SingleLocalRankLeavesNothing) {
  std::string job = randomJobId();
  ShmDomain domain(options(job, 0, {0}));
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
  EXPECT_EQ(domain.failedPeer(), -1);
  domain.abort();  // nobody to ring; must not fail
}

TEST(ShmDomain, NodeSegmentStaysUntilDestructionWhenAPeerNeverConnects) {
  std::string job = randomJobId();
  {
    ShmDomain domain(options(job, 0, {0, 1}));
    EXPECT_EQ(jobEntries(job), std::vector<std::string>{"grove-" + job + "-n0"});
  }
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, RejectsBadArgumentsWithTheirNames) {
  std::string job = randomJobId();
  auto code = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kSuccess;
  };
  EXPECT_EQ(code([&] { ShmDomain d(options("bad/id", 0, {0, 1})); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { ShmDomain d(options(job, 2, {0, 1})); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { ShmDomain d(options(job, 0, {1, 0})); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] {
              ShmOptions o = options(job, 1, {0, 2});
              o.size = 3;
              ShmDomain d(o);
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] {
              ShmDomain d(options(job, 0, {0, 1}, {0, 4}));
            }),
            ErrorCode::kInvalidArgument);
  ShmOptions o = options(job, 0, {0, 2});
  o.size = 4;
  o.timeout = 30ms;
  ShmDomain domain(o);
  EXPECT_EQ(code([&] { domain.sendFifo(1, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { domain.sendFifo(4, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { domain.recvFifo(2, -1); }), ErrorCode::kInvalidArgument);
  try {
    domain.sendFifo(2, 0);  // rank 2 never comes
    ADD_FAILURE() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("/grove-" + job + "-n2"), std::string::npos) << e.what();
  }
  // The same job id twice on one rank: the node segment exists.
  EXPECT_EQ(code([&] { ShmDomain d(o); }), ErrorCode::kSystemError);
}

TEST(ShmDomain, GeometryMismatchIsReported) {
  std::string job = randomJobId();
  ShmDomain a(options(job, 0, {0, 1}, {1000, 4}));
  ShmDomain b(options(job, 1, {0, 1}, {2000, 4}));
  a.sendFifo(1, 0);
  try {
    b.recvFifo(0, 0);
    ADD_FAILURE() << "expected a geometry mismatch";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("geometr"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grove::transport
