// Communicator::fromEnv and fromStore: a communicator for a rank that is a process, found
// through the launcher's environment variables or through a store the caller brings.
#include <fmt/format.h>

#include <string_view>

#include "bootstrap/launch.hpp"
#include "common/parameters.hpp"
#include "core/comm_state.hpp"
#include "core/config.hpp"
#include "core/process_bootstrap.hpp"
#include "grove/communicator.hpp"

namespace grove {

Communicator Communicator::fromEnv(const Options& options) {
  // Options set from code answer before the environment, for the launch variables too.
  const common::Getenv lookup = common::overlay(options.values());
  std::optional<bootstrap::LaunchInfo> info = bootstrap::detectLaunch(lookup);
  if (!info) {
    throw Error(ErrorCode::kInvalidUsage,
                "grove fromEnv: no launcher environment found; expected GROVE_RANK, "
                "GROVE_WORLD_SIZE and GROVE_ROOT (set by `grove run`), or torchrun's RANK, "
                "WORLD_SIZE, MASTER_ADDR and MASTER_PORT, or Open MPI, MPICH or Slurm rank "
                "variables together with GROVE_ROOT or MASTER_ADDR/MASTER_PORT");
  }
  const detail::Config config = detail::Config::resolve(options.values());
  const common::ParamValue store =
      common::resolveParameter(common::spec(common::Param::kStore), options.values());
  const bool external = std::string_view(store.text) == "external";
  return fromState(detail::bootstrapProcess(*info, config, info->rank == 0 && !external));
}

Communicator Communicator::fromStore(std::shared_ptr<Store> store, int rank, int size,
                                     const StoreJoinOptions& options, const Options& settings) {
  if (!store) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove fromStore (rank {} of {}): store is null (expected a Store "
                            "every rank of the group reaches)",
                            rank, size));
  }
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove fromStore: rank {} of size {} (expected size >= 1 and "
                            "0 <= rank < size)",
                            rank, size));
  }
  bootstrap::LaunchInfo info;
  info.rank = rank;
  info.worldSize = size;
  info.source = "a store of the caller's";
  info.secret = !options.secret.empty() ? options.secret
                                        : bootstrap::readSecret(common::overlay(settings.values()));
  detail::Config config = detail::Config::resolve(settings.values());
  if (options.timeout.count() > 0) config.timeout = options.timeout;
  detail::requireSecretIfAsked(config, info);
  return fromState(
      detail::joinThrough(info, config, std::move(store), nullptr,
                          fmt::format("group '{}' of a caller's store", options.group)));
}

}  // namespace grove
