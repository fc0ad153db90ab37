// GROVE_TOPO_FILE: loading, checking and narrowing the communicator's topology
// (see comm_topology.hpp).
#include "core/comm_topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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
                                                    int rank) {
  std::map<std::string, int> hostIndex;
  std::vector<int> hostOfRank;
  std::vector<int> ranksOnHost;
  for (const std::string& id : hostIds) {
    auto [it, added] = hostIndex.emplace(id, static_cast<int>(hostIndex.size()));
    if (added) ranksOnHost.push_back(0);
    hostOfRank.push_back(it->second);
    ++ranksOnHost[static_cast<size_t>(it->second)];
  }
  const int hosts = static_cast<int>(ranksOnHost.size());
  const int widest = hosts > 0 ? *std::max_element(ranksOnHost.begin(), ranksOnHost.end()) : 0;
  if (hosts < 2 || widest < 2) return nullptr;
  std::string name = fmt::format("{} hosts ({} ranks)", hosts, hostIds.size());
  auto topology = std::make_shared<const topo::Topology>(topo::twoTier(
      name, hostOfRank, std::vector<double>(static_cast<size_t>(hosts), topo::kDefaultNicGbit)));
  log::info(rank, "topology from the ranks' hosts: {}; ranks per host {}", describe(*topology),
            fmt::join(ranksOnHost, ","));
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
