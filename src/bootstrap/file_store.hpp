// A Store kept in a directory of a file system every rank can see (NFS, Lustre, a local
// directory for processes of one host). No server to start and no port to agree on: the
// directory is the rendezvous. Values are files written atomically (temp file + rename);
// add() is serialised by flock() on a lock file in the directory.
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/store.hpp"

namespace grove::bootstrap {

class FileStore : public Store {
 public:
  /// Uses `directory`, creating it if needed (throws kSystemError naming it when that fails).
  /// `timeout` bounds add()'s wait for the lock.
  explicit FileStore(std::string directory,
                     std::chrono::milliseconds timeout = std::chrono::minutes(5));

  void set(std::string_view key, std::string_view value) override;
  /// Polls with backoff (1 ms doubling to 100 ms) until the key's file appears.
  std::string get(std::string_view key, std::chrono::milliseconds timeout) override;
  int64_t add(std::string_view key, int64_t delta) override;
  bool check(std::string_view key) override;
  void erase(std::string_view key) override;

  /// The file that holds `key`: "k-" plus the key with bytes outside [A-Za-z0-9._-]
  /// written as %XX, or "h-" plus its SHA-256 when that name would be too long.
  std::string pathOf(std::string_view key) const;

 private:
  void writeAtomically(const std::string& path, std::string_view value);

  std::string directory_;
  std::chrono::milliseconds timeout_;
};

}  // namespace grove::bootstrap
