// Values and checks of the peer drivers, float32 only. Why the values are what they are:
// * allreduce / reducescatter (sum): per-rank values are integers in [0, K) with
//   n * (K - 1) <= 2^24, so every partial sum in every order is an exact float and results
//   can be compared bit for bit whatever algorithm the library runs.
// * allgather / broadcast: integers in [-2^20, 2^20), which floats hold exactly.
// * Before a checking call the buffers are filled with the poison byte 0xA5; the float
//   0xA5A5A5A5 (about -2.9e-16) is not an integer, so an element nobody wrote is wrong.
// Buffers are allocated once at the largest size and pre-faulted: first touch of a page costs
// 10-15 µs on these machines and must never land in a timed loop.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "peer_options.hpp"

namespace peers {

inline constexpr unsigned char kPoisonByte = 0xA5;

/// A 64-byte aligned, pre-faulted buffer of `bytes` bytes (at least 64).
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes) : bytes_(std::max<size_t>(64, (bytes + 63) / 64 * 64)) {
    data_.reset(static_cast<float*>(::operator new (bytes_, std::align_val_t{64})));
    std::memset(data_.get(), kPoisonByte, bytes_);
  }
  float* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(float* p) const { ::operator delete (p, std::align_val_t{64}); }
  };
  size_t bytes_;
  std::unique_ptr<float, Free> data_;
};

inline void poison(float* data, size_t elements) {
  if (elements != 0) std::memset(data, kPoisonByte, elements * sizeof(float));
}

/// Inputs and expected results of one collective on `nranks` ranks.
class Pattern {
 public:
  Pattern(Collective collective, int nranks, int root)
      : collective_(collective), nranks_(nranks), root_(root) {
    const int64_t limit = (int64_t{1} << 24) / nranks;  // n * (K - 1) < 2^24.
    modulus_ = isReducing(collective) ? std::max<int64_t>(1, std::min<int64_t>(limit, 1 << 16))
                                      : int64_t{1} << 21;
  }

  /// The value rank `rank` contributes at element `index` of its send buffer.
  float input(int rank, size_t index, uint64_t salt) const {
    const uint64_t h =
        index * 2654435761u + static_cast<uint64_t>(rank) * 40503u + salt * 977u + 12345u;
    const int64_t v = static_cast<int64_t>(h % static_cast<uint64_t>(modulus_));
    return static_cast<float>(isReducing(collective_) ? v : v - modulus_ / 2);
  }

  /// True when `rank` supplies input (every rank, except non-roots of broadcast).
  bool providesInput(int rank) const {
    return collective_ != Collective::kBroadcast || rank == root_;
  }

  /// Writes this rank's send buffer for `shape`.
  void fillInput(float* send, const Shape& shape, int rank, uint64_t salt) const {
    for (size_t i = 0; i < shape.sendCount; ++i) send[i] = input(rank, i, salt);
  }

  /// Elements of `result` (this rank's receive buffer, shape.recvCount elements) that differ
  /// bit for bit from the expected result.
  int64_t countWrong(const float* result, const Shape& shape, int rank, uint64_t salt) const {
    int64_t wrong = 0;
    for (size_t i = 0; i < shape.recvCount; ++i) {
      const float expected = this->expected(shape, rank, i, salt);
      if (std::memcmp(&expected, &result[i], sizeof(float)) != 0) ++wrong;
    }
    return wrong;
  }

 private:
  float expected(const Shape& shape, int rank, size_t i, uint64_t salt) const {
    switch (collective_) {
      case Collective::kAllReduce:
      case Collective::kReduceScatter: {
        const size_t index =
            collective_ == Collective::kAllReduce ? i : static_cast<size_t>(rank) * shape.count + i;
        int64_t sum = 0;
        for (int r = 0; r < nranks_; ++r) sum += static_cast<int64_t>(input(r, index, salt));
        return static_cast<float>(sum);
      }
      case Collective::kAllGather:
        return input(static_cast<int>(i / shape.count), i % shape.count, salt);
      case Collective::kBroadcast:
        return input(root_, i, salt);
    }
    return 0;
  }

  Collective collective_;
  int nranks_;
  int root_;
  int64_t modulus_;
};

}  // namespace peers
