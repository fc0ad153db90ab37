// The C ABI, part two: making communicators — unique ids (and the store servers behind
// them), groveCommInitRank, groveCommInitEnv and groveCommInitAll. Life cycle, groups and
// errors are in c_api.cpp, the collectives in c_api_collectives.cpp.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/random.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/unique_id.hpp"
#include "core/c_api_internal.hpp"
#include "core/process_bootstrap.hpp"
#include "transport/tcp/interfaces.hpp"

namespace grove::capi {

IdServers& idServers() {
  static IdServers servers;
  return servers;
}

std::shared_ptr<void> serverForId(uint16_t port) {
  IdServers& servers = idServers();
  std::lock_guard lock(servers.mutex);
  if (auto it = servers.unused.find(port); it != servers.unused.end()) {
    std::shared_ptr<bootstrap::TcpStoreServer> server = std::move(it->second);
    servers.unused.erase(it);
    servers.used[port] = server;
    return server;
  }
  auto it = servers.used.find(port);
  if (it == servers.used.end()) return nullptr;
  std::shared_ptr<bootstrap::TcpStoreServer> server = it->second.lock();
  if (server == nullptr) servers.used.erase(it);
  return server;
}

}  // namespace grove::capi

using grove::Communicator;
using grove::Error;
using grove::ErrorCode;
using grove::capi::guarded;
using grove::capi::requireNonNull;

extern "C" {

groveResult_t groveGetUniqueId(groveUniqueId* uniqueId) {
  return guarded("groveGetUniqueId", [&] {
    requireNonNull(uniqueId, "uniqueId");
    grove::bootstrap::IdContents contents;
    const char* ifname = std::getenv("GROVE_SOCKET_IFNAME");
    contents.host =
        grove::transport::tcp::chooseInterface(ifname != nullptr ? ifname : "", 0).address;
    contents.secret = grove::bootstrap::randomSecret();
    auto server = std::make_shared<grove::bootstrap::TcpStoreServer>("", 0, contents.secret);
    contents.port = server->port();
    std::memset(uniqueId->internal, 0, sizeof(uniqueId->internal));
    grove::bootstrap::encodeUniqueId(contents, uniqueId->internal);
    grove::capi::IdServers& servers = grove::capi::idServers();
    std::lock_guard lock(servers.mutex);
    servers.unused[contents.port] = std::move(server);
  });
}

groveResult_t groveCommInitRank(groveComm_t* comm, int nranks, groveUniqueId commId, int rank) {
  return guarded("groveCommInitRank", [&] {
    requireNonNull(comm, "comm");
    *comm = nullptr;
    if (nranks < 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "nranks is " + std::to_string(nranks) + ", expected at least 1");
    }
    if (rank < 0 || rank >= nranks) {
      throw Error(ErrorCode::kInvalidArgument,
                  "rank is " + std::to_string(rank) +
                      ", expected 0 <= rank < nranks = " + std::to_string(nranks));
    }
    std::optional<grove::bootstrap::IdContents> id =
        grove::bootstrap::decodeUniqueId(commId.internal);
    if (!id) {
      throw Error(ErrorCode::kInvalidArgument,
                  "commId is not a grove unique id (expected the bytes groveGetUniqueId wrote)");
    }
    grove::bootstrap::LaunchInfo info;
    info.rank = rank;
    info.worldSize = nranks;
    info.rootHost = id->host;
    info.rootPort = id->port;
    info.secret = id->secret;
    info.source = "groveCommInitRank";
    *comm = grove::capi::registerHandle(grove::Communicator::fromState(
        grove::detail::bootstrapProcess(info, false, grove::capi::serverForId(id->port))));
  });
}

groveResult_t groveCommInitEnv(groveComm_t* comm) {
  return guarded("groveCommInitEnv", [&] {
    requireNonNull(comm, "comm");
    *comm = nullptr;
    *comm = grove::capi::registerHandle(grove::Communicator::fromEnv());
  });
}

groveResult_t groveCommInitAll(groveComm_t* comms, int ndev, const int* devlist) {
  return guarded("groveCommInitAll", [&] {
    requireNonNull(comms, "comms");
    if (ndev < 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "ndev is " + std::to_string(ndev) + ", expected at least 1");
    }
    if (devlist != nullptr) {
      for (int i = 0; i < ndev; ++i) {
        if (devlist[i] < 0) {
          throw Error(ErrorCode::kInvalidArgument, "devlist[" + std::to_string(i) + "] is " +
                                                       std::to_string(devlist[i]) +
                                                       ", expected a non-negative label");
        }
        for (int j = 0; j < i; ++j) {
          if (devlist[j] == devlist[i]) {
            throw Error(ErrorCode::kInvalidArgument,
                        "devlist[" + std::to_string(i) + "] repeats devlist[" + std::to_string(j) +
                            "] = " + std::to_string(devlist[i]) + ", expected distinct labels");
          }
        }
      }
    }
    std::vector<Communicator> group = Communicator::createInProcess(ndev);
    for (int i = 0; i < ndev; ++i) {
      comms[i] = grove::capi::registerHandle(std::move(group[static_cast<size_t>(i)]));
    }
  });
}

}  // extern "C"
