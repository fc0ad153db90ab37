// Runs grove perf: one thread per rank over an in-process communicator, timing and checking
// every size, type and operator, printing the table as rows complete.
#pragma once

#include <cstdio>

#include "perf_options.hpp"

namespace grove::tools::perf {

/// Runs the measurement described by `options`, printing the table to `out` (and writing
/// the JSON report when options.jsonPath is set). Returns the exit status: 0 when every
/// checked element was right, 1 otherwise. Throws grove::Error when a call fails, naming
/// the rank.
int runPerf(const Options& options, std::FILE* out);

}  // namespace grove::tools::perf
