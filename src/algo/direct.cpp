// Direct: single-host collectives that read the peers' buffers in place (one-sided plans).
//
// Through FIFOs every byte is copied twice (into a slot by its sender, out of it by its
// receiver). When every rank can read its peers' buffers (request.peerMemory: all on one
// host, transport/peer_memory.hpp), a rank can read them itself. Each input is then read
// once and each output written once:
//  * allreduce (n chunks, one per rank): rank r reduces chunk r from every rank's input
//    (`rall`, in rank order, so the result does not depend on who reduces), tells every peer
//    so (`signal`), and copies chunk q from rank q's output once q has said the same (`wait`,
//    `get`) — tile by tile, so a peer copies a tile while it is still in the cache of the rank
//    that just reduced it;
//  * reducescatter: rank r reduces block r from every rank's input;
//  * allgather: rank r copies each rank's input into block q of its output;
//  * broadcast: every rank copies the root's input.
// The executor's prologue and epilogue for one-sided plans (exec/one_sided.hpp) make inputs
// readable from the first step and keep every buffer in place until its last reader is done.
//
// Cost: one pass over the call's bytes at memory speed (reduceGBps), and no message latency
// in the α–β sense: nothing is staged, nothing waits in FIFOs. Every FIFO plan pays at least
// one α and its bytes at the slower link β, so where direct applies it ranks first, as
// measured (docs/tuning.md). What it does pay, the prologue's hellos and the epilogue's
// "done" messages, is why it does not apply below oneSidedMinBytes (GROVE_DIRECT_MIN_BYTES,
// the measured crossover): there the FIFOs' pipelined plans are faster.
#include <fmt/format.h>

#include <algorithm>

#include "algo/all.hpp"
#include "algo/builder.hpp"
#include "grove/types.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "direct";

/// The larger of the call's send and receive buffers, in bytes.
size_t callBytes(const plan::PlanRequest& request) {
  const size_t block = request.count * dataTypeSize(request.type);
  const auto n = static_cast<size_t>(request.nranks);
  switch (request.collective) {
    case plan::Collective::kAllGather:
    case plan::Collective::kReduceScatter:
      return block * n;
    default:
      return block;
  }
}

Status appliesDirect(const plan::PlanRequest& request) {
  if (!request.peerMemory) {
    return Status::failure(ErrorCode::kInvalidArgument,
                           "ranks cannot read each other's memory (not all on this host, or "
                           "GROVE_DIRECT=0)");
  }
  if (request.nranks < 2) {
    return Status::failure(ErrorCode::kInvalidArgument, "a single rank has no peer to read");
  }
  if (callBytes(request) < request.oneSidedMinBytes) {
    return Status::failure(ErrorCode::kInvalidArgument,
                           fmt::format("{} bytes is below GROVE_DIRECT_MIN_BYTES ({})",
                                       callBytes(request), request.oneSidedMinBytes));
  }
  if (request.collective == plan::Collective::kBroadcast) return rootInRange(request);
  return {};
}

double costDirect(const plan::PlanRequest& request, const CostParams& params) {
  return static_cast<double>(callBytes(request)) / (params.reduceGBps * 1e3);
}

/// A plan of the call shape that reads its peers' memory.
plan::Plan makeOneSided(const plan::PlanRequest& request, uint32_t chunksPerBlock,
                        uint32_t inputBlocks, uint32_t outputBlocks) {
  plan::Plan p = makePlan(request, kName, chunksPerBlock, inputBlocks, outputBlocks);
  p.oneSided = true;
  return p;
}

plan::Step oneSided(plan::OpKind op, int peer, plan::ChunkRef src, plan::ChunkRef dst) {
  plan::Step s;
  s.op = op;
  if (op == plan::OpKind::kSignal) {
    s.sendPeer = peer;
  } else {
    s.recvPeer = peer;
  }
  s.src = src;
  s.dst = dst;
  return s;
}

plan::Plan buildAllReduce(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makeOneSided(request, static_cast<uint32_t>(n), 1, 1);
  plan::Channel& ch = p.channels.emplace_back();
  const uint32_t mine = static_cast<uint32_t>(r);
  plan::Step reduce = oneSided(plan::OpKind::kReduceAll, -1, in(mine), out(mine));
  reduce.finalize = true;
  ch.steps.push_back(reduce);
  for (int s = 1; s < n; ++s) {
    ch.steps.push_back(oneSided(plan::OpKind::kSignal, mod(r + s, n), out(mine), {}));
  }
  for (int s = 1; s < n; ++s) {
    const int q = mod(r + s, n);
    const uint32_t theirs = static_cast<uint32_t>(q);
    ch.steps.push_back(oneSided(plan::OpKind::kWait, q, out(theirs), {}));
    ch.steps.push_back(oneSided(plan::OpKind::kGet, q, out(theirs), out(theirs)));
  }
  return p;
}

plan::Plan buildReduceScatter(const plan::PlanRequest& request) {
  const int n = request.nranks;
  plan::Plan p = makeOneSided(request, 1, static_cast<uint32_t>(n), 1);
  plan::Step reduce =
      oneSided(plan::OpKind::kReduceAll, -1, in(static_cast<uint32_t>(request.rank)), out(0));
  reduce.finalize = true;
  p.channels.emplace_back().steps.push_back(reduce);
  return p;
}

plan::Plan buildAllGather(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makeOneSided(request, 1, 1, static_cast<uint32_t>(n));
  plan::Channel& ch = p.channels.emplace_back();
  ch.steps.push_back(copy(in(0), out(static_cast<uint32_t>(r))));
  for (int s = 1; s < n; ++s) {
    const int q = mod(r + s, n);
    ch.steps.push_back(oneSided(plan::OpKind::kGet, q, in(0), out(static_cast<uint32_t>(q))));
  }
  return p;
}

plan::Plan buildBroadcast(const plan::PlanRequest& request) {
  plan::Plan p = makeOneSided(request, 1, 1, 1);
  plan::Channel& ch = p.channels.emplace_back();
  if (request.rank == request.root) {
    ch.steps.push_back(copy(in(0), out(0)));
  } else {
    ch.steps.push_back(oneSided(plan::OpKind::kGet, request.root, in(0), out(0)));
  }
  return p;
}

}  // namespace

Algorithm directAllReduce() {
  return {kName, plan::Collective::kAllReduce, appliesDirect, costDirect, buildAllReduce};
}
Algorithm directReduceScatter() {
  return {kName, plan::Collective::kReduceScatter, appliesDirect, costDirect, buildReduceScatter};
}
Algorithm directAllGather() {
  return {kName, plan::Collective::kAllGather, appliesDirect, costDirect, buildAllGather};
}
Algorithm directBroadcast() {
  return {kName, plan::Collective::kBroadcast, appliesDirect, costDirect, buildBroadcast};
}

}  // namespace grove::algo
