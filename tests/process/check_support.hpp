// Shared pieces of process_check: a failure recorder that keeps going after a wrong value,
// guarded buffers, and the deterministic inputs every rank can recompute for every other rank.
//
// Why keep going after a wrong value: in a multi-process job a rank that stops issuing
// collectives makes every other rank wait for it until the timeout, which hides the first
// error behind a pile of timeouts. A wrong value is recorded and the run continues; only a
// thrown grove::Error ends the rank (and aborts the communicator so peers learn of it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grove/communicator.hpp"

namespace grove::proc {

/// Byte written into receive buffers before a call; an element nobody wrote keeps it.
inline constexpr uint8_t kPoison = 0xA5;

/// Records checks and the first failure of one rank.
class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}

  /// Compares `size` bytes; on a mismatch records the first differing byte under `what`.
  void bytes(const std::string& what, const uint8_t* got, const uint8_t* want, size_t size);
  /// Compares two integers (ranks, sizes, validity).
  void equal(const std::string& what, long long got, long long want);
  /// Records a failure that is not a value comparison.
  void fail(const std::string& message);

  bool ok() const { return failures_ == 0; }
  long long checks() const { return checks_; }
  long long failures() const { return failures_; }
  const std::string& firstFailure() const { return first_; }
  int rank() const { return rank_; }

  /// What the rank is doing now, attached to an exception's message.
  std::string step;

 private:
  int rank_;
  long long checks_ = 0;
  long long failures_ = 0;
  std::string first_;
};

/// A byte buffer with guard zones on both sides, so a write past the caller's buffer shows.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t size, uint8_t fill = kPoison);
  uint8_t* data() { return storage_.data() + kGuard; }
  const uint8_t* data() const { return storage_.data() + kGuard; }
  size_t size() const { return size_; }
  /// Records a failure under `what` when a guard byte changed.
  void checkGuards(Checker& check, const std::string& what) const;

 private:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kGuardByte = 0xEE;
  size_t size_;
  std::vector<uint8_t> storage_;
};

/// Byte `pos` of rank `rank`'s data for a data-movement test; never equal to kPoison.
uint8_t patternByte(int rank, size_t pos, int salt);
/// `size` bytes of rank `rank`'s pattern starting at byte `offset`.
std::vector<uint8_t> pattern(int rank, size_t offset, size_t size, int salt);

/// Element i of rank `rank`'s input to a reduction with `op`: small integers chosen so every
/// result is exact in every type whatever order the ranks are combined in.
double reductionValue(int rank, size_t i, ReduceOp op, int salt);
/// `count` elements of rank `rank`'s reduction input.
std::vector<uint8_t> reductionInput(int rank, size_t count, DataType type, ReduceOp op, int salt);
/// The reduction of every rank's input (`nranks` ranks), finalized (kAvg divides).
std::vector<uint8_t> reductionExpected(int nranks, size_t count, DataType type, ReduceOp op,
                                       int salt);

/// From now on (in this process), pattern() gives bytes whose odd positions take four values:
/// the sign and exponent bytes of 2- and 4-byte floats then vary as little as a gradient's, so
/// the codec shrinks them (the compressed suite); the other bytes keep their pattern.
void useCompressiblePatterns();

/// allReduce, reduce and reduceScatter of `count` elements of `type` with `op`, in and out of
/// place (check_reductions.cpp).
void checkAll(Communicator& comm, Checker& check, DataType type, ReduceOp op, size_t count,
              int salt);
/// One data-movement collective of pattern() data, in and out of place (check_movement.cpp).
void checkBroadcast(Communicator& comm, Checker& check, DataType type, size_t count, int root,
                    int salt);
void checkAllGather(Communicator& comm, Checker& check, DataType type, size_t count, int salt);
void checkAllToAll(Communicator& comm, Checker& check, DataType type, size_t count, int salt);
void checkGather(Communicator& comm, Checker& check, DataType type, size_t count, int root,
                 int salt);
void checkScatter(Communicator& comm, Checker& check, DataType type, size_t count, int root,
                  int salt);
/// GROVE_COMPRESS=on over TCP: every collective on float32, bfloat16 and float16 (every
/// operator) with messages the codec shrinks, special values, incompressible bits and a
/// type it passes through (check_compressed.cpp). Run by `process_check compressed`.
void checkCompressed(Communicator& comm, Checker& check);

/// Reductions: allReduce, reduce and reduceScatter, every type and operator, in and out of
/// place (check_reductions.cpp).
void checkReductions(Communicator& comm, Checker& check);
/// Data movement: broadcast, allGather, allToAll, gather, scatter, in and out of place
/// (check_movement.cpp).
void checkMovement(Communicator& comm, Checker& check);
/// allToAllv, send/recv in groups, barrier, async calls, split (check_groups.cpp).
void checkGroups(Communicator& comm, Checker& check);
/// allReduce, reduceScatter, allGather and broadcast over grove::allocate memory, sub-buffers
/// of it and mixes with ordinary memory; allocate/allReduce/deallocate rounds
/// (check_registered.cpp). Run instead of the others by `process_check registered`.
void checkRegistered(Communicator& comm, Checker& check);

}  // namespace grove::proc
