// `grove plan --topo`, the analysis: candidates, their structure, predicted time and bound.
//
// Why rebuild the packing here instead of reading it out of the plans: a plan knows its
// steps, not the rates its trees were packed at. The packers are deterministic (every rank
// of a job computes the same packing independently), so calling them again with the same
// topology and root gives exactly the trees the generator used, rates included. For every
// other algorithm the structure is read from the plans themselves: the union of their send
// edges is a ring, a tree (pointing down for broadcast, up for reduce) or neither, and then
// only the algorithm's name is shown.
#include "plan_topo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algo/packing.hpp"
#include "algo/registry.hpp"
#include "algo/select_topology.hpp"
#include "common/parameters.hpp"
#include "exec/link_codec.hpp"
#include "grove/error.hpp"
#include "model/simulator.hpp"
#include "perf_options.hpp"
#include "plan/verifier.hpp"

namespace grove::tools {
namespace {

using plan::Collective;

/// Collectives whose --size is n blocks of the plan's per-block count (nccl-tests' size).
bool sizeIsPerGroup(Collective c) {
  return c == Collective::kAllGather || c == Collective::kReduceScatter ||
         c == Collective::kAllToAll || c == Collective::kAllToAllv || c == Collective::kGather ||
         c == Collective::kScatter;
}

size_t parseSize(const std::string& text) {
  std::string_view digits = text;
  if (!digits.empty() && digits.back() == 'B') digits.remove_suffix(1);  // "64MB" as "64M"
  const std::optional<size_t> bytes = perf::parseBytes(digits);
  if (!bytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "--size '" + text + "' is not a size (expected bytes, e.g. 4096, 64K, 64M, 1G)");
  }
  return *bytes;
}

/// --compress RATIO[:GBPS]: the codec's ratio on the links over the network (> 1; what
/// docs/compression.md measures: about 1.5 for bfloat16 gradients, 1.2 for float32) and its
/// rate per rank (default: measured on this machine, exec::measuredCodecBytesPerSecond).
std::pair<double, double> parseCompress(const std::string& text) {
  const size_t colon = text.find(':');
  char* end = nullptr;
  const std::string ratioText = text.substr(0, colon);
  const double ratio = std::strtod(ratioText.c_str(), &end);
  double gbps = 0;
  bool ok = !ratioText.empty() && end == ratioText.c_str() + ratioText.size() && ratio >= 1.0 &&
            ratio <= 64.0;
  if (ok && colon != std::string::npos) {
    const std::string rateText = text.substr(colon + 1);
    gbps = std::strtod(rateText.c_str(), &end);
    ok = !rateText.empty() && end == rateText.c_str() + rateText.size() && gbps > 0;
  } else if (ok) {
    gbps = exec::measuredCodecBytesPerSecond() / 1e9;
  }
  if (!ok) {
    throw Error(ErrorCode::kInvalidArgument,
                "--compress '" + text +
                    "': expected RATIO[:GBPS], a ratio in [1, 64] and a rate > 0 in GB/s (e.g. "
                    "1.5 or 1.5:1.2)");
  }
  return {ratio, gbps};
}

/// --cpus N | host:N: every rank in one group of N CPUs (one machine, as the emulated hosts
/// of bench/hosts share theirs), or a group of N per host (Vertex::host; a rank of no named
/// host is a group of its own). Fills `sim`'s CPU groups and returns them in words.
std::string applyCpus(const std::string& text, const topo::Topology& topology,
                      model::SimOptions& sim) {
  const bool perHost = text.rfind("host:", 0) == 0;
  const std::string countText = perHost ? text.substr(5) : text;
  char* end = nullptr;
  const double cpus = std::strtod(countText.c_str(), &end);
  if (countText.empty() || end != countText.c_str() + countText.size() || !(cpus >= 1) ||
      cpus > 4096) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "--cpus '" + text + "': expected N or host:N, N CPUs in [1, 4096] (e.g. 2, or host:16)");
  }
  const int n = topology.rankCount();
  sim.cpuGroup.assign(static_cast<size_t>(n), 0);
  sim.groupCpus.assign(1, cpus);
  const char* plural = cpus == 1 ? "" : "s";
  if (!perHost) return fmt::format("the {} ranks share {:g} CPU{}", n, cpus, plural);
  std::map<std::string, int> groupOf;
  sim.groupCpus.clear();
  for (const topo::Vertex& v : topology.vertices) {
    if (v.kind != topo::VertexKind::kRank || v.rank < 0 || v.rank >= n) continue;
    const std::string host = v.host.empty() ? v.name : v.host;
    auto [at, added] = groupOf.emplace(host, static_cast<int>(groupOf.size()));
    if (added) sim.groupCpus.push_back(cpus);
    sim.cpuGroup[static_cast<size_t>(v.rank)] = at->second;
  }
  return fmt::format("{:g} CPU{} on each of {} hosts, shared by its ranks", cpus, plural,
                     groupOf.size());
}

topo::Topology loadTopology(const std::string& spec) {
  try {
    topo::Topology topology = topo::fromSpec(spec);
    if (topology.rankCount() < 1) throw Error(ErrorCode::kInvalidArgument, "it has no ranks");
    return topology;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, "--topo '" + spec + "': " + e.what());
  }
}

TreeView toView(const algo::Tree& tree) { return {tree.root, tree.parent, tree.rate}; }

bool usable(const std::vector<algo::Packing>& packings, size_t expected) {
  if (packings.size() != expected) return false;
  for (const algo::Packing& p : packings) {
    if (p.trees.empty() || p.total.units <= 0) return false;
  }
  return true;
}

/// The packings a packed-tree generator uses, as src/algo/packed_trees.cpp computes them:
/// rank-to-rank trees first, trees through switches when those do not span.
std::vector<algo::Packing> packingsOf(const std::string& name, const plan::PlanRequest& request) {
  const topo::Topology& t = *request.topology;
  bool hasSwitch = false;
  for (const topo::Vertex& v : t.vertices) hasSwitch |= v.kind == topo::VertexKind::kSwitch;
  const bool rooted =
      request.collective == Collective::kBroadcast || request.collective == Collective::kReduce;
  const bool rsAg = name == "rsag_trees";
  if (!rsAg && !(name == "trees" && (rooted || request.collective == Collective::kAllReduce))) {
    return {};
  }
  auto pack = [&](bool allowSwitches) -> std::vector<algo::Packing> {
    algo::PackOptions options;
    options.allowSwitches = allowSwitches;
    if (rsAg) return algo::packRsAg(t, options);
    if (rooted) return {algo::packArborescences(t, request.root, options)};
    return {algo::packSpanningTrees(t, 0, options)};
  };
  const size_t expected = rsAg ? static_cast<size_t>(t.rankCount()) : 1;
  std::vector<algo::Packing> packings = pack(false);
  if (!usable(packings, expected) && hasSwitch) packings = pack(true);
  return usable(packings, expected) ? packings : std::vector<algo::Packing>{};
}

/// The trees of a packed-tree generator (see file comment); empty when it is not one.
std::vector<TreeView> packedTrees(const std::string& name, const plan::PlanRequest& request) {
  std::vector<TreeView> trees;
  for (const algo::Packing& packing : packingsOf(name, request)) {
    for (const algo::Tree& tree : packing.trees) trees.push_back(toView(tree));
  }
  return trees;
}

/// A spanning tree of `edges` rooted at `root` pointing away from it, when the edges form
/// exactly that.
std::optional<TreeView> asTree(const std::set<std::pair<int, int>>& edges, int n, int root) {
  if (static_cast<int>(edges.size()) != n - 1) return std::nullopt;
  TreeView tree{root, std::vector<int>(static_cast<size_t>(n), -1), std::nullopt};
  for (auto [from, to] : edges) {
    if (to == root || tree.parent[static_cast<size_t>(to)] != -1) return std::nullopt;
    tree.parent[static_cast<size_t>(to)] = from;
  }
  for (int v = 0; v < n; ++v) {  // every rank reaches the root within n steps: no cycle
    int u = v;
    for (int hops = 0; u != root && u != -1 && hops <= n; ++hops)
      u = tree.parent[static_cast<size_t>(u)];
    if (u != root) return std::nullopt;
  }
  return tree;
}

/// The structure the plans' send edges show (see file comment).
Structure structureFromPlans(const std::vector<plan::Plan>& plans, int root) {
  const int n = static_cast<int>(plans.size());
  std::set<std::pair<int, int>> edges;
  for (const plan::Plan& p : plans) {
    for (const plan::Channel& channel : p.channels) {
      for (const plan::Step& step : channel.steps) {
        if (plan::sends(step.op) && step.sendPeer != p.rank) edges.insert({p.rank, step.sendPeer});
      }
    }
  }
  Structure structure;
  if (n >= 2) {
    std::vector<int> next(static_cast<size_t>(n), -1);
    bool single = static_cast<int>(edges.size()) == n;
    for (auto [from, to] : edges) {
      if (next[static_cast<size_t>(from)] != -1) single = false;
      next[static_cast<size_t>(from)] = to;
    }
    if (single) {
      std::vector<int> ring{0};
      for (int v = next[0]; v != 0 && v != -1 && static_cast<int>(ring.size()) <= n;
           v = next[static_cast<size_t>(v)]) {
        ring.push_back(v);
      }
      if (static_cast<int>(ring.size()) == n && next[static_cast<size_t>(ring.back())] == 0) {
        structure.kind = Structure::Kind::kRing;
        structure.ring = ring;
        return structure;
      }
    }
  }
  const int treeRoot = root >= 0 ? root : 0;
  if (auto down = asTree(edges, n, treeRoot)) {
    structure.kind = Structure::Kind::kTrees;
    structure.trees.push_back(*down);
    return structure;
  }
  std::set<std::pair<int, int>> reversed;
  for (auto [from, to] : edges) reversed.insert({to, from});
  if (auto up = asTree(reversed, n, treeRoot)) {
    structure.kind = Structure::Kind::kTrees;
    structure.trees.push_back(*up);
    structure.note = "data flows up the tree, towards the root";
    return structure;
  }
  if (edges.empty()) structure.note = "no messages";
  return structure;
}

Structure describe(const algo::Algorithm& algorithm, const plan::PlanRequest& request,
                   const std::vector<plan::Plan>& plans) {
  const std::string name(algorithm.name);
  try {
    std::vector<TreeView> trees = packedTrees(name, request);
    if (!trees.empty()) {
      Structure structure;
      structure.kind = Structure::Kind::kTrees;
      structure.trees = std::move(trees);
      if (name == "rsag_trees") {
        structure.note = "reduce-scatter up each root's trees, then all-gather down them";
      } else if (request.collective == Collective::kAllReduce) {
        structure.note = "each tree reduces up to its root, then broadcasts down";
      } else if (request.collective == Collective::kReduce) {
        structure.note = "data flows up the trees, towards the root";
      }
      return structure;
    }
  } catch (const std::exception&) {
    // The packer declined (e.g. a fabric it does not handle): read the plans instead.
  }
  Structure structure = structureFromPlans(plans, request.root);
  if (structure.kind == Structure::Kind::kNamed && structure.note.empty()) {
    if (name == "onehop") {
      structure.note = "each rank reduces its 1/n slice through the switch, then sends it to all";
    } else if (name == "hierarchical") {
      structure.note = "within each host, then across hosts, then within each host";
    }
  }
  return structure;
}

std::optional<BoundView> boundFor(Collective collective, int root, const topo::Bounds& b) {
  switch (collective) {
    case Collective::kBroadcast:
    case Collective::kReduce:
      return BoundView{"λ(" + std::to_string(root) + ")", b.lambda.at(static_cast<size_t>(root))};
    case Collective::kAllReduce:
      return BoundView{"allreduce bound max(σ, RS+AG)", b.allreduce};
    case Collective::kAllGather:
    case Collective::kReduceScatter: {
      topo::Rate twice = b.rsAg;
      twice.units *= 2;
      if (twice.exact) twice.value = twice.value * topo::Rational(2);
      return BoundView{"2 × RS+AG (all ranks' shards at once)", twice};
    }
    default:
      return std::nullopt;
  }
}

std::string validNames(Collective collective) {
  std::string names;
  for (const algo::Algorithm& a : algo::algorithms()) {
    if (a.collective != collective) continue;
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  }
  return names;
}

}  // namespace

std::string rateText(const topo::Rate& rate) {
  if (rate.exact) return rate.value.toString();
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", rate.units);
  return text;
}

std::string treePaths(const TreeView& tree) {
  const int n = static_cast<int>(tree.parent.size());
  std::vector<std::vector<int>> children(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    const int p = tree.parent[static_cast<size_t>(v)];
    if (p >= 0 && v != tree.root) children[static_cast<size_t>(p)].push_back(v);
  }
  std::string text;
  std::vector<std::pair<int, int>> pending{{-1, tree.root}};  // (from, first hop)
  for (size_t i = 0; i < pending.size(); ++i) {
    auto [from, node] = pending[i];
    std::string path = from >= 0 ? std::to_string(from) + "→" : "";
    path += std::to_string(node);
    while (!children[static_cast<size_t>(node)].empty()) {
      const std::vector<int>& kids = children[static_cast<size_t>(node)];
      for (size_t k = 1; k < kids.size(); ++k) pending.emplace_back(node, kids[k]);
      node = kids.front();
      path += "→" + std::to_string(node);
    }
    text += (text.empty() ? "" : ", ") + path;
  }
  return text;
}

std::string environmentAlgo() {
  return common::resolveParameter(common::spec(common::Param::kAlgo), {}).text;
}

algo::CostParams environmentCostParams() {
  algo::CostParams params;
  params.tileBytes = static_cast<double>(
      common::resolveParameter(common::spec(common::Param::kSlotBytes), {}).number);
  params.fifoDepth = static_cast<double>(
      common::resolveParameter(common::spec(common::Param::kFifoDepth), {}).number);
  return params;
}

TopoReport analyzeTopoPlan(const TopoPlanOptions& options) {
  TopoReport report;
  report.topology = loadTopology(options.topo);
  report.collective = options.collective;
  report.fifoDepth = options.fifoDepth;
  const int n = report.topology.rankCount();
  if (options.nranks >= 0 && options.nranks != n) {
    throw Error(ErrorCode::kInvalidArgument, "--nranks " + std::to_string(options.nranks) +
                                                 " disagrees with --topo '" + options.topo +
                                                 "', which has " + std::to_string(n) + " ranks");
  }
  const bool rooted = plan::rooted(options.collective);
  if (rooted && (options.root < 0 || options.root >= n)) {
    throw Error(ErrorCode::kInvalidArgument, "--root " + std::to_string(options.root) +
                                                 " is out of range for the " + std::to_string(n) +
                                                 " ranks of --topo '" + options.topo + "'");
  }
  report.root = rooted ? options.root : -1;
  auto type = parseDataType(options.type);
  if (!type) throw Error(ErrorCode::kInvalidArgument, "--type '" + options.type + "' is not known");
  report.type = std::string(toString(*type));
  const size_t element = dataTypeSize(*type);
  const size_t blocks = sizeIsPerGroup(options.collective) ? static_cast<size_t>(n) : 1;
  const size_t requested = parseSize(options.size);
  report.count = options.collective == Collective::kBarrier ? 0 : requested / (element * blocks);
  report.bytes = report.count * element * blocks;

  plan::PlanRequest request{
      {options.collective, report.count, *type, ReduceOp::kSum, report.root}, n, 0};
  request.topology = &report.topology;

  std::vector<const algo::Algorithm*> field;
  std::string chosenName;
  if (!options.algorithm.empty()) {
    const algo::Algorithm* forced = algo::findAlgorithm(options.collective, options.algorithm);
    if (forced == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--algo '" + options.algorithm + "' is not an algorithm for " +
                      plan::toString(options.collective) +
                      " (expected one of: " + validNames(options.collective) + ")");
    }
    if (const Status applies = forced->applies(request); !applies.ok()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--algo '" + options.algorithm + "' does not apply here: " + applies.message());
    }
    field.push_back(forced);
    chosenName = std::string(forced->name);
    report.choiceReason = chosenName + ": forced by --algo";
  } else {
    for (const algo::Algorithm& a : algo::algorithms()) {
      if (a.collective == options.collective) field.push_back(&a);
    }
    algo::Selection selection =
        algo::select(request, "", environmentAlgo(), environmentCostParams());
    report.choiceReason = selection.reason;
    chosenName = std::string(selection.algorithm->name);
  }

  try {
    report.bound = boundFor(options.collective, std::max(report.root, 0),
                            topo::computeBounds(report.topology));
  } catch (const std::exception&) {
    report.bound.reset();  // No bound for this graph: ratios are left out.
  }

  // The options selection simulates with, so that "predicted" is what select() compared.
  model::SimOptions sim = algo::selectionSimOptions(environmentCostParams(), &report.topology);
  sim.bytes = report.count * element;
  sim.elementSize = element;
  sim.fifoDepth = options.fifoDepth;
  if (!options.cpus.empty()) report.cpus = applyCpus(options.cpus, report.topology, sim);
  const model::SimOptions uncompressed = sim;
  if (!options.compress.empty()) {
    const auto [ratio, gbps] = parseCompress(options.compress);
    sim.compressionRatio = report.compressionRatio = ratio;
    sim.codecGBps = report.codecGBps = gbps;
  }
  std::map<std::string, std::vector<plan::Plan>> plansOf;
  for (const algo::Algorithm* a : field) {
    if (const Status applies = a->applies(request); !applies.ok()) {
      report.declined.emplace_back(std::string(a->name), applies.message());
      continue;
    }
    Candidate candidate;
    candidate.algorithm = std::string(a->name);
    candidate.chosen = candidate.algorithm == chosenName;
    std::vector<plan::Plan>& plans = plansOf[candidate.algorithm];
    try {
      for (int r = 0; r < n; ++r) {
        request.rank = r;
        plans.push_back(a->build(request));
      }
      candidate.structure = describe(*a, request, plans);
      model::Prediction p = model::simulate(plans, report.topology, sim);
      candidate.simulated = true;
      candidate.timeUs = p.timeUs;
      if (!options.compress.empty()) {
        candidate.uncompressedUs = model::simulate(plans, report.topology, uncompressed).timeUs;
      }
      candidate.algbwGBps = p.timeUs > 0 ? static_cast<double>(report.bytes) / (p.timeUs * 1e3) : 0;
      candidate.busbwGBps = candidate.algbwGBps * model::busbwFactor(options.collective, n);
      if (report.bound && report.bound->rate.units > 0) {
        candidate.ratio = candidate.algbwGBps / report.bound->rate.gbps(report.topology);
      }
    } catch (const std::exception& e) {
      candidate.problem = e.what();
    }
    report.candidates.push_back(std::move(candidate));
  }
  std::stable_sort(report.candidates.begin(), report.candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.simulated != b.simulated) return a.simulated;
                     if (a.simulated && a.timeUs != b.timeUs) return a.timeUs < b.timeUs;
                     return a.chosen && !b.chosen;  // ties: the chosen one first
                   });

  auto chosen = plansOf.find(chosenName);
  if (chosen == plansOf.end() || static_cast<int>(chosen->second.size()) != n) {
    report.verdicts.push_back({"out of place", false, "the chosen plan could not be built"});
    return report;
  }
  for (bool inPlace : {false, true}) {
    plan::VerifyOptions verify;
    verify.inPlace = inPlace;
    verify.fifoDepth = options.fifoDepth;
    report.verifierTiles = verify.tiles;
    Status result = plan::verify(chosen->second, verify);
    report.verdicts.push_back(
        {inPlace ? "in place" : "out of place", result.ok(), result.message()});
  }
  return report;
}

}  // namespace grove::tools
