// Binomial tree for broadcast and reduce.
//
// Ranks are renumbered relative to the root (v = rank - root mod n). In round j every rank
// that already holds the data hands it to the rank 2^j further on, so after ceil(log2 n)
// rounds everybody has it: the parent of v is v with its lowest set bit cleared (see
// tree_shapes.hpp). Broadcast serves the largest subtree first so the deepest branch starts
// earliest; a non-root rank receives into its output and forwards in the same fused step
// (recvCopySend) to its first child, then sends its output to the others. Reduce runs the
// tree backwards, hearing from the smallest subtree first (it finishes first): a leaf sends
// its input; a rank with one child adds its input to the child's partial and forwards it
// (recvReduceSend); a non-root rank with several children accumulates them in Scratch
// (recvReduceCopy from input, then recvReduce) and forwards with the last (recvReduceSend),
// because it may neither overwrite its input nor touch its (possibly null) output. The root
// reduces into its output and marks the last reduction finalize.
//
// Bytes on the wire: every rank receives S once, but the root sends S ceil(log2 n) times,
// so the tree is bandwidth-poor. The root's sends leave back to back (nothing waits between
// them), so a message reaches the last rank after only d hops of latency, d the tree's depth
// (the most set bits of any relative rank below n: 1 on 3 ranks, 2 on 4 to 7), while the
// root copies every tile into k = ceil(log2 n) FIFOs one after another. Like every plan it
// moves S in ceil(S / T) tiles of at most T = min(S, CostParams::tileBytes), and every
// further tile costs the root k more messages:
//     (d + (tiles - 1) * k) * alpha + tiles * k * T / beta [+ T / reduceRate for reduce].
// (Measured with bench/tune, docs/tuning.md: on 3 ranks the binomial tree beats the chain up
// to a few KiB, on 4 the chain wins at every size.) It wins for small messages on many ranks
// and loses to the pipelined chain for large ones; on 2 ranks the two plans are identical
// and so are their costs.
// One chunk per block (k = 1), one channel; tiles pipeline the rounds as well.
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"
#include "algo/tree_shapes.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "binomial_tree";

/// Hops from the root to the deepest rank: the most set bits of a relative rank below n.
int binomialTreeDepth(int nranks) {
  int depth = 0;
  for (int v = 1; v < nranks; ++v) depth = std::max(depth, std::popcount(static_cast<unsigned>(v)));
  return depth;
}

double binomialCostUs(const plan::PlanRequest& request, const CostParams& params, bool reduce) {
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return transferUs(bytes, params.reduceGBps);
  double perByteUs = transferUs(1, params.betaGBps);
  if (reduce) perByteUs += transferUs(1, params.reduceGBps);
  const double tile = params.tileBytes > 0 ? std::min(bytes, params.tileBytes) : bytes;
  const double tiles = tile > 0 ? std::ceil(bytes / tile) : 1.0;
  const double rounds = binomialTreeRounds(request.nranks);
  const double depth = binomialTreeDepth(request.nranks);
  return (depth + (tiles - 1) * rounds) * params.alphaUs + tiles * rounds * tile * perByteUs;
}

/// Whether some non-root rank has two or more children (and so accumulates in Scratch):
/// true from 7 ranks on (relative rank 4 with children 5 and 6). A function of nranks only,
/// so every rank of a call declares the same scratch.
bool reduceNeedsScratch(int nranks) {
  for (int rank = 1; rank < nranks; ++rank) {
    if (binomialTreeNode(nranks, 0, rank).children.size() >= 2) return true;
  }
  return false;
}

plan::Plan buildBroadcast(const plan::PlanRequest& request) {
  const TreeNode node = binomialTreeNode(request.nranks, request.root, request.rank);
  plan::Plan p = makePlan(request, kName, 1, 1, 1);
  std::vector<plan::Step>& steps = p.channels.emplace_back().steps;
  // Largest subtree first: children are listed smallest first.
  auto child = node.children.rbegin();
  if (node.isRoot()) {
    for (; child != node.children.rend(); ++child) steps.push_back(send(*child, in(0)));
    steps.push_back(copy(in(0), out(0)));
  } else if (node.isLeaf()) {
    steps.push_back(recv(node.parent, out(0)));
  } else {
    steps.push_back(recvCopySend(node.parent, *child, out(0)));
    for (++child; child != node.children.rend(); ++child) steps.push_back(send(*child, out(0)));
  }
  return p;
}

plan::Plan buildReduce(const plan::PlanRequest& request) {
  const TreeNode node = binomialTreeNode(request.nranks, request.root, request.rank);
  const std::vector<int>& children = node.children;
  const size_t m = children.size();
  plan::Plan p = makePlan(request, kName, 1, 1, 1, reduceNeedsScratch(request.nranks) ? 1 : 0);
  std::vector<plan::Step>& steps = p.channels.emplace_back().steps;
  if (node.isRoot()) {
    if (m == 0) {
      steps.push_back(finalized(copy(in(0), out(0))));
      return p;
    }
    // The root accumulates straight into its output; the last reduction finalizes.
    plan::Step first = recvReduceCopy(children[0], in(0), out(0));
    steps.push_back(m == 1 ? finalized(first) : first);
    for (size_t i = 1; i < m; ++i) {
      plan::Step more = recvReduce(children[i], out(0));
      steps.push_back(i + 1 == m ? finalized(more) : more);
    }
  } else if (m == 0) {
    steps.push_back(send(node.parent, in(0)));
  } else if (m == 1) {
    steps.push_back(recvReduceSend(children[0], node.parent, in(0)));
  } else {
    steps.push_back(recvReduceCopy(children[0], in(0), scratch(0)));
    for (size_t i = 1; i + 1 < m; ++i) steps.push_back(recvReduce(children[i], scratch(0)));
    steps.push_back(recvReduceSend(children[m - 1], node.parent, scratch(0)));
  }
  return p;
}

}  // namespace

Algorithm binomialTreeBroadcast() {
  return Algorithm{
      .name = kName,
      .collective = plan::Collective::kBroadcast,
      .applies = rootInRange,
      .costUs = [](const plan::PlanRequest& request,
                   const CostParams& params) { return binomialCostUs(request, params, false); },
      .build = buildBroadcast,
  };
}

Algorithm binomialTreeReduce() {
  return Algorithm{
      .name = kName,
      .collective = plan::Collective::kReduce,
      .applies = rootInRange,
      .costUs = [](const plan::PlanRequest& request,
                   const CostParams& params) { return binomialCostUs(request, params, true); },
      .build = buildReduce,
  };
}

}  // namespace grove::algo
