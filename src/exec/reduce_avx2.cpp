// The AVX2 variant of the reduction kernels (x86-64-v3: AVX2, FMA, F16C): 32-byte vectors,
// float16 converted with F16C, which rounds exactly like half.hpp. Only this file is compiled
// for x86-64-v3; reduce.cpp calls it after checking the CPU.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exec/half.hpp"
#include "exec/reduce_variants.hpp"
#include "grove/types.hpp"

#if GROVE_X86_VARIANTS
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")

#include "exec/reduce_loops.hpp"

namespace grove::exec::variants {
namespace {

struct Avx2 {
  static constexpr size_t kBytes = 32;
  using Floats = Vec<float, kBytes>;

  static Floats loadFp16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void storeFp16(uint16_t* p, Floats v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

}  // namespace

void reduceAvx2(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op) {
  reduceDispatch<Avx2>(dst, a, b, count, type, op);
}

void divideAvx2(void* data, size_t count, DataType type, int nranks) {
  divideDispatch<Avx2>(data, count, type, nranks);
}

}  // namespace grove::exec::variants

#pragma GCC pop_options
#endif  // GROVE_X86_VARIANTS
