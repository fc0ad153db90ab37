// GROVE_TOPO_FILE: loading, checking and narrowing the communicator's topology
// (see comm_topology.hpp).
#include "core/comm_topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>

#include "common/log.hpp"
#include "grove/error.hpp"

namespace grove::detail {
namespace {

std::string describe(const topo::Topology& topology) {
  int switches = 0;
  for (const topo::Vertex& vertex : topology.vertices) {
    switches += vertex.kind == topo::VertexKind::kSwitch ? 1 : 0;
  }
  return fmt::format("'{}': {} ranks, {} switches, {} arcs, unit {} GB/s{}", topology.name,
                     topology.rankCount(), switches, topology.arcs.size(), topology.unitGBps,
                     topology.integral() ? " (integral)" : "");
}

}  // namespace

std::shared_ptr<const topo::Topology> loadTopology(const std::string& spec, int rank, int size) {
  if (spec.empty()) return nullptr;
  topo::Topology topology;
  try {
    topology = topo::fromSpec(spec);
  } catch (const std::exception& error) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove: GROVE_TOPO_FILE='{}' (rank {} of {}) cannot be read: {}", spec,
                            rank, size, error.what()));
  }
  if (topology.rankCount() != size) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove: GROVE_TOPO_FILE='{}' (rank {} of {}) has {} ranks, the "
                            "communicator has {}",
                            spec, rank, size, topology.rankCount(), size));
  }
  if (topology.name.empty()) topology.name = spec;
  log::info(rank, "topology from GROVE_TOPO_FILE={}", describe(topology));
  return std::make_shared<const topo::Topology>(std::move(topology));
}

std::shared_ptr<const topo::Topology> hostsTopology(const std::vector<std::string>& hostIds,
                                                    int rank, const std::vector<int64_t>& nicMbps) {
  std::map<std::string, int> hostIndex;
  std::vector<int> hostOfRank;
  std::vector<int> ranksOnHost;
  std::vector<int64_t> hostMbps;  // 0: no rank of the host gave its NIC's rate
  for (size_t r = 0; r < hostIds.size(); ++r) {
    auto [it, added] = hostIndex.emplace(hostIds[r], static_cast<int>(hostIndex.size()));
    if (added) {
      ranksOnHost.push_back(0);
      hostMbps.push_back(0);
    }
    const auto host = static_cast<size_t>(it->second);
    hostOfRank.push_back(it->second);
    ++ranksOnHost[host];
    const int64_t given = r < nicMbps.size() ? nicMbps[r] : 0;
    if (given > 0 && hostMbps[host] != 0 && given != hostMbps[host]) {
      log::warn(rank,
                "ranks of host {} give different GROVE_NIC_SPEED values ({} and {} Mbit/s); "
                "using the lower",
                host, hostMbps[host], given);
    }
    if (given > 0 && (hostMbps[host] == 0 || given < hostMbps[host])) hostMbps[host] = given;
  }
  const int hosts = static_cast<int>(ranksOnHost.size());
  const int widest = hosts > 0 ? *std::max_element(ranksOnHost.begin(), ranksOnHost.end()) : 0;
  std::vector<double> nicGbit;
  for (int64_t mbps : hostMbps) {
    nicGbit.push_back(mbps > 0 ? static_cast<double>(mbps) / 1000.0 : topo::kDefaultNicGbit);
  }
  const bool alike =
      std::adjacent_find(nicGbit.begin(), nicGbit.end(), std::not_equal_to<>()) == nicGbit.end();
  if (hosts < 2 || (widest < 2 && alike)) return nullptr;
  std::string name = fmt::format("{} hosts ({} ranks)", hosts, hostIds.size());
  std::vector<bool> assumed;  // a host none of whose ranks knew its NIC rate
  for (int64_t mbps : hostMbps) assumed.push_back(mbps == 0);
  auto topology =
      std::make_shared<const topo::Topology>(topo::twoTier(name, hostOfRank, nicGbit, assumed));
  log::info(rank, "topology from the ranks' hosts: {}; ranks per host {}; NICs {} Gbit/s",
            describe(*topology), fmt::join(ranksOnHost, ","), fmt::join(nicGbit, ","));
  return topology;
}

std::vector<std::string> linkAddresses(const topo::Topology& topology, int rank) {
  const int n = topology.rankCount();
  std::vector<std::string> addresses(static_cast<size_t>(n));
  bool any = false;
  const int me = topology.vertexOfRank(rank);
  for (int q = 0; q < n; ++q) {
    if (q == rank) continue;
    int arc = topology.arcBetween(me, topology.vertexOfRank(q));
    if (arc < 0) continue;
    addresses[static_cast<size_t>(q)] = topology.arcs[static_cast<size_t>(arc)].address;
    any = any || !addresses[static_cast<size_t>(q)].empty();
  }
  if (!any) addresses.clear();
  return addresses;
}

std::shared_ptr<const topo::Topology> subsetTopology(const topo::Topology* topology,
                                                     std::span<const int> members, int newRank) {
  if (topology == nullptr) return nullptr;
  auto narrowed = std::make_shared<topo::Topology>(topo::subset(*topology, members));
  std::string list;
  for (int member : members) list += fmt::format("{}{}", list.empty() ? "" : ",", member);
  if (narrowed->name.empty() || narrowed->name == topology->name) {
    narrowed->name = fmt::format("{}[{}]", topology->name, list);
  }
  log::info(newRank, "split: topology of ranks {} of the parent: {}", list, describe(*narrowed));
  return narrowed;
}

}  // namespace grove::detail
