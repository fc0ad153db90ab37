// Elementwise reduction kernels for every type and operator, vectorised with run-time CPU
// dispatch (AVX-512, AVX2, portable).
#pragma once

#include <cstddef>

#include "grove/types.hpp"

namespace grove::exec {

/// dst[i] = a[i] ⊕ b[i] for i < count. dst may alias a or b exactly (not partially).
/// kAvg reduces as kSum (the division happens in finalize()). float16/bfloat16 are
/// computed in float32 and rounded to nearest even; kMin/kMax propagate NaN (a NaN operand
/// made quiet, a's when both are NaN) and order zeros: max(-0, +0) == +0, min(-0, +0) == -0.
/// Integer sums and products wrap modulo 2^bits (no undefined behaviour). Results are
/// bit-identical on every variant, except which payload a sum or product of two NaNs keeps.
/// Throws kInvalidArgument for an invalid type or op, or a null buffer with count > 0.
void reduce(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op);

/// Applies the operator's final transform in place: for kAvg divides each element by
/// `nranks` (integers truncate toward zero; halves through float32); no-op otherwise.
/// Throws kInvalidArgument when nranks < 1.
void finalize(void* data, size_t count, DataType type, ReduceOp op, int nranks);

/// dst[i] = finalize(a[i] ⊕ b[i]): reduce() and finalize() fused in one pass over memory,
/// bit-identical to calling them one after the other.
void reduceFinalize(void* dst, const void* a, const void* b, size_t count, DataType type,
                    ReduceOp op, int nranks);

/// Name of the instruction set the kernels dispatched to on this CPU ("avx512", "avx2",
/// "portable"), for logs.
const char* reduceIsa();

/// An instruction-set variant of the kernels. All variants return bit-identical results.
enum class ReduceIsa : int {
  kPortable = 0,  ///< Baseline vector code (SSE2 on x86-64); runs everywhere.
  kAvx2 = 1,      ///< x86-64-v3: AVX2, FMA, F16C.
  kAvx512 = 2,    ///< x86-64-v4: AVX-512 F/BW/DQ/VL.
};

/// True when this build contains `isa` and this CPU (and operating system) can run it.
bool reduceIsaSupported(ReduceIsa isa);

/// reduce() on a chosen variant, for tests and benchmarks. Throws kInvalidArgument when
/// `isa` is not supported here.
void reduceWithIsa(ReduceIsa isa, void* dst, const void* a, const void* b, size_t count,
                   DataType type, ReduceOp op);

/// finalize() on a chosen variant, for tests and benchmarks. Throws kInvalidArgument when
/// `isa` is not supported here.
void finalizeWithIsa(ReduceIsa isa, void* data, size_t count, DataType type, ReduceOp op,
                     int nranks);

}  // namespace grove::exec
