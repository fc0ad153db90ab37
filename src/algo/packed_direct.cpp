// Topology-aware allreduce without tree packing: one hop through a switch, and two tiers.
//
// "onehop": on a switch fabric (DGX-2, 8 × H100: every rank one hop from every other through
// one NVSwitch) or a full mesh, the best allreduce is direct: rank r owns chunk r of n,
// receives that chunk from every other rank and reduces it, then sends the result to every
// rank. Two steps of latency instead of a ring's 2(n−1), and every rank sends and receives
// 2(n−1)/n · S, the per-rank bandwidth bound. Three channels: 0 reduces the owned chunk
// (inputs arrive on lane 0) and then sends it (lane 1), 1 sends the other inputs (lane 0),
// 2 receives the other results (lane 1). A rank's result for chunk c comes from c only after
// c has heard from it, so the plan is correct in place.
//
// "hierarchical": in a two-tier cluster (ranks grouped by Vertex::host: fast shared memory
// inside a host, a slower NIC per host) the NIC is the bottleneck and every byte should cross
// it as few times as a ring over hosts needs. Each host reduces along a chain of its ranks
// (ascending; the lowest rank leads) into its leader's output, the leaders run a ring
// allreduce over the host partials, and each host broadcasts the result down the same
// chain. The leaders run R rings side by side (1 to 4, one per 256 KiB of the data: 64 KiB
// of each host's share on 4 hosts), each over its own part of every host's share (k = hosts · R
// chunks; ring j owns chunks c·R + j): a ring's step waits for its message, so one ring alone
// leaves the NIC idle while its leader reduces or codes the last message (a compressed link encodes
// and decodes every message at about 1.2 GB/s, a tenth of a 1 Gbit/s NIC's time per byte: on 4
// hosts one ring left compression a predicted 0.96–1.03× gain). Channel 0 (lane 0) is the chain
// up, 1..R (lanes 1..R) the rings, each step waiting for the chain to bring its chunk, R+1
// (lane R+1) the chain down, each chunk waiting for the ring step that finishes it; the
// chains take the chunks in the rings' order, so the three phases overlap even when the
// data is one tile. Every link of a chain carries S each way;
// each NIC carries 2(H−1)/H · S each way, as a flat ring's would for one rank per host.
// Plans are O(n) to build, so 256 ranks plan in microseconds.
//
// Costs: the busiest link's bytes over its capacity, plus hops · (α + latency), plus a pass
// of local reduction.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "algo/builder.hpp"
#include "algo/packed_trees.hpp"
#include "grove/error.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kOneHop = "onehop";
constexpr std::string_view kHierarchical = "hierarchical";
/// The most rings hierarchical's leaders run side by side, and the least of the data each ring
/// takes (smaller messages cost more per byte than they hide).
constexpr uint32_t kMaxLeaderRings = 4;
constexpr double kLeaderRingMinBytes = 256 << 10;

// ---- onehop ------------------------------------------------------------------------------

/// Per-rank send bandwidth of a one-hop exchange, in GB/s, or 0 when the topology is neither
/// a full mesh of its ranks nor a star of them around one switch.
struct OneHopShape {
  double pairGBps = 0;  ///< Full mesh: slowest rank-to-rank arc.
  double portGBps = 0;  ///< Star: slowest rank-to-switch or switch-to-rank arc.
  double latencyUs = 0;
};

OneHopShape oneHopShape(const topo::Topology& t) {
  const int n = t.rankCount();
  OneHopShape shape;
  int rankArcs = 0;
  double slowestPair = std::numeric_limits<double>::infinity();
  std::map<int, std::pair<int, int>> ports;  // switch -> (ranks out to it, ranks in from it)
  std::map<int, double> slowestPort;
  double pairLatency = 0;
  std::map<int, double> portLatency;
  for (const topo::Arc& arc : t.arcs) {
    const bool fromRank = t.vertices[arc.from].kind == topo::VertexKind::kRank;
    const bool toRank = t.vertices[arc.to].kind == topo::VertexKind::kRank;
    if (fromRank && toRank) {
      ++rankArcs;
      slowestPair = std::min(slowestPair, arc.capacityGBps);
      pairLatency = std::max(pairLatency, arc.latencyUs);
    } else if (fromRank != toRank) {
      const int sw = fromRank ? arc.to : arc.from;
      (fromRank ? ports[sw].first : ports[sw].second) += 1;
      auto [it, fresh] = slowestPort.emplace(sw, arc.capacityGBps);
      if (!fresh) it->second = std::min(it->second, arc.capacityGBps);
      portLatency[sw] = std::max(portLatency[sw], arc.latencyUs);
    }
  }
  if (n >= 2 && rankArcs == n * (n - 1)) {
    shape.pairGBps = slowestPair;
    shape.latencyUs = pairLatency;
  } else if (rankArcs == 0) {
    for (const auto& [sw, counts] : ports) {
      if (counts.first == n && counts.second == n) {
        shape.portGBps = slowestPort[sw];
        shape.latencyUs = 2 * portLatency[sw];
        break;
      }
    }
  }
  return shape;
}

Status oneHopApplies(const plan::PlanRequest& request) {
  if (Status topology = topologyMatches(request); !topology.ok()) return topology;
  if (request.nranks == 1) return {};
  const OneHopShape shape = oneHopShape(*request.topology);
  if (shape.pairGBps > 0 || shape.portGBps > 0) return {};
  return build::declines(
      fmt::format("the topology \"{}\" is neither a full mesh nor a star of its ranks "
                  "around one switch",
                  request.topology->name));
}

double oneHopCostUs(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return transferUs(bytes, params.reduceGBps);  // one copy
  const double reduceUs = transferUs(bytes * (n - 1) / n, params.reduceGBps);
  if (request.topology == nullptr) return reduceUs;
  const OneHopShape shape = oneHopShape(*request.topology);
  // Per phase: a mesh moves S/n over each pair's arc; a star (n−1)/n · S through each port.
  const double phaseUs = shape.pairGBps > 0 ? transferUs(bytes / n, shape.pairGBps)
                                            : transferUs(bytes * (n - 1) / n, shape.portGBps);
  return 2 * (phaseUs + params.alphaUs + shape.latencyUs) + reduceUs;
}

plan::Plan oneHopBuild(const plan::PlanRequest& request) {
  if (Status status = oneHopApplies(request); !status.ok()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("allreduce onehop on rank {}: {}", request.rank, status.message()));
  }
  const int n = request.nranks;
  const int r = request.rank;
  const auto own = static_cast<uint32_t>(r);
  plan::Plan p = makePlan(request, kOneHop, static_cast<uint32_t>(n), 1, 1);
  if (n == 1) {
    p.chunksPerBlock = 1;
    p.channels.emplace_back().steps.push_back(finalized(copy(in(0), out(0))));
    return p;
  }
  p.channels.resize(3);
  std::vector<plan::Step>& reduceSteps = p.channels[0].steps;
  for (int j = 1; j < n; ++j) {
    const int from = mod(r - j, n);
    plan::Step step = j == 1 ? recvReduceCopy(from, in(own), out(own)) : recvReduce(from, out(own));
    reduceSteps.push_back(j == n - 1 ? finalized(step) : step);
  }
  for (int j = 1; j < n; ++j) reduceSteps.push_back(onLane(send(mod(r + j, n), out(own)), 1));
  for (int j = 1; j < n; ++j) {
    const int to = mod(r + j, n);
    p.channels[1].steps.push_back(send(to, in(static_cast<uint32_t>(to))));
  }
  for (int j = 1; j < n; ++j) {
    const int from = mod(r - j, n);
    p.channels[2].steps.push_back(onLane(recv(from, out(static_cast<uint32_t>(from))), 1));
  }
  return p;
}

// ---- hierarchical ------------------------------------------------------------------------

/// Ranks grouped by host: hosts in order of their lowest rank, ranks ascending in each.
struct Hosts {
  std::vector<std::vector<int>> ranks;
  std::vector<int> hostOf;  ///< Host index per rank.
  bool named = true;        ///< Every rank has a host name.
};

Hosts hostsOf(const topo::Topology& t) {
  const int n = t.rankCount();
  std::vector<const std::string*> name(n, nullptr);
  for (const topo::Vertex& v : t.vertices) {
    if (v.kind == topo::VertexKind::kRank && v.rank >= 0 && v.rank < n) name[v.rank] = &v.host;
  }
  Hosts hosts;
  hosts.hostOf.assign(n, -1);
  std::map<std::string, int> index;
  for (int r = 0; r < n; ++r) {
    if (name[r] == nullptr || name[r]->empty()) {
      hosts.named = false;
      return hosts;
    }
    auto [it, fresh] = index.emplace(*name[r], static_cast<int>(hosts.ranks.size()));
    if (fresh) hosts.ranks.emplace_back();
    hosts.ranks[it->second].push_back(r);
    hosts.hostOf[r] = it->second;
  }
  return hosts;
}

Status hierarchicalApplies(const plan::PlanRequest& request) {
  if (Status topology = topologyMatches(request); !topology.ok()) return topology;
  const Hosts hosts = hostsOf(*request.topology);
  if (hosts.named && hosts.ranks.size() >= 2) return {};
  return build::declines(
      hosts.named
          ? fmt::format("the topology \"{}\" has all ranks on one host", request.topology->name)
          : fmt::format("the topology \"{}\" does not name every rank's host",
                        request.topology->name));
}

/// Bottlenecks of the hierarchical pattern on one topology, memoized by content.
struct TwoTier {
  double chainGBps = std::numeric_limits<double>::infinity();
  double ringGBps = std::numeric_limits<double>::infinity();
  double chainLatencyUs = 0;
  double ringLatencyUs = 0;
  int longestChain = 1;
  int hosts = 1;
};

TwoTier twoTier(const topo::Topology& t) {
  static std::mutex mutex;
  static std::map<std::string, TwoTier> cache;
  std::string key = topologyKey(t);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  const Hosts hosts = hostsOf(t);
  TwoTier tiers;
  tiers.hosts = static_cast<int>(hosts.ranks.size());
  for (size_t h = 0; h < hosts.ranks.size(); ++h) {
    const std::vector<int>& list = hosts.ranks[h];
    tiers.longestChain = std::max(tiers.longestChain, static_cast<int>(list.size()));
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      for (auto [a, b] : {std::pair{list[i], list[i + 1]}, std::pair{list[i + 1], list[i]}}) {
        tiers.chainGBps = std::min(tiers.chainGBps, routeCapacityGBps(t, a, b));
        tiers.chainLatencyUs = std::max(tiers.chainLatencyUs, routeLatencyUs(t, a, b));
      }
    }
    const int next = hosts.ranks[(h + 1) % hosts.ranks.size()].front();
    tiers.ringGBps = std::min(tiers.ringGBps, routeCapacityGBps(t, list.front(), next));
    tiers.ringLatencyUs = std::max(tiers.ringLatencyUs, routeLatencyUs(t, list.front(), next));
  }
  if (cache.size() >= 64) cache.clear();
  cache.emplace(std::move(key), tiers);
  return tiers;
}

/// Rings the leaders run side by side for this call (see the top): one per
/// kLeaderRingMinBytes of the data, 1..kMaxLeaderRings. Also the plan's variant, asked on
/// every call: arithmetic on the count only (grouping the ranks by host allocates).
uint32_t leaderRings(const plan::PlanRequest& request) {
  const double rings = std::floor(blockBytes(request) / kLeaderRingMinBytes);
  return static_cast<uint32_t>(std::clamp(rings, 1.0, static_cast<double>(kMaxLeaderRings)));
}

double hierarchicalCostUs(const plan::PlanRequest& request, const CostParams& params) {
  const double bytes = blockBytes(request);
  const double reduceUs = transferUs(bytes, params.reduceGBps);
  if (request.topology == nullptr) return reduceUs;
  const TwoTier tiers = twoTier(*request.topology);
  const double h = tiers.hosts;
  double busiestUs = transferUs(2 * (h - 1) / h * bytes, tiers.ringGBps);
  if (tiers.longestChain > 1) busiestUs = std::max(busiestUs, transferUs(bytes, tiers.chainGBps));
  const double chainHops = 2.0 * (tiers.longestChain - 1);
  return busiestUs + chainHops * (params.alphaUs + tiers.chainLatencyUs) +
         2 * (h - 1) * (params.alphaUs + tiers.ringLatencyUs) + reduceUs;
}

plan::Plan hierarchicalBuild(const plan::PlanRequest& request) {
  if (Status status = hierarchicalApplies(request); !status.ok()) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("allreduce hierarchical on rank {}: {}",
                                                         request.rank, status.message()));
  }
  const Hosts hosts = hostsOf(*request.topology);
  const int r = request.rank;
  const int nh = static_cast<int>(hosts.ranks.size());
  const int h = hosts.hostOf[r];
  const std::vector<int>& chain = hosts.ranks[h];
  const int size = static_cast<int>(chain.size());
  const int pos = static_cast<int>(std::find(chain.begin(), chain.end(), r) - chain.begin());
  const uint32_t rings = leaderRings(request);
  const auto k = static_cast<uint32_t>(nh) * rings;
  plan::Plan p = makePlan(request, kHierarchical, k, 1, 1);
  p.channels.resize(rings + 2);
  // Host h's chains move chunks in the order its leader's rings use them, so each ring step
  // waits only for the chunk it reads (not for the whole chain) and each chunk goes down as
  // soon as its ring has it: ring j's step s reads host chunk h − s (s < H), and its step
  // H − 1 + u finishes host chunk h + 1 − u. The phases pipeline even within one tile.
  const auto chunk = [nh, rings](int hostChunk, uint32_t j) {
    return static_cast<uint32_t>(mod(hostChunk, nh)) * rings + j;
  };
  // Channel 0: the chain up, into the leader's output.
  std::vector<plan::Step>& upSteps = p.channels[0].steps;
  for (int s = 0; s < nh; ++s) {
    for (uint32_t j = 0; j < rings; ++j) {
      const uint32_t c = chunk(h - s, j);
      if (size == 1) {
        upSteps.push_back(copy(in(c), out(c)));
      } else if (pos == 0) {
        upSteps.push_back(recvReduceCopy(chain[1], in(c), out(c)));
      } else if (pos == size - 1) {
        upSteps.push_back(send(chain[pos - 1], in(c)));
      } else {
        upSteps.push_back(recvReduceSend(chain[pos + 1], chain[pos - 1], in(c)));
      }
    }
  }
  // Channels 1..R: the leaders' rings over their parts of the host partials (ring.cpp's
  // allreduce on Output).
  if (pos == 0) {
    const int next = hosts.ranks[mod(h + 1, nh)].front();
    const int prev = hosts.ranks[mod(h - 1, nh)].front();
    for (uint32_t j = 0; j < rings; ++j) {
      std::vector<plan::Step>& ring = p.channels[1 + j].steps;
      const auto at = [&](int hostChunk) { return out(chunk(hostChunk, j)); };
      ring.push_back(send(next, at(h)));
      for (int s = 1; s <= nh - 2; ++s) ring.push_back(recvReduceSend(prev, next, at(h - s)));
      ring.push_back(finalized(recvReduceCopySend(prev, next, at(h + 1), at(h + 1))));
      for (int i = 0; i <= nh - 3; ++i) ring.push_back(recvCopySend(prev, next, at(h - i)));
      ring.push_back(recv(prev, at(h + 2)));
      for (int s = 0; s < nh; ++s) {
        ring[static_cast<size_t>(s)] = after(ring[static_cast<size_t>(s)], 0,
                                             s * static_cast<int>(rings) + static_cast<int>(j));
      }
      for (plan::Step& step : ring) step.lane = static_cast<uint16_t>(1 + j);
    }
  }
  // Channel R+1: the chain down from the leader, each chunk after the ring step finishing it.
  std::vector<plan::Step>& downSteps = p.channels[rings + 1].steps;
  for (int u = 0; u < nh && size > 1; ++u) {
    for (uint32_t j = 0; j < rings; ++j) {
      const uint32_t c = chunk(h + 1 - u, j);
      if (pos == 0) {
        downSteps.push_back(after(send(chain[1], out(c)), static_cast<int>(1 + j), nh - 1 + u));
      } else if (pos == size - 1) {
        downSteps.push_back(recv(chain[pos - 1], out(c)));
      } else {
        downSteps.push_back(recvCopySend(chain[pos - 1], chain[pos + 1], out(c)));
      }
    }
  }
  for (plan::Step& step : downSteps) step.lane = static_cast<uint16_t>(rings + 1);
  return p;
}

}  // namespace

Algorithm oneHopAllReduce() {
  return {kOneHop, plan::Collective::kAllReduce, oneHopApplies, oneHopCostUs, oneHopBuild};
}

Algorithm hierarchicalAllReduce() {
  return {kHierarchical,       plan::Collective::kAllReduce,
          hierarchicalApplies, hierarchicalCostUs,
          hierarchicalBuild,   leaderRings};
}

}  // namespace grove::algo
