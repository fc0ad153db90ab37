// Double binary tree allreduce (NCCL's "tree" algorithm).
//
// A single binary tree reduces up and broadcasts down in 2 log2 n hops, but its leaves (half
// the ranks) only ever send once and receive once while interior ranks do twice the work.
// The double binary tree (Sanders, Speck and Träff; NCCL 2.4) runs two trees at once, each
// carrying half of the data (k = 2 chunks per block: chunk 0 on tree 0, chunk 1 on tree 1),
// built so that the leaves of one tree are the interior ranks of the other (tree 1 mirrors
// tree 0 for even n and shifts it by one rank for odd n; see tree_shapes.hpp). Every rank
// then sends and receives about S bytes in each direction, like a ring, with a logarithmic
// latency term instead of a linear one.
//
// Each tree uses two channels, four in all (channel 2t reduces tree t up, 2t+1 broadcasts it
// down), so tiles stream up and down at the same time. Up: a leaf sends its input; a rank
// with one child adds its input to the child's partial and forwards it (recvReduceSend); a
// rank with two children reduces the first into its output (recvReduceCopy: output may hold
// partials, it is overwritten by the final value later) and forwards with the second; the
// tree root ends its reduction with finalize. Down: the root's first send waits (Step::after)
// on its last up step for the same tile; interior ranks receive into output and forward in
// one step (recvCopySend), then send to their second child; leaves receive. Input is only
// read before the rank's own contribution leaves, and the final value can only arrive after
// that, so the in-place form is safe. Lanes equal channel indexes, so the four channels
// never share a FIFO even where both trees link the same two ranks.
//
// Cost: with tree height D and S/2 bytes per tree in tiles of T. Both trees run at once over
// the same ranks: a rank interior in one tree and a leaf in the other sends 2T (down) + T
// (up) there and T more in the other tree, about 4T per pair of tiles, and reduces 2T, so
//     (2D - 1 + ceil(S / 2T)) * (alpha + 4T / beta + 2T / reduceRate),
// with T near its optimum: per rank that is 2S / beta on the wire, slightly more than the
// ring's 2(n-1)/n * S / beta. It wins over the ring for mid-sized messages and large n, where
// the ring's 2(n-1) latency hops dominate; the ring keeps the edge in pure bandwidth.
#include <algorithm>
#include <cmath>
#include <string>

#include "algo/all.hpp"
#include "algo/builder.hpp"
#include "algo/tree_shapes.hpp"

namespace grove::algo {
namespace {

using namespace build;

constexpr std::string_view kName = "double_binary_tree";
constexpr double kMinTileBytes = 4096;

Status appliesAlways(const plan::PlanRequest&) { return {}; }

double doubleTreeCostUs(const plan::PlanRequest& request, const CostParams& params) {
  const double bytes = blockBytes(request);
  if (request.nranks == 1) return transferUs(bytes, params.reduceGBps);
  const double half = bytes / 2;
  const int hops = 2 * doubleBinaryTreeHeight(request.nranks, 0);
  const double perByteUs =
      4 * transferUs(1, params.betaGBps) + 2 * transferUs(1, params.reduceGBps);
  double tile = half;
  if (hops > 1 && half > 0) {
    tile = std::sqrt(half * params.alphaUs / ((hops - 1) * perByteUs));
    tile = std::clamp(tile, std::min(half, kMinTileBytes), half);
  }
  const double tiles = half > 0 ? std::ceil(half / tile) : 1.0;
  return (hops - 1 + tiles) * (params.alphaUs + tile * perByteUs);
}

/// Channel 2*tree: reduces chunk `tree` up tree `tree`, on lane 2*tree.
std::vector<plan::Step> upSteps(const TreeNode& node, int tree) {
  const auto c = static_cast<uint32_t>(tree);
  const auto lane = static_cast<uint16_t>(2 * tree);
  const std::vector<int>& children = node.children;
  std::vector<plan::Step> steps;
  if (node.isRoot()) {
    plan::Step first = recvReduceCopy(children[0], in(c), out(c));
    steps.push_back(children.size() == 1 ? finalized(first) : first);
    if (children.size() == 2) steps.push_back(finalized(recvReduce(children[1], out(c))));
  } else if (children.empty()) {
    steps.push_back(send(node.parent, in(c)));
  } else if (children.size() == 1) {
    steps.push_back(recvReduceSend(children[0], node.parent, in(c)));
  } else {
    steps.push_back(recvReduceCopy(children[0], in(c), out(c)));
    steps.push_back(recvReduceSend(children[1], node.parent, out(c)));
  }
  for (plan::Step& step : steps) step.lane = lane;
  return steps;
}

/// Channel 2*tree+1: broadcasts chunk `tree` down tree `tree` from its root, on lane
/// 2*tree+1. At the root the first send waits for step `upLast` of the up channel.
std::vector<plan::Step> downSteps(const TreeNode& node, int tree, int upLast) {
  const auto c = static_cast<uint32_t>(tree);
  const auto lane = static_cast<uint16_t>(2 * tree + 1);
  const std::vector<int>& children = node.children;
  std::vector<plan::Step> steps;
  if (node.isRoot()) {
    steps.push_back(after(send(children[0], out(c)), 2 * tree, upLast));
  } else if (children.empty()) {
    steps.push_back(recv(node.parent, out(c)));
  } else {
    steps.push_back(recvCopySend(node.parent, children[0], out(c)));
  }
  for (size_t i = 1; i < children.size(); ++i) steps.push_back(send(children[i], out(c)));
  for (plan::Step& step : steps) step.lane = lane;
  return steps;
}

plan::Plan buildAllReduce(const plan::PlanRequest& request) {
  const int n = request.nranks;
  if (n == 1) {
    plan::Plan p = makePlan(request, kName, 1, 1, 1);
    p.channels.emplace_back().steps.push_back(finalized(copy(in(0), out(0))));
    return p;
  }
  plan::Plan p = makePlan(request, kName, 2, 1, 1);
  p.channels.resize(4);
  for (int tree = 0; tree < 2; ++tree) {
    const TreeNode node = doubleBinaryTreeNode(n, tree, request.rank);
    p.channels[2 * tree].steps = upSteps(node, tree);
    const int upLast = static_cast<int>(p.channels[2 * tree].steps.size()) - 1;
    p.channels[2 * tree + 1].steps = downSteps(node, tree, upLast);
  }
  return p;
}

}  // namespace

Algorithm doubleBinaryTreeAllReduce() {
  return Algorithm{
      .name = kName,
      .collective = plan::Collective::kAllReduce,
      .applies = appliesAlways,
      .costUs = doubleTreeCostUs,
      .build = buildAllReduce,
  };
}

}  // namespace grove::algo
