// The communicator's topology (GROVE_TOPO_FILE, or the hosts its ranks run on): made once
// when a communicator is created, checked against the communicator, kept for its life,
// narrowed by split.
//
// Why a file of its own: the process bootstrap needs the topology before the
// transport exists (the TCP transport dials each peer at the address of the
// link the topology names), CommState keeps it for plan requests, and split
// derives the sub-communicator's topology. All three go through these functions
// so errors read the same everywhere.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "topo/topology.hpp"

namespace grove::detail {

/// Loads `spec` (a preset like "dgx1v:0,1,4" or a JSON path, see
/// topo::fromSpec) for `rank` of a communicator of `size` ranks; nullptr when
/// `spec` is empty. Throws grove::Error(kInvalidArgument) naming
/// GROVE_TOPO_FILE, the rank and the problem, e.g. "has 3 ranks, the
/// communicator has 4". Logged at INFO.
std::shared_ptr<const topo::Topology> loadTopology(const std::string& spec, int rank, int size);

/// Without GROVE_TOPO_FILE: the two-tier topology (topo::twoTier) of ranks placed on hosts
/// as `hostIds` (one identity per rank, equal on ranks that share a host) says, so that
/// plans know which ranks share memory and which share a NIC. `nicMbps` (empty, or one per
/// rank: its GROVE_NIC_SPEED, 0 = not given) sets each host's NIC rate: the lowest its ranks
/// gave, else the cluster preset's default (topo::kDefaultNicGbit). nullptr when the ranks
/// are on one host, or each on a host of its own with NICs all alike (no second tier to
/// plan for). The same on every rank (hosts are numbered in order of their lowest rank).
/// Logged at INFO.
std::shared_ptr<const topo::Topology> hostsTopology(const std::vector<std::string>& hostIds,
                                                    int rank,
                                                    const std::vector<int64_t>& nicMbps = {});

/// For each rank q (one entry per rank of `topology`): the address of q on the
/// direct arc rank -> q when that arc names one, else "". All empty when no arc
/// of `rank` has an address.
std::vector<std::string> linkAddresses(const topo::Topology& topology, int rank);

/// The topology of a sub-communicator made of `members` (ranks of `topology`,
/// in new-rank order), for `newRank` (logs only); nullptr when `topology` is
/// nullptr.
std::shared_ptr<const topo::Topology> subsetTopology(const topo::Topology* topology,
                                                     std::span<const int> members, int newRank);

}  // namespace grove::detail
