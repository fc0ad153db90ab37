// Byte planes: how the codec lays out the bytes of floating-point values before entropy
// coding, and back (ZipNN's idea, docs/compression.md).
//
// A near-Gaussian tensor's exponents take a few dozen values, so a plane holding just the
// exponent byte of every value has low entropy, while the mantissa bytes are close to random.
// Grouping the bytes by meaning lets the coder see that. The layouts, per element:
//
//   bfloat16  s eeeeeeee mmmmmmm        -> plane 0: eeeeeeee, plane 1: s mmmmmmm
//   float32   s eeeeeeee m(23)          -> plane 0: eeeeeeee, plane 1: s + mantissa bits 22..16,
//                                          plane 2: mantissa bits 15..8, plane 3: bits 7..0
//   float16   s eeeee mm mmmmmmmm       -> plane 0: the high byte, plane 1: the low byte
//
// The sign joins the top mantissa bits so that plane 0 is the whole exponent: a sign inside
// the exponent byte would add one bit of entropy to the plane that is coded. float16's 5-bit
// exponent already fits its high byte. Every other type has no planes (planeCount 0).
//
// split and merge run the best instruction-set variant this CPU has (planes_variants.hpp),
// picked once per process like the reduction kernels; all variants give identical bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/isa.hpp"
#include "grove/types.hpp"

namespace grove::codec {

/// The most planes any type has.
inline constexpr int kMaxPlanes = 4;

/// Number of byte planes of `type`: 2 for bfloat16 and float16, 4 for float32, else 0.
constexpr int planeCount(DataType type) {
  switch (type) {
    case DataType::kBFloat16:
    case DataType::kFloat16:
      return 2;
    case DataType::kFloat32:
      return 4;
    default:
      return 0;
  }
}

/// Writes plane p of the `count` elements at `input` to planes[p][0..count), for each of
/// planeCount(type) planes. `type` must have planes.
void splitPlanes(DataType type, const void* input, size_t count, uint8_t* const* planes);

/// The inverse of splitPlanes: element i of `output` from byte i of every plane.
void mergePlanes(DataType type, const uint8_t* const* planes, size_t count, void* output);

/// The instruction-set variant (common/isa.hpp) splitPlanes and mergePlanes use in this
/// process.
common::Isa planesIsa();

/// splitPlanes / mergePlanes on a given variant (tests run every one that common::isaRuns);
/// throws kInvalidArgument when `isa` does not run here.
void splitPlanesWithIsa(common::Isa isa, DataType type, const void* input, size_t count,
                        uint8_t* const* planes);
void mergePlanesWithIsa(common::Isa isa, DataType type, const uint8_t* const* planes, size_t count,
                        void* output);

}  // namespace grove::codec
