// Element types and reduction operators understood by every grove collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace grove {

/// Element type of a buffer. The numbering matches the C ABI (`groveDataType_t`).
enum class DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,  ///< IEEE 754 binary16; reduced through float32, rounded to nearest even.
  kFloat32 = 7,
  kFloat64 = 8,
  kBFloat16 = 9,  ///< bfloat16; reduced through float32, rounded to nearest even.
};

/// Number of distinct DataType values.
inline constexpr int kDataTypeCount = 10;

/// Reduction operator. The numbering matches the C ABI (`groveRedOp_t`).
///
/// kMin and kMax propagate NaN: if any input is NaN the result is NaN (PyTorch's rule).
/// kAvg is the sum divided by the number of ranks; integer types divide with truncation
/// toward zero, as C does. kBand, kBor and kBxor are bitwise and, or and exclusive or, on
/// the integer types only (acceptsOp).
enum class ReduceOp : int {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kAvg = 4,
  kBand = 5,
  kBor = 6,
  kBxor = 7
};

/// Number of distinct ReduceOp values.
inline constexpr int kReduceOpCount = 8;

/// True for the bitwise operators (kBand, kBor, kBxor).
constexpr bool isBitwise(ReduceOp op) {
  return op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
}

/// Size in bytes of one element of `type`; 0 for an invalid value.
constexpr size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

/// True for the floating-point types (float16, bfloat16, float32, float64).
constexpr bool isFloatingPoint(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 || type == DataType::kFloat32 ||
         type == DataType::kFloat64;
}

/// True when `type` holds one of the enumerated values.
constexpr bool isValid(DataType type) {
  return static_cast<int>(type) >= 0 && static_cast<int>(type) < kDataTypeCount;
}

/// True when `op` holds one of the enumerated values.
constexpr bool isValid(ReduceOp op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < kReduceOpCount;
}

/// Whether elements of `type` can be reduced with `op`: every pair but a bitwise operator on
/// a floating-point type.
constexpr bool acceptsOp(DataType type, ReduceOp op) {
  return !(isBitwise(op) && isFloatingPoint(type));
}

/// nccl-tests' name of a type: "int8", "uint8", "int32", "uint32", "int64", "uint64",
/// "half", "float", "double", "bfloat16".
std::string_view toString(DataType type);

/// Name of an operator: "sum", "prod", "max", "min", "avg", "band", "bor", "bxor".
std::string_view toString(ReduceOp op);

/// Parses a type name. Accepts nccl-tests' names and the aliases "float16", "float32",
/// "float64", "fp16", "bf16", "char", "int", "uint".
std::optional<DataType> parseDataType(std::string_view name);

/// Parses an operator name ("sum", "prod", "max", "min", "avg", "band", "bor", "bxor").
std::optional<ReduceOp> parseReduceOp(std::string_view name);

}  // namespace grove
