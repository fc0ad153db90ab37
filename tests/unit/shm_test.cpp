// The shared-memory transport (src/transport/shm/): ranks in separate processes (fork)
// exchanging messages over many slots and lanes in both directions, doorbells waking a
// sleeping process, failure detection of an aborted or SIGKILLed peer, no segment left in
// /dev/shm, the cleanup helper and the creation race. Two ranks in one process (argument
// checks, geometry mismatches, heartbeats): shm_in_process_test.cpp.
//
// Children report through their exit status (and stderr) and leave with _exit, never through
// gtest. Every test uses a random job id so that runs never see each other's segments.
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

// Message i from `src` on `lane`: 0 to slotBytes bytes (sizes not multiples of anything).
size_t messageBytes(int src, int lane, int i, size_t slotBytes) {
  return (static_cast<size_t>(i) * 7919 + lane * 131 + src * 17) % (slotBytes + 1);
}
unsigned char messageByte(int src, int lane, int i, size_t k) {
  return static_cast<unsigned char>(src * 31 + lane * 17 + i * 13 + k * 7 + (k >> 8));
}

// Sends `messages` messages on each of `lanes` lanes to every peer and receives as many
// from each, interleaved; sleeps on the doorbell when nothing moves. Returns the number of
// wrong messages.
int exchange(ShmDomain& domain, int rank, const std::vector<int>& peers, int lanes, int messages,
             size_t slotBytes) {
  struct Link {
    int peer, lane;
    Fifo* send;
    Fifo* recv;
    int sent = 0, received = 0;
  };
  std::vector<Link> links;
  for (int peer : peers) {
    for (int lane = 0; lane < lanes; ++lane) {
      // Alternate the connection order so both creation roles are exercised.
      Fifo* send = nullptr;
      Fifo* recv = nullptr;
      if ((lane + rank) % 2 == 0) {
        send = &domain.sendFifo(peer, lane);
        recv = &domain.recvFifo(peer, lane);
      } else {
        recv = &domain.recvFifo(peer, lane);
        send = &domain.sendFifo(peer, lane);
      }
      links.push_back({peer, lane, send, recv});
    }
  }
  int errors = 0;
  auto pollOnce = [&] {
    bool progress = false;
    for (Link& link : links) {
      if (link.sent < messages) {
        if (void* slot = link.send->tryAcquire()) {
          size_t bytes = messageBytes(rank, link.lane, link.sent, slotBytes);
          auto* out = static_cast<unsigned char*>(slot);
          for (size_t k = 0; k < bytes; ++k) out[k] = messageByte(rank, link.lane, link.sent, k);
          link.send->commit(bytes);
          ++link.sent;
          progress = true;
        }
      }
      if (link.received < messages) {
        size_t bytes = 0;
        if (const void* slot = link.recv->tryPeek(&bytes)) {
          auto* in = static_cast<const unsigned char*>(slot);
          bool good = bytes == messageBytes(link.peer, link.lane, link.received, slotBytes);
          for (size_t k = 0; good && k < bytes; ++k) {
            good = in[k] == messageByte(link.peer, link.lane, link.received, k);
          }
          if (!good) ++errors;
          link.recv->release();
          ++link.received;
          progress = true;
        }
      }
    }
    return progress;
  };
  auto done = [&] {
    return std::all_of(links.begin(), links.end(),
                       [&](const Link& l) { return l.sent == messages && l.received == messages; });
  };
  Doorbell& bell = domain.doorbell();
  while (!done()) {
    if (pollOnce()) continue;
    uint32_t sequence = prepareSleep(bell);
    if (!pollOnce()) sleep(bell, sequence, 1s);
    cancelSleep(bell);
  }
  return errors;
}

int exchangeRanks(const std::string& jobId, int n, int rank, int lanes, int messages) {
  std::vector<int> local(n);
  for (int r = 0; r < n; ++r) local[r] = r;
  FifoGeometry geometry{1000, 4};
  ShmDomain domain(options(jobId, rank, local, geometry));
  std::vector<int> peers;
  for (int r = 0; r < n; ++r) {
    if (r != rank) peers.push_back(r);
  }
  int errors = exchange(domain, rank, peers, lanes, messages, geometry.slotBytes);
  CHILD_CHECK(errors == 0);
  CHILD_CHECK(domain.failedPeer() == -1);
  return 0;
}

TEST(ShmDomain, TwoProcessesExchangeManySlotsAndLanesBothWays) {
  std::string job = randomJobId();
  auto codes = runRanks(2, [&](int rank) { return exchangeRanks(job, 2, rank, 3, 600); });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, ThreeProcessesExchangeWithEveryPeer) {
  std::string job = randomJobId();
  auto codes = runRanks(3, [&](int rank) { return exchangeRanks(job, 3, rank, 2, 200); });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, SegmentsAreUnlinkedOnceBothSidesMappedThem) {
  std::string job = randomJobId();
  SharedPage shared;
  auto codes = runRanks(2, [&](int rank) {
    int round = 0;
    {
      ShmDomain domain(options(job, rank, {0, 1}));
      CHILD_CHECK(exchange(domain, rank, {1 - rank}, 2, 10, 1000) == 0);
      CHILD_CHECK(barrier(*shared, 2, round));
      // Both have mapped each other's node segment and both FIFOs: no name is left.
      CHILD_CHECK(jobEntries(job).empty());
      CHILD_CHECK(barrier(*shared, 2, round));
    }
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, DoorbellWakesASleepingProcess) {
  std::string job = randomJobId();
  SharedPage shared;
  pid_t child = fork();
  if (child == 0) {
    int code = 99;
    try {
      code = [&] {
        ShmDomain domain(options(job, 1, {0, 1}));
        Fifo& fifo = domain.recvFifo(0, 0);
        Doorbell& bell = domain.doorbell();
        bool rung = false;
        size_t bytes = 0;
        const void* slot = nullptr;
        for (;;) {
          uint32_t sequence = prepareSleep(bell);
          if ((slot = fifo.tryPeek(&bytes)) != nullptr) break;
          shared->flag.store(1);  // "about to sleep"
          sleep(bell, sequence, 120s);
          rung = rung || bell.sequence.load() != sequence;
          cancelSleep(bell);
        }
        cancelSleep(bell);
        CHILD_CHECK(rung);
        CHILD_CHECK(bytes == 5 && std::memcmp(slot, "hello", 5) == 0);
        fifo.release();
        return 0;
      }();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    _exit(code);
  }
  {
    ShmDomain domain(options(job, 0, {0, 1}));
    Fifo& fifo = domain.sendFifo(1, 0);
    while (shared->flag.load() == 0) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // let it reach the futex wait (not required)
    void* slot = fifo.tryAcquire();
    ASSERT_NE(slot, nullptr);
    std::memcpy(slot, "hello", 5);
    fifo.commit(5);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, AbortWakesAndIsReportedToThePeer) {
  std::string job = randomJobId();
  SharedPage shared;
  pid_t child = fork();
  if (child == 0) {
    int code = 99;
    try {
      ShmDomain domain(options(job, 1, {0, 1}));
      domain.recvFifo(0, 0);  // maps rank 0's node segment
      while (shared->flag.load() == 0) std::this_thread::sleep_for(1ms);
      domain.abort();
      code = 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    _exit(code);
  }
  ShmDomain domain(options(job, 0, {0, 1}));
  domain.sendFifo(1, 0);
  EXPECT_EQ(domain.failedPeer(), -1);
  Doorbell& bell = domain.doorbell();
  uint32_t sequence = prepareSleep(bell);
  shared->flag.store(1);
  sleep(bell, sequence, 120s);
  cancelSleep(bell);
  EXPECT_NE(bell.sequence.load(), sequence);
  EXPECT_EQ(domain.failedPeer(), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ShmDomain, MessagesOfAPeerThatClosedAtOnceArriveAndItIsNotAFailure) {
  // The child finishes its part (one message in the FIFO) and is destroyed, possibly before
  // this process connects: the destructor keeps the FIFO until this side attached.
  std::string job = randomJobId();
  pid_t child = fork();
  if (child == 0) {
    int code = 99;
    try {
      ShmDomain domain(options(job, 1, {0, 1}));
      Fifo& fifo = domain.sendFifo(0, 0);
      void* slot = fifo.tryAcquire();
      std::memcpy(slot, "bye", 3);
      fifo.commit(3);
      code = 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    _exit(code);
  }
  {
    ShmDomain domain(options(job, 0, {0, 1}));
    std::this_thread::sleep_for(100ms);  // usually the child is in its destructor by now
    Fifo& fifo = domain.recvFifo(1, 0);
    size_t bytes = 0;
    const void* slot = fifo.tryPeek(&bytes);
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(bytes, 3u);
    EXPECT_EQ(std::memcmp(slot, "bye", 3), 0);
    fifo.release();
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(domain.failedPeer(), -1);  // gone, but it closed cleanly
  }
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, KilledPeerIsReportedAndItsLeftoversRemoved) {
  std::string job = randomJobId();
  SharedPage shared;
  pid_t child = fork();
  if (child == 0) {
    try {
      ShmDomain domain(options(job, 1, {0, 1}));
      domain.sendFifo(0, 0);
      domain.sendFifo(0, 5);  // rank 0 never attaches: stays linked when this process dies
      shared->flag.store(1);
      for (;;) pause();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    _exit(99);
  }
  {
    ShmDomain domain(options(job, 0, {0, 1}));
    while (shared->flag.load() == 0) std::this_thread::sleep_for(1ms);
    domain.recvFifo(1, 0);
    EXPECT_EQ(domain.failedPeer(), -1);
    EXPECT_EQ(jobEntries(job), std::vector<std::string>{"grove-" + job + "-f1-0-5"});
    ASSERT_EQ(kill(child, SIGKILL), 0);
    // Not reaped yet: the child is a zombie, which still counts as gone.
    auto deadline = std::chrono::steady_clock::now() + 1s;
    int failed = -1;
    while (failed == -1 && std::chrono::steady_clock::now() < deadline) {
      failed = domain.failedPeer();
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(failed, 1);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(domain.failedPeer(), 1);
    // The survivor that found the peer dead removed what the peer created and nobody
    // attached to (the FIFO on lane 5), while its own domain is still alive.
    EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
  }
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
}

TEST(ShmDomain, CreationRaceBothSidesConnectAtOnce) {
  std::string base = randomJobId();
  SharedPage shared;
  constexpr int kRepetitions = 50;
  auto codes = runRanks(2, [&](int rank) {
    int round = 0;
    for (int rep = 0; rep < kRepetitions; ++rep) {
      std::string job = base + "-r" + std::to_string(rep);
      {
        ShmDomain domain(options(job, rank, {0, 1}, {64, 2}));
        CHILD_CHECK(barrier(*shared, 2, round));
        CHILD_CHECK(exchange(domain, rank, {1 - rank}, 3, 3, 64) == 0);
        CHILD_CHECK(barrier(*shared, 2, round));
      }
      CHILD_CHECK(barrier(*shared, 2, round));
      if (rank == 0 && !jobEntries(job).empty()) {
        std::fprintf(stderr, "repetition %d left %s\n", rep, jobEntries(job)[0].c_str());
        return 1;
      }
    }
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(ShmDomain, RemoveJobSegmentsRemovesOnlyThatJob) {
  std::string job = randomJobId();
  std::vector<std::string> names = {"/grove-" + job + "-n0", "/grove-" + job + "-f0-1-2",
                                    "/grove-" + job + "-x-n0", "/grove-" + job + "-other",
                                    "/grove-" + job + "-f0-1"};
  for (const auto& name : names) {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0) << name;
    close(fd);
  }
  EXPECT_EQ(jobEntries(job),
            (std::vector<std::string>{"grove-" + job + "-f0-1-2", "grove-" + job + "-n0"}));
  removeJobSegments(job);
  EXPECT_EQ(jobEntries(job), std::vector<std::string>{});
  EXPECT_EQ(jobEntries(job + "-x"), std::vector<std::string>{"grove-" + job + "-x-n0"});
  for (const auto& name : names) shm_unlink(name.c_str());
  removeJobSegments("never-used-" + job);  // nothing to do is fine
  EXPECT_THROW(removeJobSegments("a/b"), Error);
  EXPECT_THROW(removeJobSegments(""), Error);
}

}  // namespace
}  // namespace grove::transport
