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
// h-1. With S bytes in tiles of T over n-1 hops the time is
//     (n - 2 + ceil(S / T)) * (alpha + T / beta [+ T / reduceRate for reduce]),
// and the cost model picks T near the optimum sqrt(S * alpha * beta / (n - 2)). Bytes on the
// wire: every link carries S once, the least any broadcast or reduce can do. The latency term
// grows linearly with n, so the chain wins for large messages; for small ones the binomial
// tree's ceil(log2 n) rounds win.
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
constexpr double kMinTileBytes = 4096;

/// (hops - 1 + tiles) * (alpha + T * perByte) with the tile T near its optimum.
double pipelineUs(double bytes, int hops, double alphaUs, double perByteUs) {
  double tile = bytes;
  if (hops > 1 && bytes > 0) {
    tile = std::sqrt(bytes * alphaUs / ((hops - 1) * perByteUs));
    tile = std::clamp(tile, std::min(bytes, kMinTileBytes), bytes);
  }
  const double tiles = bytes > 0 ? std::ceil(bytes / tile) : 1.0;
  return (hops - 1 + tiles) * (alphaUs + tile * perByteUs);
}

double chainCostUs(const plan::PlanRequest& request, const CostParams& params, bool reduce) {
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return transferUs(bytes, params.reduceGBps);
  double perByteUs = transferUs(1, params.betaGBps);
  if (reduce) perByteUs += transferUs(1, params.reduceGBps);
  return pipelineUs(bytes, request.nranks - 1, params.alphaUs, perByteUs);
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
