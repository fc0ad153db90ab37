// nccl-tests' table, reproduced column for column (see perf_report.hpp), and its JSON twin.
#include "perf_report.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "grove/error.hpp"
#include "grove/version.hpp"

namespace grove::tools::perf {
namespace {

const char* kCombineNames[] = {"rank0", "mean", "min", "max"};

/// nccl-tests' time column: fewer decimals as the time grows.
std::string formatTime(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

std::string formatMeasurement(const Measurement& m) {
  const std::string wrong = m.wrong ? std::to_string(*m.wrong) : std::string("N/A");
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>6}", formatTime(m.timeUs), m.algBw, m.busBw,
                     wrong);
}

nlohmann::json measurementJson(const Measurement& m) {
  nlohmann::json j;
  j["time_us"] = m.timeUs;
  j["algbw"] = m.algBw;
  j["busbw"] = m.busBw;
  j["wrong"] = m.wrong ? nlohmann::json(*m.wrong) : nlohmann::json(nullptr);
  return j;
}

}  // namespace

void printHeader(std::FILE* out, const Options& options, const std::vector<RankLine>& ranks) {
  std::string step = options.stepFactor > 1 ? fmt::format("{}(factor)", options.stepFactor)
                                            : fmt::format("{}(bytes)", options.stepBytes);
  fmt::print(out, "# Collective test starting: grove perf {} (grove {})\n",
             toString(options.collective), GROVE_VERSION_STRING);
  fmt::print(out,
             "# nThread {} nGpus 1 minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} "
             "agg iters: 1 validation: {} graph: 0 registered: {}\n",
             options.nranks, options.minBytes, options.maxBytes, step, options.warmupIters,
             options.iters, options.check, options.registered);
  fmt::print(out, "# Algorithm: {}  Time: {} over ranks (-a {})\n",
             options.algorithm.empty() ? "chosen by grove" : options.algorithm,
             kCombineNames[static_cast<int>(options.combine)], static_cast<int>(options.combine));
  fmt::print(out, "#\n# Using devices\n");
  for (const RankLine& r : ranks) {
    fmt::print(out, "#  Rank {:2} Group {:2} Pid {:6} on {:>10} transport {}\n", r.rank, r.group,
               r.pid, r.host, r.transport);
  }
  fmt::print(out, "#\n");
  fmt::print(out, "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place{:23}in-place\n", "",
             "", "", "", "", "");
  fmt::print(out,
             "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  "
             "{:>6}  {:>6}\n",
             "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
             "algbw", "busbw", "#wrong");
  fmt::print(out,
             "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  "
             "{:>6}\n",
             "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
             "(GB/s)");
  std::fflush(out);
}

std::string formatRow(const Row& row) {
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}", row.bytes, row.count,
                     grove::toString(row.type), row.op ? grove::toString(*row.op) : "none",
                     row.root, formatMeasurement(row.outOfPlace), formatMeasurement(row.inPlace));
}

Summary summarize(const std::vector<Row>& rows) {
  Summary summary;
  summary.rows = rows.size();
  double busBw = 0;
  for (const Row& row : rows) {
    summary.wrong += row.outOfPlace.wrong.value_or(0) + row.inPlace.wrong.value_or(0);
    busBw += row.outOfPlace.busBw + row.inPlace.busBw;
  }
  summary.avgBusBw = rows.empty() ? 0.0 : busBw / (2.0 * static_cast<double>(rows.size()));
  return summary;
}

void printFooter(std::FILE* out, const Summary& summary) {
  fmt::print(out, "# Out of bounds values : {} {}\n", summary.wrong,
             summary.wrong == 0 ? "OK" : "FAILED");
  fmt::print(out, "# Avg bus bandwidth    : {:.3f}\n#\n", summary.avgBusBw);
  std::fflush(out);
}

nlohmann::json toJson(const Options& options, const std::vector<Row>& rows,
                      const Summary& summary) {
  nlohmann::json config;
  config["collective"] = std::string(toString(options.collective));
  config["nranks"] = options.nranks;
  config["minbytes"] = options.minBytes;
  config["maxbytes"] = options.maxBytes;
  config["stepfactor"] = options.stepFactor;
  config["stepbytes"] = options.stepBytes;
  config["iters"] = options.iters;
  config["warmup_iters"] = options.warmupIters;
  config["check"] = options.check;
  config["root"] = options.root;
  config["average"] = static_cast<int>(options.combine);
  config["algorithm"] = options.algorithm;
  config["registered"] = options.registered;
  nlohmann::json types = nlohmann::json::array();
  for (DataType type : options.types) types.push_back(std::string(grove::toString(type)));
  config["datatypes"] = types;
  nlohmann::json ops = nlohmann::json::array();
  for (ReduceOp op : options.ops) ops.push_back(std::string(grove::toString(op)));
  config["ops"] = ops;

  nlohmann::json results = nlohmann::json::array();
  for (const Row& row : rows) {
    nlohmann::json j;
    j["collective"] = std::string(toString(row.collective));
    j["size"] = row.bytes;
    j["count"] = row.count;
    j["type"] = std::string(grove::toString(row.type));
    j["redop"] = row.op ? std::string(grove::toString(*row.op)) : std::string("none");
    j["root"] = row.root;
    j["nranks"] = row.nranks;
    j["algorithm"] = row.algorithm;
    j["out_of_place"] = measurementJson(row.outOfPlace);
    j["in_place"] = measurementJson(row.inPlace);
    results.push_back(std::move(j));
  }

  nlohmann::json report;
  report["tool"] = "grove perf";
  report["version"] = GROVE_VERSION_STRING;
  report["config"] = std::move(config);
  report["results"] = std::move(results);
  report["summary"] = {{"rows", summary.rows},
                       {"out_of_bounds", summary.wrong},
                       {"ok", summary.wrong == 0},
                       {"avg_busbw", summary.avgBusBw}};
  return report;
}

void writeJson(const std::string& path, const nlohmann::json& report) {
  std::ofstream file(path);
  if (file) file << report.dump(2) << '\n';
  if (!file) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("-J/--json: cannot write '{}': {}", path, std::strerror(errno)));
  }
}

}  // namespace grove::tools::perf
