// `grove perf`: the flags (nccl-tests' letters and long names) and their checks, turned into
// perf::Options and handed to the runner. Every rejected flag is named in the message
// together with what was expected.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "bootstrap/launch.hpp"
#include "command.hpp"
#include "grove/error.hpp"
#include "grove/types.hpp"
#include "perf_options.hpp"
#include "perf_runner.hpp"

namespace grove::tools {
namespace {

/// The flags as typed, before validation.
struct PerfArgs {
  std::string collective;
  std::string minBytes = "32M";
  std::string maxBytes = "32M";
  size_t stepFactor = 1;
  std::string stepBytes = "1M";
  int iters = 20;
  int warmupIters = 5;
  int check = 1;
  std::string datatype = "float";
  std::string op = "sum";
  int root = 0;
  int nthreads = 1;
  int average = 1;
  int blocking = 0;
  int registered = 0;
  std::string algorithm;
  std::string json;
  std::string fill = "pattern";
  int ngpus = 1;
  int parallelInit = 0;
};

[[noreturn]] void reject(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

size_t parseBytesFlag(const char* flag, const std::string& text) {
  const std::optional<size_t> bytes = perf::parseBytes(text);
  if (!bytes) {
    reject(
        fmt::format("{}: '{}' is not a byte count (expected an integer with an optional "
                    "K, M or G suffix, e.g. 8, 64K, 1M)",
                    flag, text));
  }
  return *bytes;
}

void requireRange(const char* flag, int value, int low, int high, const char* meaning) {
  if (value < low || value > high) {
    reject(fmt::format("{}: {} is out of range (expected {} <= value <= {}: {})", flag, value, low,
                       high, meaning));
  }
}

std::string typeNames() {
  std::string names;
  for (DataType type : perf::allDataTypes()) names += std::string(toString(type)) + ", ";
  return names + "or all";
}

std::string opNames() {
  std::string names;
  for (ReduceOp op : perf::allReduceOps()) names += std::string(toString(op)) + ", ";
  return names + "band, bor, bxor (integer types), or all (the first five)";
}

perf::Options validate(const PerfArgs& args, bool stepFactorGiven) {
  perf::Options o;
  const std::optional<perf::Collective> collective = perf::parseCollective(args.collective);
  if (!collective) {
    std::string names;
    for (perf::Collective c : perf::allCollectives()) names += " " + std::string(toString(c));
    reject(fmt::format("COLLECTIVE: unknown collective '{}' (expected one of:{})", args.collective,
                       names));
  }
  o.collective = *collective;
  o.minBytes = parseBytesFlag("-b/--minbytes", args.minBytes);
  o.maxBytes = parseBytesFlag("-e/--maxbytes", args.maxBytes);
  if (o.minBytes > o.maxBytes) {
    reject(fmt::format("-b/--minbytes ({}) is larger than -e/--maxbytes ({})", o.minBytes,
                       o.maxBytes));
  }
  if (stepFactorGiven && args.stepFactor < 1) {
    reject(
        fmt::format("-f/--stepfactor: {} is not a factor (expected an integer >= 1; 1 "
                    "steps by -i instead)",
                    args.stepFactor));
  }
  o.stepFactor = args.stepFactor;
  o.stepBytes = parseBytesFlag("-i/--stepbytes", args.stepBytes);
  if (o.stepFactor <= 1 && o.stepBytes == 0) {
    reject("-i/--stepbytes: 0 would never reach -e/--maxbytes (expected a positive size)");
  }
  requireRange("-n/--iters", args.iters, 1, 1 << 30, "timed calls per size");
  requireRange("-w/--warmup_iters", args.warmupIters, 0, 1 << 30, "untimed calls");
  requireRange("-c/--check", args.check, 0, 1 << 20, "checking runs per size, 0 = off");
  requireRange("-t/--nthreads", args.nthreads, 1, 1024, "ranks as threads of this process");
  requireRange("-a/--average", args.average, 0, 3, "0 rank 0, 1 mean, 2 min, 3 max");
  requireRange("-z/--blocking", args.blocking, 0, 1, "grove calls always block");
  o.iters = args.iters;
  o.warmupIters = args.warmupIters;
  o.check = args.check;
  o.nranks = args.nthreads;
  const bool launched =
      bootstrap::detectLaunch([](const char* name) { return std::getenv(name); }).has_value();
  o.combine = static_cast<perf::TimeCombine>(args.average);
  o.blocking = args.blocking;
  requireRange("-R/--registered", args.registered, 0, 1,
               "0 ordinary buffers, 1 buffers from grove::allocate");
  o.registered = args.registered;
  // Under a launcher the rank count is the job's, known once the communicator exists; the
  // runner checks the root then.
  if (perf::hasRoot(o.collective) && (args.root < 0 || (args.root >= o.nranks && !launched))) {
    reject(
        fmt::format("-r/--root: {} is out of range for {} with {} ranks (expected 0 <= root < {})",
                    args.root, toString(o.collective), o.nranks, o.nranks));
  }
  o.root = args.root;

  if (args.datatype == "all") {
    o.types = perf::allDataTypes();
  } else if (const std::optional<DataType> type = parseDataType(args.datatype)) {
    o.types = {*type};
  } else {
    reject(fmt::format("-d/--datatype: unknown type '{}' (expected one of: {})", args.datatype,
                       typeNames()));
  }
  if (args.op == "all") {
    o.ops = perf::allReduceOps();
  } else if (const std::optional<ReduceOp> op = parseReduceOp(args.op)) {
    o.ops = {*op};
  } else {
    reject(fmt::format("-o/--op: unknown operator '{}' (expected one of: {})", args.op, opNames()));
  }
  o.algorithm = args.algorithm;
  o.jsonPath = args.json;
  o.fill = args.fill == "gaussian" ? perf::Fill::kGaussian
           : args.fill == "random" ? perf::Fill::kRandom
                                   : perf::Fill::kPattern;
  return o;
}

}  // namespace

void addPerfCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "perf",
      "Measure a collective as nccl-tests does: time, algorithm and bus bandwidth, and "
      "correctness, over a range of sizes. Ranks are threads of this process (-t).");
  auto args = std::make_shared<PerfArgs>();
  cmd->add_option("collective", args->collective,
                  "allreduce, broadcast, reduce, allgather, reducescatter, alltoall, gather, "
                  "scatter or sendrecv")
      ->required();
  cmd->add_option("-b,--minbytes", args->minBytes, "Smallest size in bytes (K/M/G suffixes)")
      ->capture_default_str();
  cmd->add_option("-e,--maxbytes", args->maxBytes, "Largest size in bytes (K/M/G suffixes)")
      ->capture_default_str();
  CLI::Option* factor =
      cmd->add_option("-f,--stepfactor", args->stepFactor, "Multiply the size by this factor");
  CLI::Option* step =
      cmd->add_option("-i,--stepbytes", args->stepBytes,
                      "Add this many bytes per step (used when no factor > 1 is given)")
          ->capture_default_str();
  factor->excludes(step);
  cmd->add_option("-n,--iters", args->iters, "Timed calls per size")->capture_default_str();
  cmd->add_option("-w,--warmup_iters", args->warmupIters,
                  "Untimed calls at the largest and smallest size")
      ->capture_default_str();
  cmd->add_option("-c,--check", args->check, "Checking runs per size (0: no check)")
      ->capture_default_str();
  cmd->add_option("-d,--datatype", args->datatype, "Element type: " + typeNames())
      ->capture_default_str();
  cmd->add_option("-o,--op", args->op, "Reduction operator: " + opNames())->capture_default_str();
  cmd->add_option("-r,--root", args->root, "Root rank of broadcast, reduce, gather, scatter")
      ->capture_default_str();
  cmd->add_option("-t,--nthreads", args->nthreads, "Ranks, as threads of this process")
      ->capture_default_str();
  cmd->add_option("-a,--average", args->average,
                  "Combine per-rank times: 0 rank 0, 1 mean, 2 min, 3 max")
      ->capture_default_str();
  cmd->add_option("-z,--blocking", args->blocking,
                  "Accepted for nccl-tests compatibility "
                  "(grove calls block)")
      ->capture_default_str();
  cmd->add_option("-R,--registered", args->registered,
                  "Buffers: 0 ordinary memory, 1 registered (grove::allocate: read in place "
                  "by the other ranks of this host)")
      ->capture_default_str();
  cmd->add_option("-A,--algo", args->algorithm,
                  "Algorithm for every call (CallOptions::algorithm), e.g. ring, tree; "
                  "default: grove chooses");
  cmd->add_option("-J,--json", args->json, "Also write every row as JSON to this file");
  cmd->add_option("--fill", args->fill,
                  "What timed calls send: pattern (small integers, as the checks), gaussian "
                  "(floating values drawn like gradients, for GROVE_COMPRESS) or random "
                  "(uniform bits: nothing to compress)")
      ->check(CLI::IsMember({"pattern", "gaussian", "random"}))
      ->capture_default_str();
  CLI::Option* ngpus = cmd->add_option("-g,--ngpus", args->ngpus, "Accepted and ignored (no GPUs)");
  CLI::Option* parallel =
      cmd->add_option("-p,--parallel_init", args->parallelInit, "Accepted and ignored");

  cmd->callback([args, factor, ngpus, parallel] {
    if (ngpus->count() > 0) {
      std::fprintf(stderr, "grove perf: note: -g/--ngpus is ignored: ranks are threads (-t)\n");
    }
    if (parallel->count() > 0) {
      std::fprintf(stderr, "grove perf: note: -p/--parallel_init is ignored\n");
    }
    const perf::Options options = validate(*args, factor->count() > 0);
    const int status = perf::runPerf(options, stdout);
    if (status != 0) throw CommandExit(status);
  });
}

namespace {
const CommandRegistration kPerfCommand{"perf", &addPerfCommand};
}  // namespace

}  // namespace grove::tools
