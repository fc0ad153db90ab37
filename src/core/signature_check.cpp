#include "core/signature_check.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/comm_state.hpp"
#include "core/operation.hpp"
#include "exec/message_tag.hpp"

namespace grove::detail {
namespace {

using transport::MessageTag;

constexpr size_t kWords = 4;  // a MessageTag's call fields, packed

void pack(const MessageTag& tag, uint64_t* out) {
  out[0] = tag.call;
  out[1] = tag.count;
  out[2] = static_cast<uint32_t>(tag.root) | static_cast<uint64_t>(tag.algorithm) << 32;
  out[3] =
      tag.collective | static_cast<uint64_t>(tag.type) << 8 | static_cast<uint64_t>(tag.op) << 16;
}

MessageTag unpack(const uint64_t* in) {
  MessageTag tag;
  tag.call = in[0];
  tag.count = in[1];
  tag.root = static_cast<int32_t>(static_cast<uint32_t>(in[2]));
  tag.algorithm = static_cast<uint32_t>(in[2] >> 32);
  tag.collective = static_cast<uint8_t>(in[3]);
  tag.type = static_cast<uint8_t>(in[3] >> 8);
  tag.op = static_cast<uint8_t>(in[3] >> 16);
  return tag;
}

}  // namespace

std::shared_ptr<Operation> makeSignatureCheck(CommState& state, const MessageTag& tag,
                                              std::shared_ptr<Operation> call) {
  const int n = state.size();
  plan::PlanRequest request{
      {plan::Collective::kAllGather, kWords, DataType::kUint64}, n, state.rank()};
  const algo::Algorithm& algorithm = state.chooseAlgorithm(request, "");
  const exec::BoundPlan& bound = state.boundPlan(algorithm, request);

  auto op = state.newOperation();
  op->signatureCheck = true;
  op->checkedCall = std::move(call);
  op->shape = request;
  op->sequence = state.nextSequence();
  op->algorithm = algorithm.name;
  op->plan = &bound;
  if (op->checkedCall != nullptr) op->timeout = op->checkedCall->timeout;
  // This rank's signature, then room for every rank's; resized only while the pool warms.
  op->signatures.assign(kWords * (static_cast<size_t>(n) + 1), 0);
  pack(tag, op->signatures.data());

  const uint32_t k = bound.plan.chunksPerBlock;
  exec::CallBuffers& buffers = op->buffers;
  buffers.type = DataType::kUint64;
  buffers.op = ReduceOp::kSum;
  buffers.nranks = n;
  buffers.tileElems = std::max<size_t>(1, state.config().slotBytes / sizeof(uint64_t));
  buffers.input = {reinterpret_cast<char*>(op->signatures.data()), kWords, k};
  buffers.output = {reinterpret_cast<char*>(op->signatures.data() + kWords), kWords, k};
  buffers.scratch = {nullptr, kWords, k};
  op->scratchBytes = bound.plan.scratchBlocks * kWords * sizeof(uint64_t);
  buffers.tag.call = tag.call;
  buffers.tag.count = kWords;
  buffers.tag.algorithm = exec::algorithmTag(algorithm.name);
  buffers.tag.collective = exec::kSignatureCheck;
  buffers.tag.type = static_cast<uint8_t>(DataType::kUint64);
  buffers.checksum = state.config().checksum;
  return op;
}

Status compareSignatures(const Operation& check, int rank, int size) {
  const MessageTag mine = unpack(check.signatures.data());
  std::string differing;
  int count = 0;
  for (int r = 0; r < size; ++r) {
    const MessageTag theirs = unpack(check.signatures.data() + kWords * (r + 1));
    if (theirs.sameCall(mine)) continue;
    if (++count <= 4) {
      differing +=
          fmt::format("{}rank {} called {}", count > 1 ? "; " : "", r, exec::describeTag(theirs));
    }
  }
  if (count == 0) return {};
  if (count > 4) differing += fmt::format("; and {} more ranks", count - 4);
  return Status::failure(
      ErrorCode::kInvalidUsage,
      fmt::format(
          "grove: {} on rank {} of {}: calls differ between ranks (GROVE_CHECK=1): this rank "
          "called {}; {}. Every rank must make the same collective calls in the same order, "
          "with the same count, type, operator and root",
          check.checkedCall != nullptr ? check.checkedCall->describe() : exec::describeTag(mine),
          rank, size, exec::describeTag(mine), differing));
}

}  // namespace grove::detail
