// Elementwise reduction kernels for every type and operator, vectorised with run-time CPU
// dispatch (AVX-512, AVX2, portable).
#pragma once

#include <cstddef>

#include "common/isa.hpp"
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

/// The instruction-set variant (common/isa.hpp) the kernels dispatch to on this CPU. Every
/// variant this build has and this CPU runs (common::isaRuns) gives bit-identical results.
common::Isa reduceIsa();

/// reduce() on a chosen variant, for tests and benchmarks. Throws kInvalidArgument when
/// `isa` does not run here.
void reduceWithIsa(common::Isa isa, void* dst, const void* a, const void* b, size_t count,
                   DataType type, ReduceOp op);

/// finalize() on a chosen variant, for tests and benchmarks. Throws kInvalidArgument when
/// `isa` does not run here.
void finalizeWithIsa(common::Isa isa, void* data, size_t count, DataType type, ReduceOp op,
                     int nranks);

}  // namespace grove::exec
