// Names of types, operators and error codes: the words users type on command lines
// (nccl-tests' spellings) and read in messages (NCCL's short error descriptions), kept in
// one place so the tool, the logs and the C ABI agree.
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include "grove/error.hpp"
#include "grove/types.hpp"

namespace grove {
namespace {

struct TypeName {
  std::string_view name;
  DataType type;
};

// Canonical names first (toString uses them), then the accepted aliases.
constexpr std::array<TypeName, 18> kTypeNames{{
    {"int8", DataType::kInt8},
    {"uint8", DataType::kUint8},
    {"int32", DataType::kInt32},
    {"uint32", DataType::kUint32},
    {"int64", DataType::kInt64},
    {"uint64", DataType::kUint64},
    {"half", DataType::kFloat16},
    {"float", DataType::kFloat32},
    {"double", DataType::kFloat64},
    {"bfloat16", DataType::kBFloat16},
    {"float16", DataType::kFloat16},
    {"float32", DataType::kFloat32},
    {"float64", DataType::kFloat64},
    {"fp16", DataType::kFloat16},
    {"bf16", DataType::kBFloat16},
    {"char", DataType::kInt8},
    {"int", DataType::kInt32},
    {"uint", DataType::kUint32},
}};

constexpr std::array<std::string_view, kReduceOpCount> kOpNames{"sum", "prod", "max", "min",
                                                                "avg", "band", "bor", "bxor"};

// Names are matched without regard to case ("FLOAT", "Sum"), since they come from users.
bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view toString(DataType type) {
  if (!isValid(type)) return "unknown";
  for (const TypeName& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "unknown";
}

std::string_view toString(ReduceOp op) {
  if (!isValid(op)) return "unknown";
  return kOpNames[static_cast<size_t>(op)];
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (const TypeName& entry : kTypeNames) {
    if (equalsIgnoreCase(entry.name, name)) return entry.type;
  }
  return std::nullopt;
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (equalsIgnoreCase(kOpNames[i], name)) return static_cast<ReduceOp>(i);
  }
  return std::nullopt;
}

std::string_view toString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kSuccess:
      return "no error";
    case ErrorCode::kUnhandledCudaError:
      return "unhandled cuda error";
    case ErrorCode::kSystemError:
      return "unhandled system error";
    case ErrorCode::kInternalError:
      return "internal error";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInvalidUsage:
      return "invalid usage";
    case ErrorCode::kRemoteError:
      return "remote process exited or there was a network error";
    case ErrorCode::kInProgress:
      return "operation in progress";
    case ErrorCode::kTimeout:
      return "operation timed out";
  }
  return "unknown result code";
}

}  // namespace grove
