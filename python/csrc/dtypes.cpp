// reductionFor: torch dtype x op -> grove type x op (see dtypes.hpp).
#include "dtypes.hpp"

#include <c10/util/Exception.h>

#include <optional>

namespace grove_torch {
namespace {

using RedOp = c10d::ReduceOp::RedOpType;

std::optional<grove::DataType> groveType(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return grove::DataType::kFloat32;
    case at::kDouble:
      return grove::DataType::kFloat64;
    case at::kHalf:
      return grove::DataType::kFloat16;
    case at::kBFloat16:
      return grove::DataType::kBFloat16;
    case at::kChar:
      return grove::DataType::kInt8;
    case at::kByte:
    case at::kBool:
      return grove::DataType::kUint8;
    case at::kInt:
      return grove::DataType::kInt32;
    case at::kLong:
      return grove::DataType::kInt64;
    case at::kUInt32:
      return grove::DataType::kUint32;
    case at::kUInt64:
      return grove::DataType::kUint64;
    case at::kComplexFloat:
      return grove::DataType::kFloat32;
    case at::kComplexDouble:
      return grove::DataType::kFloat64;
    default:
      return std::nullopt;
  }
}

std::optional<grove::ReduceOp> groveOp(RedOp op) {
  switch (op) {
    case RedOp::SUM:
    case RedOp::PREMUL_SUM:
      return grove::ReduceOp::kSum;
    case RedOp::AVG:
      return grove::ReduceOp::kAvg;
    case RedOp::PRODUCT:
      return grove::ReduceOp::kProd;
    case RedOp::MIN:
      return grove::ReduceOp::kMin;
    case RedOp::MAX:
      return grove::ReduceOp::kMax;
    case RedOp::BAND:
      return grove::ReduceOp::kBand;
    case RedOp::BOR:
      return grove::ReduceOp::kBor;
    case RedOp::BXOR:
      return grove::ReduceOp::kBxor;
    default:
      return std::nullopt;
  }
}

bool isBitwise(RedOp op) { return op == RedOp::BAND || op == RedOp::BOR || op == RedOp::BXOR; }

}  // namespace

std::string opName(const c10d::ReduceOp& op) {
  switch (static_cast<RedOp>(op)) {
    case RedOp::SUM:
      return "SUM";
    case RedOp::AVG:
      return "AVG";
    case RedOp::PRODUCT:
      return "PRODUCT";
    case RedOp::MIN:
      return "MIN";
    case RedOp::MAX:
      return "MAX";
    case RedOp::BAND:
      return "BAND";
    case RedOp::BOR:
      return "BOR";
    case RedOp::BXOR:
      return "BXOR";
    case RedOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "op " + std::to_string(static_cast<int>(static_cast<RedOp>(op)));
  }
}

Reduction reductionFor(const at::Tensor& tensor, const c10d::ReduceOp& op, const char* call,
                       int rank) {
  const RedOp kind = static_cast<RedOp>(op);
  const at::ScalarType dtype = tensor.scalar_type();
  auto refuse = [&](const std::string& why) {
    TORCH_CHECK(false, "grove ", call, " on rank ", rank, ": cannot reduce a tensor of dtype ",
                dtype, " with ReduceOp.", opName(op), ": ", why);
  };
  std::optional<grove::DataType> type = groveType(dtype);
  std::optional<grove::ReduceOp> groveOperator = groveOp(kind);
  if (!type) {
    refuse(
        "grove reduces float32, float64, float16, bfloat16, int8, uint8, int32, int64, "
        "uint32, uint64 and bool (and complex with SUM or AVG)");
  }
  if (!groveOperator) refuse("grove has no such reduction");
  Reduction reduction{*type, *groveOperator};
  const bool floating = at::isFloatingType(dtype);
  if (at::isComplexType(dtype)) {
    if (kind != RedOp::SUM && kind != RedOp::AVG && kind != RedOp::PREMUL_SUM) {
      refuse("complex tensors reduce with SUM, AVG or PREMUL_SUM only");
    }
    reduction.elementsPerItem = 2;
  }
  if (isBitwise(kind) && (floating || at::isComplexType(dtype))) {
    refuse("bitwise ops need an integer or bool dtype");
  }
  if (dtype == at::kBool) {
    if (kind == RedOp::SUM) reduction.op = grove::ReduceOp::kMax;      // logical or
    if (kind == RedOp::PRODUCT) reduction.op = grove::ReduceOp::kMin;  // logical and
    if (kind == RedOp::AVG || kind == RedOp::PREMUL_SUM) refuse("bool has no average");
  }
  if (kind == RedOp::PREMUL_SUM) {
    if (!floating && !at::isComplexType(dtype)) refuse("PREMUL_SUM needs a floating dtype");
    auto* supplement = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
    if (supplement == nullptr) refuse("the op carries no factor");
    reduction.premul = supplement->tensor_factor.defined()
                           ? supplement->tensor_factor.item<double>()
                           : supplement->double_factor;
  }
  return reduction;
}

}  // namespace grove_torch
