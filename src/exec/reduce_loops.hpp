// The reduction loops, written once over GCC vector types and compiled once per instruction
// set (reduce_portable.cpp, reduce_avx2.cpp, reduce_avx512.cpp).
//
// Why vector types rather than plain loops left to the auto-vectoriser: plain loops vectorise
// only at -O3 (GCC's -O2 cost model refuses loops with a tail or a possible alias), and the
// NaN-propagating min/max would not vectorise at all. Vector types give the same machine code
// at every optimisation level, and one source for all variants keeps their results identical.
//
// How to include it: first include <cstddef>, <cstdint>, <cstring>, <type_traits>,
// "grove/types.hpp" and "exec/half.hpp"; then switch the target with `#pragma GCC target`;
// then include this file and define a struct describing the variant:
//
//   struct Isa {
//     static constexpr size_t kBytes;                    // vector width in bytes
//     static Vec<float, kBytes> loadFp16(const uint16_t*);  // kBytes / 4 halves -> floats
//     static void storeFp16(uint16_t*, Vec<float, kBytes>);  // round to nearest even
//   };
//
// and call reduceDispatch<Isa>() / divideDispatch<Isa>(). Everything here has internal linkage,
// so each variant gets private copies: the linker can never fold an AVX-512 instantiation into
// the code path of an older CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exec/half.hpp"
#include "grove/types.hpp"

namespace grove::exec {
namespace {

template <class T, size_t kBytes>
struct VecOf {
  typedef T Type __attribute__((vector_size(kBytes)));
};

/// A GCC vector of kBytes / sizeof(T) lanes of T.
template <class T, size_t kBytes>
using Vec = typename VecOf<T, kBytes>::Type;

template <class To, class From>
inline To bitCast(From from) {
  return __builtin_bit_cast(To, from);
}

template <class V>
inline V loadVec(const void* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <class V>
inline void storeVec(void* p, V v) {
  __builtin_memcpy(p, &v, sizeof v);
}

template <class F>
struct FloatBits;
template <>
struct FloatBits<float> {
  using Type = uint32_t;
  static constexpr uint32_t kQuiet = 0x00400000u;
};
template <>
struct FloatBits<double> {
  using Type = uint64_t;
  static constexpr uint64_t kQuiet = uint64_t{1} << 51;
};

/// NaN-propagating max (kMax) or min of float vectors. A NaN input gives that NaN made quiet
/// (a's if both are NaN); equal inputs give the bitwise AND (max) or OR (min) so that
/// max(-0, +0) == +0 and min(-0, +0) == -0 in either order.
template <bool kMax, class F, class V>
inline V floatMaxMin(V a, V b) {
  using Bits = Vec<typename FloatBits<F>::Type, sizeof(V)>;
  const Bits ia = bitCast<Bits>(a);
  const Bits ib = bitCast<Bits>(b);
  const auto nanA = a != a;
  const auto unordered = nanA | (b != b);
  const Bits quiet = (nanA ? ia : ib) | FloatBits<F>::kQuiet;
  V ordered;
  if constexpr (kMax) {
    ordered = a > b ? a : (b > a ? b : bitCast<V>(ia & ib));
  } else {
    ordered = a < b ? a : (b < a ? b : bitCast<V>(ia | ib));
  }
  return unordered ? bitCast<V>(quiet) : ordered;
}

/// Combines two float vectors (float32 or float64 lanes F) with kOp.
template <ReduceOp kOp, class F, class V>
inline V floatCombine(V a, V b) {
  if constexpr (kOp == ReduceOp::kSum || kOp == ReduceOp::kAvg) {
    return a + b;
  } else if constexpr (kOp == ReduceOp::kProd) {
    return a * b;
  } else {
    return floatMaxMin<kOp == ReduceOp::kMax, F>(a, b);
  }
}

// An element kind says how kLanes elements are loaded into one computation vector, combined,
// divided (kAvg) and stored back.

template <class T, size_t kBytes>
struct IntKind {
  using Elem = T;
  using Value = Vec<T, kBytes>;
  using Unsigned = Vec<std::make_unsigned_t<T>, kBytes>;
  static constexpr size_t kLanes = kBytes / sizeof(T);
  static constexpr bool kInteger = true;

  static Value load(const T* p) { return loadVec<Value>(p); }
  static void store(T* p, Value v) { storeVec(p, v); }

  // Sums and products are computed on unsigned lanes: they wrap modulo 2^bits, with no UB.
  template <ReduceOp kOp>
  static Value combine(Value a, Value b) {
    if constexpr (kOp == ReduceOp::kSum || kOp == ReduceOp::kAvg) {
      return bitCast<Value>(bitCast<Unsigned>(a) + bitCast<Unsigned>(b));
    } else if constexpr (kOp == ReduceOp::kProd) {
      return bitCast<Value>(bitCast<Unsigned>(a) * bitCast<Unsigned>(b));
    } else if constexpr (kOp == ReduceOp::kMax) {
      return a > b ? a : b;
    } else if constexpr (kOp == ReduceOp::kMin) {
      return a < b ? a : b;
    } else if constexpr (kOp == ReduceOp::kBand) {
      return a & b;
    } else if constexpr (kOp == ReduceOp::kBor) {
      return a | b;
    } else {
      return a ^ b;
    }
  }

  // Integer division has no vector instruction; C's `/` truncates toward zero as required.
  static void divide(T* p, size_t count, int nranks) {
    if constexpr (std::is_signed_v<T>) {
      const int64_t d = nranks;
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(static_cast<int64_t>(p[i]) / d);
    } else {
      const uint64_t d = static_cast<uint64_t>(nranks);
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(static_cast<uint64_t>(p[i]) / d);
    }
  }
};

template <class F, size_t kBytes>
struct FloatKind {
  using Elem = F;
  using Value = Vec<F, kBytes>;
  static constexpr size_t kLanes = kBytes / sizeof(F);
  static constexpr bool kInteger = false;

  static Value load(const F* p) { return loadVec<Value>(p); }
  static void store(F* p, Value v) { storeVec(p, v); }
  template <ReduceOp kOp>
  static Value combine(Value a, Value b) {
    return floatCombine<kOp, F>(a, b);
  }
  static Value divide(Value v, int nranks) { return v / static_cast<F>(nranks); }
};

/// float16 through float32: the variant supplies the conversions (F16C where it has them).
template <class Isa>
struct Fp16Kind {
  using Elem = uint16_t;
  using Value = Vec<float, Isa::kBytes>;
  static constexpr size_t kLanes = Isa::kBytes / sizeof(float);
  static constexpr bool kInteger = false;

  static Value load(const uint16_t* p) { return Isa::loadFp16(p); }
  static void store(uint16_t* p, Value v) { Isa::storeFp16(p, v); }
  template <ReduceOp kOp>
  static Value combine(Value a, Value b) {
    return floatCombine<kOp, float>(a, b);
  }
  static Value divide(Value v, int nranks) { return v / static_cast<float>(nranks); }
};

/// bfloat16 through float32, with the conversions of half.hpp done on whole vectors.
template <size_t kBytes>
struct Bf16Kind {
  using Elem = uint16_t;
  using Value = Vec<float, kBytes>;
  using Wide = Vec<uint32_t, kBytes>;
  using Narrow = Vec<uint16_t, kBytes / 2>;
  static constexpr size_t kLanes = kBytes / sizeof(float);
  static constexpr bool kInteger = false;

  static Value load(const uint16_t* p) {
    const Wide wide = __builtin_convertvector(loadVec<Narrow>(p), Wide);
    return bitCast<Value>(wide << 16);
  }
  static void store(uint16_t* p, Value v) {
    const Wide x = bitCast<Wide>(v);
    const Wide rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const Wide nan = (x >> 16) | 0x40u;
    const Wide bits = (x & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
    storeVec(p, __builtin_convertvector(bits, Narrow));
  }
  template <ReduceOp kOp>
  static Value combine(Value a, Value b) {
    return floatCombine<kOp, float>(a, b);
  }
  static Value divide(Value v, int nranks) { return v / static_cast<float>(nranks); }
};

/// Applies `step(dstVec, aVec, bVec)` over count elements: four vectors per iteration, then
/// single vectors, then the tail through zero-padded copies so that it runs the same code.
template <class K, class Step>
inline void forEachVector(typename K::Elem* dst, const typename K::Elem* a,
                          const typename K::Elem* b, size_t count, Step step) {
  using E = typename K::Elem;
  constexpr size_t kL = K::kLanes;
  size_t i = 0;
  for (; i + 4 * kL <= count; i += 4 * kL) {
    step(dst + i, a + i, b + i);
    step(dst + i + kL, a + i + kL, b + i + kL);
    step(dst + i + 2 * kL, a + i + 2 * kL, b + i + 2 * kL);
    step(dst + i + 3 * kL, a + i + 3 * kL, b + i + 3 * kL);
  }
  for (; i + kL <= count; i += kL) step(dst + i, a + i, b + i);
  if (i < count) {
    const size_t rest = count - i;
    E ta[kL] = {};
    E tb[kL] = {};
    E td[kL];
    __builtin_memcpy(ta, a + i, rest * sizeof(E));
    __builtin_memcpy(tb, b + i, rest * sizeof(E));
    step(td, ta, tb);
    __builtin_memcpy(dst + i, td, rest * sizeof(E));
  }
}

template <class K, ReduceOp kOp>
void reduceLoop(void* dst, const void* a, const void* b, size_t count) {
  using E = typename K::Elem;
  forEachVector<K>(static_cast<E*>(dst), static_cast<const E*>(a), static_cast<const E*>(b), count,
                   [](E* d, const E* x, const E* y) {
                     K::store(d, K::template combine<kOp>(K::load(x), K::load(y)));
                   });
}

template <class K>
void reduceOps(void* dst, const void* a, const void* b, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return reduceLoop<K, ReduceOp::kSum>(dst, a, b, count);
    case ReduceOp::kProd:
      return reduceLoop<K, ReduceOp::kProd>(dst, a, b, count);
    case ReduceOp::kMax:
      return reduceLoop<K, ReduceOp::kMax>(dst, a, b, count);
    case ReduceOp::kMin:
      return reduceLoop<K, ReduceOp::kMin>(dst, a, b, count);
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      // Integer kinds only: the checks refused a floating type before (acceptsOp).
      if constexpr (K::kInteger) {
        if (op == ReduceOp::kBand) return reduceLoop<K, ReduceOp::kBand>(dst, a, b, count);
        if (op == ReduceOp::kBor) return reduceLoop<K, ReduceOp::kBor>(dst, a, b, count);
        return reduceLoop<K, ReduceOp::kBxor>(dst, a, b, count);
      }
      return;
  }
}

template <class K>
void divideLoop(void* data, size_t count, int nranks) {
  using E = typename K::Elem;
  E* p = static_cast<E*>(data);
  if constexpr (K::kInteger) {
    K::divide(p, count, nranks);
  } else {
    forEachVector<K>(p, p, p, count, [nranks](E* d, const E* x, const E*) {
      K::store(d, K::divide(K::load(x), nranks));
    });
  }
}

/// Calls `body.template operator()<Kind>()` with the element kind of `type` for variant Isa.
template <class Isa, class Body>
inline void withKind(DataType type, Body body) {
  constexpr size_t kB = Isa::kBytes;
  switch (type) {
    case DataType::kInt8:
      return body.template operator()<IntKind<int8_t, kB>>();
    case DataType::kUint8:
      return body.template operator()<IntKind<uint8_t, kB>>();
    case DataType::kInt32:
      return body.template operator()<IntKind<int32_t, kB>>();
    case DataType::kUint32:
      return body.template operator()<IntKind<uint32_t, kB>>();
    case DataType::kInt64:
      return body.template operator()<IntKind<int64_t, kB>>();
    case DataType::kUint64:
      return body.template operator()<IntKind<uint64_t, kB>>();
    case DataType::kFloat16:
      return body.template operator()<Fp16Kind<Isa>>();
    case DataType::kFloat32:
      return body.template operator()<FloatKind<float, kB>>();
    case DataType::kFloat64:
      return body.template operator()<FloatKind<double, kB>>();
    case DataType::kBFloat16:
      return body.template operator()<Bf16Kind<kB>>();
  }
}

template <class Isa>
void reduceDispatch(void* dst, const void* a, const void* b, size_t count, DataType type,
                    ReduceOp op) {
  withKind<Isa>(type, [&]<class K>() { reduceOps<K>(dst, a, b, count, op); });
}

template <class Isa>
void divideDispatch(void* data, size_t count, DataType type, int nranks) {
  withKind<Isa>(type, [&]<class K>() { divideLoop<K>(data, count, nranks); });
}

}  // namespace
}  // namespace grove::exec
