// `grove plan`: shows the plan grove would run for a call shape and proves it.
//
// The plan is data: this command prints the algorithm choice with its reasons (every
// candidate's α–β estimate or why it declined), the steps of the chosen ranks' plans, and
// the symbolic verifier's verdict for the whole group, out of place and in place. Nothing
// is executed, so it answers "what would grove do with 37 ranks?" on any machine.
//
// With --topo the question becomes "which plan wins on this graph, and how close to the
// optimum does it get?": plan_topo.cpp compares every candidate on the topology with the
// simulator and the flow bounds, and plan_draw.cpp draws the winner's trees (--dot, --svg).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algo/registry.hpp"
#include "command.hpp"
#include "common/parameters.hpp"
#include "grove/error.hpp"
#include "perf_options.hpp"
#include "plan/printer.hpp"
#include "plan/verifier.hpp"
#include "plan_topo.hpp"

namespace grove::tools {
namespace {

struct PlanOptions {
  std::string collective;
  int nranks = 4;
  int rank = -1;
  int root = 0;
  std::string count = "1M";
  std::string type = "float";
  std::string algorithm;
  int fifoDepth = static_cast<int>(common::defaultInteger(common::Param::kFifoDepth));
  int peerMemory = 1;
  // --topo and the flags that only make sense with it.
  std::string topo;
  std::string size;
  std::string compress;
  std::string cpus;
  bool json = false;
  std::string dotFile;
  std::string svgFile;
  bool nranksGiven = false;
  bool countGiven = false;
};

plan::Collective parseCollective(const std::string& name) {
  for (int c = 0; c < plan::kCollectiveCount; ++c) {
    auto collective = static_cast<plan::Collective>(c);
    if (collective != plan::Collective::kSendRecv && name == plan::toString(collective)) {
      return collective;
    }
  }
  throw Error(ErrorCode::kInvalidArgument,
              "collective '" + name +
                  "' is not known (expected allreduce, broadcast, reduce, allgather, "
                  "reducescatter, alltoall, alltoallv, gather, scatter or barrier)");
}

size_t parseCount(const std::string& text) {
  const std::optional<size_t> count = perf::parseBytes(text);
  if (!count) {
    throw Error(ErrorCode::kInvalidArgument,
                "--count '" + text + "' is not a count (expected digits with optional K, M or G)");
  }
  return *count;
}

/// `grove plan --topo`: checks the flag combination and hands over to plan_topo.cpp.
void runTopo(const PlanOptions& options, plan::Collective collective) {
  if (options.size.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "--topo needs --size (the bytes of the call, e.g. --size 64M)");
  }
  if (options.countGiven) {
    throw Error(ErrorCode::kInvalidArgument, "--count does not go with --topo: give --size");
  }
  if (options.rank >= 0) {
    throw Error(ErrorCode::kInvalidArgument, "--rank does not go with --topo");
  }
  TopoPlanOptions topo;
  topo.collective = collective;
  topo.topo = options.topo;
  topo.size = options.size;
  topo.type = options.type;
  topo.algorithm = options.algorithm;
  topo.root = options.root;
  topo.nranks = options.nranksGiven ? options.nranks : -1;
  topo.fifoDepth = options.fifoDepth;
  topo.compress = options.compress;
  topo.cpus = options.cpus;
  topo.json = options.json;
  topo.dotFile = options.dotFile;
  topo.svgFile = options.svgFile;
  runTopoPlan(topo);
}

void runPlan(const PlanOptions& options) {
  const plan::Collective collective = parseCollective(options.collective);
  if (!options.topo.empty()) return runTopo(options, collective);
  for (const auto& [given, flag] :
       {std::pair{!options.size.empty(), "--size"}, std::pair{options.json, "--json"},
        std::pair{!options.dotFile.empty(), "--dot"}, std::pair{!options.svgFile.empty(), "--svg"},
        std::pair{!options.compress.empty(), "--compress"},
        std::pair{!options.cpus.empty(), "--cpus"}}) {
    if (given) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(flag) + " needs --topo (e.g. --topo dgx1v)");
    }
  }
  if (options.nranks < 1) {
    throw Error(ErrorCode::kInvalidArgument, "--nranks must be at least 1");
  }
  if (plan::rooted(collective) && (options.root < 0 || options.root >= options.nranks)) {
    throw Error(ErrorCode::kInvalidArgument, "--root " + std::to_string(options.root) +
                                                 " is out of range for " +
                                                 std::to_string(options.nranks) + " ranks");
  }
  if (options.rank >= options.nranks) {
    throw Error(ErrorCode::kInvalidArgument, "--rank " + std::to_string(options.rank) +
                                                 " is out of range for " +
                                                 std::to_string(options.nranks) + " ranks");
  }
  auto type = parseDataType(options.type);
  if (!type) throw Error(ErrorCode::kInvalidArgument, "--type '" + options.type + "' is not known");

  plan::PlanRequest request{plan::CallShape::made(collective, parseCount(options.count), *type,
                                                  ReduceOp::kSum, options.root),
                            options.nranks, 0};
  // As a communicator decides (core/collective_call.cpp): ranks on one host that read each
  // other's buffers, unless GROVE_DIRECT=0 or --peer-memory 0 says otherwise.
  request.peerMemory =
      options.peerMemory != 0 &&
      common::resolveParameter(common::spec(common::Param::kDirect), {}).number != 0;
  request.oneSidedMinBytes = static_cast<size_t>(
      common::resolveParameter(common::spec(common::Param::kDirectMinBytes), {}).number);
  algo::Selection selection =
      algo::select(request, options.algorithm, environmentAlgo(), environmentCostParams());
  std::printf("# %s of %zu %s elements on %d ranks\n# choice: %s\n", plan::toString(collective),
              request.count, toString(*type).data(), options.nranks, selection.reason.c_str());

  std::vector<plan::Plan> plans;
  for (int r = 0; r < options.nranks; ++r) {
    request.rank = r;
    plans.push_back(selection.algorithm->build(request));
  }
  for (const plan::Plan& p : plans) {
    if (options.rank < 0 || options.rank == p.rank) std::printf("\n%s", plan::toText(p).c_str());
  }
  bool ok = true;
  for (bool inPlace : {false, true}) {
    plan::VerifyOptions verify;
    verify.inPlace = inPlace;
    verify.fifoDepth = options.fifoDepth;
    Status result = plan::verify(plans, verify);
    std::printf("\n# verifier (%s, %d tiles, FIFOs of %d slots): %s\n",
                inPlace ? "in place" : "out of place", verify.tiles, verify.fifoDepth,
                result.ok() ? "proven" : ("FAILED: " + result.message()).c_str());
    ok = ok && result.ok();
  }
  if (!ok) throw CommandExit(1);
}

void addPlanCommand(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* command = app.add_subcommand(
      "plan", "Print and verify the plan grove builds for a collective (nothing is run)");
  command
      ->add_option("collective", options->collective,
                   "allreduce, broadcast, reduce, allgather, reducescatter, alltoall, "
                   "alltoallv, gather, scatter or barrier")
      ->required();
  CLI::Option* nranks =
      command
          ->add_option("-n,--nranks", options->nranks, "Number of ranks (with --topo: its ranks)")
          ->capture_default_str();
  command->add_option("--rank", options->rank, "Print only this rank's plan (default: all)");
  command->add_option("-r,--root", options->root, "Root of rooted collectives")
      ->capture_default_str();
  CLI::Option* count =
      command->add_option("-c,--count", options->count, "Elements per rank (K, M, G suffixes)")
          ->capture_default_str();
  command->add_option("-d,--type", options->type, "Element type")->capture_default_str();
  command->add_option("-A,--algo", options->algorithm,
                      "Force an algorithm (default: GROVE_ALGO, else the cheapest)");
  command
      ->add_option("--peer-memory", options->peerMemory,
                   "1: the ranks share a host and read each other's buffers (the direct "
                   "path may apply, as under grove run); 0: they do not (across hosts)")
      ->capture_default_str();
  command->add_option("--fifo-depth", options->fifoDepth, "FIFO slots the verifier models")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  command->add_option("--compress", options->compress,
                      "With --topo: model GROVE_COMPRESS on the network links, RATIO[:GBPS] "
                      "(e.g. 1.5 for bfloat16 gradients; GBPS: the codec's rate, default "
                      "measured here)");
  command->add_option("--cpus", options->cpus,
                      "With --topo: the ranks share CPUs, N (all on one machine of N CPUs, as "
                      "emulated hosts are) or host:N (N on each host); reductions and coding "
                      "then wait for a CPU");
  command->add_option(
      "--topo", options->topo,
      "Compare every candidate on this topology: a preset (dgx1v, dgx1p, dgx2, "
      "h100x8, cluster:HxK[:g1,..], mesh:N), a subset (dgx1v:0,1,4) or a JSON file");
  command->add_option(
      "--size", options->size,
      "With --topo: bytes of the call as nccl-tests counts them (K, M, G suffixes)");
  command->add_flag("--json", options->json, "With --topo: print the report as one JSON object");
  command->add_option("--dot", options->dotFile,
                      "With --topo: write the chosen plan's trees over the topology (Graphviz)");
  command->add_option("--svg", options->svgFile,
                      "With --topo: the same drawing as SVG (runs Graphviz's dot)");
  command->callback([options, nranks, count] {
    options->nranksGiven = nranks->count() > 0;
    options->countGiven = count->count() > 0;
    runPlan(*options);
  });
}

const CommandRegistration kPlan{"plan", &addPlanCommand};

}  // namespace
}  // namespace grove::tools
