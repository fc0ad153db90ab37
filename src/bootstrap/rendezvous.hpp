// Waiting for other ranks through the store while a communicator is created, such that a
// rank that fails tells the others why instead of leaving them to time out.
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/store.hpp"

namespace grove::bootstrap {

class Rendezvous {
 public:
  /// Keys live under `prefix`; `rank` of `size` is this process.
  Rendezvous(Store& store, std::string prefix, int rank, int size,
             std::chrono::milliseconds timeout);

  /// The value of prefix+key once some rank set it. Throws grove::Error: kRemoteError when
  /// another rank published a failure (naming it and its reason), kTimeout after the
  /// timeout (naming `what`, e.g. "rank 3", and any connection the store refused).
  std::string await(const std::string& key, const std::string& what);

  /// Like await, for the first key of a rendezvous: a store that is not up yet, or whose
  /// connection breaks (the server of an earlier communicator going away), is redialled until
  /// the timeout instead of failing. A refused secret still fails at once.
  std::string awaitStore(const std::string& key, const std::string& what);

  /// Every rank sets prefix+"<name>/<rank>" and awaits the others'; the last rank through
  /// erases the barrier's keys.
  void barrier(const std::string& name);

  /// Tells the other ranks this one failed (best effort; never throws).
  void publishFailure(const std::string& reason) noexcept;

  /// The ranks whose prefix+"<key>/<rank>" is not set, as "1, 3" (for messages).
  std::string missing(const std::string& key);

 private:
  /// await (redial false) and awaitStore (redial true).
  std::string poll(const std::string& key, const std::string& what, bool redial);

  Store& store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
};

}  // namespace grove::bootstrap
