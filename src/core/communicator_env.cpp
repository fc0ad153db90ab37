// Communicator::fromEnv: a communicator for a rank that is a process, found through the
// launcher's environment variables.
#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "bootstrap/launch.hpp"
#include "core/comm_state.hpp"
#include "core/process_bootstrap.hpp"
#include "grove/communicator.hpp"

namespace grove {

Communicator Communicator::fromEnv() {
  std::optional<bootstrap::LaunchInfo> info =
      bootstrap::detectLaunch([](const char* name) { return std::getenv(name); });
  if (!info) {
    throw Error(ErrorCode::kInvalidUsage,
                "grove fromEnv: no launcher environment found; expected GROVE_RANK, "
                "GROVE_WORLD_SIZE and GROVE_ROOT (set by `grove run`), or torchrun's RANK, "
                "WORLD_SIZE, MASTER_ADDR and MASTER_PORT, or Open MPI, MPICH or Slurm rank "
                "variables together with GROVE_ROOT or MASTER_ADDR/MASTER_PORT");
  }
  const char* store = std::getenv("GROVE_STORE");
  const bool external = store != nullptr && std::string_view(store) == "external";
  return fromState(detail::bootstrapProcess(*info, info->rank == 0 && !external));
}

}  // namespace grove
