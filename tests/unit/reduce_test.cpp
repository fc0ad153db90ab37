// The reduction kernels of src/exec/reduce.hpp against the scalar reference of
// tests/support/reference.hpp, on every instruction-set variant this CPU runs: every type ×
// operator on sizes that hit every vector tail, in place and out of place, with NaN, ±inf,
// ±0 and subnormal inputs; then hand-computed edge cases (wrap-around, rounding ties, avg of
// negative integers) with exact expected values, argument checks, and the type/op/error names.
#include "exec/reduce.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "exec/half.hpp"
#include "grove/error.hpp"
#include "grove/types.hpp"
#include "support/reference.hpp"

namespace grove::exec {
namespace {

using Bytes = std::vector<unsigned char>;

constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,   DataType::kUint64,
                                  DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                  DataType::kBFloat16};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin,
                                ReduceOp::kAvg, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
constexpr size_t kSizes[] = {0, 1, 7, 31, 64, 1000, 4099};

using common::Isa;

const char* isaName(Isa isa) { return common::toString(isa); }

std::vector<Isa> supportedIsas() {
  std::vector<Isa> isas;
  for (Isa isa : common::kIsas) {
    if (common::isaRuns(isa)) isas.push_back(isa);
  }
  return isas;
}

template <class T>
void put(Bytes& buf, size_t i, T value) {
  std::memcpy(buf.data() + i * sizeof(T), &value, sizeof(T));
}

// Random inputs that exercise every rule: full-range integers (wrap-around), and for floats
// a mix of ordinary values, special values (NaN of both signs and kinds, ±inf, ±0, the
// smallest and largest magnitudes) and raw bit patterns; b copies a here and there so that
// min/max meet equal operands, including +0 against -0.
void fillPair(Bytes& a, Bytes& b, size_t n, DataType type, uint32_t seed) {
  const size_t size = dataTypeSize(type);
  a.assign(n * size, 0);
  b.assign(n * size, 0);
  std::mt19937_64 rng(seed);
  static const uint32_t kFloatSpecials[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7f800000u,
                                            0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u,
                                            0x80000003u, 0x007fffffu, 0x7f7fffffu, 0xff7fffffu};
  static const uint64_t kDoubleSpecials[] = {
      0x7ff8000000000000u, 0xfff8000000000001u, 0x7ff0000000000001u, 0x7ff0000000000000u,
      0xfff0000000000000u, 0x0000000000000000u, 0x8000000000000000u, 0x0000000000000001u,
      0x800000000000000fu, 0x000fffffffffffffu, 0x7fefffffffffffffu, 0xffefffffffffffffu};
  std::uniform_real_distribution<double> ordinary(-100.0, 100.0);
  for (Bytes* buf : {&a, &b}) {
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng();
      const int kind = static_cast<int>(r % 8);
      switch (type) {
        case DataType::kFloat32:
          put<uint32_t>(*buf, i,
                        kind == 0   ? kFloatSpecials[(r >> 8) % 12]
                        : kind == 1 ? static_cast<uint32_t>(r >> 32)
                                    : std::bit_cast<uint32_t>(static_cast<float>(ordinary(rng))));
          break;
        case DataType::kFloat64:
          put<uint64_t>(*buf, i,
                        kind == 0   ? kDoubleSpecials[(r >> 8) % 12]
                        : kind == 1 ? rng()
                                    : std::bit_cast<uint64_t>(ordinary(rng)));
          break;
        case DataType::kFloat16:
        case DataType::kBFloat16:
          if (kind < 3) {
            put<uint16_t>(*buf, i, static_cast<uint16_t>(r >> 16));
          } else {
            test::storeElement(buf->data(), i, type, ordinary(rng));
          }
          break;
        default:
          std::memcpy(buf->data() + i * size, &r, size);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng() % 16;
    if (r == 0) std::memcpy(b.data() + i * size, a.data() + i * size, size);
    if (r == 1 && isFloatingPoint(type)) {  // +0 against -0, either way round
      test::storeElement(a.data(), i, type, (i & 1) ? 0.0 : -0.0);
      test::storeElement(b.data(), i, type, (i & 1) ? -0.0 : 0.0);
    }
  }
}

std::string hex(uint64_t bits) {
  std::ostringstream out;
  out << "0x" << std::hex << bits;
  return out.str();
}

// Byte-for-byte equality, except that a sum or product of NaNs only has to be a NaN: which
// NaN payload survives a + b when both are NaN is the hardware's choice of operand order.
::testing::AssertionResult sameResult(const Bytes& got, const Bytes& want, size_t n, DataType type,
                                      ReduceOp op) {
  const size_t size = dataTypeSize(type);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(got.data() + i * size, want.data() + i * size, size) == 0) continue;
    const double g = test::loadElement(got.data(), i, type);
    const double w = test::loadElement(want.data(), i, type);
    if (op != ReduceOp::kMax && op != ReduceOp::kMin && std::isnan(g) && std::isnan(w)) continue;
    uint64_t gb = 0;
    uint64_t wb = 0;
    std::memcpy(&gb, got.data() + i * size, size);
    std::memcpy(&wb, want.data() + i * size, size);
    return ::testing::AssertionFailure()
           << "element " << i << " of " << n << ": got " << g << " (bits " << hex(gb)
           << "), expected " << w << " (bits " << hex(wb) << ")";
  }
  return ::testing::AssertionSuccess();
}

class ReduceIsaTest : public ::testing::TestWithParam<Isa> {};

TEST_P(ReduceIsaTest, EveryTypeAndOpMatchesReference) {
  const Isa isa = GetParam();
  uint32_t seed = 1;
  for (DataType type : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      if (!acceptsOp(type, op)) continue;
      for (size_t n : kSizes) {
        const std::string what = std::string(toString(type)) + " " + std::string(toString(op)) +
                                 " n=" + std::to_string(n);
        Bytes a;
        Bytes b;
        fillPair(a, b, n, type, ++seed);
        Bytes want(a.size());
        test::referenceReduce(want.data(), a.data(), b.data(), n, type, op);

        Bytes got(a.size(), 0xee);
        reduceWithIsa(isa, got.data(), a.data(), b.data(), n, type, op);
        EXPECT_TRUE(sameResult(got, want, n, type, op)) << what << " out of place";

        Bytes inA = a;  // dst == a
        reduceWithIsa(isa, inA.data(), inA.data(), b.data(), n, type, op);
        EXPECT_TRUE(sameResult(inA, want, n, type, op)) << what << " dst == a";

        Bytes inB = b;  // dst == b
        reduceWithIsa(isa, inB.data(), a.data(), inB.data(), n, type, op);
        EXPECT_TRUE(sameResult(inB, want, n, type, op)) << what << " dst == b";

        // finalize, as kAvg applies it after the last reduction (3 ranks)
        test::referenceFinalize(want.data(), n, type, op, 3);
        finalizeWithIsa(isa, got.data(), n, type, op, 3);
        EXPECT_TRUE(sameResult(got, want, n, type, op)) << what << " finalize";
      }
    }
  }
}

TEST_P(ReduceIsaTest, EveryHalfPairOfOneOperandRow) {
  // For fp16 and bf16: every 16-bit pattern a against a spread of b patterns.
  const Isa isa = GetParam();
  const size_t n = 65536;
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    for (uint16_t bPattern : {0x0000, 0x8000, 0x0001, 0x3c00, 0xbc01, 0x7bff, 0x7c00, 0xfc00,
                              0x7e01, 0x7d00, 0x3f80, 0x7f7f, 0xff81}) {
      Bytes a(2 * n);
      Bytes b(2 * n);
      for (size_t i = 0; i < n; ++i) {
        put<uint16_t>(a, i, static_cast<uint16_t>(i));
        put<uint16_t>(b, i, bPattern);
      }
      for (ReduceOp op : kAllOps) {
        if (!acceptsOp(type, op)) continue;
        Bytes want(a.size());
        Bytes got(a.size());
        test::referenceReduce(want.data(), a.data(), b.data(), n, type, op);
        reduceWithIsa(isa, got.data(), a.data(), b.data(), n, type, op);
        EXPECT_TRUE(sameResult(got, want, n, type, op))
            << toString(type) << " " << toString(op) << " b=0x" << std::hex << bPattern;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ReduceIsaTest, ::testing::ValuesIn(supportedIsas()),
                         [](const auto& param) { return std::string(isaName(param.param)); });

// ---- Hand-computed cases through the public entry points (the dispatched variant).

template <class T>
std::vector<T> reduced(std::vector<T> a, const std::vector<T>& b, DataType type, ReduceOp op) {
  reduce(a.data(), a.data(), b.data(), a.size(), type, op);
  return a;
}

TEST(Reduce, IntegersWrapAround) {
  using V8 = std::vector<int8_t>;
  EXPECT_EQ(reduced<int8_t>({127, -128, -128}, {1, -1, -1}, DataType::kInt8, ReduceOp::kSum),
            (V8{-128, 127, 127}));
  EXPECT_EQ(reduced<int8_t>({-128, 64, 16}, {-1, 2, 16}, DataType::kInt8, ReduceOp::kProd),
            (V8{-128, -128, 0}));
  EXPECT_EQ(reduced<uint8_t>({255, 200}, {1, 100}, DataType::kUint8, ReduceOp::kSum),
            (std::vector<uint8_t>{0, 44}));
  EXPECT_EQ(reduced<int32_t>({INT32_MAX}, {1}, DataType::kInt32, ReduceOp::kSum),
            (std::vector<int32_t>{INT32_MIN}));
  EXPECT_EQ(reduced<uint32_t>({0x80000000u}, {2}, DataType::kUint32, ReduceOp::kProd),
            (std::vector<uint32_t>{0}));
  EXPECT_EQ(reduced<int64_t>({INT64_MAX, INT64_MIN}, {2, -1}, DataType::kInt64, ReduceOp::kProd),
            (std::vector<int64_t>{-2, INT64_MIN}));
  EXPECT_EQ(reduced<uint64_t>({UINT64_MAX}, {UINT64_MAX}, DataType::kUint64, ReduceOp::kProd),
            (std::vector<uint64_t>{1}));
  EXPECT_EQ(reduced<int8_t>({-5, 3}, {2, -4}, DataType::kInt8, ReduceOp::kMax), (V8{2, 3}));
  EXPECT_EQ(reduced<uint8_t>({250, 3}, {2, 4}, DataType::kUint8, ReduceOp::kMin),
            (std::vector<uint8_t>{2, 3}));
}

TEST(Reduce, FloatSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const auto max = reduced<float>({nan, 1, -inf, 0.0f, -0.0f, 2}, {1, nan, -5, -0.0f, 0.0f, inf},
                                  DataType::kFloat32, ReduceOp::kMax);
  EXPECT_TRUE(std::isnan(max[0]));
  EXPECT_TRUE(std::isnan(max[1]));
  EXPECT_EQ(max[2], -5);
  EXPECT_EQ(std::bit_cast<uint32_t>(max[3]), 0u);  // +0 either way round
  EXPECT_EQ(std::bit_cast<uint32_t>(max[4]), 0u);
  EXPECT_EQ(max[5], inf);
  const auto min = reduced<float>({nan, 1, -inf, 0.0f, -0.0f}, {1, nan, -5, -0.0f, 0.0f},
                                  DataType::kFloat32, ReduceOp::kMin);
  EXPECT_TRUE(std::isnan(min[0]));
  EXPECT_TRUE(std::isnan(min[1]));
  EXPECT_EQ(min[2], -inf);
  EXPECT_EQ(std::bit_cast<uint32_t>(min[3]), 0x80000000u);  // -0 either way round
  EXPECT_EQ(std::bit_cast<uint32_t>(min[4]), 0x80000000u);
  const auto sum =
      reduced<float>({inf, tiny, 3e38f}, {-inf, tiny, 3e38f}, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_TRUE(std::isnan(sum[0]));
  EXPECT_EQ(sum[1], 2 * tiny);  // subnormals are not flushed
  EXPECT_EQ(sum[2], inf);
  const auto dmax =
      reduced<double>({std::nan(""), 3}, {1, std::nan("")}, DataType::kFloat64, ReduceOp::kMax);
  EXPECT_TRUE(std::isnan(dmax[0]));
  EXPECT_TRUE(std::isnan(dmax[1]));
}

TEST(Reduce, HalfRoundingTiesAndOverflow) {
  using V = std::vector<uint16_t>;
  // fp16: 1 + 2^-11 ties to 1; (1 + 2^-10) + 2^-11 ties to 1 + 2^-9; 65504 + 65504 is inf;
  // 65504 + 16 = 65520 ties to inf; 65504 + 15.99 stays; 2^-24 + 2^-24 = 2^-23 (subnormals).
  EXPECT_EQ(reduced<uint16_t>({0x3c00, 0x3c01, 0x7bff, 0x7bff, 0x7bff, 0x0001},
                              {0x1000, 0x1000, 0x7bff, 0x4c00, 0x4bff, 0x0001}, DataType::kFloat16,
                              ReduceOp::kSum),
            (V{0x3c00, 0x3c02, 0x7c00, 0x7c00, 0x7bff, 0x0002}));
  // fp16 product 1.5 * 1.5 = 2.25 exactly; max/min with NaN give the NaN made quiet.
  EXPECT_EQ(reduced<uint16_t>({0x3e00}, {0x3e00}, DataType::kFloat16, ReduceOp::kProd),
            (V{0x4080}));
  EXPECT_EQ(
      reduced<uint16_t>({0x7d00, 0x3c00}, {0x3c00, 0xfd01}, DataType::kFloat16, ReduceOp::kMax),
      (V{0x7f00, 0xff01}));
  // bf16: 1 + 2^-8 ties to 1; (1 + 2^-7) + 2^-8 ties to 1 + 2^-6; max finite doubled is inf.
  EXPECT_EQ(reduced<uint16_t>({0x3f80, 0x3f81, 0x7f7f}, {0x3b80, 0x3b80, 0x7f7f},
                              DataType::kBFloat16, ReduceOp::kSum),
            (V{0x3f80, 0x3f82, 0x7f80}));
}

TEST(Finalize, AvgTruncatesTowardZero) {
  std::vector<int32_t> s{-7, 7, -1, 1, -8, INT32_MIN};
  finalize(s.data(), s.size(), DataType::kInt32, ReduceOp::kAvg, 2);
  EXPECT_EQ(s, (std::vector<int32_t>{-3, 3, 0, 0, -4, INT32_MIN / 2}));
  std::vector<int8_t> s8{-128, -7, 127};
  finalize(s8.data(), s8.size(), DataType::kInt8, ReduceOp::kAvg, 3);
  EXPECT_EQ(s8, (std::vector<int8_t>{-42, -2, 42}));
  std::vector<int64_t> s64{-7, INT64_MIN};
  finalize(s64.data(), s64.size(), DataType::kInt64, ReduceOp::kAvg, 2);
  EXPECT_EQ(s64, (std::vector<int64_t>{-3, INT64_MIN / 2}));
  std::vector<uint8_t> u8{255, 7};
  finalize(u8.data(), u8.size(), DataType::kUint8, ReduceOp::kAvg, 2);
  EXPECT_EQ(u8, (std::vector<uint8_t>{127, 3}));
  std::vector<uint32_t> u32{0xffffffffu};
  finalize(u32.data(), u32.size(), DataType::kUint32, ReduceOp::kAvg, 2);
  EXPECT_EQ(u32, (std::vector<uint32_t>{0x7fffffffu}));
  std::vector<uint64_t> u64{UINT64_MAX, 5};
  finalize(u64.data(), u64.size(), DataType::kUint64, ReduceOp::kAvg, 4);
  EXPECT_EQ(u64, (std::vector<uint64_t>{UINT64_MAX / 4, 1}));
}

TEST(Finalize, AvgOfFloatsAndOnlyAvg) {
  std::vector<float> f{1, -7};
  finalize(f.data(), f.size(), DataType::kFloat32, ReduceOp::kAvg, 3);
  EXPECT_EQ(f, (std::vector<float>{1.0f / 3.0f, -7.0f / 3.0f}));
  std::vector<double> d{1};
  finalize(d.data(), d.size(), DataType::kFloat64, ReduceOp::kAvg, 3);
  EXPECT_EQ(d[0], 1.0 / 3.0);
  std::vector<uint16_t> h{0x3c00, 0x0001};  // 1/3 in fp16; the smallest subnormal / 3 is 0
  finalize(h.data(), h.size(), DataType::kFloat16, ReduceOp::kAvg, 3);
  EXPECT_EQ(h, (std::vector<uint16_t>{0x3555, 0x0000}));
  std::vector<uint16_t> bf{0x3f80};
  finalize(bf.data(), bf.size(), DataType::kBFloat16, ReduceOp::kAvg, 3);
  EXPECT_EQ(bf, (std::vector<uint16_t>{0x3eab}));
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<int32_t> v{-7, 9};
    finalize(v.data(), v.size(), DataType::kInt32, op, 2);
    EXPECT_EQ(v, (std::vector<int32_t>{-7, 9})) << toString(op);
  }
}

TEST(ReduceFinalize, EqualsReduceThenFinalize) {
  const size_t n = 5003;  // spans several internal blocks for every element size
  uint32_t seed = 1000;
  for (DataType type : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      if (!acceptsOp(type, op)) continue;
      Bytes a;
      Bytes b;
      fillPair(a, b, n, type, ++seed);
      Bytes want(a.size());
      reduce(want.data(), a.data(), b.data(), n, type, op);
      finalize(want.data(), n, type, op, 5);
      Bytes got(a.size());
      reduceFinalize(got.data(), a.data(), b.data(), n, type, op, 5);
      EXPECT_TRUE(sameResult(got, want, n, type, op)) << toString(type) << " " << toString(op);
      reduceFinalize(a.data(), a.data(), b.data(), n, type, op, 5);
      EXPECT_TRUE(sameResult(a, want, n, type, op)) << toString(type) << " in place";
    }
  }
}

void expectInvalid(const std::function<void()>& call, const std::string& mentions) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning '" << mentions << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST(Reduce, RejectsBadArguments) {
  float x[2] = {1, 2};
  expectInvalid([&] { reduce(x, x, x, 2, static_cast<DataType>(10), ReduceOp::kSum); }, "type");
  expectInvalid([&] { reduce(x, x, x, 2, DataType::kFloat32, static_cast<ReduceOp>(-1)); }, "op");
  expectInvalid([&] { reduce(x, x, x, 2, DataType::kFloat32, ReduceOp::kBand); },
                "band needs an integer type, got float");
  expectInvalid([&] { reduce(nullptr, x, x, 2, DataType::kFloat32, ReduceOp::kSum); }, "dst");
  expectInvalid([&] { reduce(x, x, nullptr, 2, DataType::kFloat32, ReduceOp::kSum); }, "b");
  expectInvalid([&] { finalize(x, 2, DataType::kFloat32, ReduceOp::kAvg, 0); }, "nranks");
  expectInvalid([&] { reduceFinalize(x, x, x, 2, DataType::kFloat32, ReduceOp::kAvg, -1); },
                "nranks");
  // count 0 touches nothing, so null buffers are fine.
  reduce(nullptr, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum);
  finalize(nullptr, 0, DataType::kInt8, ReduceOp::kAvg, 2);
}

TEST(Reduce, ReportsItsVariant) {
  const std::string isa = common::toString(reduceIsa());
  EXPECT_TRUE(isa == "portable" || isa == "avx2" || isa == "avx512") << isa;
  EXPECT_TRUE(common::isaRuns(Isa::kPortable));
  EXPECT_TRUE(common::isaRuns(reduceIsa()));
  if (common::isaRuns(Isa::kAvx512)) {
    EXPECT_EQ(isa, "avx512");
  } else if (common::isaRuns(Isa::kAvx2)) {
    EXPECT_EQ(isa, "avx2");
  } else {
    EXPECT_EQ(isa, "portable");
  }
  if (!common::isaRuns(Isa::kAvx2)) {
    float x = 1;
    EXPECT_THROW(reduceWithIsa(Isa::kAvx2, &x, &x, &x, 1, DataType::kFloat32, ReduceOp::kSum),
                 Error);
  }
}

TEST(Names, TypesAndOps) {
  EXPECT_EQ(toString(DataType::kFloat16), "half");
  EXPECT_EQ(toString(DataType::kFloat32), "float");
  EXPECT_EQ(toString(DataType::kFloat64), "double");
  EXPECT_EQ(toString(DataType::kBFloat16), "bfloat16");
  EXPECT_EQ(toString(static_cast<DataType>(42)), "unknown");
  for (DataType type : kAllTypes) EXPECT_EQ(parseDataType(toString(type)), type);
  for (ReduceOp op : kAllOps) EXPECT_EQ(parseReduceOp(toString(op)), op);
  EXPECT_EQ(toString(ReduceOp::kAvg), "avg");
  EXPECT_EQ(parseDataType("float16"), DataType::kFloat16);
  EXPECT_EQ(parseDataType("fp16"), DataType::kFloat16);
  EXPECT_EQ(parseDataType("bf16"), DataType::kBFloat16);
  EXPECT_EQ(parseDataType("float32"), DataType::kFloat32);
  EXPECT_EQ(parseDataType("float64"), DataType::kFloat64);
  EXPECT_EQ(parseDataType("char"), DataType::kInt8);
  EXPECT_EQ(parseDataType("int"), DataType::kInt32);
  EXPECT_EQ(parseDataType("uint"), DataType::kUint32);
  EXPECT_EQ(parseDataType("FLOAT"), DataType::kFloat32);
  EXPECT_EQ(parseDataType("float8"), std::nullopt);
  EXPECT_EQ(parseDataType(""), std::nullopt);
  EXPECT_EQ(parseReduceOp("Max"), ReduceOp::kMax);
  EXPECT_EQ(parseReduceOp("mean"), std::nullopt);
}

TEST(Names, ErrorCodes) {
  EXPECT_EQ(toString(ErrorCode::kSuccess), "no error");
  EXPECT_EQ(toString(ErrorCode::kInvalidArgument), "invalid argument");
  EXPECT_EQ(toString(ErrorCode::kRemoteError),
            "remote process exited or there was a network error");
  EXPECT_EQ(toString(ErrorCode::kTimeout), "operation timed out");
  EXPECT_EQ(toString(ErrorCode::kSystemError), "unhandled system error");
  EXPECT_EQ(toString(static_cast<ErrorCode>(99)), "unknown result code");
}

TEST(Reduce, BitwiseOperatorsByHand) {
  const uint8_t a[] = {0xf0, 0x0f, 0xaa, 0xff};
  const uint8_t b[] = {0xcc, 0x3c, 0x55, 0x00};
  uint8_t out[4];
  reduce(out, a, b, 4, DataType::kUint8, ReduceOp::kBand);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 4), (std::vector<uint8_t>{0xc0, 0x0c, 0x00, 0x00}));
  reduce(out, a, b, 4, DataType::kUint8, ReduceOp::kBor);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 4), (std::vector<uint8_t>{0xfc, 0x3f, 0xff, 0xff}));
  reduce(out, a, b, 4, DataType::kUint8, ReduceOp::kBxor);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 4), (std::vector<uint8_t>{0x3c, 0x33, 0xff, 0xff}));
  const int64_t c[] = {-1, -8};
  const int64_t d[] = {6, 5};
  int64_t o[2];
  reduce(o, c, d, 2, DataType::kInt64, ReduceOp::kBand);
  EXPECT_EQ(o[0], 6);
  EXPECT_EQ(o[1], -8 & 5);
  EXPECT_EQ(parseReduceOp("BXOR"), ReduceOp::kBxor);
  EXPECT_FALSE(acceptsOp(DataType::kBFloat16, ReduceOp::kBor));
  EXPECT_TRUE(acceptsOp(DataType::kInt8, ReduceOp::kBor));
}

}  // namespace
}  // namespace grove::exec
