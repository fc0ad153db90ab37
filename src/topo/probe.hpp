// Measuring the topology of a running job: `grove topo --probe`.
//
// Every ordered pair of ranks exchanges a small and a large message in turn (everyone else
// idle, so each pair sees an unloaded path): the small message's half round trip gives the
// latency, the large one's one-way time the bandwidth. The result is a rank-only topology
// (one arc per ordered pair, kind from how the pair is connected: "shm" on one host, "net"
// across hosts) with host names filled in, which `grove topo --probe -o FILE` writes as
// JSON for GROVE_TOPO_FILE.
#pragma once

#include "grove/communicator.hpp"
#include "topo/topology.hpp"

namespace grove::topo {

struct ProbeOptions {
  size_t largeBytes = 8 << 20;  ///< Message size for the bandwidth measurement.
  int repetitions = 5;          ///< Median of this many round trips per pair and size.
  /// Link unit of the result; 0 = the largest measured bandwidth.
  double unitGBps = 0;
};

/// Collective over `comm`: every rank returns the same measured topology.
Topology probe(Communicator& comm, const ProbeOptions& options = {});

}  // namespace grove::topo
