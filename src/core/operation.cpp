#include "core/operation.hpp"

#include <fmt/format.h>

namespace grove::detail {

void Operation::reset() {
  shape = {};
  sequence = 0;
  algorithm = {};
  plan = nullptr;
  buffers = {};
  scratchBytes = 0;
  inputExtents.clear();
  outputExtents.clear();
  stageFrom = nullptr;
  stageBytes = 0;
  fallback = {};
  batch.clear();
  signatureCheck = false;
  checkedCall.reset();
  signatures.clear();
  state = State::kIdle;
  error = ErrorCode::kSuccess;
  message.clear();
  started = false;
  timeout = std::chrono::milliseconds(0);
  traceStartNs = 0;
}

std::string Operation::describe() const {
  if (signatureCheck) {
    return fmt::format("signature check #{} (GROVE_CHECK=1) of {}", sequence,
                       checkedCall != nullptr ? checkedCall->describe() : "a call of count 0");
  }
  if (isPointToPoint()) {
    return fmt::format("send/recv #{} ({} transfers)", sequence, batch.size());
  }
  std::string text =
      fmt::format("{} #{} ({}", plan::toString(shape.collective), sequence, shape.details());
  if (!algorithm.empty()) text += fmt::format(", algorithm {}", algorithm);
  return text + ")";
}

}  // namespace grove::detail
