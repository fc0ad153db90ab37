// The AVX-512 variant of the reduction kernels (x86-64-v4: AVX-512 F/BW/DQ/VL): 64-byte
// vectors, float16 converted with the 512-bit F16C forms, which round exactly like half.hpp.
// Only this file is compiled for x86-64-v4; reduce.cpp calls it after checking the CPU.
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
#pragma GCC target("arch=x86-64-v4")
// GCC 12's 512-bit conversion intrinsics start from _mm512_undefined_*(), which -O0 reports as
// maybe uninitialised; the value is fully overwritten.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "exec/reduce_loops.hpp"

namespace grove::exec::variants {
namespace {

struct Avx512 {
  static constexpr size_t kBytes = 64;
  using Floats = Vec<float, kBytes>;

  static Floats loadFp16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void storeFp16(uint16_t* p, Floats v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

}  // namespace

void reduceAvx512(void* dst, const void* a, const void* b, size_t count, DataType type,
                  ReduceOp op) {
  reduceDispatch<Avx512>(dst, a, b, count, type, op);
}

void divideAvx512(void* data, size_t count, DataType type, int nranks) {
  divideDispatch<Avx512>(data, count, type, nranks);
}

}  // namespace grove::exec::variants

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif  // GROVE_X86_VARIANTS
