// The rendezvous store: a small key-value service every rank of a job can reach, through
// which ranks exchange addresses and segment names while a communicator is created.
//
// grove brings its own (a TCP store served by rank 0 or `grove store`, and a file store);
// a framework that already runs one (PyTorch's c10d::Store, a Ray or etcd key-value store)
// implements this interface over it and creates communicators with
// Communicator::fromStore, so that no second server and no second port are needed
// (docs/pytorch.md shows the adapter over torch's store).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove {

/// A key-value store shared by every rank of a job. Implementations must be safe to call
/// from several threads: grove calls it from the creating thread and, for peers' addresses,
/// from the TCP transport's dialing threads, and a framework may share one store among
/// groups created concurrently.
class Store {
 public:
  virtual ~Store() = default;

  /// Stores `value` under `key` (overwriting).
  virtual void set(std::string_view key, std::string_view value) = 0;
  /// The value of `key`, waiting up to `timeout` for it to be set; throws
  /// grove::Error(ErrorCode::kTimeout) naming the key when it is not.
  virtual std::string get(std::string_view key, std::chrono::milliseconds timeout) = 0;
  /// Atomically adds `delta` to the integer stored under `key` (absent = 0); returns the
  /// new value.
  virtual int64_t add(std::string_view key, int64_t delta) = 0;
  /// Whether `key` is set now (no waiting).
  virtual bool check(std::string_view key) = 0;
  /// Removes `key` (absent: nothing happens). Waiters for it keep waiting.
  virtual void erase(std::string_view key) = 0;
  /// A "last will": when this client's connection to the store ends before the will is
  /// cancelled (its process died, or the connection broke), the store sets `key` to
  /// `value` unless `key` is set by then (the first account of a failure wins). An empty
  /// `value` cancels the will for `key`. Stores that cannot tell (files, a framework's store)
  /// ignore it, as the default does, and say so in reportsClosedConnections.
  virtual void setOnClose(std::string_view /*key*/, std::string_view /*value*/) {}
  /// Whether setOnClose works: the store sees a client's connection end. A store that does
  /// not (the default) gets a pulse instead while a communicator is created: each waiting
  /// rank bumps a counter key about once a second and reads the others', and a rank whose
  /// counter stands still for GROVE_HEARTBEAT_TIMEOUT is named as failed
  /// (src/bootstrap/init_liveness.hpp). So a rank killed or stopped during init is found in
  /// seconds through any store.
  virtual bool reportsClosedConnections() const { return false; }
  /// After this, a broken connection to the store is an error at once
  /// (ErrorCode::kRemoteError) instead of being redialled until the timeout.
  virtual void failOnDisconnect() {}
};

}  // namespace grove
