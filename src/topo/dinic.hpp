// Dinic's maximum flow, one template for exact (int64_t) and floating-point (double)
// capacities.
//
// Every bound of bounds.hpp is a min-cut question on a small graph (≤ a few hundred vertices):
// λ is a handful of s–t flows, RS+AG and σ are parametric min cuts. Exactness matters — the
// DGX-1V's rates are fractions like 24/7 that tests compare exactly — so integral topologies
// run the very same code on int64_t link units, and general ones on doubles with an epsilon.
// Dinic (BFS levels + blocking flows) is simple, deterministic (arcs are visited in insertion
// order) and fast on these unit-ish graphs. Internal to src/topo (and the packer).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace grove::topo {

/// A flow network that can run several max-flow computations; copy it to keep a pristine
/// version (the arrays are small).
template <class Cap>
class Dinic {
 public:
  /// `epsilon`: residual capacities at or below it count as saturated (0 for integers).
  explicit Dinic(int vertices, Cap epsilon = Cap{})
      : head_(static_cast<size_t>(vertices), -1), epsilon_(epsilon) {}

  int vertexCount() const { return static_cast<int>(head_.size()); }

  /// Adds the arc from→to with `capacity` (and its residual twin); returns the arc's id.
  int addArc(int from, int to, Cap capacity) {
    const int id = static_cast<int>(to_.size());
    push(from, to, capacity);
    push(to, from, Cap{});
    return id;
  }

  /// Flow currently on arc `id` (as returned by addArc).
  Cap flowOn(int id) const { return residual_[static_cast<size_t>(id) ^ 1U]; }

  /// Augments the current flow from s to t until it is maximal or has grown by `limit`;
  /// returns the amount added (at most `limit`; within epsilon of it counts as reaching it).
  Cap augment(int s, int t, Cap limit = std::numeric_limits<Cap>::max()) {
    Cap total{};
    if (s == t) return total;
    level_.assign(head_.size(), -1);
    while (limit - total > epsilon_ && bfs(s, t)) {
      next_ = head_;
      while (limit - total > epsilon_) {
        const Cap pushed = dfs(s, t, limit - total);
        if (pushed <= epsilon_) break;
        total += pushed;
      }
    }
    return std::min(total, limit);
  }

  /// After augment(): the vertices reachable from s in the residual graph (the source side
  /// of a minimum cut when the flow is maximal).
  std::vector<char> sourceSide(int s) const {
    std::vector<char> seen(head_.size(), 0);
    std::vector<int> stack{s};
    seen[static_cast<size_t>(s)] = 1;
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (int e = head_[static_cast<size_t>(u)]; e >= 0; e = link_[static_cast<size_t>(e)]) {
        const int v = to_[static_cast<size_t>(e)];
        if (!seen[static_cast<size_t>(v)] && residual_[static_cast<size_t>(e)] > epsilon_) {
          seen[static_cast<size_t>(v)] = 1;
          stack.push_back(v);
        }
      }
    }
    return seen;
  }

 private:
  void push(int from, int to, Cap capacity) {
    to_.push_back(to);
    residual_.push_back(capacity);
    link_.push_back(head_[static_cast<size_t>(from)]);
    head_[static_cast<size_t>(from)] = static_cast<int>(to_.size()) - 1;
  }

  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<int> queue{s};
    level_[static_cast<size_t>(s)] = 0;
    for (size_t i = 0; i < queue.size(); ++i) {
      const int u = queue[i];
      for (int e = head_[static_cast<size_t>(u)]; e >= 0; e = link_[static_cast<size_t>(e)]) {
        const int v = to_[static_cast<size_t>(e)];
        if (level_[static_cast<size_t>(v)] < 0 && residual_[static_cast<size_t>(e)] > epsilon_) {
          level_[static_cast<size_t>(v)] = level_[static_cast<size_t>(u)] + 1;
          queue.push_back(v);
        }
      }
    }
    return level_[static_cast<size_t>(t)] >= 0;
  }

  Cap dfs(int u, int t, Cap pushable) {
    if (u == t) return pushable;
    for (int& e = next_[static_cast<size_t>(u)]; e >= 0; e = link_[static_cast<size_t>(e)]) {
      const auto edge = static_cast<size_t>(e);
      const int v = to_[edge];
      if (residual_[edge] <= epsilon_ ||
          level_[static_cast<size_t>(v)] != level_[static_cast<size_t>(u)] + 1) {
        continue;
      }
      const Cap pushed = dfs(v, t, std::min(pushable, residual_[edge]));
      if (pushed > epsilon_) {
        residual_[edge] -= pushed;
        residual_[edge ^ 1U] += pushed;
        return pushed;
      }
    }
    return Cap{};
  }

  std::vector<int> head_;  // first arc leaving each vertex (singly linked through link_)
  std::vector<int> to_;
  std::vector<int> link_;
  std::vector<Cap> residual_;
  std::vector<int> level_;
  std::vector<int> next_;  // current-arc pointers of the blocking-flow phase
  Cap epsilon_;
};

}  // namespace grove::topo
