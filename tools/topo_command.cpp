// `grove topo`: what the network looks like and how fast a collective could possibly go on it.
//
// A plan is only as good as the topology it was computed from, so this command shows the
// topology grove would use (this host as detected, GROVE_TOPO_FILE, or any preset or file
// given with --topo) with every link, and the optimum rates the flow analysis proves for it
// (`grove topo bounds`, --json for scripts). `grove topo --probe`, run under a launcher,
// measures a running job's links and writes the JSON a GROVE_TOPO_FILE wants.
//
//   grove topo [--topo SPEC]              the topology (or this host) and its bounds
//   grove topo bounds --topo SPEC [--json]
//   grove topo presets
//   grove run -n 4 grove topo --probe [-o FILE]
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "common/parameters.hpp"
#include "grove/communicator.hpp"
#include "grove/error.hpp"
#include "topo/bounds.hpp"
#include "topo/detect.hpp"
#include "topo/probe.hpp"
#include "topo/topology.hpp"

namespace grove::tools {
namespace {

struct TopoOptions {
  std::string topo;
  bool probe = false;
  std::string output;
  bool json = false;
};

// "24/7", or a decimal when the rate is not exact, or "unbounded".
std::string unitsText(const topo::Rate& rate) {
  if (std::isinf(rate.units)) return "unbounded";
  if (rate.exact) return rate.value.toString();
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", rate.units);
  return text;
}

std::string gbpsText(const topo::Rate& rate, const topo::Topology& t) {
  if (std::isinf(rate.units)) return "unbounded";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g GB/s", rate.gbps(t));
  return text;
}

void printRate(const char* label, const topo::Rate& rate, const topo::Topology& t) {
  std::printf("  %-18s %-10s %s\n", label, unitsText(rate).c_str(), gbpsText(rate, t).c_str());
}

void printBounds(const topo::Topology& t, const topo::Bounds& b) {
  std::printf("bounds of %s: %d ranks, link unit %g GB/s, %s\n", t.name.c_str(), b.ranks,
              t.unitGBps, t.integral() ? "exact fractions of link units" : "approximate");
  std::printf("  %-18s %-10s %s\n", "rate", "units", "GB/s");
  for (size_t r = 0; r < b.lambda.size(); ++r) {
    const std::string label = "broadcast root " + std::to_string(r);
    printRate(label.c_str(), b.lambda[r], t);
  }
  printRate("broadcast (min)", b.lambdaMin, t);
  if (b.rings) {
    std::printf("  %-18s %d%s\n", "rings", *b.rings,
                *b.rings == 0 ? "          (no ring over direct rank-to-rank links)" : "");
  } else {
    std::printf("  %-18s %s\n", "rings", "-");
  }
  if (b.sigma) {
    printRate("allreduce sigma", *b.sigma, t);
  } else {
    std::printf("  %-18s %s\n", "allreduce sigma", "-");
  }
  printRate("allreduce RS+AG", b.rsAg, t);
  printRate("allreduce (best)", b.allreduce, t);
  printRate("allreduce ceiling", b.allreduceCeiling, t);
  for (const std::string& note : b.notes) std::printf("  note: %s\n", note.c_str());
}

nlohmann::json rateJson(const topo::Rate& rate, const topo::Topology& t) {
  nlohmann::json j;
  j["exact"] = rate.exact;
  j["fraction"] = rate.exact ? nlohmann::json(rate.value.toString()) : nlohmann::json(nullptr);
  j["units"] = std::isinf(rate.units) ? nlohmann::json(nullptr) : nlohmann::json(rate.units);
  j["gbps"] = std::isinf(rate.units) ? nlohmann::json(nullptr) : nlohmann::json(rate.gbps(t));
  return j;
}

nlohmann::json boundsJson(const topo::Topology& t, const topo::Bounds& b) {
  nlohmann::json j;
  j["topology"] = t.name;
  j["ranks"] = b.ranks;
  j["unitGBps"] = t.unitGBps;
  j["integral"] = t.integral();
  j["lambda"] = nlohmann::json::array();
  for (const topo::Rate& rate : b.lambda) j["lambda"].push_back(rateJson(rate, t));
  j["lambdaMin"] = rateJson(b.lambdaMin, t);
  j["rings"] = b.rings ? nlohmann::json(*b.rings) : nlohmann::json(nullptr);
  j["sigma"] = b.sigma ? rateJson(*b.sigma, t) : nlohmann::json(nullptr);
  j["rsAg"] = rateJson(b.rsAg, t);
  j["allreduce"] = rateJson(b.allreduce, t);
  j["allreduceCeiling"] = rateJson(b.allreduceCeiling, t);
  j["notes"] = b.notes;
  return j;
}

void printTopology(const topo::Topology& t) {
  int switches = 0;
  for (const topo::Vertex& v : t.vertices) switches += v.kind == topo::VertexKind::kSwitch;
  std::printf("topology %s: %d ranks, %d switches, %zu links (arcs), link unit %g GB/s\n",
              t.name.c_str(), t.rankCount(), switches, t.arcs.size(), t.unitGBps);
  for (int r = 0; r < t.rankCount(); ++r) {
    const topo::Vertex& v = t.vertices[static_cast<size_t>(t.vertexOfRank(r))];
    std::printf("  rank %-3d %-10s host %-12s numa %s\n", r, v.name.c_str(),
                v.host.empty() ? "-" : v.host.c_str(),
                v.numa < 0 ? "-" : std::to_string(v.numa).c_str());
  }
  for (const topo::Vertex& v : t.vertices) {
    if (v.kind == topo::VertexKind::kSwitch) std::printf("  switch   %s\n", v.name.c_str());
  }
  const bool integral = t.integral();
  std::printf("  %-10s %-10s %10s %6s %10s %-7s %s\n", "from", "to", "GB/s", "units", "latency us",
              "kind", "address");
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    const topo::Arc& arc = t.arcs[a];
    const std::string units = integral ? std::to_string(t.units(static_cast<int>(a)))
                                       : std::to_string(arc.capacityGBps / t.unitGBps);
    std::printf("  %-10s %-10s %10g %6s %10g %-7s %s\n",
                t.vertices[static_cast<size_t>(arc.from)].name.c_str(),
                t.vertices[static_cast<size_t>(arc.to)].name.c_str(), arc.capacityGBps,
                units.c_str(), arc.latencyUs, topo::toString(arc.kind),
                arc.address.empty() ? "-" : arc.address.c_str());
  }
}

void showTopology(const topo::Topology& t) {
  printTopology(t);
  std::printf("\n");
  printBounds(t, topo::computeBounds(t));
}

void runProbe(const TopoOptions& options) {
  Communicator comm = Communicator::fromEnv();
  const topo::Topology t = topo::probe(comm);
  if (comm.rank() != 0) return;
  const std::string json = topo::toJson(t);
  if (options.output.empty()) {
    std::printf("%s\n", json.c_str());
    return;
  }
  std::ofstream file(options.output);
  file << json << "\n";
  file.close();
  if (!file) {
    throw Error(ErrorCode::kSystemError,
                "-o/--output: cannot write the probed topology to '" + options.output + "'");
  }
  std::printf("grove topo: wrote the topology of %d ranks to %s\n", t.rankCount(),
              options.output.c_str());
}

void runTopo(const TopoOptions& options) {
  if (options.probe) {
    runProbe(options);
    return;
  }
  if (!options.topo.empty()) {
    showTopology(topo::fromSpec(options.topo));
    return;
  }
  std::printf("%s", topo::describeHost().c_str());
  const std::string topoFile =
      common::resolveParameter(common::spec(common::Param::kTopoFile), {}).text;
  const char* file = topoFile.c_str();
  if (topoFile.empty()) {
    std::printf(
        "GROVE_TOPO_FILE is not set: plans assume no topology (see `grove topo presets`, "
        "`grove topo --topo SPEC` and `grove topo --probe`)\n");
    return;
  }
  std::printf("\nGROVE_TOPO_FILE=%s\n", file);
  showTopology(topo::loadFile(file));
}

void runBounds(const TopoOptions& options) {
  const topo::Topology t = topo::fromSpec(options.topo);
  const topo::Bounds b = topo::computeBounds(t);
  if (options.json) {
    std::printf("%s\n", boundsJson(t, b).dump(2).c_str());
  } else {
    printBounds(t, b);
  }
}

void runPresets() {
  for (const auto& [name, description] : topo::presetList()) {
    std::printf("  %-24s %s\n", name.c_str(), description.c_str());
  }
  std::printf(
      "A subset of a fixed preset: NAME:i,j,k (e.g. dgx1v:0,1,4); any other spec is read "
      "as a topology JSON file.\n");
}

void addTopoCommand(CLI::App& app) {
  auto options = std::make_shared<TopoOptions>();
  auto boundsOptions = std::make_shared<TopoOptions>();
  CLI::App* topo = app.add_subcommand(
      "topo", "Show a topology (this host, GROVE_TOPO_FILE, a preset or a file) and its bounds");
  topo->add_option("--topo", options->topo,
                   "Topology: a preset (see `grove topo presets`), PRESET:i,j,... or a JSON file");
  topo->add_flag("--probe", options->probe,
                 "Measure the links of a running job (start under a launcher: grove run -n N "
                 "grove topo --probe)");
  topo->add_option("-o,--output", options->output, "With --probe: write the JSON to this file");

  CLI::App* bounds = topo->add_subcommand(
      "bounds", "Optimal rates of broadcast and allreduce on a topology (λ, rings, σ, RS+AG)");
  bounds->add_option("--topo", boundsOptions->topo, "Topology: a preset, PRESET:i,j,... or a file")
      ->required();
  bounds->add_flag("--json", boundsOptions->json,
                   "Print JSON (fractions as strings, e.g. \"24/7\", plus numeric values)");
  bounds->callback([boundsOptions] { runBounds(*boundsOptions); });

  CLI::App* presets = topo->add_subcommand("presets", "List the topology presets");
  presets->callback([] { runPresets(); });

  topo->require_subcommand(0, 1);
  topo->callback([options, topo, bounds, presets] {
    if (topo->got_subcommand(bounds) || topo->got_subcommand(presets)) return;
    if (!options->output.empty() && !options->probe) {
      throw CLI::ValidationError("-o/--output", "only goes with --probe");
    }
    if (options->probe && !options->topo.empty()) {
      throw CLI::ValidationError("--probe", "measures the job's own links; drop --topo");
    }
    runTopo(*options);
  });
}

const CommandRegistration kTopo{"topo", &addTopoCommand};

}  // namespace
}  // namespace grove::tools
