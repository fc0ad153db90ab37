// The data grove perf sends and the check of what arrives. Every rank's send buffer holds
// small integers derived from (rank, index, salt), chosen per operator and type so that
// every partial result of every reduction order is exact in the type: the expected value
// is then independent of the algorithm, and the check can be exact (floating avg, which
// divides, is allowed 2 ulp as in nccl-tests). Receive buffers are poisoned with a byte
// pattern that no expected value can take, so an element nobody wrote is always wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "grove/types.hpp"
#include "perf_options.hpp"

namespace grove::tools::perf {

/// The byte written over receive buffers before a checking run.
inline constexpr unsigned char kPoisonByte = 0xA5;

/// A buffer allocated once, 64-byte aligned and pre-faulted (filled with the poison byte).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  /// Allocates at least `bytes` (and never a null pointer, even for 0 bytes).
  explicit AlignedBuffer(size_t bytes);

  std::byte* data() const { return data_.get(); }
  size_t size() const { return bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t bytes_ = 0;
};

/// Fills `bytes` bytes at `data` with kPoisonByte.
void poison(void* data, size_t bytes);

/// One send or receive buffer of a rank, allocated once for the largest size: ordinary
/// (AlignedBuffer) or registered (grove::allocate, -R 1). Both are pre-faulted and filled with
/// the poison byte.
class PerfBuffer {
 public:
  PerfBuffer(size_t bytes, bool registered);
  ~PerfBuffer();
  PerfBuffer(const PerfBuffer&) = delete;
  PerfBuffer& operator=(const PerfBuffer&) = delete;

  std::byte* data() const { return data_; }

 private:
  AlignedBuffer ordinary_;
  std::byte* registered_ = nullptr;
  std::byte* data_ = nullptr;
};

/// Writes what timed calls send (`fill` is not kPattern; seeded by `rank`) as `count` values
/// of `type` at `data`. kGaussian: values drawn from N(0, 0.01), near-Gaussian like
/// gradients, so that the codec's ratio on them is a gradient's (bfloat16 about 1.5, float32
/// about 1.2; integer types get the float32 bits); kRandom: uniform random bits.
void fillTimed(void* data, size_t count, DataType type, int rank, Fill fill);

/// The data of one measured case: what each rank sends and what each rank must receive.
class Pattern {
 public:
  /// `op` is ignored for the collectives that do not reduce.
  Pattern(Collective collective, DataType type, ReduceOp op, int nranks, int root);

  /// Value of element `index` of rank `rank`'s send buffer in checking run `salt`.
  int64_t input(int rank, size_t index, uint64_t salt) const;

  /// True when `rank`'s send buffer is read by the collective (broadcast and scatter read
  /// the root's only).
  bool providesInput(int rank) const;
  /// True when `rank`'s receive buffer holds a defined result (reduce and gather: the root
  /// only).
  bool checksOutput(int rank) const;

  /// Writes `rank`'s send data (shape.sendCount elements) at `sendbuf`.
  void fillInput(void* sendbuf, const Shape& shape, int rank, uint64_t salt) const;

  /// Number of elements of `rank`'s receive buffer (shape.recvCount elements at `recvbuf`)
  /// that differ from the expected result; 0 when checksOutput(rank) is false.
  int64_t countWrong(const void* recvbuf, const Shape& shape, int rank, uint64_t salt) const;

 private:
  enum class Scheme { kCopy, kSum, kProd, kMinMax };

  /// The exact result of the reduction over all ranks of element `index`, as stored bits.
  uint64_t reducedBits(size_t index, uint64_t salt) const;
  bool matches(uint64_t actual, uint64_t expected) const;

  Collective collective_;
  DataType type_;
  ReduceOp op_;
  int nranks_;
  int root_;
  Scheme scheme_ = Scheme::kCopy;
  int64_t modulus_ = 1;   ///< kCopy, kSum, kMinMax: values cycle through this many integers.
  int64_t offset_ = 0;    ///< Subtracted from kCopy and kMinMax values (signed types).
  int64_t sumLimit_ = 0;  ///< kSum: the largest exact sum; more ranks than this use 0/1.
  int64_t maxTwos_ = 0;   ///< kProd: at most this many ranks contribute a 2, others 1.
};

}  // namespace grove::tools::perf
