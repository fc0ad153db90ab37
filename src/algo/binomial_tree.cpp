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
// so the tree is bandwidth-poor. Its latency term is only ceil(log2 n) hops:
//     ceil(log2 n) * (alpha + S / beta [+ S / reduceRate for reduce]),
// which is why it wins for small messages and loses to the pipelined chain for large ones.
// One chunk per block (k = 1), one channel; tiles pipeline the rounds as well.
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"
#include "algo/tree_shapes.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "binomial_tree";

double binomialCostUs(const plan::PlanRequest& request, const CostParams& params, bool reduce) {
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return transferUs(bytes, params.reduceGBps);
  double hopUs = params.alphaUs + transferUs(bytes, params.betaGBps);
  if (reduce) hopUs += transferUs(bytes, params.reduceGBps);
  return binomialTreeRounds(request.nranks) * hopUs;
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
