// Dissemination barrier (Hensgen, Finkel and Manber): ceil(log2 n) rounds; in
// round i every rank sends its token set to r + 2^i and merges the set received
// from r − 2^i.
//
// After round i a rank has heard, directly or through others, from the 2^(i+1)
// ranks before it, so after ceil(log2 n) rounds it has heard from everyone and
// nobody can leave the barrier before every rank has entered it. Unlike a
// reduce-then-broadcast tree it needs no root and no power of two, and every
// round is a permutation (one message out, one in, per rank), so it is the
// shortest barrier in latency: ceil(log2 n)·α.
//
// Plan (barrier convention: in = 0, out = 1 block, k = 1; out chunk 0 holds the
// rank's token set and messages are empty): per round, send out[0] to r + 2^i,
// then recvReduce out[0] from r − 2^i; the last round's merge completes the set
// (finalize). The distances 2^i < n are distinct modulo n, so every FIFO
// carries one message per round and one slot suffices. With n = 1 the plan has
// no steps: the rank's own token is already everything.
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "dissemination";

Status appliesAlways(const plan::PlanRequest&) { return {}; }

plan::Plan buildBarrier(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan p = makePlan(request, kName, 1, 0, 1);
  plan::Channel& ch = p.channels.emplace_back();
  for (int d = 1; d < n; d *= 2) {
    ch.steps.push_back(send(mod(r + d, n), out(0)));
    plan::Step merge = recvReduce(mod(r - d, n), out(0));
    merge.finalize = (d * 2 >= n);
    ch.steps.push_back(merge);
  }
  return p;
}

double costBarrier(const plan::PlanRequest& request, const CostParams& params) {
  return ceilLog2(request.nranks) * params.alphaUs;
}

}  // namespace

Algorithm disseminationBarrier() {
  return {kName, plan::Collective::kBarrier, appliesAlways, costBarrier, buildBarrier};
}

}  // namespace grove::algo
