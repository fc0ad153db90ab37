// The pulse of a rendezvous through a store that cannot report a closed connection
// (bootstrap/init_liveness.hpp): a rank whose counter stands still is named once the heartbeat
// timeout passes, one that never counted is left to the init timeout, one that keeps counting
// is waited for, grove's own TCP store gets no pulse, and the final barrier leaves no counter
// behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "bootstrap/file_store.hpp"
#include "bootstrap/rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"
#include "grove/error.hpp"
#include "support/error_of.hpp"

namespace grove::bootstrap {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using grove::testing::errorOf;

class InitLivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = ::testing::TempDir() + "grove_init_liveness_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::string directory_;
};

TEST_F(InitLivenessTest, ARankWhoseCounterStandsStillIsNamedAndPublished) {
  FileStore store(directory_);
  store.add("p/alive/2", 1);  // rank 2 counted once, then died
  Rendezvous rendezvous(store, "p/", 0, 3, 60s, 2s);
  const Error error = errorOf([&] { rendezvous.await("never", "rank 1"); });
  EXPECT_EQ(error.code(), ErrorCode::kRemoteError);
  EXPECT_THAT(error.what(), StartsWith("grove init (rank 0 of 3): rank 2 failed: no sign of life "
                                       "from it at the store for "));
  EXPECT_THAT(error.what(), HasSubstr("(GROVE_HEARTBEAT_TIMEOUT): its process ended, was killed "
                                      "or is stopped (this store cannot report a closed "
                                      "connection)"));
  // The others read the same account from the store (the first account stays).
  EXPECT_THAT(store.get("p/failed", 1s), StartsWith("rank 2 failed: no sign of life"));
  rendezvous.publishFailure("a later account");
  EXPECT_THAT(store.get("p/failed", 1s), StartsWith("rank 2 failed: no sign of life"));
  EXPECT_GE(store.add("p/alive/0", 0), 2);  // this rank counted while it waited
}

TEST_F(InitLivenessTest, ARankThatNeverCountedIsLeftToTheTimeout) {
  FileStore store(directory_);
  Rendezvous rendezvous(store, "p/", 0, 2, 3s, 2s);
  const Error error = errorOf([&] { rendezvous.await("rank/1", "rank 1"); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_STREQ(error.what(), "grove init (rank 0 of 2): rank 1 did not arrive within 3 s");
  EXPECT_FALSE(store.check("p/failed"));
}

TEST_F(InitLivenessTest, ARankThatKeepsCountingIsWaitedFor) {
  std::atomic<bool> stop{false};
  std::thread slow([&] {
    FileStore store(directory_);
    // Counts for twice the heartbeat timeout without arriving, then arrives.
    for (int beat = 0; beat < 20; ++beat) {
      store.add("p/alive/1", 1);
      std::this_thread::sleep_for(200ms);
    }
    store.set("p/rank/1", "here");
  });
  FileStore store(directory_);
  Rendezvous rendezvous(store, "p/", 0, 2, 60s, 2s);
  EXPECT_EQ(rendezvous.await("rank/1", "rank 1"), "here");
  slow.join();
  EXPECT_FALSE(store.check("p/failed"));
}

TEST_F(InitLivenessTest, NoPulseWithGrovesTcpStoreOrWithTheHeartbeatOff) {
  TcpStoreServer server("127.0.0.1", 0, "secret");
  TcpStoreClient client("127.0.0.1", server.port(), "secret", 10s);
  EXPECT_TRUE(client.reportsClosedConnections());
  client.add("p/alive/1", 1);
  Rendezvous tcp(client, "p/", 0, 2, 3s, 2s);
  EXPECT_EQ(errorOf([&] { tcp.await("x", "rank 1"); }).code(), ErrorCode::kTimeout);
  EXPECT_FALSE(client.check("p/alive/0"));

  FileStore files(directory_);
  EXPECT_FALSE(files.reportsClosedConnections());
  files.add("p/alive/1", 1);
  Rendezvous off(files, "p/", 0, 2, 3s, 0s);
  EXPECT_EQ(errorOf([&] { off.await("x", "rank 1"); }).code(), ErrorCode::kTimeout);
  EXPECT_FALSE(files.check("p/alive/0"));
}

TEST_F(InitLivenessTest, TheFinalBarrierErasesEveryCounter) {
  auto rank = [&](int r) {
    FileStore store(directory_);
    Rendezvous rendezvous(store, "p/", r, 3, 60s, 2s);
    if (r == 2) std::this_thread::sleep_for(300ms);  // the others wait, and so count
    rendezvous.barrier("ready", /*last=*/true);
  };
  std::thread one(rank, 1);
  std::thread two(rank, 2);
  rank(0);
  one.join();
  two.join();
  FileStore store(directory_);
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(store.check("p/alive/" + std::to_string(r))) << r;
    EXPECT_FALSE(store.check("p/ready/" + std::to_string(r))) << r;
  }
  EXPECT_FALSE(store.check("p/ready/departed"));
}

}  // namespace
}  // namespace grove::bootstrap
