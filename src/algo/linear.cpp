// Linear gather and scatter: the root exchanges one message directly with every
// other rank.
//
// Gather and scatter move n−1 distinct blocks through the root's single link
// whatever the algorithm, so the bandwidth term (n−1)·S/β is a floor; sending
// them directly adds only one message latency, as all non-roots talk to the
// root at once. Trees would trade that for log2(n) latencies and extra copies
// through intermediate ranks, which pays only for tiny blocks on many ranks.
// Cost, with S bytes per block:
//   α + (n−1)·S/β.
//
// Gather (k = 1, in = 1, out = n blocks; only the root's output is written):
// the root copies in → out[root] and receives out[q] from every q in ring order
// root+1, root+2, …; every other rank sends in[0] to the root. Scatter (k = 1,
// in = n, out = 1; only the root's input is read): the root sends in[q] to
// every q in the same order and copies in[root] → out[0] last; every other rank
// receives out[0]. In place the root's copy has identical source and
// destination, which the executor skips.
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "linear";

Status appliesWithRoot(const plan::PlanRequest& request) { return rootInRange(request); }

plan::Plan buildGather(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  const int root = request.root;
  plan::Plan p = makePlan(request, kName, 1, 1, static_cast<uint32_t>(n));
  plan::Channel& ch = p.channels.emplace_back();
  if (r != root) {
    ch.steps.push_back(send(root, in(0)));
    return p;
  }
  ch.steps.push_back(copy(in(0), out(static_cast<uint32_t>(root))));
  for (int s = 1; s < n; ++s) {
    const int q = mod(root + s, n);
    ch.steps.push_back(recv(q, out(static_cast<uint32_t>(q))));
  }
  return p;
}

plan::Plan buildScatter(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int r = request.rank;
  const int root = request.root;
  plan::Plan p = makePlan(request, kName, 1, static_cast<uint32_t>(n), 1);
  plan::Channel& ch = p.channels.emplace_back();
  if (r != root) {
    ch.steps.push_back(recv(root, out(0)));
    return p;
  }
  for (int s = 1; s < n; ++s) {
    const int q = mod(root + s, n);
    ch.steps.push_back(send(q, in(static_cast<uint32_t>(q))));
  }
  ch.steps.push_back(copy(in(static_cast<uint32_t>(root)), out(0)));
  return p;
}

double costLinear(const plan::PlanRequest& request, const CostParams& params) {
  const double n = request.nranks;
  return params.alphaUs + (n - 1) * transferUs(blockBytes(request), params.betaGBps);
}

}  // namespace

Algorithm linearGather() {
  return {kName, plan::Collective::kGather, appliesWithRoot, costLinear, buildGather};
}

Algorithm linearScatter() {
  return {kName, plan::Collective::kScatter, appliesWithRoot, costLinear, buildScatter};
}

}  // namespace grove::algo
