// `grove plan --dot / --svg`: the chosen plan's trees drawn over the topology.
//
// A table says that packed trees beat the ring by 3×; a drawing says why: the grey links are
// the graph with their capacities, and each tree is one colour over them, so one sees every
// link carrying some tree while a ring would need a hop the graph does not have. Graphviz is
// the renderer because it is a Debian package and its text format is easy to write and to
// check in tests; --svg just runs `dot -Tsvg` on the same text (circo layout, chosen in the
// graph's attributes: ranks on a circle).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "grove/error.hpp"
#include "plan_topo.hpp"

extern char** environ;

namespace grove::tools {
namespace {

// Colour-blind-safe, distinct on white (Okabe–Ito, then a few more).
constexpr const char* kColours[] = {"#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00",
                                    "#56B4E9", "#000000", "#8C564B", "#7F7F00", "#9467BD"};
constexpr size_t kColourCount = sizeof kColours / sizeof kColours[0];

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// Text for a Graphviz HTML-like label.
std::string html(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  }
  return out;
}

std::string gbpsText(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", gbps);
  return text;
}

/// The topology's links: one undirected grey edge per pair with equal capacities both ways,
/// otherwise one grey arrow per arc.
void drawLinks(const topo::Topology& t, std::string& out) {
  std::map<std::pair<int, int>, bool> drawn;
  for (size_t a = 0; a < t.arcs.size(); ++a) {
    const topo::Arc& arc = t.arcs[a];
    if (drawn[{arc.from, arc.to}]) continue;
    drawn[{arc.from, arc.to}] = true;
    const int back = t.arcBetween(arc.to, arc.from);
    const bool symmetric =
        back >= 0 && t.arcs[static_cast<size_t>(back)].capacityGBps == arc.capacityGBps;
    if (symmetric) drawn[{arc.to, arc.from}] = true;
    // Parallel links (2 NVLinks) drawn thicker, up to 4.
    const double links =
        t.integral() ? static_cast<double>(std::min<int64_t>(t.units(static_cast<int>(a)), 4)) : 1;
    out += "  " + quoted(t.vertices[static_cast<size_t>(arc.from)].name) + " -> " +
           quoted(t.vertices[static_cast<size_t>(arc.to)].name) +
           " [color=grey75, fontcolor=grey45, penwidth=" + gbpsText(1.5 * links) +
           (symmetric ? ", dir=none" : "") + ", label=" + quoted(gbpsText(arc.capacityGBps)) +
           "];\n";
  }
}

/// One rank-to-rank edge of a tree or ring, dashed when no direct link carries it.
void drawEdge(const topo::Topology& t, int fromRank, int toRank, const char* colour,
              const std::string& label, std::string& out) {
  const int from = t.vertexOfRank(fromRank);
  const int to = t.vertexOfRank(toRank);
  const bool direct = t.arcBetween(from, to) >= 0;
  out += "  " + quoted(t.vertices[static_cast<size_t>(from)].name) + " -> " +
         quoted(t.vertices[static_cast<size_t>(to)].name) + " [color=" + quoted(colour) +
         ", fontcolor=" + quoted(colour) + ", penwidth=2.5, label=" + quoted(label) +
         (direct ? "" : ", style=dashed") + "];\n";
}

}  // namespace

std::string toDot(const TopoReport& report) {
  const topo::Topology& t = report.topology;
  const Candidate* chosen = nullptr;
  for (const Candidate& c : report.candidates) {
    if (c.chosen) chosen = &c;
  }
  std::string title = std::string(plan::toString(report.collective)) + " on " + t.name;
  if (chosen != nullptr) title += ": " + chosen->algorithm;
  constexpr const char* kBreak = "<br align=\"left\"/>";
  std::string legend;
  std::string edges;
  if (chosen != nullptr && chosen->structure.kind == Structure::Kind::kTrees) {
    const std::vector<TreeView>& trees = chosen->structure.trees;
    for (size_t i = 0; i < trees.size(); ++i) {
      const char* colour = kColours[i % kColourCount];
      const std::string rate = trees[i].rate ? rateText(*trees[i].rate) : "";
      // Few trees: the rate on every edge too; many: the legend alone stays readable.
      const std::string label = trees.size() <= 3 ? rate : "";
      for (size_t v = 0; v < trees[i].parent.size(); ++v) {
        const int parent = trees[i].parent[v];
        if (parent >= 0 && static_cast<int>(v) != trees[i].root) {
          drawEdge(t, parent, static_cast<int>(v), colour, label, edges);
        }
      }
      std::string line = trees.size() > 1 ? "tree " + std::to_string(i + 1) : "tree";
      if (trees[i].rate) {
        line += ": " + rate + " × " + gbpsText(t.unitGBps) + " = " +
                gbpsText(trees[i].rate->gbps(t)) + " GB/s";
      }
      legend += std::string("<font color=\"") + colour + "\">" + html(line) + "</font>" + kBreak;
    }
  } else if (chosen != nullptr && chosen->structure.kind == Structure::Kind::kRing) {
    const std::vector<int>& ring = chosen->structure.ring;
    for (size_t i = 0; i < ring.size(); ++i) {
      drawEdge(t, ring[i], ring[(i + 1) % ring.size()], kColours[0], "", edges);
    }
    legend += std::string("<font color=\"") + kColours[0] + "\">ring</font>" + kBreak;
  } else {
    legend += std::string("(no tree or ring to draw for this algorithm)") + kBreak;
  }
  std::string out = "digraph grove_plan {\n";
  // circo (ranks on a circle) keeps every link and tree edge visible on meshes; neato with
  // splines crashes some Graphviz versions on parallel edges.
  out += "  graph [layout=circo, fontname=Helvetica, labelloc=t, labeljust=l, label=<<b>" +
         html(title) + "</b>" + kBreak + legend +
         "<font color=\"grey45\">grey: links, GB/s per direction; dashed: via a switch</font>" +
         kBreak + ">];\n";
  out += "  node [fontname=Helvetica];\n  edge [fontname=Helvetica, fontsize=10];\n";
  for (const topo::Vertex& v : t.vertices) {
    if (v.kind == topo::VertexKind::kSwitch) {
      out += "  " + quoted(v.name) + " [shape=box, style=filled, fillcolor=grey92];\n";
    } else {
      out += "  " + quoted(v.name) + " [label=" + quoted(std::to_string(v.rank)) +
             ", shape=" + (v.rank == report.root ? "doublecircle" : "circle") + "];\n";
    }
  }
  drawLinks(t, out);
  out += edges;
  return out + "}\n";
}

void writeSvg(const std::string& dotText, const std::string& svgPath) {
  char tmpl[] = "/tmp/grove_plan_XXXXXX.dot";
  const int fd = mkstemps(tmpl, 4);
  if (fd < 0) throw Error(ErrorCode::kSystemError, "--svg: cannot create a temporary file");
  close(fd);
  {
    std::ofstream file(tmpl);
    file << dotText;
  }
  std::string output = svgPath;
  std::vector<char*> argv{const_cast<char*>("dot"),
                          const_cast<char*>("-Tsvg"),
                          const_cast<char*>("-o"),
                          output.data(),
                          tmpl,
                          nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawned == 0) waitpid(pid, &status, 0);
  std::remove(tmpl);
  if (spawned != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "--svg needs Graphviz's 'dot' program, which is not on PATH (install the Debian "
                "package graphviz, or use --dot FILE and render it elsewhere)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "--svg '" + svgPath + "': dot -Tsvg failed (" +
                    (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                       : "signal " + std::to_string(WTERMSIG(status))) +
                    ")");
  }
}

}  // namespace grove::tools
