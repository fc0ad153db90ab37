// TcpOptions::linkAddresses: with a topology that names an address per link, each peer is
// dialed at its link address (with the port it published) and the listener accepts on every
// local address. Loopback stands for the links: the whole of 127.0.0.0/8 reaches this host,
// so "127.0.0.2" is a second address of rank 1 that it never published. The published host
// of rank 1 is then replaced by an unreachable one (TEST-NET-3): the exchange can only
// succeed when rank 0 really dials the link address.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/file_store.hpp"
#include "grove/error.hpp"
#include "transport/tcp/socket.hpp"
#include "transport/tcp/tcp_links.hpp"

namespace grove::transport {
namespace {

using Clock = std::chrono::steady_clock;

/// Liveness bound of every wait below (never a timing assertion: only "it did happen").
constexpr auto kPatience = std::chrono::seconds(60);

struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/grove-tcplink-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

TcpOptions makeOptions(int rank, int size, std::vector<std::string> linkAddresses) {
  TcpOptions options;
  options.keyPrefix = "job";
  options.rank = rank;
  options.size = size;
  for (int r = 0; r < size; ++r) {
    if (r != rank) options.remoteRanks.push_back(r);
  }
  options.geometry = FifoGeometry{4096, 4};
  options.interfaces = "lo";
  options.secret = "s3cret";
  options.timeout = std::chrono::milliseconds(30'000);
  options.linkAddresses = std::move(linkAddresses);
  return options;
}

struct Rank {
  Rank(const std::string& dir, TcpOptions options)
      : store(dir), links(store, std::move(options), bell) {}
  Doorbell bell;
  bootstrap::FileStore store;
  TcpLinks links;
};

unsigned char patternByte(int src, int index, size_t at) {
  return static_cast<unsigned char>(src * 131 + index * 7 + at * 13);
}

/// Sends `messages` messages of index*37 % 4096 bytes to `peer` and receives as many, checking
/// every byte; "" on success, else what went wrong.
std::string exchange(Rank& rank, int self, int peer, int messages) {
  int sent = 0;
  int received = 0;
  Clock::time_point deadline = Clock::now() + kPatience;
  Fifo& out = rank.links.sendFifo(peer, 0);
  Fifo& in = rank.links.recvFifo(peer, 0);
  while (sent < messages || received < messages) {
    bool progress = false;
    if (sent < messages) {
      if (void* slot = out.tryAcquire()) {
        size_t bytes = static_cast<size_t>(sent) * 37 % 4096;
        auto* data = static_cast<unsigned char*>(slot);
        for (size_t at = 0; at < bytes; ++at) data[at] = patternByte(self, sent, at);
        out.commit(bytes);
        ++sent;
        progress = true;
      }
    }
    if (received < messages) {
      size_t bytes = 0;
      if (const void* slot = in.tryPeek(&bytes)) {
        if (bytes != static_cast<size_t>(received) * 37 % 4096) {
          return "message " + std::to_string(received) + " has " + std::to_string(bytes) + " bytes";
        }
        auto* data = static_cast<const unsigned char*>(slot);
        for (size_t at = 0; at < bytes; ++at) {
          if (data[at] != patternByte(peer, received, at)) {
            return "message " + std::to_string(received) + ": wrong byte at " + std::to_string(at);
          }
        }
        in.release();
        ++received;
        progress = true;
      }
    }
    if (rank.links.failedPeer() >= 0) {
      return "failedPeer() = " + std::to_string(rank.links.failedPeer());
    }
    if (Clock::now() > deadline) return "no progress";
    if (!progress) {
      uint32_t sequence = prepareSleep(rank.bell);
      sleep(rank.bell, sequence, std::chrono::milliseconds(1));
      cancelSleep(rank.bell);
    }
  }
  return "";
}

TEST(TcpLinkAddresses, EachPeerIsDialedAtItsLinkAddress) {
  TempDir dir;
  // Rank 0 reaches rank 1 at 127.0.0.2 (never published); rank 1 reaches rank 0 at
  // 127.0.0.1, which is also what rank 0 published.
  Rank zero(dir.path, makeOptions(0, 2, {"", "127.0.0.2"}));
  Rank one(dir.path, makeOptions(1, 2, {"127.0.0.1", ""}));
  EXPECT_EQ(one.links.address().rfind("127.0.0.1:", 0), 0u) << one.links.address();
  // Rank 1's published host becomes unreachable; only its port still counts.
  auto [host, port] = transport::tcp::parseHostPort(one.links.address());
  one.store.set("job/tcp/1", transport::tcp::formatHostPort("203.0.113.7", port));
  std::string errors[2];
  std::thread threads[2] = {std::thread([&] { errors[0] = exchange(zero, 0, 1, 200); }),
                            std::thread([&] { errors[1] = exchange(one, 1, 0, 200); })};
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
        if (peer != r) errors[r][peer] = exchange(*ranks[r], r, peer, 50);
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
