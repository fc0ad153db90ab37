// The rendezvous store: a small key-value service every rank of a job can reach, used to
// exchange addresses and segment names while communicators are created.
//
// Implementations: TcpStore (a server run by rank 0 or by `grove store --port P`; every
// connection authenticated with the job secret) and FileStore (a directory on a shared file
// system). Keys are short strings; values are byte strings of at most kMaxValueBytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace grove::bootstrap {

/// Largest value the stores accept (anything larger is rejected before allocation).
inline constexpr size_t kMaxValueBytes = 16 * 1024 * 1024;
/// Longest key the stores accept.
inline constexpr size_t kMaxKeyBytes = 1024;

class Store {
 public:
  virtual ~Store() = default;

  /// Stores `value` under `key` (overwriting).
  virtual void set(std::string_view key, std::string_view value) = 0;
  /// The value of `key`, waiting up to `timeout` for it to be set; throws
  /// grove::Error(kTimeout) naming the key when it is not.
  virtual std::string get(std::string_view key, std::chrono::milliseconds timeout) = 0;
  /// Atomically adds `delta` to the integer stored under `key` (absent = 0); returns the new
  /// value.
  virtual int64_t add(std::string_view key, int64_t delta) = 0;
  /// Whether `key` is set now (no waiting).
  virtual bool check(std::string_view key) = 0;
  /// Removes `key` (absent: nothing happens). Waiters for it keep waiting.
  virtual void erase(std::string_view key) = 0;
  /// A "last will": when this client's connection to the store ends before the will is
  /// cancelled (its process died, or the connection broke), the store sets `key` to `value`
  /// unless `key` is set by then (the first account of a failure wins).
  /// An empty `value` cancels the will for `key`. Stores without connections (the file
  /// store) cannot tell and ignore it; so does the default.
  virtual void setOnClose(std::string_view /*key*/, std::string_view /*value*/) {}
  /// After this, a broken connection to the store is an error at once (kRemoteError) instead
  /// of being redialled until the timeout: for a server whose loss means the job is gone.
  virtual void failOnDisconnect() {}
};

}  // namespace grove::bootstrap
