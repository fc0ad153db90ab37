// The float16 and bfloat16 conversions of src/exec/half.hpp: every 16-bit pattern one way,
// round-to-nearest-even at every tie point the other way, checked against an independent
// double-arithmetic reference and, where the CPU has F16C, against the hardware conversions
// the vector kernels use (they must agree bit for bit, NaN payloads included).
#include "exec/half.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define GROVE_TEST_F16C 1
#else
#define GROVE_TEST_F16C 0
#endif

namespace grove::exec {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool isNanHalf(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Value of a finite binary16 pattern from its definition.
double halfValue(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000u) ? -magnitude : magnitude;
}

// Correctly rounded float -> binary16 by arithmetic in double (std::nearbyint rounds ties to
// even), independent of the bit tricks in half.hpp.
uint16_t referenceToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u | ((bitsOf(f) >> 13) & 0x3ffu));
  if (a >= 65520.0) return sign | 0x7c00;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int unbiased = std::max(e - 1, -14);
  double r = std::nearbyint(std::ldexp(a, 10 - unbiased));
  if (r == 2048) {
    r = 1024;
    ++unbiased;
  }
  const int rounded = static_cast<int>(r);
  if (rounded < 1024) return static_cast<uint16_t>(sign | rounded);  // subnormal (or zero)
  return static_cast<uint16_t>(sign | ((unbiased + 15) << 10) | (rounded - 1024));
}

// The same for bfloat16 (8-bit significand, float's exponent range).
uint16_t referenceToBfloat16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return static_cast<uint16_t>((bitsOf(f) >> 16) | 0x40u);
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(f)) return sign | 0x7f80;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int unbiased = std::max(e - 1, -126);
  double r = std::nearbyint(std::ldexp(a, 7 - unbiased));
  if (r == 256) {
    r = 128;
    ++unbiased;
  }
  if (unbiased > 127) return sign | 0x7f80;
  const int rounded = static_cast<int>(r);
  if (rounded < 128) return static_cast<uint16_t>(sign | rounded);
  return static_cast<uint16_t>(sign | ((unbiased + 127) << 7) | (rounded - 128));
}

TEST(HalfToFloat, EveryPatternHasItsDefinedValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = halfToFloat(bits);
    if (isNanHalf(bits)) {
      // Quiet NaN with the payload in the high mantissa bits, sign kept.
      EXPECT_EQ(bitsOf(f), ((h & 0x8000u) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13)) << h;
    } else if ((h & 0x7fffu) == 0x7c00u) {
      EXPECT_TRUE(std::isinf(f)) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), halfValue(bits)) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << h;
    }
  }
}

TEST(HalfToFloat, RoundTripIsIdentityAndNanStaysNan) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const uint16_t back = floatToHalf(halfToFloat(bits));
    if (isNanHalf(bits)) {
      EXPECT_TRUE(isNanHalf(back)) << h;
      EXPECT_EQ(back, bits | 0x200u) << h;  // made quiet, payload kept
    } else {
      EXPECT_EQ(back, bits) << h;
    }
  }
}

TEST(FloatToHalf, TiesRoundToEvenEverywhere) {
  // Between every pair of neighbouring positive finite halves, the midpoint goes to the even
  // one, and one float ulp either side goes to the nearer one. The last pair is 65504 and
  // 65536 (which is infinity in binary16).
  for (uint16_t h = 0; h < 0x7c00; ++h) {
    const double low = halfValue(h);
    const double high = h == 0x7bff ? 65536.0 : halfValue(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((low + high) / 2);  // exact: 12 significant bits
    ASSERT_EQ(static_cast<double>(mid), (low + high) / 2);
    const uint16_t even = (h & 1u) ? static_cast<uint16_t>(h + 1) : h;
    EXPECT_EQ(floatToHalf(mid), even) << h;
    EXPECT_EQ(floatToHalf(-mid), even | 0x8000u) << h;
    EXPECT_EQ(floatToHalf(std::nextafter(mid, 0.0f)), h) << h;
    EXPECT_EQ(floatToHalf(std::nextafter(mid, 1e9f)), h + 1) << h;
    EXPECT_EQ(floatToHalf(-std::nextafter(mid, 1e9f)), (h + 1) | 0x8000u) << h;
  }
}

TEST(FloatToHalf, ExactBitPatterns) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);      // tie, even below
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie, even above
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);             // largest finite
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);           // just below the overflow tie
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);             // overflow tie goes to infinity
  EXPECT_EQ(floatToHalf(FLT_MAX), 0x7c00);
  EXPECT_EQ(floatToHalf(-FLT_MAX), 0xfc00);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400);         // smallest normal
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);         // tie with zero: even
  EXPECT_EQ(floatToHalf(0x1.000002p-25f), 0x0001);  // just above the tie
  EXPECT_EQ(floatToHalf(3 * 0x1p-25f), 0x0002);     // tie between 1 and 2 ulps
  EXPECT_EQ(floatToHalf(0x1.ff8p-15f), 0x03ff);     // largest subnormal
  EXPECT_EQ(floatToHalf(0x1.ffcp-15f), 0x0400);     // tie with the smallest normal: even
  EXPECT_EQ(floatToHalf(0x1.ffap-15f), 0x03ff);
  EXPECT_EQ(floatToHalf(floatOf(0x00000001u)), 0x0000);  // float subnormals vanish
  EXPECT_EQ(floatToHalf(floatOf(0x80000001u)), 0x8000);
  EXPECT_EQ(floatToHalf(floatOf(0x7fc00000u)), 0x7e00);  // quiet NaN
  EXPECT_EQ(floatToHalf(floatOf(0xffc00000u)), 0xfe00);
  EXPECT_EQ(floatToHalf(floatOf(0x7f802000u)), 0x7e01);  // signalling NaN: quiet, payload
  EXPECT_EQ(floatToHalf(floatOf(0x7f800001u)), 0x7e00);  // payload below half's precision
}

TEST(FloatToHalf, MatchesArithmeticReferenceOnASweep) {
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 509) {
    const float f = floatOf(static_cast<uint32_t>(u));
    ASSERT_EQ(floatToHalf(f), referenceToHalf(f)) << std::hex << u;
  }
}

TEST(Bfloat16, EveryPatternRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = bfloat16ToFloat(bits);
    EXPECT_EQ(bitsOf(f), h << 16) << h;
    const bool nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    EXPECT_EQ(floatToBfloat16(f), nan ? (bits | 0x40u) : bits) << h;
  }
}

TEST(Bfloat16, TiesRoundToEvenEverywhere) {
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    const uint32_t mid = (h << 16) | 0x8000u;  // halfway between h and h + 1
    const uint16_t even = static_cast<uint16_t>((h & 1u) ? h + 1 : h);
    EXPECT_EQ(floatToBfloat16(floatOf(mid)), even) << h;
    EXPECT_EQ(floatToBfloat16(floatOf(mid | 0x80000000u)), even | 0x8000u) << h;
    EXPECT_EQ(floatToBfloat16(floatOf(mid - 1)), h) << h;
    EXPECT_EQ(floatToBfloat16(floatOf(mid + 1)), h + 1) << h;
  }
}

TEST(Bfloat16, ExactBitPatterns) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(floatOf(0x3f808000u)), 0x3f80);  // tie, even below
  EXPECT_EQ(floatToBfloat16(floatOf(0x3f818000u)), 0x3f82);  // tie, even above
  EXPECT_EQ(floatToBfloat16(floatOf(0x7f7f8000u)), 0x7f80);  // overflow tie: infinity
  EXPECT_EQ(floatToBfloat16(FLT_MAX), 0x7f80);
  EXPECT_EQ(floatToBfloat16(-FLT_MAX), 0xff80);
  EXPECT_EQ(floatToBfloat16(floatOf(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(floatToBfloat16(floatOf(0x00008000u)), 0x0000);  // subnormal tie: even
  EXPECT_EQ(floatToBfloat16(floatOf(0x00018000u)), 0x0002);
  EXPECT_EQ(floatToBfloat16(floatOf(0x7f800001u)), 0x7fc0);  // NaN with low payload only
  EXPECT_EQ(floatToBfloat16(floatOf(0xff800001u)), 0xffc0);
  EXPECT_EQ(floatToBfloat16(floatOf(0x7f810000u)), 0x7fc1);  // signalling NaN made quiet
  EXPECT_EQ(floatToBfloat16(floatOf(0x3eaaaaabu)), 0x3eab);  // 1/3
}

TEST(Bfloat16, MatchesArithmeticReferenceOnASweep) {
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 509) {
    const float f = floatOf(static_cast<uint32_t>(u));
    ASSERT_EQ(floatToBfloat16(f), referenceToBfloat16(f)) << std::hex << u;
  }
}

#if GROVE_TEST_F16C
__attribute__((target("f16c"))) uint16_t hardwareToHalf(float f) {
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set1_ps(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

__attribute__((target("f16c"))) uint32_t hardwareToFloatBits(uint16_t h) {
  return bitsOf(_mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(static_cast<short>(h)))));
}

TEST(HalfF16c, HardwareAgreesBitForBit) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    ASSERT_EQ(bitsOf(halfToFloat(bits)), hardwareToFloatBits(bits)) << h;
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 127) {
    const float f = floatOf(static_cast<uint32_t>(u));
    ASSERT_EQ(floatToHalf(f), hardwareToHalf(f)) << std::hex << u;
  }
  for (uint16_t h = 0; h < 0x7c00; ++h) {  // every tie, both signs, and its neighbours
    const double high = h == 0x7bff ? 65536.0 : halfValue(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((halfValue(h) + high) / 2);
    for (float f : {mid, -mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      ASSERT_EQ(floatToHalf(f), hardwareToHalf(f)) << h;
    }
  }
}
#endif

}  // namespace
}  // namespace grove::exec
