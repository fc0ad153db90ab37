// Order-sensitive reduction inputs and the check of a reduced result against the exact value,
// shared by the bit-identity tests (tests/multirank/integrity_test.cpp for the algorithms that
// run without a topology, integrity_topology_test.cpp for the topology-aware ones).
//
// Why: floating-point addition is commutative but not associative, so an algorithm hands every
// rank the same bytes only when every rank evaluates the same expression tree. Small-integer
// inputs (harness.hpp's reductionInput) sum exactly in any order and cannot see a difference;
// these inputs mix magnitudes (≈10, ≈1 and ≈0.1 on ranks r % 3 = 1, 0, 2, with full-mantissa
// fractions) so that the rounding depends on the order of the additions. Both tests must use
// the very same inputs and the same rounding bound, so they live here once.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "multirank/harness.hpp"
#include "support/reference.hpp"

namespace grove::mr {

/// Element i of rank r's floating-point integrity input: a magnitude by r % 3 (1, 10, 0.1)
/// times 1 + a fraction with a full mantissa (a hash of i and r), a sign now and then — so
/// that partial sums round, and round differently in a different order. prod uses factors in
/// [0.5, 1.5); min/max put ±0 (sign by rank) at every 11th index.
inline double integrityInput(ReduceOp op, int r, size_t i) {
  const uint64_t rank = static_cast<uint64_t>(r);
  const uint64_t hash = (i * 2654435761u + rank * 3928791u) ^ (i * rank * 2246822519u);
  const double fraction = static_cast<double>(hash & 0xFFFFFFFFu) * 0x1p-32;
  const double sign = (i + rank) % 4 == 3 ? -1.0 : 1.0;
  if (op == ReduceOp::kProd) return sign * (0.5 + fraction);
  if ((op == ReduceOp::kMin || op == ReduceOp::kMax) && i % 11 == 5) return r % 2 ? -0.0 : 0.0;
  static constexpr double kMagnitude[3] = {1.0, 10.0, 0.1};
  return sign * kMagnitude[r % 3] * (1.0 + fraction);
}

/// Rank r's reduction input for indices [first, first + count) as bytes of `type`:
/// integrityInput for floating types, exact small integers (reductionInput) for integer types.
inline std::vector<std::byte> makeIntegrityInput(DataType type, ReduceOp op, int r, size_t count,
                                                 size_t first = 0) {
  std::vector<std::byte> bytes(count * dataTypeSize(type));
  for (size_t j = 0; j < count; ++j) {
    const double value = isFloatingPoint(type) ? integrityInput(op, r, first + j)
                                               : reductionInput(type, op, r, first + j);
    test::storeElement(bytes.data(), j, type, value);
  }
  return bytes;
}

/// Unit roundoff of a floating type (float64 for any other).
inline double unitRoundoff(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return std::ldexp(1.0, -11);
    case DataType::kBFloat16:
      return std::ldexp(1.0, -8);
    case DataType::kFloat32:
      return std::ldexp(1.0, -24);
    default:
      return std::ldexp(1.0, -53);
  }
}

/// "" when `got` (count elements: indices [first, first + count) of makeIntegrityInput reduced
/// over n ranks) is right: integer types and min/max equal the scalar reference's bytes
/// (tests/support/reference.hpp, signed zeros included); sum, prod, avg of floating types lie
/// within the rounding bound 2 (n + 1) u Σ|x| of the exact value. Otherwise a description of
/// the first bad element (by its input index).
inline std::string checkIntegrityValues(const std::byte* got, DataType type, ReduceOp op, int n,
                                        size_t count, size_t first) {
  if (!isFloatingPoint(type) || op == ReduceOp::kMin || op == ReduceOp::kMax) {
    std::vector<std::byte> acc = makeIntegrityInput(type, op, 0, count, first);
    for (int r = 1; r < n; ++r) {
      const auto next = makeIntegrityInput(type, op, r, count, first);
      test::referenceReduce(acc.data(), acc.data(), next.data(), count, type, op);
    }
    test::referenceFinalize(acc.data(), count, type, op, n);
    return describeDifference(got, acc.data(), count, type);
  }
  std::vector<std::vector<std::byte>> inputs;
  for (int r = 0; r < n; ++r) inputs.push_back(makeIntegrityInput(type, op, r, count, first));
  const double u = unitRoundoff(type);
  for (size_t j = 0; j < count; ++j) {
    long double exact = op == ReduceOp::kProd ? 1 : 0;
    long double magnitude = op == ReduceOp::kProd ? 1 : 0;
    for (int r = 0; r < n; ++r) {
      const long double x = test::loadElement(inputs[r].data(), j, type);
      if (op == ReduceOp::kProd) {
        exact *= x;
        magnitude *= std::fabs(x);
      } else {
        exact += x;
        magnitude += std::fabs(x);
      }
    }
    if (op == ReduceOp::kAvg) {
      exact /= n;
      magnitude /= n;
    }
    const double value = test::loadElement(got, j, type);
    const double bound = 2.0 * (n + 1) * u * static_cast<double>(magnitude);
    if (!(std::fabs(value - static_cast<double>(exact)) <= bound)) {
      return "element " + std::to_string(first + j) + " is " + std::to_string(value) + ", exact " +
             std::to_string(static_cast<double>(exact)) + ", bound " + std::to_string(bound);
    }
  }
  return "";
}

/// After one call of an integrity case (named `what` in the failure messages) whose send
/// buffer was filled with `input`: no bytes written around `send`, `recv` or `temp`; out of
/// place, `send` still holds `input`.
inline void expectBuffersIntact(const std::string& what, bool inPlace, const GuardedBuffer& send,
                                const GuardedBuffer& recv, const GuardedBuffer& temp,
                                const std::vector<std::byte>& input) {
  EXPECT_TRUE(send.guardsIntact() && recv.guardsIntact() && temp.guardsIntact())
      << what << ": bytes written around a buffer";
  if (!inPlace && !input.empty()) {
    EXPECT_TRUE(std::memcmp(send.data(), input.data(), input.size()) == 0)
        << what << ": send buffer modified";
  }
}

}  // namespace grove::mr
