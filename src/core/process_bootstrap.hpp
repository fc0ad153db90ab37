// Creating a communicator whose ranks are processes: rendezvous through the store, learn
// where every rank lives, connect shared memory inside a host and TCP across hosts.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/launch.hpp"

namespace grove::detail {

class CommState;

/// Where this process runs, as a string equal for processes that can share memory: host
/// name, boot id and network namespace (so emulated hosts in namespaces differ).
/// GROVE_HOST_ID overrides it.
std::string hostIdentity();

/// Joins the job described by `info` as info.rank. When `serveStore` is true (rank 0
/// without an external store) this process also serves the rendezvous store at
/// info.rootPort. Throws grove::Error naming what went wrong (missing ranks after the
/// timeout, a rank claimed twice, world sizes that disagree, a refused secret).
std::shared_ptr<CommState> bootstrapProcess(const bootstrap::LaunchInfo& info, bool serveStore);

}  // namespace grove::detail
