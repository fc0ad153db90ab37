// `grove plan --topo`, the output: the report as a table for people, as JSON for scripts,
// and as drawings.
//
// The text and the JSON carry the same facts (docs/topology.md explains both): the call
// shape, the bound of the collective on this topology, every candidate sorted by predicted
// time with its structure, those that declined and why, and the verifier's verdict on the
// chosen plan. Rates are printed as exact fractions of the link unit when the topology is
// integral, so "1/2" here means what it means in `grove topo bounds`.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "grove/error.hpp"
#include "model/simulator.hpp"
#include "plan_topo.hpp"

namespace grove::tools {
namespace {

using nlohmann::ordered_json;

std::string formatTime(double us) {
  char text[32];
  if (us < 1000) {
    std::snprintf(text, sizeof text, "%.1f us", us);
  } else if (us < 1e6) {
    std::snprintf(text, sizeof text, "%.3f ms", us / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3f s", us / 1e6);
  }
  return text;
}

std::string rateWithGBps(const topo::Rate& rate, const topo::Topology& t) {
  char gbps[32];
  std::snprintf(gbps, sizeof gbps, "%.2f GB/s", rate.gbps(t));
  return rateText(rate) + " (" + gbps + ")";
}

/// The structure lines printed under a candidate, indented.
std::vector<std::string> structureLines(const Candidate& c, const topo::Topology& t) {
  std::vector<std::string> lines;
  const Structure& s = c.structure;
  if (s.kind == Structure::Kind::kRing) {
    std::string ring = "ring ";
    for (int r : s.ring) ring += std::to_string(r) + "→";
    lines.push_back(ring + std::to_string(s.ring.front()));
  } else if (s.kind == Structure::Kind::kTrees) {
    for (size_t i = 0; i < s.trees.size(); ++i) {
      const TreeView& tree = s.trees[i];
      std::string line = s.trees.size() > 1 ? "tree " + std::to_string(i + 1) : "tree";
      if (tree.rate) line += " at " + rateWithGBps(*tree.rate, t);
      lines.push_back(line + ": " + treePaths(tree));
    }
  }
  if (!s.note.empty()) lines.push_back(s.note);
  return lines;
}

void printText(const TopoReport& report) {
  const topo::Topology& t = report.topology;
  std::printf("# %s of %zu bytes (%zu %s elements per block)", plan::toString(report.collective),
              report.bytes, report.count, report.type.c_str());
  if (report.root >= 0) std::printf(" from root %d", report.root);
  std::printf(" on %s: %d ranks, link unit %g GB/s\n", t.name.c_str(), t.rankCount(), t.unitGBps);
  if (report.bound) {
    std::printf("# bound: %s = %s link units = %.2f GB/s\n", report.bound->name.c_str(),
                rateText(report.bound->rate).c_str(), report.bound->rate.gbps(t));
  } else {
    std::printf("# bound: none for this collective\n");
  }
  std::printf("# choice: %s\n", report.choiceReason.c_str());
  const bool compressed = report.compressionRatio > 1.0;
  if (compressed) {
    std::printf(
        "# compression (--compress): messages over network links carry 1/%.3g of "
        "their bytes; each end codes them at %.2f GB/s\n",
        report.compressionRatio, report.codecGBps);
  }
  if (!report.cpus.empty()) {
    std::printf("# CPUs (--cpus): %s; a rank's reductions and coding run on one of them\n",
                report.cpus.c_str());
  }
  std::printf("\n  %-18s %12s %14s %14s %9s%s\n", "algorithm", "predicted", "algbw", "busbw",
              "of bound", compressed ? "  uncompressed    gain" : "");
  for (const Candidate& c : report.candidates) {
    const char* mark = c.chosen ? "*" : " ";
    if (!c.simulated) {
      std::printf("%s %-18s cannot run here: %s\n", mark, c.algorithm.c_str(), c.problem.c_str());
    } else {
      char ratio[16] = "-";
      if (c.ratio) std::snprintf(ratio, sizeof ratio, "%.1f%%", *c.ratio * 100);
      std::printf("%s %-18s %12s %9.2f GB/s %9.2f GB/s %9s", mark, c.algorithm.c_str(),
                  formatTime(c.timeUs).c_str(), c.algbwGBps, c.busbwGBps, ratio);
      if (compressed) {
        std::printf("  %12s %6.2fx", formatTime(c.uncompressedUs).c_str(),
                    c.timeUs > 0 ? c.uncompressedUs / c.timeUs : 0.0);
      }
      std::printf("\n");
    }
    for (const std::string& line : structureLines(c, t)) std::printf("      %s\n", line.c_str());
  }
  for (const auto& [name, why] : report.declined) {
    std::printf("  %-18s does not apply: %s\n", name.c_str(), why.c_str());
  }
  std::printf("\n");
  for (const Verdict& v : report.verdicts) {
    std::printf("# verifier (chosen plan, %s, %d tiles, FIFOs of %d slots): %s\n", v.mode.c_str(),
                report.verifierTiles, report.fifoDepth,
                v.ok ? "proven" : ("FAILED: " + v.error).c_str());
  }
}

ordered_json rateJson(const topo::Rate& rate, const topo::Topology& t) {
  ordered_json j;
  j["units"] = rateText(rate);
  j["units_value"] = rate.units;
  j["exact"] = rate.exact;
  j["gbps"] = rate.gbps(t);
  return j;
}

ordered_json structureJson(const Candidate& c, const topo::Topology& t) {
  const Structure& s = c.structure;
  ordered_json j;
  j["kind"] = s.kind == Structure::Kind::kTrees  ? "trees"
              : s.kind == Structure::Kind::kRing ? "ring"
                                                 : "named";
  if (s.kind == Structure::Kind::kRing) j["ring"] = s.ring;
  if (s.kind == Structure::Kind::kTrees) {
    ordered_json trees = ordered_json::array();
    for (const TreeView& tree : s.trees) {
      ordered_json jt;
      jt["root"] = tree.root;
      jt["parent"] = tree.parent;
      ordered_json edges = ordered_json::array();
      for (size_t v = 0; v < tree.parent.size(); ++v) {
        if (tree.parent[v] >= 0 && static_cast<int>(v) != tree.root) {
          edges.push_back({tree.parent[v], static_cast<int>(v)});
        }
      }
      jt["edges"] = edges;
      jt["paths"] = treePaths(tree);
      jt["rate"] = tree.rate ? rateJson(*tree.rate, t) : ordered_json(nullptr);
      trees.push_back(jt);
    }
    j["trees"] = trees;
  }
  j["note"] = s.note;
  return j;
}

ordered_json toJson(const TopoReport& report) {
  const topo::Topology& t = report.topology;
  ordered_json j;
  j["collective"] = plan::toString(report.collective);
  j["topology"] = t.name;
  j["ranks"] = t.rankCount();
  j["unit_gbps"] = t.unitGBps;
  j["root"] = report.root >= 0 ? ordered_json(report.root) : ordered_json(nullptr);
  j["bytes"] = report.bytes;
  j["count"] = report.count;
  j["type"] = report.type;
  if (report.bound) {
    ordered_json b = rateJson(report.bound->rate, t);
    b["name"] = report.bound->name;
    j["bound"] = b;
  } else {
    j["bound"] = nullptr;
  }
  j["choice"] = report.choiceReason;
  if (!report.cpus.empty()) j["cpus"] = report.cpus;
  ordered_json candidates = ordered_json::array();
  for (const Candidate& c : report.candidates) {
    ordered_json jc;
    jc["algorithm"] = c.algorithm;
    jc["chosen"] = c.chosen;
    jc["simulated"] = c.simulated;
    if (c.simulated) {
      jc["predicted_us"] = c.timeUs;
      if (report.compressionRatio > 1.0) jc["uncompressed_us"] = c.uncompressedUs;
      jc["algbw_gbps"] = c.algbwGBps;
      jc["busbw_gbps"] = c.busbwGBps;
      jc["ratio"] = c.ratio ? ordered_json(*c.ratio) : ordered_json(nullptr);
    } else {
      jc["problem"] = c.problem;
    }
    jc["structure"] = structureJson(c, t);
    candidates.push_back(jc);
  }
  j["candidates"] = candidates;
  ordered_json declined = ordered_json::array();
  for (const auto& [name, why] : report.declined)
    declined.push_back({{"algorithm", name}, {"why", why}});
  j["declined"] = declined;
  ordered_json verifier;
  bool proven = !report.verdicts.empty();
  for (const Verdict& v : report.verdicts) {
    verifier[v.mode == "in place" ? "in_place" : "out_of_place"] = {{"ok", v.ok},
                                                                    {"error", v.error}};
    proven = proven && v.ok;
  }
  verifier["proven"] = proven;
  j["verifier"] = verifier;
  return j;
}

}  // namespace

void runTopoPlan(const TopoPlanOptions& options) {
  const TopoReport report = analyzeTopoPlan(options);
  if (options.json) {
    std::printf("%s\n", toJson(report).dump(2).c_str());
  } else {
    printText(report);
  }
  if (!options.dotFile.empty() || !options.svgFile.empty()) {
    const std::string dot = toDot(report);
    if (!options.dotFile.empty()) {
      std::ofstream file(options.dotFile);
      file << dot;
      if (!file.flush()) {
        throw Error(ErrorCode::kInvalidArgument, "--dot '" + options.dotFile + "': cannot write");
      }
    }
    if (!options.svgFile.empty()) writeSvg(dot, options.svgFile);
  }
  for (const Verdict& v : report.verdicts) {
    if (!v.ok) throw CommandExit(1);
  }
}

}  // namespace grove::tools
