// Scalar reference for the reduction kernels, and element access by DataType, for tests.
//
// Why a second implementation: the kernels are vectorised, dispatched per CPU and written
// around bit tricks; this file says the same rules the plain way, one element at a time, so a
// test can compare any kernel or collective result with it byte for byte. It shares only the
// float16/bfloat16 conversions of src/exec/half.hpp, which half_test checks on their own.
//
// The rules: integer sum/prod wrap modulo 2^bits; kAvg reduces as a sum and finalize divides
// (integers truncate toward zero); float min/max return a NaN operand made quiet (a's when both
// are), else the larger/smaller, and for equal operands the bitwise AND (max) or OR (min), so
// max(-0, +0) is +0 and min(-0, +0) is -0; halves compute in float32 and round to nearest even.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exec/half.hpp"
#include "grove/types.hpp"

namespace grove::test {

namespace reference_detail {

template <class T>
T get(const void* buf, size_t i) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(buf) + i * sizeof(T), sizeof(T));
  return value;
}

template <class T>
void put(void* buf, size_t i, T value) {
  std::memcpy(static_cast<unsigned char*>(buf) + i * sizeof(T), &value, sizeof(T));
}

template <class F, class U>
F withBits(U bits) {
  F value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

template <class U, class F>
U bitsOf(F value) {
  U bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

template <class T>
T integerOp(T a, T b, ReduceOp op) {
  const uint64_t ua = static_cast<uint64_t>(a);  // sign-extends; the low bits are what count
  const uint64_t ub = static_cast<uint64_t>(b);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<T>(ua + ub);
    case ReduceOp::kProd:
      return static_cast<T>(ua * ub);
    case ReduceOp::kMax:
      return a > b ? a : b;
    case ReduceOp::kMin:
      return a < b ? a : b;
    case ReduceOp::kBand:
      return static_cast<T>(ua & ub);
    case ReduceOp::kBor:
      return static_cast<T>(ua | ub);
    case ReduceOp::kBxor:
      return static_cast<T>(ua ^ ub);
  }
  return 0;
}

template <class F, class U>
F floatOp(F a, F b, ReduceOp op) {
  constexpr U kQuiet = U{1} << (sizeof(F) == 4 ? 22 : 51);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      if (std::isnan(a)) return withBits<F>(static_cast<U>(bitsOf<U>(a) | kQuiet));
      if (std::isnan(b)) return withBits<F>(static_cast<U>(bitsOf<U>(b) | kQuiet));
      const bool isMax = op == ReduceOp::kMax;
      if (a > b) return isMax ? a : b;
      if (b > a) return isMax ? b : a;
      const U bits = isMax ? (bitsOf<U>(a) & bitsOf<U>(b)) : (bitsOf<U>(a) | bitsOf<U>(b));
      return withBits<F>(bits);
    }
    case ReduceOp::kBand:  // no floating type accepts these (acceptsOp)
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      break;
  }
  return 0;
}

template <class T>
void integerReduce(void* dst, const void* a, const void* b, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; ++i) put<T>(dst, i, integerOp<T>(get<T>(a, i), get<T>(b, i), op));
}

template <class F, class U>
void floatReduce(void* dst, const void* a, const void* b, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; ++i) put<F>(dst, i, floatOp<F, U>(get<F>(a, i), get<F>(b, i), op));
}

template <float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
void halfReduce(void* dst, const void* a, const void* b, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; ++i) {
    const float x = kToFloat(get<uint16_t>(a, i));
    const float y = kToFloat(get<uint16_t>(b, i));
    put<uint16_t>(dst, i, kFromFloat(floatOp<float, uint32_t>(x, y, op)));
  }
}

template <class T>
void integerDivide(void* data, size_t n, int nranks) {
  for (size_t i = 0; i < n; ++i) {
    const T v = get<T>(data, i);
    if constexpr (std::is_signed_v<T>) {  // C's division truncates toward zero
      put<T>(data, i, static_cast<T>(static_cast<int64_t>(v) / nranks));
    } else {
      put<T>(data, i, static_cast<T>(static_cast<uint64_t>(v) / static_cast<uint64_t>(nranks)));
    }
  }
}

template <class F>
void floatDivide(void* data, size_t n, int nranks) {
  for (size_t i = 0; i < n; ++i) put<F>(data, i, get<F>(data, i) / static_cast<F>(nranks));
}

template <float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
void halfDivide(void* data, size_t n, int nranks) {
  for (size_t i = 0; i < n; ++i) {
    put<uint16_t>(data, i,
                  kFromFloat(kToFloat(get<uint16_t>(data, i)) / static_cast<float>(nranks)));
  }
}

template <class T>
void storeInteger(void* buf, size_t i, double value) {
  // Truncate toward zero, then wrap modulo 2^bits (so 200 stored as int8 reads back as -56).
  const uint64_t bits =
      value < 0 ? static_cast<uint64_t>(static_cast<int64_t>(value)) : static_cast<uint64_t>(value);
  put<T>(buf, i, static_cast<T>(bits));
}

}  // namespace reference_detail

/// dst[i] = a[i] ⊕ b[i] for i < n, by the rules above, one element at a time. dst may alias a
/// or b.
inline void referenceReduce(void* dst, const void* a, const void* b, size_t n, DataType type,
                            ReduceOp op) {
  namespace d = reference_detail;
  switch (type) {
    case DataType::kInt8:
      return d::integerReduce<int8_t>(dst, a, b, n, op);
    case DataType::kUint8:
      return d::integerReduce<uint8_t>(dst, a, b, n, op);
    case DataType::kInt32:
      return d::integerReduce<int32_t>(dst, a, b, n, op);
    case DataType::kUint32:
      return d::integerReduce<uint32_t>(dst, a, b, n, op);
    case DataType::kInt64:
      return d::integerReduce<int64_t>(dst, a, b, n, op);
    case DataType::kUint64:
      return d::integerReduce<uint64_t>(dst, a, b, n, op);
    case DataType::kFloat16:
      return d::halfReduce<exec::halfToFloat, exec::floatToHalf>(dst, a, b, n, op);
    case DataType::kFloat32:
      return d::floatReduce<float, uint32_t>(dst, a, b, n, op);
    case DataType::kFloat64:
      return d::floatReduce<double, uint64_t>(dst, a, b, n, op);
    case DataType::kBFloat16:
      return d::halfReduce<exec::bfloat16ToFloat, exec::floatToBfloat16>(dst, a, b, n, op);
  }
}

/// The operator's final transform in place: for kAvg divides the n elements by nranks
/// (integers truncate toward zero, halves divide in float32 and round); no-op otherwise.
inline void referenceFinalize(void* data, size_t n, DataType type, ReduceOp op, int nranks) {
  namespace d = reference_detail;
  if (op != ReduceOp::kAvg) return;
  switch (type) {
    case DataType::kInt8:
      return d::integerDivide<int8_t>(data, n, nranks);
    case DataType::kUint8:
      return d::integerDivide<uint8_t>(data, n, nranks);
    case DataType::kInt32:
      return d::integerDivide<int32_t>(data, n, nranks);
    case DataType::kUint32:
      return d::integerDivide<uint32_t>(data, n, nranks);
    case DataType::kInt64:
      return d::integerDivide<int64_t>(data, n, nranks);
    case DataType::kUint64:
      return d::integerDivide<uint64_t>(data, n, nranks);
    case DataType::kFloat16:
      return d::halfDivide<exec::halfToFloat, exec::floatToHalf>(data, n, nranks);
    case DataType::kFloat32:
      return d::floatDivide<float>(data, n, nranks);
    case DataType::kFloat64:
      return d::floatDivide<double>(data, n, nranks);
    case DataType::kBFloat16:
      return d::halfDivide<exec::bfloat16ToFloat, exec::floatToBfloat16>(data, n, nranks);
  }
}

/// Writes `value` as element i of a buffer of `type`. Integers truncate toward zero and wrap
/// modulo 2^bits (value must lie within the int64/uint64 range); float16/bfloat16 round the
/// value to float32, then to nearest even.
inline void storeElement(void* buf, size_t i, DataType type, double value) {
  namespace d = reference_detail;
  switch (type) {
    case DataType::kInt8:
      return d::storeInteger<int8_t>(buf, i, value);
    case DataType::kUint8:
      return d::storeInteger<uint8_t>(buf, i, value);
    case DataType::kInt32:
      return d::storeInteger<int32_t>(buf, i, value);
    case DataType::kUint32:
      return d::storeInteger<uint32_t>(buf, i, value);
    case DataType::kInt64:
      return d::storeInteger<int64_t>(buf, i, value);
    case DataType::kUint64:
      return d::storeInteger<uint64_t>(buf, i, value);
    case DataType::kFloat16:
      return d::put<uint16_t>(buf, i, exec::floatToHalf(static_cast<float>(value)));
    case DataType::kFloat32:
      return d::put<float>(buf, i, static_cast<float>(value));
    case DataType::kFloat64:
      return d::put<double>(buf, i, value);
    case DataType::kBFloat16:
      return d::put<uint16_t>(buf, i, exec::floatToBfloat16(static_cast<float>(value)));
  }
}

/// Reads element i of a buffer of `type` as a double (exact except for 64-bit integers
/// beyond 2^53, which round).
inline double loadElement(const void* buf, size_t i, DataType type) {
  namespace d = reference_detail;
  switch (type) {
    case DataType::kInt8:
      return d::get<int8_t>(buf, i);
    case DataType::kUint8:
      return d::get<uint8_t>(buf, i);
    case DataType::kInt32:
      return d::get<int32_t>(buf, i);
    case DataType::kUint32:
      return d::get<uint32_t>(buf, i);
    case DataType::kInt64:
      return static_cast<double>(d::get<int64_t>(buf, i));
    case DataType::kUint64:
      return static_cast<double>(d::get<uint64_t>(buf, i));
    case DataType::kFloat16:
      return exec::halfToFloat(d::get<uint16_t>(buf, i));
    case DataType::kFloat32:
      return d::get<float>(buf, i);
    case DataType::kFloat64:
      return d::get<double>(buf, i);
    case DataType::kBFloat16:
      return exec::bfloat16ToFloat(d::get<uint16_t>(buf, i));
  }
  return 0;
}

}  // namespace grove::test
