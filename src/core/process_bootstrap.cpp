#include "core/process_bootstrap.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "bootstrap/file_store.hpp"
#include "bootstrap/random.hpp"
#include "bootstrap/rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"
#include "core/comm_state.hpp"
#include "core/comm_topology.hpp"
#include "core/log.hpp"
#include "grove/error.hpp"
#include "transport/process/process_transport.hpp"

namespace grove::detail {
namespace {

std::string randomHex(size_t bytes) { return bootstrap::toHex(bootstrap::randomBytes(bytes)); }

// The value each rank publishes about itself: "<world size>|<host identity>".
struct Announcement {
  int worldSize = 0;
  std::string host;
};

Announcement parseAnnouncement(const std::string& text, int rank) {
  size_t bar = text.find('|');
  if (bar == std::string::npos) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove init: rank {} published a malformed announcement", rank));
  }
  return Announcement{std::atoi(text.substr(0, bar).c_str()), text.substr(bar + 1)};
}

}  // namespace

std::string hostIdentity() {
  if (const char* forced = std::getenv("GROVE_HOST_ID"); forced != nullptr && *forced != '\0') {
    return forced;
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat netns {};
  stat("/proc/self/ns/net", &netns);
  return fmt::format("{}/{}/net:{}", host, boot, static_cast<unsigned long long>(netns.st_ino));
}

namespace {

// Everything after the store connection: claim the rank, learn who lives where, connect.
std::shared_ptr<CommState> join(const bootstrap::LaunchInfo& info, const Config& config,
                                std::shared_ptr<bootstrap::Store> store,
                                bootstrap::Rendezvous& rendezvous, std::shared_ptr<void> server) {
  const int rank = info.rank;
  const int size = info.worldSize;
  const std::string prefix = "grove/";
  // Claim the rank: a second process with the same rank number is an error.
  if (store->add(fmt::format("{}claim/{}", prefix, rank), 1) != 1) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove init: rank {} of {} was claimed by two processes (check the "
                            "launcher's rank variables, source: {})",
                            rank, size, info.source));
  }
  store->set(fmt::format("{}rank/{}", prefix, rank), fmt::format("{}|{}", size, hostIdentity()));
  if (rank == 0) {
    // The launcher's job id (grove run removes /dev/shm/grove-<id>-* after the job).
    const char* launcherJob = std::getenv("GROVE_JOB_ID");
    store->set(prefix + "job", launcherJob != nullptr && *launcherJob != '\0'
                                   ? std::string(launcherJob) + "-" + randomHex(4)
                                   : randomHex(8));
  }

  transport::ProcessTransportSetup setup;
  setup.rank = rank;
  setup.size = size;
  setup.keyPrefix = prefix;
  setup.timeout = config.timeout;
  setup.geometry = {config.slotBytes, config.fifoDepth};
  setup.store = store;
  setup.keepAlive = std::move(server);
  const char* forced = std::getenv("GROVE_TRANSPORT");
  setup.forceTcp = forced != nullptr && std::string_view(forced) == "tcp";
  // Every lane has its own TCP connection (see TcpOptions::socketsPerPeer): GROVE_NSOCKS,
  // which once spread lanes over a fixed number of sockets, would bring back lanes blocking
  // each other, so it is no longer read.
  if (std::getenv("GROVE_NSOCKS") != nullptr) {
    log::info(rank, "GROVE_NSOCKS is ignored: every lane has its own TCP connection");
  }
  if (const char* ifname = std::getenv("GROVE_SOCKET_IFNAME")) setup.tcp.interfaces = ifname;
  setup.tcp.secret = info.secret;
  setup.tcp.heartbeatTimeout = config.heartbeatTimeout;
  // The topology first: the TCP transport dials each peer over the link it names.
  std::shared_ptr<const topo::Topology> topology = loadTopology(config.topoFile, rank, size);
  if (topology) setup.tcp.linkAddresses = linkAddresses(*topology, rank);
  setup.jobId = rendezvous.await("job", "rank 0");
  for (int q = 0; q < size; ++q) {
    Announcement a = parseAnnouncement(
        rendezvous.await(fmt::format("rank/{}", q), fmt::format("rank {}", q)), q);
    if (a.worldSize != size) {
      throw Error(ErrorCode::kInvalidUsage,
                  fmt::format("grove init: world size {} of rank {} disagrees with world size {} "
                              "of rank {}",
                              size, rank, a.worldSize, q));
    }
    setup.hostIds.push_back(a.host);
  }
  log::info(rank, "init: rank {} of {} from {} (store {}:{}), job {}", rank, size, info.source,
            info.rootHost, info.rootPort, setup.jobId);
  auto transport = std::make_unique<transport::ProcessTransport>(std::move(setup));
  return std::make_shared<CommState>(std::move(transport), config, std::move(topology));
}

}  // namespace

std::shared_ptr<CommState> bootstrapProcess(const bootstrap::LaunchInfo& info, bool serveStore) {
  Config config = Config::fromEnvironment();
  std::shared_ptr<void> server;
  std::shared_ptr<bootstrap::Store> store;
  if (!info.storeDirectory.empty()) {
    store = std::make_shared<bootstrap::FileStore>(info.storeDirectory, config.timeout);
  } else {
    if (serveStore) {
      server = std::make_shared<bootstrap::TcpStoreServer>("", info.rootPort, info.secret);
    }
    store = std::make_shared<bootstrap::TcpStoreClient>(info.rootHost, info.rootPort, info.secret,
                                                        config.timeout);
  }
  bootstrap::Rendezvous rendezvous(*store, "grove/", info.rank, info.worldSize, config.timeout);
  try {
    return join(info, config, store, rendezvous, server);
  } catch (const Error& error) {
    rendezvous.publishFailure(error.what());
    // The store lives in this process: keep it up a moment so the others read why.
    if (server) std::this_thread::sleep_for(std::chrono::seconds(1));
    throw;
  }
}

}  // namespace grove::detail
