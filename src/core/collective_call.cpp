#include "core/collective_call.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "core/comm_state.hpp"
#include "core/memory_registry.hpp"
#include "core/signature_check.hpp"
#include "core/validate.hpp"
#include "exec/message_tag.hpp"

namespace grove::detail {
namespace {

using plan::Collective;

const char* offset(const void* base, size_t bytes) {
  return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) + bytes);
}

std::shared_ptr<Operation> completed(CommState& state) {
  auto op = state.newOperation();
  op->state = Operation::State::kDone;
  return op;
}

std::shared_ptr<Operation> issuePointToPoint(CommState& state, const CollectiveCall& call,
                                             const CallSite& site) {
  const bool isSend = std::string_view(call.name) == "send";
  const plan::CallShape& shape = call.shape;
  checkRank(site, "peer", call.peer);
  if (call.peer == site.rank && !state.inGroup()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove {} (rank {} of {}): peer {} is this rank; sending to itself "
                            "needs the matching call in the same groupStart()/groupEnd()",
                            call.name, site.rank, site.size, call.peer));
  }
  checkBuffer(site, isSend ? "sendbuf" : "recvbuf", isSend ? call.sendbuf : call.recvbuf,
              shape.count, shape.type);
  size_t bytes = checkedBytes(site, "count", shape.count, 1, shape.type);
  auto op = state.newOperation();
  op->shape = shape;
  op->sequence = state.nextSequence();
  Transfer transfer;
  transfer.isSend = isSend;
  transfer.peer = call.peer;
  transfer.buffer = isSend ? const_cast<char*>(static_cast<const char*>(call.sendbuf))
                           : static_cast<char*>(call.recvbuf);
  transfer.bytes = bytes;
  transfer.tag = exec::tagOf(shape, 0);
  op->batch.add(transfer);
  if (call.options != nullptr) op->timeout = call.options->timeout;
  return state.submit(op);
}

// Checks allToAllv's four arrays and turns them into chunk extents.
void allToAllvExtents(const CallSite& site, const CollectiveCall& call, Operation& op,
                      size_t* sendElems, size_t* recvElems) {
  const size_t n = static_cast<size_t>(site.size);
  const std::span<const size_t>* arrays[] = {&call.sendCounts, &call.sendDispls, &call.recvCounts,
                                             &call.recvDispls};
  const char* names[] = {"sendCounts", "sendDispls", "recvCounts", "recvDispls"};
  for (int i = 0; i < 4; ++i) {
    if (arrays[i]->size() != n) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("grove allToAllv (rank {} of {}): {} has {} entries (expected {}, "
                              "one per rank)",
                              site.rank, site.size, names[i], arrays[i]->size(), n));
    }
  }
  *sendElems = 0;
  *recvElems = 0;
  for (size_t q = 0; q < n; ++q) {
    op.inputExtents.push_back({call.sendDispls[q], call.sendCounts[q]});
    op.outputExtents.push_back({call.recvDispls[q], call.recvCounts[q]});
    if (call.sendDispls[q] > SIZE_MAX / 2 || call.sendCounts[q] > SIZE_MAX / 2 ||
        call.recvDispls[q] > SIZE_MAX / 2 || call.recvCounts[q] > SIZE_MAX / 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("grove allToAllv (rank {} of {}): count or displacement for rank "
                              "{} is too large",
                              site.rank, site.size, q));
    }
    *sendElems = std::max(*sendElems, call.sendDispls[q] + call.sendCounts[q]);
    *recvElems = std::max(*recvElems, call.recvDispls[q] + call.recvCounts[q]);
  }
}

}  // namespace

void usePlan(Operation& op, const exec::BoundPlan& bound, std::string_view algorithm,
             size_t tileElems) {
  op.plan = &bound;
  op.algorithm = algorithm;
  const uint32_t k = bound.plan.chunksPerBlock;
  op.buffers.input.chunksPerBlock = k;
  op.buffers.output.chunksPerBlock = k;
  op.buffers.scratch.chunksPerBlock = k;
  op.buffers.tileElems = tileElems;
  op.buffers.tag.algorithm = exec::algorithmTag(algorithm);
  op.scratchBytes =
      bound.plan.scratchBlocks * op.buffers.scratch.blockElems * dataTypeSize(op.buffers.type);
}

std::shared_ptr<Operation> issue(CommState& state, const CollectiveCall& call) {
  checkUsable(state, call.name);
  const CallSite site{call.name, state.rank(), state.size()};
  const int n = state.size();
  const int rank = state.rank();
  const plan::CallShape& shape = call.shape;
  checkType(site, shape.type);
  if (shape.collective == Collective::kSendRecv) return issuePointToPoint(state, call, site);

  if (shape.reduces()) checkOp(site, shape.op, shape.type);
  if (shape.rooted()) checkRank(site, "root", shape.root);
  const bool isRoot = shape.rooted() && rank == shape.root;
  const size_t es = dataTypeSize(shape.type);

  auto op = state.newOperation();
  // Elements each buffer must hold on this rank (0 where this rank does not use it), and
  // the send pointer that makes the call in place.
  size_t sendElems = 0;
  size_t recvElems = 0;
  const void* inPlaceSend = call.recvbuf;
  const char* inPlaceForm = "sendbuf == recvbuf";
  const size_t count = shape.count;
  const size_t all = count * static_cast<size_t>(n);
  checkedBytes(site, "count", count, static_cast<size_t>(n), shape.type);
  switch (shape.collective) {
    case Collective::kAllReduce:
      sendElems = recvElems = count;
      break;
    case Collective::kBroadcast:
      sendElems = isRoot ? count : 0;
      recvElems = count;
      break;
    case Collective::kReduce:
      sendElems = count;
      recvElems = isRoot ? count : 0;
      break;
    case Collective::kAllGather:
      sendElems = count;
      recvElems = all;
      inPlaceSend = offset(call.recvbuf, rank * count * es);
      inPlaceForm = "sendbuf == recvbuf + rank * count";
      break;
    case Collective::kReduceScatter:
      sendElems = all;
      recvElems = count;
      inPlaceSend = offset(call.recvbuf, -static_cast<intptr_t>(rank * count * es));
      inPlaceForm = "recvbuf == sendbuf + rank * count";
      break;
    case Collective::kAllToAll:
      sendElems = recvElems = all;
      break;
    case Collective::kAllToAllv:
      allToAllvExtents(site, call, *op, &sendElems, &recvElems);
      break;
    case Collective::kGather:
      sendElems = count;
      recvElems = isRoot ? all : 0;
      inPlaceSend = offset(call.recvbuf, shape.root * count * es);
      inPlaceForm = "sendbuf == recvbuf + root * count";
      break;
    case Collective::kScatter:
      sendElems = isRoot ? all : 0;
      recvElems = count;
      inPlaceSend = offset(call.recvbuf, -static_cast<intptr_t>(shape.root * count * es));
      inPlaceForm = "recvbuf == sendbuf + root * count";
      break;
    case Collective::kBarrier:
    case Collective::kSendRecv:
      break;
  }
  checkBuffer(site, "sendbuf", call.sendbuf, sendElems, shape.type);
  checkBuffer(site, "recvbuf", call.recvbuf, recvElems, shape.type);
  bool inPlace = checkOverlap(site, call.sendbuf, sendElems * es, call.recvbuf, recvElems * es,
                              sendElems > 0 && recvElems > 0 ? inPlaceSend : nullptr, inPlaceForm);

  // Every rank numbers this call the same; its messages carry the number and arguments.
  const transport::MessageTag tag = exec::tagOf(shape, state.nextCollective());
  const bool checkSignatures = state.config().checkSignatures;

  if (count == 0 && shape.collective != Collective::kBarrier &&
      shape.collective != Collective::kAllToAllv) {
    if (!checkSignatures) return completed(state);
    auto check = makeSignatureCheck(state, tag, nullptr);
    if (call.options != nullptr) check->timeout = call.options->timeout;
    return state.submit(check);
  }

  plan::PlanRequest request{shape, n, rank};
  if (shape.collective == Collective::kAllToAllv) request.count = sendElems;
  request.topology = state.topology();
  const Config& config = state.config();
  // One-sided plans read the peers' buffers in place: every rank on this host, a transport
  // with peer memory, GROVE_DIRECT on. The same on every rank (settings, transport kind),
  // so every rank selects alike; whether the buffers can really be read is settled by the
  // plan's prologue, on every rank alike (exec/one_sided.hpp).
  request.peerMemory = config.direct && state.transport().peerMemory() != nullptr &&
                       state.transport().ranksOnThisHost() == n;
  request.oneSidedMinBytes = config.directMinBytes;
  const std::string_view forced = call.options->algorithm;
  const algo::Algorithm& algorithm = state.chooseAlgorithm(request, forced);
  const exec::BoundPlan& bound = state.boundPlan(algorithm, request);

  op->shape = shape;
  op->sequence = state.nextSequence();
  exec::CallBuffers& buffers = op->buffers;
  buffers.type = shape.type;
  buffers.op = shape.op;
  buffers.nranks = n;
  buffers.input = {
      sendElems > 0 ? const_cast<char*>(static_cast<const char*>(call.sendbuf)) : nullptr, count,
      1};
  buffers.output = {recvElems > 0 ? static_cast<char*>(call.recvbuf) : nullptr, count, 1};
  buffers.scratch = {nullptr, count, 1};
  buffers.tag = tag;
  buffers.checksum = config.checksum;
  buffers.faultDelay = config.faultDelay;
  usePlan(*op, bound, algorithm.name,
          std::max<size_t>(1, (bound.oneSided ? exec::kOneSidedTileBytes : config.slotBytes) / es));
  if (bound.oneSided) {
    // Declined by the hellos, the call runs what would have been chosen without one-sided
    // plans (a forced one-sided algorithm included: the user cannot force memory readable).
    plan::PlanRequest without = request;
    without.peerMemory = false;
    const algo::Algorithm& other = state.chooseAlgorithm(without, "");
    const exec::BoundPlan& otherBound = state.boundPlan(other, without);
    op->fallback = {&otherBound, other.name, std::max<size_t>(1, config.slotBytes / es)};
    buffers.inputDescriptor = describeBuffer(buffers.input.base, sendElems * es);
    buffers.outputDescriptor = describeBuffer(buffers.output.base, recvElems * es);
    // Kernel copies of ordinary memory beat the FIFOs for the collectives that only copy
    // (1.04-1.58x for allgather and broadcast from 1 MiB on 2 and 4 ranks, docs/tuning.md);
    // the reducing ones gain only with mapped buffers.
    buffers.allowCopies = config.directCopies || shape.collective == Collective::kAllGather ||
                          shape.collective == Collective::kBroadcast;
  }
  if (inPlace &&
      (shape.collective == Collective::kAllToAll || shape.collective == Collective::kAllToAllv)) {
    // The pairwise exchange overwrites blocks it has yet to send: stage the input.
    op->stageFrom = static_cast<const char*>(call.sendbuf);
    op->stageBytes = sendElems * es;
  }
  if (call.options != nullptr) op->timeout = call.options->timeout;
  if (checkSignatures) state.submit(makeSignatureCheck(state, tag, op));
  return state.submit(op);
}

}  // namespace grove::detail
