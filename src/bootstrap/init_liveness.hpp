// Finding a rank that dies while a communicator is being created, through a store that cannot
// report a closed connection (a framework's store such as torch's, or a file store).
//
// grove's own TCP store leaves a "last will" for each rank (Store::setOnClose), so a rank
// killed during init is named at once. Other stores cannot, and the others would wait out the
// init timeout (GROVE_TIMEOUT, 300 s; torch's group timeout). So while ranks wait for each other
// they also keep a pulse: each bumps a counter under prefix+"alive/<rank>" about once a second
// and reads the others' counters; a rank whose counter has stood still for the heartbeat
// timeout (GROVE_HEARTBEAT_TIMEOUT) since this rank first saw it is taken for dead (ended,
// killed or stopped) and named. A rank that has not counted yet is never judged: it may not
// have started, and the init timeout names it. Judging needs a counter seen to stand still,
// so a late starter costs nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"

namespace grove::bootstrap {

class InitLiveness {
 public:
  using Clock = std::chrono::steady_clock;

  /// Counters are read per beat for at most this many ranks (in turn, beyond it), so a large
  /// job's waiting ranks do not flood the store.
  static constexpr int kRanksPerBeat = 64;
  static constexpr std::chrono::milliseconds kBeat{1000};

  /// `silence` <= 0 turns the pulse off (GROVE_HEARTBEAT_TIMEOUT=0), as does a store that
  /// reports closed connections itself.
  InitLiveness(Store& store, std::string prefix, int rank, int size,
               std::chrono::milliseconds silence);

  bool enabled() const { return enabled_; }

  /// Called while this rank waits: when a beat is due, bumps this rank's counter and reads
  /// others'. Returns the account of a rank found silent ("rank 2 failed: no sign of life
  /// ..."), else an empty string. Store errors propagate (the caller's wait handles them).
  std::string tick(Clock::time_point now);

  /// Removes every rank's counter (the last rank out of the final barrier: nobody reads them
  /// any more).
  void erase();

 private:
  std::string key(int rank) const;

  struct Seen {
    int64_t count = 0;  ///< 0: not counting yet.
    Clock::time_point since{};
  };

  Store& store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds silence_;
  bool enabled_;
  std::vector<Seen> seen_;
  int nextRead_;  ///< Where the next beat's reading starts.
  Clock::time_point nextBeat_{};
};

}  // namespace grove::bootstrap
