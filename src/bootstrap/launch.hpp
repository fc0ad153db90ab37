// Where this process stands in a job: its rank, the world size, which ranks share its host
// and how to reach the rendezvous store, read from whichever launcher started it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace grove::bootstrap {

struct LaunchInfo {
  int rank = -1;
  int worldSize = 0;
  int localRank = -1;    ///< Rank among the processes of this host, -1 when unknown.
  int localSize = 0;     ///< Processes on this host, 0 when unknown.
  std::string rootHost;  ///< Host (name or address) of the rendezvous store.
  uint16_t rootPort = 0;
  /// Job secret: GROVE_SECRET, else the contents of GROVE_SECRET_FILE; may be empty.
  std::string secret;
  /// GROVE_STORE=file:DIR: rendezvous through files in DIR (a shared file system, fresh per
  /// job) instead of the TCP store; rootHost/rootPort are then unused.
  std::string storeDirectory;
  std::string source;  ///< "grove", "torchrun", "openmpi", "mpich", "slurm" — for logs.
};

/// Reads the environment through `getenv` (injectable for tests). Order: GROVE_RANK /
/// GROVE_WORLD_SIZE / GROVE_ROOT (host:port, [v6]:port) / GROVE_LOCAL_RANK; torchrun (RANK,
/// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); Open MPI
/// (OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE); MPICH/Hydra (PMI_RANK, PMI_SIZE,
/// MPI_LOCALRANKID, MPI_LOCALNRANKS); Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
/// SLURM_NTASKS_PER_NODE). For launchers that carry no rendezvous address, GROVE_ROOT or
/// MASTER_ADDR/MASTER_PORT must be set as well, unless GROVE_STORE=file:DIR names a file
/// store. Returns nullopt when no launcher is
/// recognised; throws grove::Error(kInvalidArgument) naming the variable when one is
/// malformed or inconsistent (rank outside [0, size)).
std::optional<LaunchInfo> detectLaunch(const std::function<const char*(const char*)>& getenv);

/// The job secret: GROVE_SECRET, else the contents of GROVE_SECRET_FILE (trailing white
/// space cut), else empty. Throws kInvalidArgument when the file cannot be read or is empty.
std::string readSecret(const std::function<const char*(const char*)>& getenv);

}  // namespace grove::bootstrap
