// Conversions between float32 and the 16-bit floating types, bit-exact and portable.
//
// grove reduces float16 and bfloat16 through float32 and rounds back to nearest even, so these
// four functions define what every reduction of a 16-bit type returns. They are `inline` and
// branch-light so that the portable kernels and the test reference share one definition, and
// they match the x86 F16C instructions (vcvtph2ps / vcvtps2ph with round-to-nearest) bit for
// bit, including NaN payloads, so the vector kernels may use those instructions instead.
//
// NaN rules: a NaN stays a NaN, keeps as many high payload bits as fit and comes back quiet.
// Everything else is exact (widening) or correctly rounded to nearest even (narrowing), with
// subnormals on both sides and overflow to ±infinity.
#pragma once

#include <cstdint>
#include <cstring>

namespace grove::exec {

namespace half_detail {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace half_detail

/// IEEE binary16 bits -> float (exact). A signalling NaN comes back quiet, as F16C does.
inline float halfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) {  // infinity, or NaN made quiet
    return half_detail::bitsFloat(sign | 0x7f800000u | (mantissa << 13) |
                                  (mantissa != 0 ? 0x00400000u : 0u));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * half_detail::bitsFloat(0x33800000u);
    return half_detail::bitsFloat(sign | half_detail::floatBits(magnitude));
  }
  return half_detail::bitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/// float -> binary16 bits, rounded to nearest even; NaN stays NaN, overflow gives ±inf.
inline uint16_t floatToHalf(float value) {
  uint32_t x = half_detail::floatBits(value);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint32_t out;
  if (x >= 0x47800000u) {  // |value| >= 2^16: infinity, or NaN keeping its high payload bits
    out = x > 0x7f800000u ? (0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u;
  } else if (x < 0x38800000u) {
    // Below 2^-14 the result is subnormal or zero: adding 0.5 lines the half's last mantissa
    // bit up with float's, so the float adder does the round-to-nearest-even for us.
    out = half_detail::floatBits(half_detail::bitsFloat(x) + 0.5f) - 0x3f000000u;
  } else {
    // Normal: rebias the exponent and round on bit 13 (ties to even); a carry out of the
    // mantissa correctly bumps the exponent, up to infinity.
    const uint32_t odd = (x >> 13) & 1u;
    out = (x + 0xc8000fffu + odd) >> 13;
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

/// bfloat16 bits -> float (exact, NaN payload kept as is).
inline float bfloat16ToFloat(uint16_t bits) {
  return half_detail::bitsFloat(static_cast<uint32_t>(bits) << 16);
}

/// float -> bfloat16 bits, rounded to nearest even; NaN stays (quiet) NaN.
inline uint16_t floatToBfloat16(float value) {
  const uint32_t x = half_detail::floatBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace grove::exec
