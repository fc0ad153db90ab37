// Creating a communicator whose ranks are processes: rendezvous through the store, learn
// where every rank lives, connect shared memory inside a host and TCP across hosts.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/launch.hpp"
#include "bootstrap/store.hpp"
#include "core/config.hpp"

namespace grove::detail {

class CommState;

/// Where this process runs, as a string equal for processes that can share memory: host
/// name, boot id and network namespace (so emulated hosts in namespaces differ).
/// `forced` (GROVE_HOST_ID), when not empty, replaces it.
std::string hostIdentity(const std::string& forced);

/// Joins the job described by `info` as info.rank with the settings `config`. When `serveStore` is
/// true (rank 0 without an external store) this process also serves the rendezvous store at
/// info.rootPort. Throws grove::Error naming what went wrong (missing ranks after the
/// timeout, a rank claimed twice, world sizes that disagree, a refused secret).
/// `runningServer`, when given, is a store server this process already runs for the job (a
/// unique id's): the communicator keeps it alive for as long as it lives.
std::shared_ptr<CommState> bootstrapProcess(const bootstrap::LaunchInfo& info, const Config& config,
                                            bool serveStore,
                                            std::shared_ptr<void> runningServer = nullptr);

/// Joins the job as info.rank through `store`, which the caller brings (and serves, if it
/// serves it: `server` is kept alive with the communicator). `where` names the store in
/// messages and keys the init generations (see process_bootstrap.cpp).
std::shared_ptr<CommState> joinThrough(const bootstrap::LaunchInfo& info, const Config& config,
                                       std::shared_ptr<bootstrap::Store> store,
                                       std::shared_ptr<void> server, const std::string& where);

/// Throws kInvalidUsage when GROVE_REQUIRE_SECRET=1 and `info` carries no secret.
void requireSecretIfAsked(const Config& config, const bootstrap::LaunchInfo& info);

}  // namespace grove::detail
