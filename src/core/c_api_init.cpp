// The C ABI, part two: making communicators — unique ids (and the store servers behind
// them), options handles, groveCommInitRank, groveCommInitEnv and groveCommInitAll (each also
// with options: the *Config forms). Life cycle, groups and
// errors are in c_api.cpp, the collectives in c_api_collectives.cpp.
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/random.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/unique_id.hpp"
#include "common/parameters.hpp"
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

/// What a groveOptions_t points to.
struct groveOptions {
  grove::Options options;
};

namespace {

const grove::Options kNoOptions;

const grove::Options& optionsOf(groveOptions_t options) {
  return options != nullptr ? options->options : kNoOptions;
}

}  // namespace

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
    const std::string ifname = grove::common::resolveParameter(
                                   grove::common::spec(grove::common::Param::kSocketIfname), {})
                                   .text;
    contents.host = grove::transport::tcp::chooseInterface(ifname, 0).address;
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

groveResult_t groveOptionsCreate(groveOptions_t* options) {
  return guarded("groveOptionsCreate", [&] {
    requireNonNull(options, "options");
    *options = new groveOptions;
  });
}

groveResult_t groveOptionsSet(groveOptions_t options, const char* key, const char* value) {
  return guarded("groveOptionsSet", [&] {
    requireNonNull(options, "options");
    requireNonNull(key, "key");
    requireNonNull(value, "value");
    options->options.set(key, value);
  });
}

groveResult_t groveOptionsDestroy(groveOptions_t options) {
  return guarded("groveOptionsDestroy", [&] { delete options; });
}

groveResult_t groveCommInitRank(groveComm_t* comm, int nranks, groveUniqueId commId, int rank) {
  return groveCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

groveResult_t groveCommInitRankConfig(groveComm_t* comm, int nranks, groveUniqueId commId, int rank,
                                      groveOptions_t options) {
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
    const grove::detail::Config config =
        grove::detail::Config::resolve(optionsOf(options).values());
    *comm = grove::capi::registerHandle(grove::Communicator::fromState(
        grove::detail::bootstrapProcess(info, config, false, grove::capi::serverForId(id->port))));
  });
}

groveResult_t groveCommInitEnv(groveComm_t* comm) { return groveCommInitEnvConfig(comm, nullptr); }

groveResult_t groveCommInitEnvConfig(groveComm_t* comm, groveOptions_t options) {
  return guarded("groveCommInitEnv", [&] {
    requireNonNull(comm, "comm");
    *comm = nullptr;
    *comm = grove::capi::registerHandle(grove::Communicator::fromEnv(optionsOf(options)));
  });
}

groveResult_t groveCommInitAll(groveComm_t* comms, int ndev, const int* devlist) {
  return groveCommInitAllConfig(comms, ndev, devlist, nullptr);
}

groveResult_t groveCommInitAllConfig(groveComm_t* comms, int ndev, const int* devlist,
                                     groveOptions_t options) {
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
    std::vector<Communicator> group = Communicator::createInProcess(ndev, optionsOf(options));
    for (int i = 0; i < ndev; ++i) {
      comms[i] = grove::capi::registerHandle(std::move(group[static_cast<size_t>(i)]));
    }
  });
}

}  // extern "C"
