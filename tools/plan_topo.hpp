// `grove plan --topo`: what grove would do for a collective on a given topology, and why.
//
// Without a topology, `grove plan` prints one plan. With one, the interesting question is
// different: which of the candidate algorithms wins on *this* graph, by how much, and how far
// each is from the optimum the graph allows. So the command builds every applicable
// candidate's plans for all ranks, asks the simulator for their time, sets each against the
// flow bound of the collective (src/topo/bounds.hpp), describes each candidate's structure
// (packed trees with their rates, the ring order, or just the name) and proves the chosen
// one with the verifier. The same report is printed as text, as JSON, or drawn
// (plan_draw.cpp). Everything here is data; nothing runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algo/registry.hpp"
#include "common/parameters.hpp"
#include "plan/plan.hpp"
#include "topo/bounds.hpp"
#include "topo/topology.hpp"

namespace grove::tools {

/// The flags of `grove plan` that matter with --topo.
struct TopoPlanOptions {
  plan::Collective collective = plan::Collective::kAllReduce;
  std::string topo;       ///< --topo: a preset, a subset of one, or a JSON file.
  std::string size;       ///< --size: bytes, with K, M, G suffixes (powers of 1024).
  std::string type;       ///< --type.
  std::string algorithm;  ///< --algo: only this candidate (empty: all that apply).
  int root = 0;
  int nranks = -1;  ///< --nranks when given; must then equal the topology's rank count.
  int fifoDepth = static_cast<int>(common::defaultInteger(common::Param::kFifoDepth));
  /// --compress RATIO[:GBPS]: network links compress (model::SimOptions); empty: they do not.
  std::string compress;
  /// --cpus N | host:N: the ranks share CPUs (model::SimOptions::cpuGroup); empty: each
  /// rank's channels work on CPUs of their own.
  std::string cpus;
  bool json = false;
  std::string dotFile;  ///< --dot FILE.
  std::string svgFile;  ///< --svg FILE.
};

/// One directed tree of a candidate, edges pointing away from `root`.
struct TreeView {
  int root = 0;
  std::vector<int> parent;         ///< parent[r], -1 for the root (and ranks not in it).
  std::optional<topo::Rate> rate;  ///< Link units; absent when the plan does not say.
};

/// The shape of a candidate, as far as it can be told.
struct Structure {
  enum class Kind { kTrees, kRing, kNamed } kind = Kind::kNamed;
  std::vector<TreeView> trees;  ///< kTrees.
  std::vector<int> ring;        ///< kRing: ranks in ring order (the ring closes back to [0]).
  std::string note;             ///< kNamed, or an extra remark: one line.
};

/// One candidate algorithm on the topology.
struct Candidate {
  std::string algorithm;
  Structure structure;
  bool simulated = false;
  std::string problem;  ///< Why it could not be built or simulated, when !simulated.
  double timeUs = 0;
  /// With --compress: the time predicted without compression, for the gain.
  double uncompressedUs = 0;
  double algbwGBps = 0;
  double busbwGBps = 0;
  std::optional<double> ratio;  ///< algbw / bound, when the collective has a bound.
  bool chosen = false;
};

/// The flow bound a collective is measured against.
struct BoundView {
  std::string name;  ///< "λ(0)", "allreduce (max of σ, RS+AG)", "2·RS+AG".
  topo::Rate rate;   ///< Link units.
};

/// The verifier's verdict on one run mode of the chosen plan.
struct Verdict {
  std::string mode;  ///< "out of place" or "in place".
  bool ok = false;
  std::string error;
};

/// Everything `grove plan --topo` reports.
struct TopoReport {
  topo::Topology topology;
  plan::Collective collective = plan::Collective::kAllReduce;
  int root = -1;
  size_t bytes = 0;  ///< --size (nccl-tests' size: the whole buffer of the call).
  size_t count = 0;  ///< Elements per block of the plan request.
  std::string type;
  std::optional<BoundView> bound;
  std::vector<Candidate> candidates;  ///< Sorted by predicted time; unsimulated ones last.
  std::vector<std::pair<std::string, std::string>> declined;  ///< (algorithm, why).
  std::string choiceReason;
  int fifoDepth = static_cast<int>(common::defaultInteger(common::Param::kFifoDepth));
  double compressionRatio = 1.0;  ///< --compress, or 1.
  std::string cpus;               ///< --cpus, in words (empty: not modelled).
  double codecGBps = 0;
  int verifierTiles = 2;
  std::vector<Verdict> verdicts;
};

/// Builds the report (throws grove::Error naming the flag at fault).
TopoReport analyzeTopoPlan(const TopoPlanOptions& options);

/// GROVE_ALGO as the environment sets it (checked by the parameter table), what a
/// communicator's selection would start from.
std::string environmentAlgo();
/// The cost model with the tile and FIFO depth a communicator would use (GROVE_SLOT_BYTES,
/// GROVE_FIFO_DEPTH from the environment, checked by the parameter table).
algo::CostParams environmentCostParams();

/// "0→1→3, 0→4": the tree as root-to-leaf paths, branches listed where they leave.
std::string treePaths(const TreeView& tree);

/// A rate as "1/2" (exact) or "0.437" (floating point), in link units.
std::string rateText(const topo::Rate& rate);

/// Runs `grove plan --topo` (text or JSON on stdout, drawings to files); throws
/// CommandExit(1) when the verifier rejects the chosen plan.
void runTopoPlan(const TopoPlanOptions& options);

/// Graphviz text of the chosen candidate's structure over the topology (plan_draw.cpp).
std::string toDot(const TopoReport& report);

/// Writes `dotText` as SVG to `svgPath` with Graphviz's `dot -Tsvg`; throws grove::Error
/// naming --svg when dot is missing or fails.
void writeSvg(const std::string& dotText, const std::string& svgPath);

}  // namespace grove::tools
