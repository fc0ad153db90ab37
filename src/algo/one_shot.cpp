// One-shot allreduce: every rank sends its whole input to every other rank and reduces the n
// contributions itself — one message hop of latency, the floor for tiny messages.
//
// Recursive doubling needs log2(n) message latencies in sequence and the ring 2(n−1); here
// every message is in flight at once, so a call costs one hop plus the time to push n−1
// copies of the vector out and fold n−1 in. That traffic, (n−1)·S per rank, is why it only
// pays for small S: the cost model picks it below a few KiB and hands larger sizes to
// recursive doubling and the ring.
//
// Bit-identical by construction: every rank evaluates the same expression tree,
// ((x0 ⊕ x1) ⊕ x2) ⊕ … ⊕ x(n−1), in rank order. grove's operators are commutative bit for
// bit (a ⊕ b == b ⊕ a, half types included since they reduce in float32 and round once per
// step), so only the association matters, and that is the same everywhere.
//
// Plan (k = 1, in = out = 1 block, scratch = 1 block when n >= 3): first `send in[0]` to
// every other rank (r+1, r+2, … so that not every rank starts with the same peer). Then
// * rank 0: `copy in[0] -> out[0]`, `rr` from 1, 2, …, n−1 into out[0];
// * rank 1: `copy in[0] -> out[0]`, `rr` from 0 (x1 ⊕ x0 == x0 ⊕ x1), then from 2, …, n−1;
// * rank r >= 2: the prefix x0 ⊕ … ⊕ x(r−1) is built in scratch[0] (`recv` from 0, `rr`
//   from 1 … r−1), then `copy in[0] -> out[0]`, `reduce scratch[0] -> out[0]` and `rr` from
//   r+1, …, n−1.
// The last reduction carries `finalize`. Nothing writes out[0] before the copy and the sends
// come first, so the plan is correct in place (the copy is then a no-op). Cost, S bytes:
//   α + (n−1)·S/β + (n−1)·S/reduce.
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "one_shot";

Status appliesAlways(const plan::PlanRequest&) { return {}; }

/// dst = dst ⊕ src (builder.hpp has no helper for the local reduce).
plan::Step reduceInto(plan::ChunkRef src, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kReduce;
  s.src = src;
  s.dst = dst;
  return s;
}

plan::Plan buildAllReduce(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan plan = makePlan(request, kName, 1, 1, 1, n >= 3 ? 1 : 0);
  plan::Channel& ch = plan.channels.emplace_back();
  if (n == 1) {
    ch.steps.push_back(finalized(copy(in(0), out(0))));
    return plan;
  }
  for (int s = 1; s < n; ++s) ch.steps.push_back(send(mod(r + s, n), in(0)));
  int first = 0;  // Ranks below `first` are already folded into out[0] after the copy.
  if (r >= 2) {
    ch.steps.push_back(recv(0, scratch(0)));
    for (int q = 1; q < r; ++q) ch.steps.push_back(recvReduce(q, scratch(0)));
    ch.steps.push_back(copy(in(0), out(0)));
    ch.steps.push_back(reduceInto(scratch(0), out(0)));
    first = r + 1;
  } else {
    ch.steps.push_back(copy(in(0), out(0)));
  }
  for (int q = first; q < n; ++q) {
    if (q != r) ch.steps.push_back(recvReduce(q, out(0)));
  }
  ch.steps.back().finalize = true;
  return plan;
}

double costAllReduce(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return 0;
  return params.alphaUs + (n - 1) * transferUs(bytes, params.betaGBps) +
         (n - 1) * transferUs(bytes, params.reduceGBps);
}

}  // namespace

Algorithm oneShotAllReduce() {
  return {kName, plan::Collective::kAllReduce, appliesAlways, costAllReduce, buildAllReduce};
}

}  // namespace grove::algo
