// `grove topo-bench`: how long topology-aware planning takes.
//
// Planning happens on every rank when a communicator first meets a call shape, so it must be
// cheap: the targets are < 10 ms for the 8-rank DGX-1V and < 1 s for a 256-rank two-tier
// cluster. This command times each stage — the flow bounds, the three tree packings, and
// building every rank's plan through the registry for each topology-aware algorithm that
// applies — as the median of --runs runs, and prints a table. It is a benchmark, never a
// test: it asserts nothing about time.
//
// The packed-tree generators memoize packings per topology, which would make every run after
// the first free; each run therefore plans a fresh copy of the topology whose first arc's
// latency differs by a few femtoseconds, so every number is a cold planning time.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algo/packing.hpp"
#include "algo/registry.hpp"
#include "command.hpp"
#include "grove/error.hpp"
#include "topo/bounds.hpp"
#include "topo/topology.hpp"

namespace grove::tools {
namespace {

struct BenchOptions {
  std::vector<std::string> topologies;
  int runs = 20;
};

// The topology-aware algorithms whose planning is timed.
constexpr const char* kAlgorithms[] = {"trees", "rsag_trees", "onehop", "hierarchical"};

double medianMs(int runs, const std::function<void(int run)>& body) {
  std::vector<double> times;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    body(run);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

bool hasSwitch(const topo::Topology& topology) {
  return std::any_of(topology.vertices.begin(), topology.vertices.end(),
                     [](const topo::Vertex& v) { return v.kind == topo::VertexKind::kSwitch; });
}

// A copy that no memo has seen (see the file comment).
topo::Topology freshCopy(const topo::Topology& topology, int run) {
  topo::Topology copy = topology;
  if (!copy.arcs.empty()) copy.arcs.front().latencyUs += 1e-12 * (run + 1);
  return copy;
}

struct Row {
  std::string what;
  double ms = 0;
  std::string result;
};

void benchTopology(const std::string& spec, int runs, double targetMs) {
  const topo::Topology topology = topo::fromSpec(spec);
  const int n = topology.rankCount();
  std::vector<Row> rows;
  topo::Bounds bounds;
  rows.push_back({"bounds", medianMs(runs, [&](int) { bounds = topo::computeBounds(topology); }),
                  "allreduce " + std::to_string(bounds.allreduce.units) + " units"});
  algo::PackOptions options;
  options.allowSwitches = hasSwitch(topology);
  algo::Packing packing;
  rows.push_back(
      {"packArborescences(root 0)",
       medianMs(runs, [&](int) { packing = algo::packArborescences(topology, 0, options); }),
       std::to_string(packing.trees.size()) + " trees, " + std::to_string(packing.total.units) +
           " of λ " + std::to_string(bounds.lambda.empty() ? 0.0 : bounds.lambda[0].units)});
  rows.push_back(
      {"packSpanningTrees",
       medianMs(runs, [&](int) { packing = algo::packSpanningTrees(topology, 0, options); }),
       std::to_string(packing.trees.size()) + " trees, " + std::to_string(packing.total.units) +
           " units"});
  std::vector<algo::Packing> rsag;
  rows.push_back({"packRsAg",
                  medianMs(runs, [&](int) { rsag = algo::packRsAg(topology, options); }),
                  "N·x/2 = " + std::to_string(rsag.empty() ? 0.0 : n * rsag[0].total.units / 2) +
                      " of " + std::to_string(bounds.rsAg.units)});
  const double stages = rows[0].ms + rows[1].ms + rows[2].ms + rows[3].ms;
  double plansTotal = 0;
  for (const algo::Algorithm& algorithm : algo::algorithms()) {
    const bool timed = std::any_of(std::begin(kAlgorithms), std::end(kAlgorithms),
                                   [&](const char* name) { return algorithm.name == name; });
    if (!timed) continue;
    plan::PlanRequest request;
    request.collective = algorithm.collective;
    request.nranks = n;
    request.root = 0;
    request.count = size_t{1} << 20;
    request.topology = &topology;
    if (!algorithm.applies(request).ok()) continue;
    const double ms = medianMs(runs, [&](int run) {
      const topo::Topology fresh = freshCopy(topology, run);
      plan::PlanRequest each = request;
      each.topology = &fresh;
      for (int rank = 0; rank < n; ++rank) {
        each.rank = rank;
        (void)algorithm.build(each);
      }
    });
    plansTotal += ms;
    rows.push_back({std::string(algorithm.name) + " " + plan::toString(algorithm.collective) +
                        " (all " + std::to_string(n) + " plans)",
                    ms, ""});
  }
  std::printf("%s: %d ranks, median of %d runs\n", spec.c_str(), n, runs);
  for (const Row& row : rows) {
    std::printf("  %-44s %10.3f ms  %s\n", row.what.c_str(), row.ms, row.result.c_str());
  }
  std::printf("  %-44s %10.3f ms  %s\n", "bounds + packings", stages,
              targetMs > 0
                  ? ("(target < " + std::to_string(static_cast<int>(targetMs)) + " ms)").c_str()
                  : "");
  std::printf("  %-44s %10.3f ms  (plans include their own packing)\n\n",
              "bounds + every algorithm's plans", rows[0].ms + plansTotal);
}

void runBench(const BenchOptions& options) {
  if (options.runs < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "--runs " + std::to_string(options.runs) + " must be at least 1");
  }
  benchTopology("dgx1v", options.runs, 10);
  benchTopology("cluster:32x8", options.runs, 1000);
  for (const std::string& spec : options.topologies) benchTopology(spec, options.runs, 0);
}

void addTopoBenchCommand(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand(
      "topo-bench", "Time topology-aware planning (bounds, tree packing, plans): a benchmark");
  bench->add_option("--topo", options->topologies,
                    "Also time this topology spec (preset, subset or JSON file); repeatable");
  bench->add_option("--runs", options->runs, "Runs per stage; the median is printed")
      ->default_val(20);
  bench->callback([options] { runBench(*options); });
}

const CommandRegistration kTopoBench{"topo-bench", &addTopoBenchCommand};

}  // namespace
}  // namespace grove::tools
