// Entry points of the instruction-set variants of the reduction kernels (private to src/exec).
//
// The kernels are written once (reduce_loops.hpp) and compiled once per variant, each in its
// own file under its own `#pragma GCC target`; reduce.cpp picks one variant per process with a
// CPU check and calls it through these functions. Arguments are validated by reduce.cpp.
#pragma once

#include <cstddef>

#include "common/isa.hpp"  // GROVE_X86_VARIANTS: whether the x86 variants are compiled
#include "grove/types.hpp"

namespace grove::exec::variants {

/// dst[i] = a[i] ⊕ b[i]; kAvg reduces as kSum.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count, DataType type,
                          ReduceOp op);
/// data[i] /= nranks with the type's rounding (the kAvg transform).
using DivideFn = void (*)(void* data, size_t count, DataType type, int nranks);

void reducePortable(void* dst, const void* a, const void* b, size_t count, DataType type,
                    ReduceOp op);
void dividePortable(void* data, size_t count, DataType type, int nranks);

#if GROVE_X86_VARIANTS
void reduceAvx2(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op);
void divideAvx2(void* data, size_t count, DataType type, int nranks);
void reduceAvx512(void* dst, const void* a, const void* b, size_t count, DataType type,
                  ReduceOp op);
void divideAvx512(void* data, size_t count, DataType type, int nranks);
#endif

}  // namespace grove::exec::variants
