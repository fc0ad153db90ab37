// Values, checks and buffers of grove perf. Why the values are what they are:
// * sum/avg: per-rank values in [0, K) with n * (K - 1) no larger than the largest integer
//   the type holds exactly (int8/uint8 127, bfloat16 256, float16 2048, ...), so every
//   partial sum in every order is exact; with more ranks than that, exactly `limit` ranks
//   contribute 1 and the rest 0.
// * prod: values 1 and 2 with at most 6..15 twos per element (fewer for 8-bit types), so
//   products are exact powers of two that neither overflow nor wrap.
// * min/max and the data-moving collectives: residues of (rank, index) small enough to be
//   exact, negative too for signed and floating types, distinct across ranks.
// The poison byte 0xA5 makes every element type a value outside all of these ranges.
#include "perf_data.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <random>

#include "exec/half.hpp"
#include "grove/memory.hpp"

namespace grove::tools::perf {
namespace {

constexpr std::align_val_t kAlignment{64};

bool isSigned(DataType type) {
  return type == DataType::kInt8 || type == DataType::kInt32 || type == DataType::kInt64 ||
         isFloatingPoint(type);
}

/// The bits of `value` stored as `type`.
uint64_t encode(DataType type, int64_t value) {
  switch (type) {
    case DataType::kInt8:
      return static_cast<uint8_t>(static_cast<int8_t>(value));
    case DataType::kUint8:
      return static_cast<uint8_t>(value);
    case DataType::kInt32:
      return static_cast<uint32_t>(static_cast<int32_t>(value));
    case DataType::kUint32:
      return static_cast<uint32_t>(value);
    case DataType::kInt64:
    case DataType::kUint64:
      return static_cast<uint64_t>(value);
    case DataType::kFloat16:
      return exec::floatToHalf(static_cast<float>(value));
    case DataType::kBFloat16:
      return exec::floatToBfloat16(static_cast<float>(value));
    case DataType::kFloat32:
      return std::bit_cast<uint32_t>(static_cast<float>(value));
    case DataType::kFloat64:
      return std::bit_cast<uint64_t>(static_cast<double>(value));
  }
  return 0;
}

/// The bits of sum / nranks as grove's avg computes it in `type` (sum is exact in `type`).
uint64_t encodeAverage(DataType type, int64_t sum, int nranks) {
  const float fsum = static_cast<float>(sum);
  const float fn = static_cast<float>(nranks);
  switch (type) {
    case DataType::kFloat16:
      return exec::floatToHalf(fsum / fn);
    case DataType::kBFloat16:
      return exec::floatToBfloat16(fsum / fn);
    case DataType::kFloat32:
      return std::bit_cast<uint32_t>(fsum / fn);
    case DataType::kFloat64:
      return std::bit_cast<uint64_t>(static_cast<double>(sum) / nranks);
    default:
      return encode(type, sum / nranks);  // Integers truncate toward zero, as C does.
  }
}

/// Sign-magnitude floating bits of `width` bits mapped onto a line where adjacent
/// representable values differ by 1.
int64_t orderedBits(uint64_t bits, size_t width) {
  const uint64_t signBit = uint64_t{1} << (width - 1);
  const int64_t magnitude = static_cast<int64_t>(bits & (signBit - 1));
  return (bits & signBit) != 0 ? -magnitude : magnitude;
}

inline uint64_t loadBits(const std::byte* base, size_t index, size_t width) {
  uint64_t bits = 0;
  std::memcpy(&bits, base + index * width, width);  // Little-endian hosts.
  return bits;
}

inline void storeBits(std::byte* base, size_t index, size_t width, uint64_t bits) {
  std::memcpy(base + index * width, &bits, width);
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t bytes) : bytes_(bytes) {
  const size_t allocated = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  data_.reset(static_cast<std::byte*>(::operator new(allocated, kAlignment)));
  poison(data_.get(), allocated);  // Pre-fault every page now, not inside a timed loop.
}

void AlignedBuffer::Free::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

void poison(void* data, size_t bytes) {
  if (bytes != 0) std::memset(data, kPoisonByte, bytes);
}

PerfBuffer::PerfBuffer(size_t bytes, bool registered) {
  if (!registered) {
    ordinary_ = AlignedBuffer(bytes);
    data_ = ordinary_.data();
    return;
  }
  // allocate(0) is an error; a run of empty calls still gets a buffer.
  registered_ = static_cast<std::byte*>(allocate(std::max<size_t>(bytes, 1)));
  data_ = registered_;
  poison(data_, bytes);
}

PerfBuffer::~PerfBuffer() {
  if (registered_ != nullptr) deallocate(registered_);
}

Pattern::Pattern(Collective collective, DataType type, ReduceOp op, int nranks, int root)
    : collective_(collective), type_(type), op_(op), nranks_(nranks), root_(root) {
  const size_t width = dataTypeSize(type);
  if (!isReducing(collective)) {
    scheme_ = Scheme::kCopy;
    if (width == 1) {
      modulus_ = 127;
    } else if (type == DataType::kBFloat16) {
      modulus_ = 256;
    } else if (type == DataType::kFloat16) {
      modulus_ = 2048;
    } else if (width == 4) {
      modulus_ = int64_t{1} << 20;
    } else {
      modulus_ = int64_t{1} << 40;
    }
    offset_ = isSigned(type) ? modulus_ / 2 : 0;
    return;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: {
      scheme_ = Scheme::kSum;
      if (width == 1) {
        sumLimit_ = 127;
      } else if (type == DataType::kBFloat16) {
        sumLimit_ = 256;
      } else if (type == DataType::kFloat16) {
        sumLimit_ = 2048;
      } else if (width == 4) {
        sumLimit_ = int64_t{1} << 24;
      } else {
        sumLimit_ = int64_t{1} << 40;
      }
      modulus_ = std::min<int64_t>(16, sumLimit_ / nranks + 1);
      break;
    }
    case ReduceOp::kProd:
      scheme_ = Scheme::kProd;
      maxTwos_ = type == DataType::kInt8 ? 6 : type == DataType::kUint8 ? 7 : 15;
      break;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      scheme_ = Scheme::kMinMax;
      modulus_ = 101;
      offset_ = isSigned(type) ? 50 : 0;
      break;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      // Integer types only (the call refuses others): seven-bit patterns, in every range.
      scheme_ = Scheme::kMinMax;
      modulus_ = 128;
      offset_ = 0;
      break;
  }
}

int64_t Pattern::input(int rank, size_t index, uint64_t salt) const {
  const uint64_t j = index + salt;
  const uint64_t r = static_cast<uint64_t>(rank);
  const uint64_t n = static_cast<uint64_t>(nranks_);
  switch (scheme_) {
    case Scheme::kCopy:
    case Scheme::kMinMax:
      return static_cast<int64_t>((r * 37 + j * 11 + 5) % static_cast<uint64_t>(modulus_)) -
             offset_;
    case Scheme::kSum:
      if (nranks_ <= sumLimit_) {
        return static_cast<int64_t>((r * 3 + j) % static_cast<uint64_t>(modulus_));
      }
      return (r + j) % n < static_cast<uint64_t>(sumLimit_) ? 1 : 0;
    case Scheme::kProd: {
      const uint64_t twos = std::min<uint64_t>(j % static_cast<uint64_t>(maxTwos_ + 1), n);
      return (r + j) % n < twos ? 2 : 1;
    }
  }
  return 0;
}

bool Pattern::providesInput(int rank) const {
  if (collective_ == Collective::kBroadcast || collective_ == Collective::kScatter) {
    return rank == root_;
  }
  return true;
}

bool Pattern::checksOutput(int rank) const {
  if (collective_ == Collective::kReduce || collective_ == Collective::kGather) {
    return rank == root_;
  }
  return true;
}

void fillTimed(void* data, size_t count, DataType type, int rank, Fill fill) {
  std::mt19937_64 random(0x5EEDull + static_cast<uint64_t>(rank));
  if (fill == Fill::kRandom) {
    auto* bytes = static_cast<unsigned char*>(data);
    const size_t total = count * dataTypeSize(type);
    for (size_t i = 0; i < total; i += 8) {
      const uint64_t word = random();
      std::memcpy(bytes + i, &word, std::min<size_t>(8, total - i));
    }
    return;
  }
  std::normal_distribution<float> normal(0.0f, 0.01f);
  auto* out = static_cast<std::byte*>(data);
  const size_t width = dataTypeSize(type);
  for (size_t k = 0; k < count; ++k) {
    const float value = normal(random);
    uint64_t bits = 0;
    switch (type) {
      case DataType::kFloat16:
        bits = exec::floatToHalf(value);
        break;
      case DataType::kBFloat16:
        bits = exec::floatToBfloat16(value);
        break;
      case DataType::kFloat64:
        bits = std::bit_cast<uint64_t>(static_cast<double>(value));
        break;
      default:
        bits = std::bit_cast<uint32_t>(value);
        break;
    }
    storeBits(out, k, width, bits);
  }
}

void Pattern::fillInput(void* sendbuf, const Shape& shape, int rank, uint64_t salt) const {
  auto* base = static_cast<std::byte*>(sendbuf);
  const size_t width = dataTypeSize(type_);
  for (size_t k = 0; k < shape.sendCount; ++k) {
    storeBits(base, k, width, encode(type_, input(rank, k, salt)));
  }
}

uint64_t Pattern::reducedBits(size_t index, uint64_t salt) const {
  int64_t acc = input(0, index, salt);
  for (int q = 1; q < nranks_; ++q) {
    const int64_t v = input(q, index, salt);
    switch (op_) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kBand:
        acc &= v;
        break;
      case ReduceOp::kBor:
        acc |= v;
        break;
      case ReduceOp::kBxor:
        acc ^= v;
        break;
    }
  }
  if (op_ == ReduceOp::kAvg) return encodeAverage(type_, acc, nranks_);
  return encode(type_, acc);
}

bool Pattern::matches(uint64_t actual, uint64_t expected) const {
  if (actual == expected) return true;
  if (op_ != ReduceOp::kAvg || !isFloatingPoint(type_) || !isReducing(collective_)) {
    return false;
  }
  const size_t width = dataTypeSize(type_) * 8;
  const int64_t distance = orderedBits(actual, width) - orderedBits(expected, width);
  return distance >= -2 && distance <= 2;  // nccl-tests' tolerance for a floating average.
}

int64_t Pattern::countWrong(const void* recvbuf, const Shape& shape, int rank,
                            uint64_t salt) const {
  if (!checksOutput(rank)) return 0;
  const auto* base = static_cast<const std::byte*>(recvbuf);
  const size_t width = dataTypeSize(type_);
  const size_t c = shape.count;
  const size_t r = static_cast<size_t>(rank);
  int64_t wrong = 0;
  auto countOver = [&](auto&& expectedAt) {
    for (size_t k = 0; k < shape.recvCount; ++k) {
      if (!matches(loadBits(base, k, width), expectedAt(k))) ++wrong;
    }
  };
  auto copied = [&](int fromRank, size_t index) {
    return encode(type_, input(fromRank, index, salt));
  };
  switch (collective_) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      countOver([&](size_t k) { return reducedBits(k, salt); });
      break;
    case Collective::kReduceScatter:
      countOver([&](size_t k) { return reducedBits(r * c + k, salt); });
      break;
    case Collective::kBroadcast:
      countOver([&](size_t k) { return copied(root_, k); });
      break;
    case Collective::kAllGather:
    case Collective::kGather:
      countOver([&](size_t k) { return copied(static_cast<int>(k / c), k % c); });
      break;
    case Collective::kScatter:
      countOver([&](size_t k) { return copied(root_, r * c + k); });
      break;
    case Collective::kAllToAll:
      countOver([&](size_t k) { return copied(static_cast<int>(k / c), r * c + k % c); });
      break;
    case Collective::kSendRecv:
      countOver([&](size_t k) { return copied((rank + nranks_ - 1) % nranks_, k); });
      break;
  }
  return wrong;
}

}  // namespace grove::tools::perf
