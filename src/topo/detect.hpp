// What grove can see of the machine it runs on, without help from the user.
//
// Detection cannot see NVLink meshes or switch fabrics on a CPU-only host, but it can see
// what matters for placing ranks and for sanity-checking a topology file: the host name
// (ranks with the same name share memory), the NUMA nodes and their CPUs, and the network
// interfaces that are up with their link speed. `grove topo` prints it for the local host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace grove::topo {

/// One NUMA node: its number and its CPUs in the kernel's list form ("0-15,32-47").
struct NumaNode {
  int id = 0;
  std::string cpus;
};

/// One network interface that is not the loopback and not down.
struct NicInfo {
  std::string name;        ///< E.g. "eth0".
  int64_t speedMbps = -1;  ///< Link speed from /sys/class/net/NAME/speed; -1 when unknown.
  std::string state;       ///< operstate: "up" or "unknown" (virtual links often say so).
};

/// What detectHost() found. Lists are sorted (NUMA nodes by id, NICs by name).
struct HostInfo {
  std::string hostName;
  int cpuCount = 0;  ///< Online CPUs (std::thread::hardware_concurrency()).
  std::vector<NumaNode> numaNodes;
  std::vector<NicInfo> nics;
};

/// Reads the local host from the system. `sysRoot` is where sysfs is mounted ("/sys");
/// tests point it at a fake tree. Missing files are not errors: the fields stay empty.
HostInfo detectHost(const std::string& sysRoot = "/sys");

/// A few human-readable lines describing `info`, e.g.
///   host: node7, 32 CPUs
///   NUMA node 0: CPUs 0-15
///   NIC eth0: 100000 Mbit/s (up)
std::string describeHost(const HostInfo& info);
/// describeHost(detectHost()).
std::string describeHost();

}  // namespace grove::topo
