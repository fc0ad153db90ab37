// Rendezvous of ranks that are threads of one process, keyed by a unique id: what
// groveCommInitRank uses when all ranks live in this process.
#pragma once

#include <chrono>
#include <string_view>

#include "grove/communicator.hpp"

namespace grove::detail {

/// Joins the in-process group named `key` as `rank` of `nranks`. Blocks until all nranks
/// ranks have joined (each from its own thread), then returns this rank's communicator.
/// Throws grove::Error: kInvalidArgument for rank out of range, kInvalidUsage when two
/// callers claim the same rank or disagree on nranks, kTimeout (naming the missing ranks)
/// when the group is not complete within `timeout`.
Communicator joinInProcessGroup(std::string_view key, int nranks, int rank,
                                std::chrono::milliseconds timeout);

}  // namespace grove::detail
