// Pairwise exchange for alltoall and alltoallv: n−1 steps, in step s every rank
// sends its block for rank r+s and receives the block from rank r−s.
//
// Why this shape: every rank has exactly one message in flight out and one in
// at any time, so no rank's link is swamped by n−1 simultaneous senders (what a
// naive "everyone sends to everyone" does), and the pattern is a permutation in
// every step, which a switch carries at full bisection bandwidth. Bruck's
// algorithm beats it for tiny blocks (log2(n) latencies, but every byte travels
// log2(n) times); pairwise is the robust default.
//
// Plan (k = 1, in = out = n blocks; block b of the input is for rank b, block b
// of the output comes from rank b): copy in[r] → out[r], then for s = 1..n−1:
// send in[r+s] to r+s, recv out[r−s] from r−s. Sending before receiving in each
// step keeps a one-slot FIFO enough. alltoallv uses the same plan; the executor
// sizes each block from the call's counts. alltoall has no in-place form. Cost,
// with S bytes per block:
//   (n−1)·(α + S/β).
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "pairwise";

Status appliesAlways(const plan::PlanRequest&) { return {}; }

plan::Plan buildExchange(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makePlan(request, kName, 1, static_cast<uint32_t>(n), static_cast<uint32_t>(n));
  plan::Channel& ch = p.channels.emplace_back();
  ch.steps.push_back(copy(in(static_cast<uint32_t>(r)), out(static_cast<uint32_t>(r))));
  for (int s = 1; s < n; ++s) {
    const int to = mod(r + s, n);
    const int from = mod(r - s, n);
    ch.steps.push_back(send(to, in(static_cast<uint32_t>(to))));
    ch.steps.push_back(recv(from, out(static_cast<uint32_t>(from))));
  }
  return p;
}

double costExchange(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  return (n - 1) * (params.alphaUs + transferUs(blockBytes(request), params.betaGBps));
}

}  // namespace

Algorithm pairwiseAllToAll() {
  return {kName, plan::Collective::kAllToAll, appliesAlways, costExchange, buildExchange};
}

Algorithm pairwiseAllToAllv() {
  return {kName, plan::Collective::kAllToAllv, appliesAlways, costExchange, buildExchange};
}

}  // namespace grove::algo
