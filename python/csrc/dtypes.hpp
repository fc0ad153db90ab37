// How torch's dtypes and reduce ops map onto grove's.
//
// Reductions: float32/64, float16, bfloat16, int8, uint8, int32, int64, uint32, uint64 as
// themselves; bool as uint8 with SUM as MAX and PRODUCT as MIN (NCCL's rule: a logical or
// / and); complex64/128 with SUM and AVG as pairs of float32/64 (component-wise sums are
// the complex sum). Anything else (int16, complex with PRODUCT/MIN/MAX, ...) raises,
// naming the dtype and the op. Collectives that do not reduce move every dtype as bytes.
#pragma once

#include <ATen/ATen.h>

#include <grove/types.hpp>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace grove_torch {

/// What a reduction of one tensor runs as on grove.
struct Reduction {
  grove::DataType type;
  grove::ReduceOp op;
  size_t elementsPerItem = 1;  ///< grove elements per torch element (2 for complex).
  /// PREMUL_SUM: the factor the input is multiplied by first (1: none).
  double premul = 1.0;
};

/// The grove form of reducing `tensor` with `op` in `call` on `rank`; throws a clear
/// c10::Error naming the dtype, the op and the call when grove cannot reduce it.
Reduction reductionFor(const at::Tensor& tensor, const c10d::ReduceOp& op, const char* call,
                       int rank);

/// torch's name of an op ("SUM", "BAND", ...), for messages.
std::string opName(const c10d::ReduceOp& op);

}  // namespace grove_torch
