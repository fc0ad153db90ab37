// The multi-rank test harness: runs one function per rank of an in-process group, each on its
// own thread, and turns what went wrong on any rank into one failure in the test thread that
// names the rank.
//
// Why a harness: every collective test needs n threads driving n communicators, needs a
// failing rank to release its peers (abort(), so they do not wait forever on it) and needs the
// failure reported with the rank attached. It also holds what the tests share: guarded
// receive buffers (bytes of 0xA5 before and after that must survive every call), input
// patterns whose reductions are exact in every type (fp16 and bf16 included), and the
// algorithm list per collective taken from the registry.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algo/registry.hpp"
#include "grove/communicator.hpp"
#include "plan/plan.hpp"
#include "support/reference.hpp"

namespace grove::mr {

/// The rank counts every sweep covers: 1, powers of two, odd and prime counts.
inline const std::vector<int> kRankCounts = {1, 2, 3, 4, 5, 7, 8};

/// Every element type and every operator.
inline std::vector<DataType> allTypes() {
  std::vector<DataType> types;
  for (int t = 0; t < kDataTypeCount; ++t) types.push_back(static_cast<DataType>(t));
  return types;
}
inline std::vector<ReduceOp> allOps() {
  std::vector<ReduceOp> ops;
  for (int o = 0; o < kReduceOpCount; ++o) ops.push_back(static_cast<ReduceOp>(o));
  return ops;
}

inline bool isSigned(DataType type) {
  return type == DataType::kInt8 || type == DataType::kInt32 || type == DataType::kInt64 ||
         isFloatingPoint(type);
}

/// Runs `fn(comms[r])` on one thread per rank and waits for all. An exception on a rank aborts
/// that rank's communicator (so its peers get an error instead of waiting) and is rethrown
/// here, prefixed with "rank r: ", after every thread has finished; when several ranks failed
/// the root cause (an error other than kRemoteError) is preferred and the others are listed.
/// A grove::Error keeps its code. gtest expectations inside `fn` are reported with the rank
/// through a scoped trace.
inline void runOnComms(std::vector<Communicator>& comms,
                       const std::function<void(Communicator&)>& fn) {
  struct Failure {
    int rank = 0;
    bool isGrove = false;
    ErrorCode code = ErrorCode::kSuccess;
    std::string what;
  };
  std::mutex mutex;
  std::vector<Failure> failures;
  std::vector<std::thread> threads;
  threads.reserve(comms.size());
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      SCOPED_TRACE("rank " + std::to_string(r) + " of " + std::to_string(comms.size()));
      Failure failure{static_cast<int>(r)};
      bool failed = false;
      try {
        fn(comms[r]);
      } catch (const Error& e) {
        failed = true;
        failure.isGrove = true;
        failure.code = e.code();
        failure.what = e.what();
      } catch (const std::exception& e) {
        failed = true;
        failure.what = e.what();
      } catch (...) {
        failed = true;
        failure.what = "unknown exception";
      }
      if (failed) {
        if (comms[r].valid()) comms[r].abort();
        std::lock_guard lock(mutex);
        failures.push_back(std::move(failure));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (failures.empty()) return;
  std::sort(failures.begin(), failures.end(),
            [](const Failure& a, const Failure& b) { return a.rank < b.rank; });
  auto primary = std::find_if(failures.begin(), failures.end(), [](const Failure& f) {
    return !(f.isGrove && f.code == ErrorCode::kRemoteError);
  });
  if (primary == failures.end()) primary = failures.begin();
  std::string message = "rank " + std::to_string(primary->rank) + ": " + primary->what;
  for (const auto& f : failures) {
    if (&f != &*primary) message += "\n  also rank " + std::to_string(f.rank) + ": " + f.what;
  }
  if (primary->isGrove) throw Error(primary->code, message);
  throw std::runtime_error(message);
}

/// Creates an in-process group of `nranks` with `options` and runs `fn` on every rank (see
/// runOnComms).
inline void runRanks(int nranks, const std::function<void(Communicator&)>& fn,
                     const Options& options = {}) {
  auto comms = Communicator::createInProcess(nranks, options);
  runOnComms(comms, fn);
}

/// Runs `body` and turns an exception escaping it into a gtest failure with its message, so
/// a test reports every failing configuration instead of stopping at the first.
inline void expectNoThrow(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

/// A byte buffer with kGuard bytes of kGuardByte on each side of the caller-visible bytes.
/// The visible bytes start out as `fill` (a pattern no collective produces by chance).
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr std::byte kGuardByte{0xA5};

  explicit GuardedBuffer(size_t bytes = 0, std::byte fill = std::byte{0x5A})
      : bytes_(bytes), storage_(bytes + 2 * kGuard, kGuardByte) {
    std::memset(data(), static_cast<int>(fill), bytes_);
  }

  std::byte* data() { return storage_.data() + kGuard; }
  const std::byte* data() const { return storage_.data() + kGuard; }
  size_t size() const { return bytes_; }

  /// True when both guards still hold kGuardByte everywhere.
  bool guardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (storage_[i] != kGuardByte || storage_[kGuard + bytes_ + i] != kGuardByte) return false;
    }
    return true;
  }

  /// The visible bytes as a vector, for comparisons across ranks.
  std::vector<std::byte> bytes() const { return {data(), data() + bytes_}; }

 private:
  size_t bytes_;
  std::vector<std::byte> storage_;
};

/// A deterministic byte pattern for data-movement tests: byte `i` of rank `rank`'s buffer
/// under `salt`. Distinct ranks and positions give different bytes, so any misplaced block
/// shows.
inline std::byte patternByte(int rank, size_t i, uint32_t salt = 0) {
  uint64_t x = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(i) + salt * 0x632BE59BD9B4E5ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::byte>(x & 0xFF);
}

/// Fills `bytes` bytes of `buffer` with rank `rank`'s pattern, starting at pattern index
/// `first`.
inline void fillPattern(void* buffer, size_t bytes, int rank, size_t first = 0, uint32_t salt = 0) {
  auto* out = static_cast<std::byte*>(buffer);
  for (size_t i = 0; i < bytes; ++i) out[i] = patternByte(rank, first + i, salt);
}

/// Element `i` of rank `rank`'s reduction input for (type, op), chosen so that every
/// reduction over up to 8 ranks is exact in every type, fp16 and bf16 included, and stays in
/// range of int8/uint8:
/// * sum, avg: integers in [-4, 4] (signed types) or [0, 8] (unsigned) — sums within ±64;
///   negative sums make integer avg show its truncation toward zero;
/// * prod: 1 or 2 (2 for at most every third rank), and -1 for some signed elements —
///   products within ±8;
/// * min, max: integers in [-20, 20] (signed) or [0, 40] (unsigned).
inline double reductionInput(DataType type, ReduceOp op, int rank, size_t i) {
  const bool sign = isSigned(type);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: {
      const int v = static_cast<int>((rank * 7 + i * 3 + 1) % 9);
      return sign ? v - 4 : v;
    }
    case ReduceOp::kProd: {
      double v = (rank + i) % 3 == 0 ? 2.0 : 1.0;
      if (sign && (rank * 5 + i) % 7 == 1) v = -v;
      return v;
    }
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      const int v = static_cast<int>((rank * 13 + i * 7 + 5) % 41);
      return sign ? v - 20 : v;
    }
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor: {
      // Varied bit patterns of int8/uint8 range; signed types get negative ones (high bits).
      const int v = static_cast<int>((rank * 29 + i * 11 + 3) % 128);
      return sign ? v - 64 : v + ((rank + i) % 2) * 128;
    }
  }
  return 0;
}

/// Fills `count` elements of `buffer` with rank `rank`'s reduction input, the element at
/// position j taking input index first + j.
inline void fillReductionInput(void* buffer, size_t count, DataType type, ReduceOp op, int rank,
                               size_t first = 0) {
  for (size_t j = 0; j < count; ++j) {
    test::storeElement(buffer, j, type, reductionInput(type, op, rank, first + j));
  }
}

/// The exact result of reducing every rank's reductionInput for indices [first, first +
/// count) (with the operator's final transform), computed by the scalar reference.
inline std::vector<std::byte> expectedReduction(DataType type, ReduceOp op, int nranks,
                                                size_t count, size_t first = 0) {
  const size_t bytes = count * dataTypeSize(type);
  std::vector<std::byte> acc(bytes);
  std::vector<std::byte> next(bytes);
  fillReductionInput(acc.data(), count, type, op, 0, first);
  for (int r = 1; r < nranks; ++r) {
    fillReductionInput(next.data(), count, type, op, r, first);
    test::referenceReduce(acc.data(), acc.data(), next.data(), count, type, op);
  }
  test::referenceFinalize(acc.data(), count, type, op, nranks);
  return acc;
}

/// Index of the first differing element of two equally long buffers, or -1.
inline long firstDifference(const void* a, const void* b, size_t count, DataType type) {
  const size_t size = dataTypeSize(type);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(static_cast<const std::byte*>(a) + i * size,
                    static_cast<const std::byte*>(b) + i * size, size) != 0) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

/// A readable description of where `actual` differs from `expected` ("" when equal).
inline std::string describeDifference(const void* actual, const void* expected, size_t count,
                                      DataType type) {
  const long i = firstDifference(actual, expected, count, type);
  if (i < 0) return "";
  return "element " + std::to_string(i) + " of " + std::to_string(count) + " is " +
         std::to_string(test::loadElement(actual, static_cast<size_t>(i), type)) + ", expected " +
         std::to_string(test::loadElement(expected, static_cast<size_t>(i), type));
}

/// Names of the registered algorithms for `collective` that apply to `request` (its
/// collective field is overwritten), preceded by "" (let grove choose).
inline std::vector<std::string> algorithmsFor(plan::Collective collective,
                                              plan::PlanRequest request) {
  request.collective = collective;
  std::vector<std::string> names = {""};
  for (const auto& algorithm : algo::algorithms()) {
    if (algorithm.collective != collective) continue;
    if (algorithm.applies != nullptr && !algorithm.applies(request).ok()) continue;
    names.emplace_back(algorithm.name);
  }
  return names;
}

/// Convenience: the PlanRequest for a call shape.
inline plan::PlanRequest shape(int nranks, size_t count, DataType type,
                               ReduceOp op = ReduceOp::kSum, int root = -1) {
  plan::PlanRequest request;
  request.nranks = nranks;
  request.rank = 0;
  request.root = root;
  request.count = count;
  request.type = type;
  request.op = op;
  return request;
}

/// Printable rank-count parameter names for parameterised suites ("n3").
inline std::string rankCountName(const ::testing::TestParamInfo<int>& info) {
  return "n" + std::to_string(info.param);
}

/// One label for a configuration, for failure messages.
inline std::string label(std::string_view collective, DataType type, size_t count,
                         std::string_view algorithm, bool inPlace, int nranks,
                         std::string_view extra = "") {
  std::string s = std::string(collective) + " type=" + std::string(toString(type)) +
                  " count=" + std::to_string(count) + " algo=" +
                  (algorithm.empty() ? std::string("(default)") : std::string(algorithm)) +
                  (inPlace ? " in-place" : " out-of-place") + " nranks=" + std::to_string(nranks);
  if (!extra.empty()) s += " " + std::string(extra);
  return s;
}

}  // namespace grove::mr
