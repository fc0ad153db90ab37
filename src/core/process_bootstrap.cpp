#include "core/process_bootstrap.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "bootstrap/file_store.hpp"
#include "bootstrap/random.hpp"
#include "bootstrap/rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"
#include "common/log.hpp"
#include "core/comm_state.hpp"
#include "core/comm_topology.hpp"
#include "grove/error.hpp"
#include "transport/process/process_transport.hpp"
#include "transport/tcp/link_speed.hpp"

namespace grove::detail {
namespace {

std::string randomHex(size_t bytes) { return bootstrap::toHex(bootstrap::randomBytes(bytes)); }

// The value each rank publishes about itself: "<world size>|<NIC Mbit/s>|<host identity>"
// (the identity last: GROVE_HOST_ID may hold any character).
struct Announcement {
  int worldSize = 0;
  int64_t nicMbps = 0;
  std::string host;
};

Announcement parseAnnouncement(const std::string& text, int rank) {
  size_t first = text.find('|');
  size_t second = first == std::string::npos ? first : text.find('|', first + 1);
  if (second == std::string::npos) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove init: rank {} published a malformed announcement", rank));
  }
  return Announcement{std::atoi(text.substr(0, first).c_str()),
                      std::atoll(text.substr(first + 1, second - first - 1).c_str()),
                      text.substr(second + 1)};
}

// Every communicator this process creates through one store as one rank gets the next
// generation, and its keys live under "grove/<generation>/" (per rank: threads of one process
// may be several ranks of one job). Ranks that destroy and create communicators in the same
// order (a framework's destroy_process_group + init_process_group, an elastic
// restart, a test suite) count alike, so the keys of one cycle never meet another's — even
// when a fast rank of the new cycle still reaches the store of the old one, which its rank 0
// has not destroyed yet.
// The store `info` meets through, for messages and as the generations' key.
std::string storeAddress(const bootstrap::LaunchInfo& info) {
  return info.storeDirectory.empty() ? fmt::format("{}:{}", info.rootHost, info.rootPort)
                                     : "file:" + info.storeDirectory;
}

int nextGeneration(const std::string& where, int rank) {
  static std::mutex mutex;
  static std::map<std::string, int> generations;
  std::lock_guard lock(mutex);
  return generations[fmt::format("{}#{}", where, rank)]++;
}

}  // namespace

std::string hostIdentity(const std::string& forced) {
  if (!forced.empty()) return forced;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat netns {};
  stat("/proc/self/ns/net", &netns);
  return fmt::format("{}/{}/net:{}", host, boot, static_cast<unsigned long long>(netns.st_ino));
}

namespace {

// Warns when the ranks span hosts and the job has no secret: then anyone who can reach the
// store's or a rank's port can join the job. (GROVE_REQUIRE_SECRET=1 refused it earlier.)
void warnWithoutSecret(const bootstrap::LaunchInfo& info, const std::vector<std::string>& hostIds) {
  if (!info.secret.empty()) return;
  const size_t hosts = std::set<std::string>(hostIds.begin(), hostIds.end()).size();
  if (hosts < 2) return;
  log::warn(info.rank,
            "this job's {} ranks run on {} hosts and it has no secret (GROVE_SECRET or "
            "GROVE_SECRET_FILE): any process that can reach its ports can join it as a rank and "
            "read its data; give every rank the same GROVE_SECRET (docs/launchers.md)",
            info.worldSize, hosts);
}

// Everything after the store connection: claim the rank, learn who lives where, connect.
// This host's NIC rate: GROVE_NIC_SPEED, else what the drivers of the interfaces TCP uses
// report (0 when they do not: virtual interfaces, as emulated hosts have).
Config withNicSpeed(const Config& given, int rank) {
  Config config = given;
  if (config.nicSpeedMbps > 0) return config;
  const transport::tcp::NicSpeed speed =
      transport::tcp::detectNicSpeed(config.socketInterfaces, rank);
  config.nicSpeedMbps = speed.mbps;
  config.nicSpeedSource = speed.how;
  log::info(rank, "NIC rate: {}",
            speed.mbps > 0 ? fmt::format("{} Mbit/s ({})", speed.mbps, speed.how)
                           : fmt::format("unknown ({})", speed.how));
  return config;
}

std::shared_ptr<CommState> join(const bootstrap::LaunchInfo& info, const Config& given,
                                std::shared_ptr<bootstrap::Store> store,
                                bootstrap::Rendezvous& rendezvous, std::shared_ptr<void> server,
                                const std::string& prefix, const std::string& where) {
  const int rank = info.rank;
  const int size = info.worldSize;
  const Config config = withNicSpeed(given, rank);
  // A fast rank of this cycle may still reach the store of the last one, which its rank 0
  // has not destroyed yet: nothing is written before rank 0 opened this generation's keys
  // on the store that serves it. From then on the store's loss means rank 0's: fail at once.
  if (rank == 0) store->set(prefix + "open", "1");
  rendezvous.awaitStore("open", "rank 0 (which opens the rendezvous)");
  store->failOnDisconnect();
  // If this process dies before the job is up, the store tells the others at once.
  store->setOnClose(prefix + "failed",
                    fmt::format("rank {} failed: its connection to the store closed during init "
                                "(its process ended or was killed)",
                                rank));
  // Claim the rank: a second process with the same rank number is an error.
  if (store->add(fmt::format("{}claim/{}", prefix, rank), 1) != 1) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove init: rank {} of {} was claimed by two processes (check the "
                            "launcher's rank variables, source: {})",
                            rank, size, info.source));
  }
  store->set(fmt::format("{}rank/{}", prefix, rank),
             fmt::format("{}|{}|{}", size, config.nicSpeedMbps, hostIdentity(config.hostId)));
  log::info(rank, "init: rank {} of {} claimed at the store {}, waiting for the others", rank, size,
            where);
  if (rank == 0) {
    // The launcher's job id (grove run removes /dev/shm/grove-<id>-* after the job).
    store->set(prefix + "job",
               !config.jobId.empty() ? config.jobId + "-" + randomHex(4) : randomHex(8));
  }

  transport::ProcessTransportSetup setup;
  setup.rank = rank;
  setup.size = size;
  setup.keyPrefix = prefix;
  setup.timeout = config.timeout;
  setup.geometry = {config.slotBytes, config.fifoDepth};
  setup.store = store;
  setup.keepAlive = std::move(server);
  setup.forceTcp = config.forceTcp;
  // Every lane has its own TCP connection (see TcpOptions::socketsPerPeer): GROVE_NSOCKS,
  // which once spread lanes over a fixed number of sockets, would bring back lanes blocking
  // each other, so it is no longer read.
  if (config.nsocksGiven) {
    log::info(rank, "GROVE_NSOCKS is ignored: every lane has its own TCP connection");
  }
  setup.tcp.interfaces = config.socketInterfaces;
  setup.tcp.directBytes = config.tcpDirectBytes;
  setup.tcp.sharedConnections = config.tcpShared;
  setup.tcp.faultCorruptFrame = config.faultCorruptFrame;
  setup.tcp.secret = info.secret;
  setup.tcp.heartbeatTimeout = config.heartbeatTimeout;
  // The topology first: the TCP transport dials each peer over the link it names.
  std::shared_ptr<const topo::Topology> topology = loadTopology(config.topoFile, rank, size);
  if (topology) setup.tcp.linkAddresses = linkAddresses(*topology, rank);
  setup.jobId = rendezvous.await("job", "rank 0");
  std::vector<int64_t> nicMbps;
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
    nicMbps.push_back(a.nicMbps);
  }
  // Without a topology file, the hosts the ranks turned out to be on (shm inside, TCP across)
  // and the NIC rates they gave.
  if (!topology) topology = hostsTopology(setup.hostIds, rank, nicMbps);
  warnWithoutSecret(info, setup.hostIds);
  log::info(rank, "init: rank {} of {} from {} (store {}), job {}", rank, size, info.source, where,
            setup.jobId);
  auto transport = std::make_unique<transport::ProcessTransport>(std::move(setup));
  auto state = std::make_shared<CommState>(std::move(transport), config, std::move(topology));
  store->setOnClose(prefix + "failed", "");  // Up: its later failures travel on the transport.
  return state;
}

}  // namespace

void requireSecretIfAsked(const Config& config, const bootstrap::LaunchInfo& info) {
  if (config.requireSecret && info.secret.empty()) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove init (rank {} of {}): GROVE_REQUIRE_SECRET=1 and this job has "
                            "no secret; give every rank the same GROVE_SECRET or "
                            "GROVE_SECRET_FILE",
                            info.rank, info.worldSize));
  }
}

std::shared_ptr<CommState> bootstrapProcess(const bootstrap::LaunchInfo& info, const Config& config,
                                            bool serveStore, std::shared_ptr<void> runningServer) {
  requireSecretIfAsked(config, info);
  std::shared_ptr<void> server = std::move(runningServer);
  std::shared_ptr<bootstrap::Store> store;
  if (!info.storeDirectory.empty()) {
    store = std::make_shared<bootstrap::FileStore>(info.storeDirectory, config.timeout);
  } else {
    if (serveStore) {
      // A job that meets on a loopback address (grove run, torchrun --standalone) is reached
      // from this host only: listen there alone, so no other host can reach the store.
      const bool loopback = info.rootHost.starts_with("127.") || info.rootHost == "::1" ||
                            info.rootHost == "localhost";
      server = std::make_shared<bootstrap::TcpStoreServer>(
          loopback ? (info.rootHost == "localhost" ? "127.0.0.1" : info.rootHost) : "",
          info.rootPort, info.secret);
    }
    store = std::make_shared<bootstrap::TcpStoreClient>(info.rootHost, info.rootPort, info.secret,
                                                        config.timeout);
  }
  return joinThrough(info, config, std::move(store), std::move(server), storeAddress(info));
}

std::shared_ptr<CommState> joinThrough(const bootstrap::LaunchInfo& info, const Config& config,
                                       std::shared_ptr<bootstrap::Store> store,
                                       std::shared_ptr<void> server, const std::string& where) {
  const std::string prefix = fmt::format("grove/{}/", nextGeneration(where, info.rank));
  bootstrap::Rendezvous rendezvous(*store, prefix, info.rank, info.worldSize, config.timeout,
                                   config.heartbeatTimeout);
  try {
    return join(info, config, store, rendezvous, server, prefix, where);
  } catch (const Error& error) {
    rendezvous.publishFailure(error.what());
    // The store lives in this process: keep it up a moment so the others read why (they
    // poll every 20 ms at most; a rank that misses it still fails at once, on the lost store).
    if (server) std::this_thread::sleep_for(std::chrono::milliseconds(250));
    throw;
  }
}

}  // namespace grove::detail
