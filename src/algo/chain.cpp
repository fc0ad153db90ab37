// Pipelined chain for broadcast and reduce.
//
// The ranks form a line starting at the root, in rank order from it: root, root+1, ...,
// root+n-1 (mod n). Broadcast streams the root's input down the line: every middle rank
// receives a tile, keeps it and forwards it in one fused step (recvCopySend), so each rank
// receives S bytes once and sends them at most once. Reduce runs the same line the other
// way: the tail sends its input, every middle rank adds its own input to what it hears and
// forwards the sum (recvReduceSend, no local buffer at all), and the root finishes with a
// recvReduceCopy into its output (the one finalize step).
//
// The plan holds one chunk per block (k = 1) and one channel; pipelining comes from the
// executor repeating the step list per tile, so while tile t is at hop h, tile t+1 is at hop
// h-1. The tile T is the executor's, one FIFO slot (CostParams::tileBytes), and S bytes take
// ceil(S / T) tiles. Calls overlap too: the root does not wait for the tail, so back-to-back
// calls keep up to D = fifoDepth tiles in flight on every link and the n - 2 hops of filling
// the line are paid once per D tiles, while the busiest rank forwards every tile once:
//     ((n - 2) / D + ceil(S / T)) * (alpha + T / beta [+ T / reduceRate for reduce]).
// (Measured with bench/tune, docs/tuning.md: on 4 ranks the chain beats the binomial tree
// at every size, small ones included, which the plain (n - 2 + tiles) term got wrong.)
// Bytes on the wire: every link carries S once, the least any broadcast or reduce can do.
// The fill term still grows linearly with n, so for small messages on many ranks the
// binomial tree's few hops win.
#include <algorithm>
#include <cmath>
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"
#include "algo/tree_shapes.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "chain";

/// ((hops - 1) / depth + tiles) * (alpha + T * perByte), T the executor's tile.
double pipelineUs(double bytes, int hops, const CostParams& params, double perByteUs) {
  const double tile = params.tileBytes > 0 ? std::min(bytes, params.tileBytes) : bytes;
  const double tiles = tile > 0 ? std::ceil(bytes / tile) : 1.0;
  const double depth = std::max(params.fifoDepth, 1.0);
  // Written as in binomial_tree.cpp so that on 2 ranks (identical plans) the costs tie exactly.
  const double steps = (hops - 1) / depth + tiles;
  return steps * params.alphaUs + steps * tile * perByteUs;
}

double chainCostUs(const plan::PlanRequest& request, const CostParams& params, bool reduce) {
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return transferUs(bytes, params.reduceGBps);
  double perByteUs = transferUs(1, params.betaGBps);
  if (reduce) perByteUs += transferUs(1, params.reduceGBps);
  return pipelineUs(bytes, request.nranks - 1, params, perByteUs);
}

plan::Plan buildBroadcast(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int pos = relativeRank(n, request.root, request.rank);
  const int prev = pos > 0 ? absoluteRank(n, request.root, pos - 1) : -1;
  const int next = pos + 1 < n ? absoluteRank(n, request.root, pos + 1) : -1;
  plan::Plan p = makePlan(request, kName, 1, 1, 1);
  std::vector<plan::Step>& steps = p.channels.emplace_back().steps;
  if (pos == 0) {
    if (next >= 0) steps.push_back(send(next, in(0)));
    steps.push_back(copy(in(0), out(0)));
  } else if (next >= 0) {
    steps.push_back(recvCopySend(prev, next, out(0)));
  } else {
    steps.push_back(recv(prev, out(0)));
  }
  return p;
}

plan::Plan buildReduce(const plan::PlanRequest& request) {
  const int n = request.nranks;
  const int pos = relativeRank(n, request.root, request.rank);
  const int towardRoot = pos > 0 ? absoluteRank(n, request.root, pos - 1) : -1;
  const int fromTail = pos + 1 < n ? absoluteRank(n, request.root, pos + 1) : -1;
  plan::Plan p = makePlan(request, kName, 1, 1, 1);
  std::vector<plan::Step>& steps = p.channels.emplace_back().steps;
  if (n == 1) {
    steps.push_back(finalized(copy(in(0), out(0))));
  } else if (pos == 0) {
    steps.push_back(finalized(recvReduceCopy(fromTail, in(0), out(0))));
  } else if (fromTail >= 0) {
    steps.push_back(recvReduceSend(fromTail, towardRoot, in(0)));
  } else {
    steps.push_back(send(towardRoot, in(0)));
  }
  return p;
}

}  // namespace

Algorithm chainBroadcast() {
  return Algorithm{
      .name = kName,
      .collective = plan::Collective::kBroadcast,
      .applies = rootInRange,
      .costUs = [](const plan::PlanRequest& request,
                   const CostParams& params) { return chainCostUs(request, params, false); },
      .build = buildBroadcast,
  };
}

Algorithm chainReduce() {
  return Algorithm{
      .name = kName,
      .collective = plan::Collective::kReduce,
      .applies = rootInRange,
      .costUs = [](const plan::PlanRequest& request,
                   const CostParams& params) { return chainCostUs(request, params, true); },
      .build = buildReduce,
  };
}

}  // namespace grove::algo
