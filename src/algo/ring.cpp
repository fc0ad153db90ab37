// Rings: the bandwidth-optimal algorithm for allreduce, allgather and reducescatter.
//
// Ranks form the ring r -> r+1 (mod n). Every rank sends to `next` and receives from `prev`
// only, so each link carries the same bytes and no rank is a hot spot; the price is n−1
// message latencies per phase, which is why rings win for large messages and lose to
// recursive doubling or trees for small ones.
//
// Allreduce (k = n chunks, chunk c is "owned" by rank c−1): a reduce-scatter followed by an
// all-gather in one channel of 2(n−1) steps. Step 0 sends in[r]; steps 1..n−2 receive the
// partial sum of chunk r−s, add in[r−s] and pass it on (rrs); step n−1 completes chunk r+1
// (rrcs: out = in ⊕ incoming, finalize, and send it on), which starts the all-gather; then
// n−2 recvCopySend steps forward the finished chunks r, r−1, …, and a last recv stores
// chunk r+2. Each input chunk is read exactly once before any output chunk is written by a
// receive, so the plan is correct in place. Cost, with S bytes per rank:
//   2(n−1)·α + 2(n−1)/n · S/β + (n−1)/n · S/reduce.
//
// Allgather (k = 1, out = n blocks): copy in → out[r], send it, then n−2 recvCopySend steps
// forward blocks r−1, r−2, … and a final recv stores block r+1. With S bytes per rank:
//   (n−1)·α + (n−1)·S/β.
//
// Reducescatter (k = 1, in = n blocks, out = 1): step s sends the partial of block r−s−1;
// the last step receives block r's partial and adds in[r] into out (rrc, finalize). In
// place, out ≡ in[r], which is read only by that last step. With S bytes per rank output:
//   (n−1)·α + (n−1)·S/β + (n−1)·S/reduce.
//
// The fused steps need two FIFO slots per connection: with a single slot every rank would
// hold a full outgoing slot while waiting to receive.
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "ring";

Status appliesAlways(const plan::PlanRequest&) { return {}; }

plan::Plan buildAllReduce(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makePlan(request, kName, static_cast<uint32_t>(n), 1, 1);
  plan::Channel& ch = p.channels.emplace_back();
  if (n == 1) {
    ch.steps.push_back(finalized(copy(in(0), out(0))));
    return p;
  }
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  auto at = [n](int c) { return static_cast<uint32_t>(mod(c, n)); };
  ch.steps.push_back(send(next, in(at(r))));
  for (int s = 1; s <= n - 2; ++s) ch.steps.push_back(recvReduceSend(prev, next, in(at(r - s))));
  ch.steps.push_back(finalized(recvReduceCopySend(prev, next, in(at(r + 1)), out(at(r + 1)))));
  for (int j = 0; j <= n - 3; ++j) ch.steps.push_back(recvCopySend(prev, next, out(at(r - j))));
  ch.steps.push_back(recv(prev, out(at(r + 2))));
  return p;
}

double costAllReduce(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  const double bytes = blockBytes(request);
  return 2 * (n - 1) * params.alphaUs + 2 * (n - 1) / n * transferUs(bytes, params.betaGBps) +
         (n - 1) / n * transferUs(bytes, params.reduceGBps);
}

plan::Plan buildAllGather(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makePlan(request, kName, 1, 1, static_cast<uint32_t>(n));
  plan::Channel& ch = p.channels.emplace_back();
  ch.steps.push_back(copy(in(0), out(static_cast<uint32_t>(r))));
  if (n == 1) return p;
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  auto at = [n](int b) { return static_cast<uint32_t>(mod(b, n)); };
  ch.steps.push_back(send(next, in(0)));
  for (int j = 1; j <= n - 2; ++j) ch.steps.push_back(recvCopySend(prev, next, out(at(r - j))));
  ch.steps.push_back(recv(prev, out(at(r + 1))));
  return p;
}

double costAllGather(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  return (n - 1) * params.alphaUs + (n - 1) * transferUs(blockBytes(request), params.betaGBps);
}

plan::Plan buildReduceScatter(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makePlan(request, kName, 1, static_cast<uint32_t>(n), 1);
  plan::Channel& ch = p.channels.emplace_back();
  if (n == 1) {
    ch.steps.push_back(finalized(copy(in(0), out(0))));
    return p;
  }
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  auto at = [n](int b) { return static_cast<uint32_t>(mod(b, n)); };
  ch.steps.push_back(send(next, in(at(r - 1))));
  for (int s = 1; s <= n - 2; ++s) {
    ch.steps.push_back(recvReduceSend(prev, next, in(at(r - s - 1))));
  }
  ch.steps.push_back(finalized(recvReduceCopy(prev, in(at(r)), out(0))));
  return p;
}

double costReduceScatter(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  const double bytes = blockBytes(request);
  return (n - 1) * params.alphaUs + (n - 1) * transferUs(bytes, params.betaGBps) +
         (n - 1) * transferUs(bytes, params.reduceGBps);
}

}  // namespace

Algorithm ringAllReduce() {
  return {kName, plan::Collective::kAllReduce, appliesAlways, costAllReduce, buildAllReduce};
}

Algorithm ringAllGather() {
  return {kName, plan::Collective::kAllGather, appliesAlways, costAllGather, buildAllGather};
}

Algorithm ringReduceScatter() {
  return {kName, plan::Collective::kReduceScatter, appliesAlways, costReduceScatter,
          buildReduceScatter};
}

}  // namespace grove::algo
