// Packed trees: broadcast, reduce and allreduce at the rate the topology allows (Blink).
//
// A ring runs at the speed of its slowest hop, and on a partly connected NVLink mesh (most
// subsets of a DGX-1V's GPUs) a ring has to take a PCIe hop. Trees do not: broadcast from a
// root can run at λ(root), the min-cut from the root, by splitting the data across a packing
// of spanning arborescences in proportion to their rates (Edmonds); reduce runs the same
// trees backwards. Allreduce either reduces up and broadcasts down each of a packing of
// undirected spanning trees ("trees", rate σ), or reduce-scatters the shard of every rank r
// over r's reversed trees and all-gathers it over the same trees ("rsag_trees", ForestColl's
// construction, algbw N·x/2); selection takes the cheaper. The same RS+AG trees also give
// allgather and reducescatter.
//
// Packings come from packing.hpp; packed_plans.hpp turns them into channels. A packing is
// expensive and build() runs once per rank, so packings are memoized per (topology content,
// kind, root) in a small mutex-protected cache; a packing that fails is cached as a reason.
// Trees first use rank-to-rank links only; when those do not connect the ranks (a switch
// fabric, a cluster) they may pass through switch vertices.
//
// Cost (α–β over the packing): bytes / (rate · unitGBps) + depth · (α + route latency),
// twice the depth for allreduce, plus one pass of local reduction for reducing collectives.
#include "algo/packed_trees.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>

#include "algo/builder.hpp"
#include "algo/packed_plans.hpp"
#include "algo/packing.hpp"
#include "grove/error.hpp"

namespace grove::algo {
namespace {

using plan::Collective;

constexpr std::string_view kTrees = "trees";
constexpr std::string_view kRsAgTrees = "rsag_trees";

enum class Kind : int { kArborescences, kSpanning, kRsAg };

/// One memoized packing (or RS+AG family of packings) with what plans and costs need.
struct Entry {
  std::string why;                ///< Non-empty when packing failed.
  std::vector<Packing> packings;  ///< One (arborescences, spanning) or one per root (RS+AG).
  uint32_t k = 1;                 ///< Chunks per packing (per shard for RS+AG).
  double rateUnits = 0;           ///< Total rate of one packing, link units.
  int depth = 0;                  ///< Deepest tree, in tree edges.
  double hopLatencyUs = 0;        ///< Slowest tree edge's route latency.
};

bool usable(const Packing& packing) { return !packing.trees.empty() && packing.total.units > 0; }

bool hasSwitch(const topo::Topology& topology) {
  for (const topo::Vertex& v : topology.vertices) {
    if (v.kind == topo::VertexKind::kSwitch) return true;
  }
  return false;
}

std::vector<Packing> pack(Kind kind, const topo::Topology& topology, int root, bool allowSwitches) {
  PackOptions options;
  options.allowSwitches = allowSwitches;
  switch (kind) {
    case Kind::kArborescences:
      return {packArborescences(topology, root, options)};
    case Kind::kSpanning:
      return {packSpanningTrees(topology, root, options)};
    case Kind::kRsAg:
      return packRsAg(topology, options);
  }
  return {};
}

std::shared_ptr<const Entry> compute(Kind kind, const topo::Topology& topology, int root) {
  auto entry = std::make_shared<Entry>();
  const int n = topology.rankCount();
  auto allUsable = [&](const std::vector<Packing>& packings) {
    return static_cast<int>(packings.size()) == (kind == Kind::kRsAg ? n : 1) &&
           std::all_of(packings.begin(), packings.end(), usable);
  };
  try {
    entry->packings = pack(kind, topology, root, false);
    if (!allUsable(entry->packings) && hasSwitch(topology)) {
      entry->packings = pack(kind, topology, root, true);
    }
  } catch (const std::exception& e) {
    entry->packings.clear();
    entry->why =
        fmt::format("packing trees on topology \"{}\" failed: {}", topology.name, e.what());
    return entry;
  }
  if (!allUsable(entry->packings)) {
    entry->why = fmt::format(
        "the topology \"{}\" does not connect every rank{}", topology.name,
        kind == Kind::kArborescences ? fmt::format(" from root {}", root) : std::string());
    entry->packings.clear();
    return entry;
  }
  uint64_t k = 1;
  size_t most = 0;
  for (const Packing& packing : entry->packings) {
    k = std::lcm(k, static_cast<uint64_t>(chunksForTrees(packing.trees)));
    most = std::max(most, packing.trees.size());
    if (k > kMaxExactChunks) break;
  }
  entry->k = k <= kMaxExactChunks ? static_cast<uint32_t>(k)
                                  : std::min(kMaxPackingChunks,
                                             std::max(kDefaultChunks, static_cast<uint32_t>(most)));
  entry->rateUnits = entry->packings.front().total.units;
  for (const Packing& packing : entry->packings) {
    for (const Tree& tree : packing.trees) {
      entry->depth = std::max(entry->depth, treeDepth(tree));
      for (int v = 0; v < n; ++v) {
        if (tree.parent[v] < 0) continue;
        entry->hopLatencyUs =
            std::max(entry->hopLatencyUs, routeLatencyUs(topology, tree.parent[v], v));
      }
    }
  }
  return entry;
}

/// The memoized packing of `kind` rooted at `root` (ignored for RS+AG) on `topology`.
std::shared_ptr<const Entry> packingFor(Kind kind, const topo::Topology& topology, int root) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int, int>, std::shared_ptr<const Entry>> cache;
  auto key = std::make_tuple(topologyKey(topology), static_cast<int>(kind),
                             kind == Kind::kArborescences ? root : 0);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  if (cache.size() >= 512) cache.clear();
  auto entry = compute(kind, topology, std::get<2>(key));
  cache.emplace(std::move(key), entry);
  return entry;
}

Kind kindOf(const plan::PlanRequest& request, std::string_view algorithm) {
  if (algorithm == kRsAgTrees) return Kind::kRsAg;
  return request.collective == Collective::kAllReduce ? Kind::kSpanning : Kind::kArborescences;
}

/// The bytes one tree run's chunks divide: the block, or for an RS+AG allreduce the shard of
/// one root (1/n of the block).
double chunkedBytes(const plan::PlanRequest& request, Kind kind) {
  const double block = build::blockBytes(request);
  const bool shard = kind == Kind::kRsAg && request.collective == Collective::kAllReduce;
  return shard ? block / request.nranks : block;
}

Status applies(const plan::PlanRequest& request, std::string_view algorithm) {
  if (Status topology = topologyMatches(request); !topology.ok()) return topology;
  const bool rooted =
      request.collective == Collective::kBroadcast || request.collective == Collective::kReduce;
  if (rooted) {
    if (Status root = build::rootInRange(request); !root.ok()) return root;
  }
  if (request.nranks == 1) return {};
  const Kind kind = kindOf(request, algorithm);
  if (kind == Kind::kRsAg && request.nranks > kMaxRsAgRanks) {
    return build::declines(
        fmt::format("{} ranks; rsag_trees plans for at most {}", request.nranks, kMaxRsAgRanks));
  }
  auto entry = packingFor(kind, *request.topology, rooted ? request.root : 0);
  if (!entry->why.empty()) return build::declines(entry->why);
  return {};
}

plan::Plan buildPlan(const plan::PlanRequest& request, std::string_view algorithm) {
  if (Status status = applies(request, algorithm); !status.ok()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} {} on rank {}: {}", plan::toString(request.collective), algorithm,
                            request.rank, status.message()));
  }
  if (request.nranks == 1) return buildTreePlan(request, algorithm, 1, {});
  const Kind kind = kindOf(request, algorithm);
  const bool rooted = kind == Kind::kArborescences;
  auto entry = packingFor(kind, *request.topology, rooted ? request.root : 0);
  if (kind != Kind::kRsAg) {
    const uint32_t k = chunksForBytes(entry->k, chunkedBytes(request, kind));
    return buildTreePlan(request, algorithm, k, runsOf(entry->packings.front(), k));
  }
  // RS+AG: root r's trees carry shard r. Allreduce: shard r is parts [r·m, (r+1)·m) of the
  // one block; allgather and reducescatter: shard r is block r, of m parts.
  const bool allReduce = request.collective == Collective::kAllReduce;
  const uint32_t m = chunksForBytes(entry->k, chunkedBytes(request, kind));
  std::vector<TreeRun> runs;
  for (size_t r = 0; r < entry->packings.size(); ++r) {
    for (TreeRun run : runsOf(entry->packings[r], m)) {
      if (allReduce) run.first += static_cast<uint32_t>(r) * m;
      runs.push_back(run);
    }
  }
  const uint32_t k = allReduce ? m * static_cast<uint32_t>(request.nranks) : m;
  return buildTreePlan(request, algorithm, k, runs);
}

double costUs(const plan::PlanRequest& request, const CostParams& params,
              std::string_view algorithm) {
  const double bytes = build::blockBytes(request);
  const double reduceUs = request.reduces() ? build::transferUs(bytes, params.reduceGBps) : 0;
  if (request.nranks == 1) return build::transferUs(bytes, params.reduceGBps);  // one copy
  if (request.topology == nullptr) return reduceUs;
  const Kind kind = kindOf(request, algorithm);
  const bool rooted = kind == Kind::kArborescences;
  auto entry = packingFor(kind, *request.topology, rooted ? request.root : 0);
  if (!entry->why.empty() || entry->rateUnits <= 0) return std::numeric_limits<double>::max();
  const double gbps = entry->rateUnits * request.topology->unitGBps;
  const double hopUs = params.alphaUs + entry->hopLatencyUs;
  const bool twoWay = request.collective == Collective::kAllReduce;
  // RS+AG allreduce: each root's rate carries its 1/N shard, there and back.
  const double wireBytes = kind == Kind::kRsAg && twoWay ? 2 * bytes / request.nranks : bytes;
  return build::transferUs(wireBytes, gbps) + (twoWay ? 2 : 1) * entry->depth * hopUs + reduceUs;
}

template <const std::string_view& kName>
Status appliesAs(const plan::PlanRequest& request) {
  return applies(request, kName);
}

template <const std::string_view& kName>
double costAs(const plan::PlanRequest& request, const CostParams& params) {
  return costUs(request, params, kName);
}

template <const std::string_view& kName>
plan::Plan buildAs(const plan::PlanRequest& request) {
  return buildPlan(request, kName);
}

/// The chunk count buildPlan uses depends on the count only through chunkClass.
template <const std::string_view& kName>
uint32_t variantAs(const plan::PlanRequest& request) {
  return chunkClass(chunkedBytes(request, kindOf(request, kName)));
}

template <const std::string_view& kName>
Algorithm registryEntry(Collective collective) {
  return Algorithm{kName,         collective,     appliesAs<kName>,
                   costAs<kName>, buildAs<kName>, variantAs<kName>};
}

}  // namespace

Algorithm packedTreesBroadcast() { return registryEntry<kTrees>(Collective::kBroadcast); }
Algorithm packedTreesReduce() { return registryEntry<kTrees>(Collective::kReduce); }
Algorithm packedTreesAllReduce() { return registryEntry<kTrees>(Collective::kAllReduce); }
Algorithm rsagTreesAllReduce() { return registryEntry<kRsAgTrees>(Collective::kAllReduce); }
Algorithm rsagTreesAllGather() { return registryEntry<kRsAgTrees>(Collective::kAllGather); }
Algorithm rsagTreesReduceScatter() { return registryEntry<kRsAgTrees>(Collective::kReduceScatter); }

}  // namespace grove::algo
