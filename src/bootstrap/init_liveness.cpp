#include "bootstrap/init_liveness.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace grove::bootstrap {

InitLiveness::InitLiveness(Store& store, std::string prefix, int rank, int size,
                           std::chrono::milliseconds silence)
    : store_(store),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      silence_(silence),
      enabled_(silence.count() > 0 && size > 1 && !store.reportsClosedConnections()),
      seen_(enabled_ ? static_cast<size_t>(size) : 0),
      nextRead_(size > 0 ? (rank + 1) % size : 0) {}

std::string InitLiveness::key(int rank) const { return fmt::format("{}alive/{}", prefix_, rank); }

std::string InitLiveness::tick(Clock::time_point now) {
  if (!enabled_ || now < nextBeat_) return {};
  nextBeat_ = now + kBeat;
  store_.add(key(rank_), 1);
  const int reads = std::min(size_ - 1, kRanksPerBeat);
  for (int i = 0; i < reads; ++i) {
    const int q = nextRead_;
    nextRead_ = (nextRead_ + 1) % size_;
    if (nextRead_ == rank_) nextRead_ = (nextRead_ + 1) % size_;
    // add(key, 0) reads the counter in one round trip (creating it at 0 if absent).
    const int64_t count = store_.add(key(q), 0);
    Seen& seen = seen_[static_cast<size_t>(q)];
    if (count <= 0) continue;  // not counting yet: maybe not started
    if (count != seen.count) {
      seen = {count, now};
      continue;
    }
    if (now - seen.since >= silence_) {
      return fmt::format(
          "rank {} failed: no sign of life from it at the store for {:.1f} s while the "
          "communicator was being created (GROVE_HEARTBEAT_TIMEOUT): its process ended, was "
          "killed or is stopped (this store cannot report a closed connection)",
          q,
          std::chrono::duration_cast<std::chrono::milliseconds>(now - seen.since).count() / 1000.0);
    }
  }
  return {};
}

void InitLiveness::erase() {
  if (!enabled_) return;
  for (int q = 0; q < size_; ++q) store_.erase(key(q));
}

}  // namespace grove::bootstrap
