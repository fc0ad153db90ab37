// Making exact arborescence packings shallow.
//
// A tree pipelines its share of the data over tiles: the last rank of a tree of depth d gets
// its last tile d − 1 tile-times after the root sent it, so with a few tiles per tree a deep
// tree spends much of the call filling and draining (Blink limits depth for this reason).
// Lovász's greedy growth reaches λ exactly but gives no depth guarantee: the first trees take
// the short arcs and the last ones become long paths (on the DGX-1V from GPU 0: depth 7).
//
// flattenArborescences() rearranges a packing of unit arborescences without changing what
// it is made of, so exactness is kept: it only moves a rank's parent arc
//  * between two trees (tree A takes B's arc into v and B takes A's — the same arcs in all,
//    valid when neither new parent lies below v in its new tree), or
//  * onto an arc with spare capacity (v's old arc is freed),
// and keeps a move only when it lowers the packing's depth profile: first the deepest tree,
// then how many trees are that deep (and so on down), then the sum of all ranks' depths.
// First-improvement hill climbing in a fixed order: deterministic, a few hundred cheap moves
// for 8 ranks.
#include <algorithm>
#include <vector>

#include "algo/packing_internal.hpp"

namespace grove::algo::packing_detail {
namespace {

constexpr int kMaxPasses = 64;
constexpr int kStarts =
    1;  // hill climbs from rotated rank orders (more found no shallower DGX-1V packing)

/// Per tree its ranks' depths; -1 marks a rank that does not reach the root (never kept).
class Depths {
 public:
  Depths(const RankGraph& graph, int root) : graph_(graph), root_(root) {}

  int parent(const LinkTree& tree, int v) const {
    const int link = tree[static_cast<size_t>(v)];
    return link < 0 ? -1 : graph_.links[static_cast<size_t>(link)].from;
  }

  // Depth of every rank (-1 for a rank on a cycle).
  std::vector<int> of(const LinkTree& tree) const {
    const int n = graph_.ranks;
    std::vector<int> depth(static_cast<size_t>(n), -2);  // -2: not yet known
    depth[static_cast<size_t>(root_)] = 0;
    std::vector<int> path;
    for (int v = 0; v < n; ++v) {
      path.clear();
      int u = v;
      while (depth[static_cast<size_t>(u)] == -2 && static_cast<int>(path.size()) <= n) {
        path.push_back(u);
        depth[static_cast<size_t>(u)] = -3;  // on the current path
        u = parent(tree, u);
        if (u < 0) break;
      }
      const int base =
          u < 0 || depth[static_cast<size_t>(u)] < 0 ? -1 : depth[static_cast<size_t>(u)];
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        const int d = base < 0 ? -1 : base + 1 + static_cast<int>(it - path.rbegin());
        depth[static_cast<size_t>(*it)] = d;
      }
    }
    return depth;
  }

  // Whether u lies in the subtree of v (u == v included).
  bool below(const LinkTree& tree, int u, int v) const {
    for (int steps = 0; u >= 0 && steps <= graph_.ranks; ++steps) {
      if (u == v) return true;
      u = parent(tree, u);
    }
    return false;
  }

 private:
  const RankGraph& graph_;
  int root_;
};

/// The depth profile compared lexicographically: the deepest tree, then the number of ranks
/// at each depth over all trees from the deepest possible down to 1; a "tree" that is not a
/// tree scores worst.
std::vector<int> profile(const Depths& depths, const std::vector<LinkTree>& trees, int ranks) {
  std::vector<int> score(static_cast<size_t>(ranks) + 1, 0);
  int deepest = 0;
  for (const LinkTree& tree : trees) {
    const std::vector<int> d = depths.of(tree);
    for (int x : d) {
      if (x < 0) return std::vector<int>(static_cast<size_t>(ranks) + 1, 1 << 20);
      deepest = std::max(deepest, x);
      if (x > 0) ++score[static_cast<size_t>(ranks - x)];
    }
  }
  score.front() = deepest;
  return score;
}

}  // namespace

namespace {

// One hill climb from `trees` visiting ranks from `offset` on (rank order rotated), so that
// different offsets reach different local optima.
std::vector<int> climb(const RankGraph& graph, const Depths& depths, int root, int offset,
                       std::vector<int64_t>& spare, std::vector<LinkTree>& trees) {
  const int n = graph.ranks;
  std::vector<int> best = profile(depths, trees, n);
  auto keepIfBetter = [&]() {
    std::vector<int> now = profile(depths, trees, n);
    if (now < best) {
      best = std::move(now);
      return true;
    }
    return false;
  };
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    bool improved = false;
    for (size_t a = 0; a < trees.size(); ++a) {
      for (int i = 0; i < n; ++i) {
        const int v = (i + offset) % n;
        if (v == root) continue;
        int& own = trees[a][static_cast<size_t>(v)];
        // Onto an arc with spare capacity.
        for (int u = 0; u < n; ++u) {
          const int link = u == v ? -1 : graph.link(u, v);
          if (link < 0 || link == own || spare[static_cast<size_t>(link)] < 1) continue;
          if (depths.below(trees[a], u, v)) continue;
          const int old = own;
          own = link;
          if (keepIfBetter()) {
            --spare[static_cast<size_t>(link)];
            ++spare[static_cast<size_t>(old)];
            improved = true;
          } else {
            own = old;
          }
        }
        // Exchanged with another tree.
        for (size_t b = 0; b < trees.size(); ++b) {
          int& theirs = trees[b][static_cast<size_t>(v)];
          if (b == a || theirs == own) continue;
          const int ownFrom = graph.links[static_cast<size_t>(own)].from;
          const int theirFrom = graph.links[static_cast<size_t>(theirs)].from;
          if (depths.below(trees[a], theirFrom, v) || depths.below(trees[b], ownFrom, v)) continue;
          std::swap(own, theirs);
          if (keepIfBetter()) {
            improved = true;
          } else {
            std::swap(own, theirs);
          }
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

}  // namespace

void flattenArborescences(const RankGraph& graph, int root, std::vector<int64_t>& spare,
                          std::vector<LinkTree>& trees) {
  const Depths depths(graph, root);
  std::vector<int> best;
  std::vector<LinkTree> bestTrees;
  std::vector<int64_t> bestSpare;
  for (int offset = 0; offset < std::min(graph.ranks, kStarts); ++offset) {
    std::vector<LinkTree> tried = trees;
    std::vector<int64_t> left = spare;
    std::vector<int> score = climb(graph, depths, root, offset, left, tried);
    if (best.empty() || score < best) {
      best = std::move(score);
      bestTrees = std::move(tried);
      bestSpare = std::move(left);
    }
  }
  trees = std::move(bestTrees);
  spare = std::move(bestSpare);
}

}  // namespace grove::algo::packing_detail
