// Recursive doubling: log2(n) rounds of pairwise exchange, the latency-optimal choice for
// small allreduce and allgather.
//
// In round i every rank exchanges with partner r XOR 2^i; after the round it holds the
// contributions of an aligned group of 2^(i+1) ranks. A ring needs 2(n−1) message
// latencies where this needs log2(n), but every rank sends the whole vector in every round,
// so it loses to the ring once bandwidth dominates.
//
// Allreduce (k = 1, in = out = 1 block, S bytes): with p the largest power of two <= n,
// the n−p extra ranks r >= p first fold their input into rank r−p (which computes
// out = in ⊕ incoming), the p core ranks run the exchange rounds on out (send out, then
// recvReduce into out; the last round finalizes), and each folded-in rank finally receives
// the result from its partner. Operands meet in the same order on both sides of every
// exchange, so with the commutative operators every rank ends bit-identical. Cost, with
// e = 1 when n is not a power of two (else 0):
//   (log2 p + 2e)·(α + S/β) + (log2 p + e)·S/reduce.
//
// Allgather (k = 1, out = n blocks of S bytes; powers of two only — other sizes decline and
// leave the choice to the ring): copy in → out[r]; in round i send the 2^i blocks of my
// group to the partner and receive the 2^i blocks of its group. Sends run on channel 0 and
// receives on channel 1 so that a round's messages stream back to back; a send of a block
// that arrived in an earlier round waits for that receive through `Step::after`. There are
// log2(n) rounds, but round i sends its 2^i blocks as 2^i messages from one channel, one
// after another, so a rank still starts n−1 messages in sequence, as many as on the ring
// (measured with bench/tune, docs/tuning.md: on 4 ranks the ring is as fast or faster at
// most sizes). Cost:
//   (n−1)·α + (n−1)·S/β,
// equal to the ring's, which wins the tie (it is registered first).
#include <cmath>
#include <string>
#include <vector>

#include "algo/all.hpp"
#include "algo/builder.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "recursive_doubling";

Status appliesAlways(const plan::PlanRequest&) { return {}; }

plan::Plan buildAllReduce(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  const int p = floorPowerOfTwo(n);
  const int extra = n - p;
  plan::Plan plan = makePlan(request, kName, 1, 1, 1);
  plan::Channel& ch = plan.channels.emplace_back();
  if (n == 1) {
    ch.steps.push_back(finalized(copy(in(0), out(0))));
    return plan;
  }
  if (r >= p) {  // Folded-in rank: hand over the input, later receive the result.
    ch.steps.push_back(send(r - p, in(0)));
    ch.steps.push_back(recv(r - p, out(0)));
    return plan;
  }
  if (r < extra) {
    ch.steps.push_back(recvReduceCopy(r + p, in(0), out(0)));
  } else {
    ch.steps.push_back(copy(in(0), out(0)));
  }
  for (int d = 1; d < p; d *= 2) {
    ch.steps.push_back(send(r ^ d, out(0)));
    plan::Step reduce = recvReduce(r ^ d, out(0));
    reduce.finalize = (d * 2 == p);
    ch.steps.push_back(reduce);
  }
  if (r < extra) ch.steps.push_back(send(r + p, out(0)));
  return plan;
}

double costAllReduce(const plan::PlanRequest& request, const CostParams& params) {
  const int n = request.nranks;
  const int p = floorPowerOfTwo(n);
  const double e = (n == p) ? 0 : 1;
  const double rounds = std::log2(static_cast<double>(p));
  const double bytes = blockBytes(request);
  return (rounds + 2 * e) * (params.alphaUs + transferUs(bytes, params.betaGBps)) +
         (rounds + e) * transferUs(bytes, params.reduceGBps);
}

Status appliesAllGather(const plan::PlanRequest& request) {
  if (isPowerOfTwo(request.nranks)) return {};
  return declines("nranks " + std::to_string(request.nranks) + " is not a power of two");
}

plan::Plan buildAllGather(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  plan::Plan plan = makePlan(request, kName, 1, 1, static_cast<uint32_t>(n));
  plan.channels.resize(n == 1 ? 1 : 2);
  plan::Channel& sends = plan.channels[0];
  sends.steps.push_back(copy(in(0), out(static_cast<uint32_t>(r))));
  if (n == 1) return plan;
  plan::Channel& recvs = plan.channels[1];
  std::vector<int> recvStep(static_cast<size_t>(n), -1);  // Receiving step of each block.
  for (int d = 1; d < n; d *= 2) {
    const int partner = r ^ d;
    const int mine = r & ~(d - 1);
    const int theirs = partner & ~(d - 1);
    for (int b = mine; b < mine + d; ++b) {
      if (b == r) {
        sends.steps.push_back(send(partner, in(0)));
      } else {
        sends.steps.push_back(after(send(partner, out(static_cast<uint32_t>(b))), 1, recvStep[b]));
      }
    }
    for (int b = theirs; b < theirs + d; ++b) {
      recvStep[b] = static_cast<int>(recvs.steps.size());
      recvs.steps.push_back(recv(partner, out(static_cast<uint32_t>(b))));
    }
  }
  return plan;
}

double costAllGather(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  return (n - 1) * params.alphaUs + (n - 1) * transferUs(blockBytes(request), params.betaGBps);
}

}  // namespace

Algorithm recursiveDoublingAllReduce() {
  return {kName, plan::Collective::kAllReduce, appliesAlways, costAllReduce, buildAllReduce};
}

Algorithm recursiveDoublingAllGather() {
  return {kName, plan::Collective::kAllGather, appliesAllGather, costAllGather, buildAllGather};
}

}  // namespace grove::algo
