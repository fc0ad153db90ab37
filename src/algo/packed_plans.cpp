// Plans over packed trees (see packed_plans.hpp for the shapes): chunk shares in proportion
// to tree rates, and the up/down step lists of one rank in a tree of any shape.
#include "algo/packed_plans.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "algo/builder.hpp"
#include "grove/error.hpp"

namespace grove::algo {
namespace {

using namespace build;
using plan::Collective;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

bool allExact(const std::vector<Tree>& trees) {
  return std::all_of(trees.begin(), trees.end(), [](const Tree& t) { return t.rate.exact; });
}

/// Depth of every vertex (edges from the root); throws when `tree` is not a tree over
/// parent.size() ranks.
std::vector<int> depths(const Tree& tree) {
  const int n = static_cast<int>(tree.parent.size());
  if (tree.root < 0 || tree.root >= n || tree.parent[tree.root] != -1) {
    invalid(
        fmt::format("packed tree rooted at {} over {} ranks: the root must be a rank "
                    "with parent -1",
                    tree.root, n));
  }
  std::vector<int> depth(n, -1);
  depth[tree.root] = 0;
  for (int v = 0; v < n; ++v) {
    std::vector<int> path;
    int u = v;
    while (depth[u] < 0) {
      path.push_back(u);
      const int p = tree.parent[u];
      if (p < 0 || p >= n || static_cast<int>(path.size()) > n) {
        invalid(
            fmt::format("packed tree rooted at {}: rank {} does not reach the root "
                        "(parent {}); expected a spanning tree of {} ranks",
                        tree.root, v, p, n));
      }
      u = p;
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) depth[*it] = depth[u] + 1, u = *it;
  }
  return depth;
}

/// Children of every rank, deepest subtree first (ties: lower rank first).
std::vector<std::vector<int>> childrenDeepestFirst(const Tree& tree) {
  const int n = static_cast<int>(tree.parent.size());
  const std::vector<int> depth = depths(tree);
  std::vector<int> height(n, 0);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  for (int v : order) {
    if (tree.parent[v] >= 0) {
      height[tree.parent[v]] = std::max(height[tree.parent[v]], height[v] + 1);
    }
  }
  std::vector<std::vector<int>> children(n);
  for (int v = 0; v < n; ++v) {
    if (tree.parent[v] >= 0) children[tree.parent[v]].push_back(v);
  }
  for (std::vector<int>& list : children) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return height[a] > height[b]; });
  }
  return children;
}

/// Everything the step writers need about one collective's buffers.
struct Layout {
  Collective collective;
  uint32_t k;
  /// Input chunk that part p of root b's data starts from at every rank.
  uint32_t input(int b, uint32_t p) const {
    return collective == Collective::kReduceScatter ? static_cast<uint32_t>(b) * k + p : p;
  }
  /// Output chunk where part p of root b's data ends.
  uint32_t output(int b, uint32_t p) const {
    return collective == Collective::kAllGather ? static_cast<uint32_t>(b) * k + p : p;
  }
  /// Where a non-root rank with several children accumulates part p of root b.
  plan::ChunkRef accumulator(int b, uint32_t p) const {
    if (collective == Collective::kAllReduce) return out(p);
    return scratch(input(b, p));
  }
};

/// Appends rank v's up steps for part p of a tree rooted at b (children in hearing order).
void appendUp(std::vector<plan::Step>& steps, const Layout& layout, int b, int parent,
              const std::vector<int>& kids, uint32_t p) {
  const size_t m = kids.size();
  const plan::ChunkRef src = in(layout.input(b, p));
  if (parent < 0) {
    const plan::ChunkRef dst = out(layout.output(b, p));
    steps.push_back(m == 1 ? finalized(recvReduceCopy(kids[0], src, dst))
                           : recvReduceCopy(kids[0], src, dst));
    for (size_t i = 1; i < m; ++i) {
      plan::Step more = recvReduce(kids[i], dst);
      steps.push_back(i + 1 == m ? finalized(more) : more);
    }
  } else if (m == 0) {
    steps.push_back(send(parent, src));
  } else if (m == 1) {
    steps.push_back(recvReduceSend(kids[0], parent, src));
  } else {
    const plan::ChunkRef acc = layout.accumulator(b, p);
    steps.push_back(recvReduceCopy(kids[0], src, acc));
    for (size_t i = 1; i + 1 < m; ++i) steps.push_back(recvReduce(kids[i], acc));
    steps.push_back(recvReduceSend(kids[m - 1], parent, acc));
  }
}

/// Appends rank v's down steps for part p of a tree rooted at b (children deepest first).
/// At the root of an allreduce tree the first send waits for step `upLast` of `upChannel`.
void appendDown(std::vector<plan::Step>& steps, const Layout& layout, int b, int parent,
                const std::vector<int>& kids, uint32_t p, int upChannel, int upLast) {
  const plan::ChunkRef dst = out(layout.output(b, p));
  if (parent < 0) {
    const bool allReduce = layout.collective == Collective::kAllReduce;
    const plan::ChunkRef src = allReduce ? dst : in(layout.input(b, p));
    for (size_t i = 0; i < kids.size(); ++i) {
      plan::Step s = send(kids[i], src);
      steps.push_back(i == 0 && allReduce ? after(s, upChannel, upLast) : s);
    }
    if (!allReduce) steps.push_back(copy(src, dst));
  } else if (kids.empty()) {
    steps.push_back(recv(parent, dst));
  } else {
    steps.push_back(recvCopySend(parent, kids[0], dst));
    for (size_t i = 1; i < kids.size(); ++i) steps.push_back(send(kids[i], dst));
  }
}

plan::Plan singleRankPlan(const plan::PlanRequest& request, std::string_view algorithm) {
  plan::Plan p = makePlan(request, algorithm, 1, 1, 1);
  plan::Step step = copy(in(0), out(0));
  p.channels.emplace_back().steps.push_back(request.reduces() ? finalized(step) : step);
  return p;
}

}  // namespace

uint32_t chunksForTrees(const std::vector<Tree>& trees) {
  if (trees.empty()) invalid("chunksForTrees: no trees (expected at least one)");
  const auto m = static_cast<uint32_t>(trees.size());
  if (allExact(trees)) {
    topo::Rational total;
    for (const Tree& t : trees) total += t.rate.value;
    if (total > topo::Rational(0)) {
      int64_t denominator = 1;
      bool positive = true;
      for (const Tree& t : trees) {
        const topo::Rational share = t.rate.value / total;
        positive = positive && share > topo::Rational(0);
        denominator = std::lcm(denominator, share.den());
        if (denominator > kMaxExactChunks) break;
      }
      if (positive && denominator <= kMaxExactChunks && denominator >= m) {
        return static_cast<uint32_t>(denominator);
      }
    }
  }
  return std::max(kDefaultChunks, m);
}

uint32_t chunksForBytes(uint32_t exact, double bytes) {
  const double fits = std::floor(bytes / static_cast<double>(kMinChunkBytes));
  if (fits >= exact) return exact;
  return fits < 1 ? 1 : static_cast<uint32_t>(fits);
}

uint32_t chunkClass(double bytes) { return chunksForBytes(kMaxPackingChunks, bytes); }

std::vector<uint32_t> shareChunks(const std::vector<Tree>& trees, uint32_t k) {
  const size_t m = trees.size();
  std::vector<uint32_t> counts(m, 0);
  if (m == 0) return counts;
  // Quota of tree i: k * rate_i / total, split into a whole part and a remainder.
  std::vector<double> remainder(m, 0);
  std::vector<topo::Rational> exactRemainder(m);
  const bool exact = allExact(trees);
  topo::Rational exactTotal;
  double total = 0;
  for (const Tree& t : trees) {
    total += std::max(0.0, t.rate.units);
    if (exact) exactTotal += t.rate.value;
  }
  uint32_t given = 0;
  for (size_t i = 0; i < m; ++i) {
    if (exact && exactTotal > topo::Rational(0)) {
      const topo::Rational quota = topo::Rational(k) * trees[i].rate.value / exactTotal;
      const int64_t whole = quota.num() / quota.den();
      counts[i] = static_cast<uint32_t>(whole);
      exactRemainder[i] = quota - topo::Rational(whole);
    } else {
      const double quota = total > 0 ? k * std::max(0.0, trees[i].rate.units) / total
                                     : static_cast<double>(k) / static_cast<double>(m);
      counts[i] = static_cast<uint32_t>(quota);
      remainder[i] = quota - counts[i];
    }
    given += counts[i];
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return exact && exactTotal > topo::Rational(0) ? exactRemainder[a] > exactRemainder[b]
                                                   : remainder[a] > remainder[b];
  });
  for (size_t i = 0; given < k; i = (i + 1) % m, ++given) ++counts[order[i]];
  // Every tree carries something when there are enough chunks: take from the largest.
  if (k >= m) {
    for (size_t i = 0; i < m; ++i) {
      if (counts[i] > 0) continue;
      const auto largest = std::max_element(counts.begin(), counts.end());
      --*largest;
      counts[i] = 1;
    }
  }
  return counts;
}

std::vector<TreeRun> runsOf(const Packing& packing, uint32_t k) {
  const std::vector<uint32_t> counts = shareChunks(packing.trees, k);
  std::vector<TreeRun> runs;
  uint32_t first = 0;
  for (size_t i = 0; i < packing.trees.size(); ++i) {
    runs.push_back({&packing.trees[i], first, counts[i]});
    first += counts[i];
  }
  return runs;
}

int treeDepth(const Tree& tree) {
  const std::vector<int> depth = depths(tree);
  return depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end());
}

plan::Plan buildTreePlan(const plan::PlanRequest& request, std::string_view algorithm, uint32_t k,
                         const std::vector<TreeRun>& runs) {
  const int n = request.nranks;
  const int r = request.rank;
  const Collective collective = request.collective;
  const auto nb = static_cast<uint32_t>(n);
  uint32_t inBlocks = 1;
  uint32_t outBlocks = 1;
  bool up = false;
  bool down = false;
  switch (collective) {
    case Collective::kBroadcast:
      down = true;
      break;
    case Collective::kReduce:
      up = true;
      break;
    case Collective::kAllReduce:
      up = down = true;
      break;
    case Collective::kAllGather:
      outBlocks = nb;
      down = true;
      break;
    case Collective::kReduceScatter:
      inBlocks = nb;
      up = true;
      break;
    default:
      invalid(
          fmt::format("{}: packed trees cannot build {} (expected broadcast, reduce, "
                      "allreduce, allgather or reducescatter)",
                      algorithm, plan::toString(collective)));
  }
  if (n == 1) return singleRankPlan(request, algorithm);

  struct Prepared {
    TreeRun run;
    std::vector<std::vector<int>> children;
  };
  std::vector<Prepared> prepared;
  bool needScratch = false;
  for (const TreeRun& run : runs) {
    if (run.tree == nullptr || static_cast<int>(run.tree->parent.size()) != n) {
      invalid(
          fmt::format("{} on rank {}: a packed tree does not span the {} ranks", algorithm, r, n));
    }
    const bool rooted = collective == Collective::kBroadcast || collective == Collective::kReduce;
    if (rooted && run.tree->root != request.root) {
      invalid(fmt::format("{} on rank {}: a packed tree is rooted at {}, expected root {}",
                          algorithm, r, run.tree->root, request.root));
    }
    if (run.first + run.count > k) {
      invalid(fmt::format("{} on rank {}: tree run [{}, {}) exceeds the {} chunks", algorithm, r,
                          run.first, run.first + run.count, k));
    }
    if (run.count == 0) continue;
    Prepared& entry = prepared.emplace_back(Prepared{run, childrenDeepestFirst(*run.tree)});
    for (int v = 0; v < n; ++v) {
      if (v != run.tree->root && entry.children[v].size() >= 2) needScratch = true;
    }
  }
  const bool scratchUsed = needScratch && (collective == Collective::kReduce ||
                                           collective == Collective::kReduceScatter);
  const uint32_t scratchBlocks = scratchUsed ? inBlocks : 0;
  plan::Plan p = makePlan(request, algorithm, k, inBlocks, outBlocks, scratchBlocks);
  const Layout layout{collective, k};
  const int perRun = up && down ? 2 : 1;
  p.channels.resize(prepared.size() * perRun);
  for (size_t t = 0; t < prepared.size(); ++t) {
    const Tree& tree = *prepared[t].run.tree;
    const int b = tree.root;
    const int parent = tree.parent[r];
    const std::vector<int>& kids = prepared[t].children[r];
    const std::vector<int> hearing(kids.rbegin(), kids.rend());
    const int upChannel = static_cast<int>(t) * perRun;
    const int downChannel = upChannel + (up ? 1 : 0);
    std::vector<plan::Step>* upSteps = up ? &p.channels[upChannel].steps : nullptr;
    std::vector<plan::Step>* downSteps = down ? &p.channels[downChannel].steps : nullptr;
    const TreeRun& run = prepared[t].run;
    for (uint32_t part = run.first; part < run.first + run.count; ++part) {
      if (up) appendUp(*upSteps, layout, b, parent, hearing, part);
      const int upLast = up ? static_cast<int>(upSteps->size()) - 1 : -1;
      if (down) appendDown(*downSteps, layout, b, parent, kids, part, upChannel, upLast);
    }
  }
  for (size_t c = 0; c < p.channels.size(); ++c) {
    for (plan::Step& step : p.channels[c].steps) step.lane = static_cast<uint16_t>(c);
  }
  return p;
}

}  // namespace grove::algo
