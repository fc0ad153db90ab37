// What `grove run` gives each rank to find the others: a free rendezvous port, a job secret
// and job id, and each rank's environment; and the clean-up of shared-memory segments that a
// killed rank of the job may have left in /dev/shm.
//
// These are small system helpers kept apart from the process supervision so they can be read
// (and changed) without reading the signal and poll loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace grove::tools::run {

/// A TCP port on 127.0.0.1 that was free a moment ago: binds port 0, reads the port the
/// kernel chose and closes the socket. Throws grove::Error(kSystemError) on failure.
uint16_t findFreePort();

/// `bytes` random bytes from getrandom(2), as lowercase hex (2 * bytes characters). Throws
/// grove::Error(kSystemError) on failure.
std::string randomHex(size_t bytes);

/// The environment of one rank: every `NAME=value` of `base` (a null-terminated array such
/// as `environ`) whose NAME is not set in `overrides`, then the overrides in their order.
std::vector<std::string> mergeEnvironment(
    const char* const* base, const std::vector<std::pair<std::string, std::string>>& overrides);

/// Unlinks every entry of `directory` whose name starts with `grove-<jobId>-` (the
/// shared-memory segments of that job). Returns how many were removed; a missing directory
/// or an entry that cannot be removed is skipped silently. An empty `jobId` removes nothing.
int removeJobSegments(const std::string& jobId, const std::string& directory = "/dev/shm");

}  // namespace grove::tools::run
