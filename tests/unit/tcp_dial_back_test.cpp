// A higher rank's dial-back request that lands after its lower peer has left.
//
// With shared connections the higher rank, needing a stream before the lower rank dialed
// it, dials with kHelloDialBack only to ask for the lower rank's connection. When the lower
// rank dials on its own first, the two exchange everything on that connection, and the
// lower rank may finish and close while the request is still on its way (its helper thread
// slow to start, its address lookup slow). The request then meets a closed port: that must
// not mark the peer failed, since the connection it asked for was there all along. (Marking
// it failed once failed a rank's allreduce that had every byte it needed, and left its peer
// waiting for it in the next communicator's init.)
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "bootstrap/file_store.hpp"
#include "support/tcp_pair.hpp"
#include "transport/tcp/tcp_links.hpp"

namespace grove::transport {
namespace {

using tcp_pair::Clock;
using tcp_pair::exchange;
using tcp_pair::makeOptions;
using tcp_pair::TempDir;

/// A FileStore whose get() of one key waits until release(), then answers `answer`.
class GatedStore : public bootstrap::Store {
 public:
  GatedStore(const std::string& dir, std::string gatedKey)
      : inner_(dir), gatedKey_(std::move(gatedKey)) {}

  void release(std::string answer) {
    std::lock_guard lock(mutex_);
    answer_ = std::move(answer);
    released_ = true;
    changed_.notify_all();
  }
  bool asked() {
    std::lock_guard lock(mutex_);
    return asked_;
  }

  void set(std::string_view key, std::string_view value) override { inner_.set(key, value); }
  std::string get(std::string_view key, std::chrono::milliseconds timeout) override {
    if (key != gatedKey_) return inner_.get(key, timeout);
    std::unique_lock lock(mutex_);
    asked_ = true;
    changed_.wait(lock, [&] { return released_; });
    return answer_;
  }
  int64_t add(std::string_view key, int64_t delta) override { return inner_.add(key, delta); }
  bool check(std::string_view key) override { return inner_.check(key); }
  void erase(std::string_view key) override { inner_.erase(key); }

 private:
  bootstrap::FileStore inner_;
  std::string gatedKey_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool asked_ = false;
  bool released_ = false;
  std::string answer_;
};

/// Rank 1 of the test: its links meet through the gated store.
struct GatedRank {
  GatedRank(const std::string& dir, TcpOptions options)
      : store(dir, "job/tcp/0"), links(store, std::move(options), bell) {}
  Doorbell bell;
  GatedStore store;
  TcpLinks links;
};

TEST(TcpDialBack, RequestRefusedAfterTheLowerRankLeftIsNoFailure) {
  TempDir dir;
  GatedRank one(dir.path, makeOptions(1, 2, 1));
  one.links.sendFifo(0, 0);  // rank 0 has not dialed: rank 1's request starts, and waits
  const Clock::time_point patience = Clock::now() + tcp_pair::kPatience;
  while (!one.store.asked() && Clock::now() < patience) std::this_thread::yield();
  ASSERT_TRUE(one.store.asked());

  std::string zeroAddress;
  {
    tcp_pair::Rank zero(dir.path, makeOptions(0, 2, 1));
    zeroAddress = zero.store.get("job/tcp/0", std::chrono::seconds(5));
    // Rank 0 dials on its own, and both send on its connection.
    std::string zeroSide;
    std::thread zeroThread([&] { zeroSide = exchange(zero, 0, 1, {0}, 6, 4096); });
    const std::string oneSide = exchange(one, 1, 0, {0}, 6, 4096);
    zeroThread.join();
    ASSERT_EQ(zeroSide, "");
    ASSERT_EQ(oneSide, "");
  }
  // Rank 0 is gone, cleanly; only now does rank 1's request go out, to a closed port.
  one.store.release(zeroAddress);
  // The refusal comes within milliseconds and, before the fix, marked rank 0 failed at once;
  // the window only bounds how long the test looks for it (it asserts no time).
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(2);
  while (one.links.failedPeer() < 0 && Clock::now() < deadline) tcp_pair::nap(one.bell);
  EXPECT_EQ(one.links.failedPeer(), -1) << one.links.failure().cause;
  EXPECT_TRUE(one.links.peerLeft(0));
}

}  // namespace
}  // namespace grove::transport
