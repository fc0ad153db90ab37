// Waiting for other ranks through the store while a communicator is created, such that a
// rank that fails tells the others why instead of leaving them to time out, and a rank that
// dies is named even through a store that cannot report it (init_liveness.hpp).
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/init_liveness.hpp"
#include "bootstrap/store.hpp"

namespace grove::bootstrap {

class Rendezvous {
 public:
  /// Keys live under `prefix`; `rank` of `size` is this process. `silence` is the heartbeat
  /// timeout after which a waiting rank takes a silent one for dead, through a store that
  /// cannot report closed connections (0: only the timeout).
  Rendezvous(Store& store, std::string prefix, int rank, int size,
             std::chrono::milliseconds timeout,
             std::chrono::milliseconds silence = std::chrono::milliseconds(0));

  /// The value of prefix+key once some rank set it. Throws grove::Error: kRemoteError when
  /// another rank published a failure (naming it and its reason), kTimeout after the
  /// timeout (naming `what`, e.g. "rank 3", and any connection the store refused);
  /// kRemoteError too when the pulse finds a rank silent (which it publishes).
  std::string await(const std::string& key, const std::string& what);

  /// Like await, for the first key of a rendezvous: a store that is not up yet, or whose
  /// connection breaks (the server of an earlier communicator going away), is redialled until
  /// the timeout instead of failing. A refused secret still fails at once.
  std::string awaitStore(const std::string& key, const std::string& what);

  /// Every rank sets prefix+"<name>/<rank>" and awaits the others'; the last rank through
  /// erases the barrier's keys (and the pulse's counters when `last` is set: the final
  /// barrier of a rendezvous).
  void barrier(const std::string& name, bool last = false);

  /// Tells the other ranks this one failed (best effort; never throws). The first account
  /// of a failure stays: one already published is not overwritten.
  void publishFailure(const std::string& reason) noexcept;

  /// The ranks whose prefix+"<key>/<rank>" is not set, as "1, 3" (for messages).
  std::string missing(const std::string& key);

 private:
  /// Sets prefix+"failed" to `account` unless a failure is published already.
  void publish(const std::string& account) noexcept;
  /// await (redial false) and awaitStore (redial true).
  std::string poll(const std::string& key, const std::string& what, bool redial);

  Store& store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  InitLiveness liveness_;
};

}  // namespace grove::bootstrap
