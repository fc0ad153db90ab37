// The portable variant of the reduction kernels: 16-byte vectors in the baseline instruction
// set (SSE2 on x86-64, NEON on arm64). It runs on every CPU; the faster variants must
// reproduce its results bit for bit.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exec/half.hpp"
#include "exec/reduce_loops.hpp"
#include "exec/reduce_variants.hpp"
#include "grove/types.hpp"

namespace grove::exec::variants {
namespace {

// float16 conversions of half.hpp done on whole vectors, branch-free, so that they vectorise
// on CPUs without F16C (and on other architectures); reduce_test checks them against
// half.hpp for every 16-bit pattern.
struct Portable {
  static constexpr size_t kBytes = 16;
  using Floats = Vec<float, kBytes>;
  using Wide = Vec<uint32_t, kBytes>;
  using Signed = Vec<int32_t, kBytes>;
  using Narrow = Vec<uint16_t, kBytes / 2>;

  static Floats loadFp16(const uint16_t* p) {
    const Wide w = __builtin_convertvector(loadVec<Narrow>(p), Wide);
    const Wide sign = (w & 0x8000u) << 16;
    const Wide em = w & 0x7fffu;  // exponent and mantissa
    const Wide normal = (em << 13) + 0x38000000u;
    const Wide special = (em << 13) | 0x7f800000u | (em > 0x7c00u ? Wide{} + 0x00400000u : Wide{});
    const Wide subnormal =
        bitCast<Wide>(__builtin_convertvector(bitCast<Signed>(em), Floats) * 0x1p-24f);
    const Wide bits = em >= 0x7c00u ? special : (em < 0x400u ? subnormal : normal);
    return bitCast<Floats>(bits | sign);
  }

  static void storeFp16(uint16_t* p, Floats v) {
    Wide x = bitCast<Wide>(v);
    const Wide sign = x & 0x80000000u;
    x ^= sign;
    const Wide special = x > 0x7f800000u ? (0x7e00u | ((x >> 13) & 0x3ffu)) : Wide{} + 0x7c00u;
    const Wide subnormal = bitCast<Wide>(bitCast<Floats>(x) + 0.5f) - 0x3f000000u;
    const Wide normal = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
    const Wide bits = x >= 0x47800000u ? special : (x < 0x38800000u ? subnormal : normal);
    storeVec(p, __builtin_convertvector(bits | (sign >> 16), Narrow));
  }
};

}  // namespace

void reducePortable(void* dst, const void* a, const void* b, size_t count, DataType type,
                    ReduceOp op) {
  reduceDispatch<Portable>(dst, a, b, count, type, op);
}

void dividePortable(void* data, size_t count, DataType type, int nranks) {
  divideDispatch<Portable>(data, count, type, nranks);
}

}  // namespace grove::exec::variants
