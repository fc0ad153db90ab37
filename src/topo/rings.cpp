// How many rings a topology holds: the most arc-disjoint directed Hamiltonian cycles over
// rank-to-rank arcs, an arc of u link units carrying up to u cycles.
//
// This is the yardstick of ring algorithms (NCCL's channels): k disjoint rings broadcast at k
// link units, and a graph with no NVLink Hamiltonian cycle (most subsets of a DGX-1V) forces
// a ring through a slow hop. The problem is NP-hard in general but the graphs are tiny
// (≤ 12 ranks): a depth-first search builds cycles one after the other, each from rank 0,
// in lexicographic order of their vertex sequences (the cycles of a solution are unordered),
// tries the next vertex with the fewest onward choices first (Warnsdorff), and prunes when a
// rank lacks the in- or out-capacity the remaining cycles need, or an unvisited rank can no
// longer be entered or left. k = 1, 2, ... is tried until a search fails; a node budget
// turns a search that would take too long into "unknown".
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "topo/bounds_detail.hpp"

namespace grove::topo::detail {
namespace {

/// How a search ended: the node budget is an outcome of its own, passed up through every
/// level of the recursion (the search unwinds without restoring its state; it is discarded).
enum class SearchStatus { kFound, kNone, kOverBudget };

class RingSearch {
 public:
  RingSearch(int n, std::vector<int64_t> units, int64_t budget)
      : n_(n), rem_(std::move(units)), budget_(budget) {
    out_.assign(static_cast<size_t>(n), 0);
    in_.assign(static_cast<size_t>(n), 0);
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) {
        out_[static_cast<size_t>(u)] += at(u, v);
        in_[static_cast<size_t>(v)] += at(u, v);
      }
    }
  }

  /// Upper bound on the count: the least in- or out-capacity of a rank.
  int64_t degreeBound() const {
    int64_t bound = INT64_MAX;
    for (int u = 0; u < n_; ++u) {
      bound = std::min({bound, out_[static_cast<size_t>(u)], in_[static_cast<size_t>(u)]});
    }
    return bound;
  }

  /// Whether k disjoint rings exist, or kOverBudget when the search could not tell.
  SearchStatus find(int k) {
    k_ = k;
    cycles_.assign(static_cast<size_t>(k), std::vector<int>(static_cast<size_t>(n_), 0));
    visited_.assign(static_cast<size_t>(n_), 0);
    visited_[0] = 1;
    return extend(0, 1, 0, false);
  }

  /// Search nodes visited so far.
  int64_t nodes() const { return nodes_; }

 private:
  int64_t& at(int u, int v) { return rem_[static_cast<size_t>(u * n_ + v)]; }
  int64_t at(int u, int v) const { return rem_[static_cast<size_t>(u * n_ + v)]; }

  void take(int u, int v, int64_t delta) {
    at(u, v) -= delta;
    out_[static_cast<size_t>(u)] -= delta;
    in_[static_cast<size_t>(v)] -= delta;
  }

  // Can every unvisited rank still be entered (from another unvisited rank or `current`)
  // and left (to another unvisited rank or rank 0)?
  bool stillOpen(int current) const {
    for (int w = 0; w < n_; ++w) {
      if (visited_[static_cast<size_t>(w)]) continue;
      bool enter = at(current, w) > 0;
      bool leave = at(w, 0) > 0;
      for (int x = 0; x < n_ && !(enter && leave); ++x) {
        if (x == w || visited_[static_cast<size_t>(x)]) continue;
        enter = enter || at(x, w) > 0;
        leave = leave || at(w, x) > 0;
      }
      if (!enter || !leave) return false;
    }
    return true;
  }

  // Cycle `cycle` has visited `position` ranks and stands at `u`; `tied` says its sequence
  // so far equals the previous cycle's.
  SearchStatus extend(int cycle, int position, int u, bool tied) {
    if (++nodes_ > budget_) return SearchStatus::kOverBudget;
    const int64_t later = k_ - cycle - 1;  // cycles still to build after this one
    if (position == n_) {
      if (at(u, 0) < 1 || out_[static_cast<size_t>(u)] - 1 < later || in_[0] - 1 < later) {
        return SearchStatus::kNone;
      }
      take(u, 0, 1);
      if (cycle + 1 == k_) return SearchStatus::kFound;
      std::fill(visited_.begin(), visited_.end(), 0);
      visited_[0] = 1;
      if (SearchStatus next = extend(cycle + 1, 1, 0, true); next != SearchStatus::kNone) {
        return next;
      }
      std::fill(visited_.begin(), visited_.end(), 1);  // this cycle had visited every rank
      take(u, 0, -1);
      return SearchStatus::kNone;
    }
    std::vector<std::pair<int, int>> choices;  // (onward choices, rank)
    const int floor =
        tied ? cycles_[static_cast<size_t>(cycle - 1)][static_cast<size_t>(position)] : 0;
    for (int v = floor; v < n_; ++v) {
      if (visited_[static_cast<size_t>(v)] || at(u, v) < 1) continue;
      if (out_[static_cast<size_t>(u)] - 1 < later || in_[static_cast<size_t>(v)] - 1 < later) {
        continue;
      }
      int onward = 0;
      for (int w = 0; w < n_; ++w)
        onward += !visited_[static_cast<size_t>(w)] && w != v && at(v, w) > 0;
      choices.emplace_back(onward, v);
    }
    std::sort(choices.begin(), choices.end());
    for (const auto& [onward, v] : choices) {
      take(u, v, 1);
      visited_[static_cast<size_t>(v)] = 1;
      cycles_[static_cast<size_t>(cycle)][static_cast<size_t>(position)] = v;
      const bool stillTied =
          tied && v == cycles_[static_cast<size_t>(cycle - 1)][static_cast<size_t>(position)];
      if (stillOpen(v)) {
        if (SearchStatus next = extend(cycle, position + 1, v, stillTied);
            next != SearchStatus::kNone) {
          return next;
        }
      }
      visited_[static_cast<size_t>(v)] = 0;
      take(u, v, -1);
    }
    return SearchStatus::kNone;
  }

  int n_;
  std::vector<int64_t> rem_;  // remaining units, n × n
  std::vector<int64_t> out_;
  std::vector<int64_t> in_;
  int64_t budget_;
  int64_t nodes_ = 0;
  int k_ = 0;
  std::vector<std::vector<int>> cycles_;
  std::vector<char> visited_;
};

}  // namespace

std::optional<int> ringCount(const Network<int64_t>& network, int64_t nodeBudget) {
  const int n = network.ranks();
  if (n < 2) return 0;
  std::vector<int> rankOf(static_cast<size_t>(network.vertices), -1);
  for (int r = 0; r < n; ++r)
    rankOf[static_cast<size_t>(network.rankVertex[static_cast<size_t>(r)])] = r;
  std::vector<int64_t> units(static_cast<size_t>(n * n), 0);
  for (size_t a = 0; a < network.capacity.size(); ++a) {
    const int u = rankOf[static_cast<size_t>(network.from[a])];
    const int v = rankOf[static_cast<size_t>(network.to[a])];
    if (u >= 0 && v >= 0) units[static_cast<size_t>(u * n + v)] += network.capacity[a];
  }
  const int64_t bound = RingSearch(n, units, nodeBudget).degreeBound();
  int64_t budget = nodeBudget;  // shared by every k
  for (int k = 1; k <= bound; ++k) {
    RingSearch search(n, units, budget);
    const SearchStatus status = search.find(k);
    if (status == SearchStatus::kOverBudget) return std::nullopt;
    budget -= search.nodes();
    if (status == SearchStatus::kNone) return k - 1;
  }
  return static_cast<int>(bound);
}

}  // namespace grove::topo::detail
