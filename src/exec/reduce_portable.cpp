// The portable variant of the reduction kernels: 16-byte vectors in the baseline instruction
// set (SSE2 on x86-64), float16 converted with the scalar functions of half.hpp. It runs on
// every CPU and defines the results the faster variants must reproduce bit for bit.
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

struct Portable {
  static constexpr size_t kBytes = 16;
  using Floats = Vec<float, kBytes>;
  static constexpr size_t kLanes = kBytes / sizeof(float);

  static Floats loadFp16(const uint16_t* p) {
    float values[kLanes];
    for (size_t i = 0; i < kLanes; ++i) values[i] = halfToFloat(p[i]);
    return loadVec<Floats>(values);
  }
  static void storeFp16(uint16_t* p, Floats v) {
    float values[kLanes];
    storeVec(values, v);
    for (size_t i = 0; i < kLanes; ++i) p[i] = floatToHalf(values[i]);
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
