// TcpOptions::linkAddresses: with a topology that names an address per link, each peer is
// dialed at its link address (with the port it published) and the listener accepts on every
// local address. Loopback stands for the links: the whole of 127.0.0.0/8 reaches this host,
// so "127.0.0.2" is a second address of rank 1 that it never published. The published host
// of rank 1 is then replaced by an unreachable one (TEST-NET-3): the exchange can only
// succeed when rank 0 really dials the link address.
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/file_store.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"
#include "support/tcp_pair.hpp"
#include "transport/tcp/tcp_links.hpp"

namespace grove::transport {
namespace {

using tcp_pair::Rank;
using tcp_pair::TempDir;

/// Rank `rank` of `size` on loopback (one connection per lane) whose peers are dialed at
/// `linkAddresses` (see TcpOptions::linkAddresses).
TcpOptions makeOptions(int rank, int size, std::vector<std::string> linkAddresses) {
  TcpOptions options = tcp_pair::makeOptions(rank, size, kStreamsPerLane);
  options.linkAddresses = std::move(linkAddresses);
  return options;
}

TEST(TcpLinkAddresses, EachPeerIsDialedAtItsLinkAddress) {
  TempDir dir;
  // Rank 0 reaches rank 1 at 127.0.0.2 (never published); rank 1 reaches rank 0 at
  // 127.0.0.1, which is also what rank 0 published.
  Rank zero(dir.path, makeOptions(0, 2, {"", "127.0.0.2"}));
  Rank one(dir.path, makeOptions(1, 2, {"127.0.0.1", ""}));
  EXPECT_EQ(one.links.address().rfind("127.0.0.1:", 0), 0u) << one.links.address();
  // Rank 1's published host becomes unreachable; only its port still counts.
  auto [host, port] = net::parseHostPort(one.links.address(), "test address");
  one.store.set("job/tcp/1", net::formatHostPort("203.0.113.7", port));
  std::string errors[2];
  std::thread threads[2] = {
      std::thread([&] { errors[0] = tcp_pair::exchange(zero, 0, 1, {0}, 200, 4096); }),
      std::thread([&] { errors[1] = tcp_pair::exchange(one, 1, 0, {0}, 200, 4096); })};
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

TEST(TcpLinkAddresses, ThreeRanksWithSomeLinksAndSomePublishedAddresses) {
  TempDir dir;
  // Ranks 0 and 2 have a "link" (127.0.0.3 / 127.0.0.4); everything else uses the published
  // addresses, as non-adjacent pairs of a mesh do.
  std::vector<std::vector<std::string>> links = {
      {"", "", "127.0.0.3"}, {"", "", ""}, {"127.0.0.4", "", ""}};
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(std::make_unique<Rank>(dir.path, makeOptions(r, 3, links[r])));
  std::string errors[3][3];
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      for (int peer = 0; peer < 3; ++peer) {
        if (peer != r) errors[r][peer] = tcp_pair::exchange(*ranks[r], r, peer, {0}, 50, 4096);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < 3; ++r) {
    for (int peer = 0; peer < 3; ++peer) EXPECT_EQ(errors[r][peer], "") << r << " -> " << peer;
  }
}

TEST(TcpLinkAddresses, RejectsALinkListOfTheWrongLength) {
  TempDir dir;
  bootstrap::FileStore store(dir.path);
  Doorbell bell;
  try {
    TcpLinks links(store, makeOptions(0, 3, {"", "127.0.0.2"}), bell);
    ADD_FAILURE() << "two link addresses for three ranks were accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("2 link addresses for 3 ranks"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace grove::transport
