// The TCP latency path (TcpLinks::progress): ranks as threads that drive the network loop
// themselves while they wait, with every share of the work between the rank's thread and
// the network thread — no frame on the rank's thread (GROVE_TCP_DIRECT_BYTES=0), frames up
// to 7 bytes (zero-length, one-byte and 7-byte messages on the rank's thread, the rest
// handed to the network thread mid-exchange), and every frame — over 1 and 3 sockets per
// peer, exact bytes on several lanes both ways. Named *Threads* so that the TSan stage runs
// it: the two threads of a rank meet in the loop's lock and lease.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/tcp_pair.hpp"
#include "transport/tcp/tcp_links.hpp"

namespace grove::transport {
namespace {

using tcp_pair::exchange;
using tcp_pair::makeOptions;
using tcp_pair::Rank;
using tcp_pair::TempDir;

class TcpProgressThreads : public testing::TestWithParam<std::tuple<size_t, int>> {};

TEST_P(TcpProgressThreads, RanksDrivingTheirLinksExchangeExactMessages) {
  const auto [directBytes, sockets] = GetParam();
  TempDir dir;
  const size_t slotBytes = 3000;  // not a power of two
  const std::vector<int> lanes = {0, 1, 3};
  std::string errors[2];
  std::thread threads[2];
  for (int self = 0; self < 2; ++self) {
    threads[self] = std::thread([&, self] {
      TcpOptions options = makeOptions(self, 2, sockets, slotBytes);
      options.directBytes = directBytes;
      Rank rank(dir.path, options);
      errors[self] = exchange(rank, self, 1 - self, lanes, 400, slotBytes, /*drive=*/true);
      if (errors[self].empty() && rank.links.failedPeer() != -1) errors[self] = "peer failed";
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

INSTANTIATE_TEST_SUITE_P(Shares, TcpProgressThreads,
                         testing::Combine(testing::Values(size_t{0}, size_t{7}, size_t{1} << 26),
                                          testing::Values(1, 3)),
                         [](const auto& param) {
                           return "direct" + std::to_string(std::get<0>(param.param)) + "_sockets" +
                                  std::to_string(std::get<1>(param.param));
                         });

}  // namespace
}  // namespace grove::transport
