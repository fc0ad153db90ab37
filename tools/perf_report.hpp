// How grove perf shows its results: the nccl-tests table on stdout (header, one line per
// size, footer) and the same rows as JSON (-J). Users compare these tables with nccl-tests'
// by eye and by script, so the columns, their order and their units are nccl-tests' own.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "grove/types.hpp"
#include "perf_options.hpp"

namespace grove::tools::perf {

/// One timed placement (out-of-place or in-place) of one size.
struct Measurement {
  double timeUs = 0;             ///< Mean time of one call, combined over ranks per -a.
  double algBw = 0;              ///< size / time, GB/s (10^9 bytes per second).
  double busBw = 0;              ///< algBw * busBandwidthFactor().
  std::optional<int64_t> wrong;  ///< Wrong elements over all ranks; empty with -c 0.
};

/// One line of the table.
struct Row {
  Collective collective = Collective::kAllReduce;
  size_t bytes = 0;  ///< The "size" column.
  size_t count = 0;  ///< The "count" column: the count argument of the call.
  DataType type = DataType::kFloat32;
  std::optional<ReduceOp> op;  ///< Empty for the collectives that do not reduce.
  int root = -1;               ///< -1 for the collectives without a root.
  int nranks = 1;
  std::string algorithm;  ///< The algorithm grove ran ("p2p" for sendrecv).
  Measurement outOfPlace;
  Measurement inPlace;
};

/// One "# Using devices" line: where a rank runs.
struct RankLine {
  int rank = 0;
  int group = 0;
  int pid = 0;
  std::string host;
  std::string transport;
};

/// Totals shown in the footer.
struct Summary {
  size_t rows = 0;
  int64_t wrong = 0;    ///< Wrong elements over every row and placement.
  double avgBusBw = 0;  ///< Mean busbw over every row and placement.
};

/// Prints the parameter lines, the rank lines and the column titles.
void printHeader(std::FILE* out, const Options& options, const std::vector<RankLine>& ranks);

/// One table line (no newline).
std::string formatRow(const Row& row);

/// Totals of `rows`.
Summary summarize(const std::vector<Row>& rows);

/// Prints "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X".
void printFooter(std::FILE* out, const Summary& summary);

/// The JSON report: {"tool", "version", "config", "results": [row...], "summary"}.
nlohmann::json toJson(const Options& options, const std::vector<Row>& rows, const Summary& summary);

/// Writes toJson() to `path`; throws grove::Error(kSystemError) naming the path on failure.
void writeJson(const std::string& path, const nlohmann::json& report);

}  // namespace grove::tools::perf
