// Fractional tree packing by linear programming with column generation.
//
// The best packing of trees into capacities is the LP "maximise Σ x_T subject to, per arc,
// Σ_{T crossing it} x_T ≤ capacity": one column per tree, exponentially many of them. The
// revised simplex method needs only the trees it meets: its duals y price the arcs, and the
// tree oracle (cheapest arborescence or spanning tree under the prices y) is exactly the
// column with the best reduced cost 1 − y(T). When even the cheapest tree costs ≥ 1 the
// packing is optimal — Garg–Könemann's multiplicative weights approach the same optimum
// from below with the same oracle, but need ~m/ε² oracle calls for accuracy ε, while these
// LPs (a few dozen rows on NVLink-sized machines) finish in a few hundred pivots with the
// optimum to rounding. RS+AG adds one row per root tying its trees to a common rate z.
#include <algorithm>
#include <cmath>
#include <map>

#include "algo/packing_internal.hpp"

namespace grove::algo::packing_detail {
namespace {

constexpr double kTolerance = 1e-9;
constexpr int kRefactorEvery = 50;

}  // namespace

ColumnLp::ColumnLp(std::vector<double> rhs) : rhs_(std::move(rhs)) {
  const size_t m = rhs_.size();
  basis_.resize(m);
  for (size_t i = 0; i < m; ++i) basis_[i] = -1 - static_cast<int>(i);
  inverse_.assign(m * m, 0.0);
  for (size_t i = 0; i < m; ++i) inverse_[i * m + i] = 1.0;
  basicValue_ = rhs_;
}

int ColumnLp::addColumn(std::vector<std::pair<int, double>> entries, double objective) {
  columns_.push_back(std::move(entries));
  objective_.push_back(objective);
  return static_cast<int>(columns_.size()) - 1;
}

double ColumnLp::reducedCost(int column, const std::vector<double>& y) const {
  double cost = objective_[static_cast<size_t>(column)];
  for (const auto& [row, coefficient] : columns_[static_cast<size_t>(column)]) {
    cost -= y[static_cast<size_t>(row)] * coefficient;
  }
  return cost;
}

std::vector<double> ColumnLp::dense(int variable) const {
  std::vector<double> column(rhs_.size(), 0.0);
  if (variable < 0) {
    column[static_cast<size_t>(-1 - variable)] = 1.0;
  } else {
    for (const auto& [row, coefficient] : columns_[static_cast<size_t>(variable)]) {
      column[static_cast<size_t>(row)] += coefficient;
    }
  }
  return column;
}

void ColumnLp::refactor() {
  // Gauss–Jordan inversion of the basis matrix with partial pivoting.
  const size_t m = rhs_.size();
  std::vector<double> b(m * m, 0.0);
  for (size_t i = 0; i < m; ++i) {
    std::vector<double> column = dense(basis_[i]);
    for (size_t r = 0; r < m; ++r) b[r * m + i] = column[r];
  }
  std::vector<double> inv(m * m, 0.0);
  for (size_t i = 0; i < m; ++i) inv[i * m + i] = 1.0;
  for (size_t c = 0; c < m; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < m; ++r) {
      if (std::fabs(b[r * m + c]) > std::fabs(b[pivot * m + c])) pivot = r;
    }
    if (std::fabs(b[pivot * m + c]) < 1e-12) return;  // keep the updated inverse
    if (pivot != c) {
      for (size_t k = 0; k < m; ++k) {
        std::swap(b[pivot * m + k], b[c * m + k]);
        std::swap(inv[pivot * m + k], inv[c * m + k]);
      }
    }
    const double scale = 1.0 / b[c * m + c];
    for (size_t k = 0; k < m; ++k) {
      b[c * m + k] *= scale;
      inv[c * m + k] *= scale;
    }
    for (size_t r = 0; r < m; ++r) {
      const double factor = b[r * m + c];
      if (r == c || factor == 0.0) continue;
      for (size_t k = 0; k < m; ++k) {
        b[r * m + k] -= factor * b[c * m + k];
        inv[r * m + k] -= factor * inv[c * m + k];
      }
    }
  }
  inverse_ = std::move(inv);
  for (size_t i = 0; i < m; ++i) {
    double value = 0;
    for (size_t r = 0; r < m; ++r) value += inverse_[i * m + r] * rhs_[r];
    basicValue_[i] = std::max(0.0, value);
  }
}

void ColumnLp::solve(const std::function<void(const std::vector<double>& y)>& generate,
                     int maxIterations) {
  const size_t m = rhs_.size();
  std::vector<double> y(m);
  std::vector<double> d(m);
  for (int iteration = 0; iteration < maxIterations; ++iteration) {
    if (iteration > 0 && iteration % kRefactorEvery == 0) refactor();
    std::fill(y.begin(), y.end(), 0.0);
    for (size_t i = 0; i < m; ++i) {
      const int variable = basis_[i];
      const double cost = variable < 0 ? 0.0 : objective_[static_cast<size_t>(variable)];
      if (cost == 0.0) continue;
      for (size_t j = 0; j < m; ++j) y[j] += cost * inverse_[i * m + j];
    }
    generate(y);
    std::vector<char> basic(columns_.size(), 0);
    std::vector<char> slackBasic(m, 0);
    for (int variable : basis_) {
      if (variable < 0) {
        slackBasic[static_cast<size_t>(-1 - variable)] = 1;
      } else {
        basic[static_cast<size_t>(variable)] = 1;
      }
    }
    int entering = 0;
    double best = kTolerance;
    bool found = false;
    for (size_t j = 0; j < m; ++j) {
      if (!slackBasic[j] && -y[j] > best) {
        best = -y[j];
        entering = -1 - static_cast<int>(j);
        found = true;
      }
    }
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (basic[c]) continue;
      const double reduced = reducedCost(static_cast<int>(c), y);
      if (reduced > best) {
        best = reduced;
        entering = static_cast<int>(c);
        found = true;
      }
    }
    if (!found) return;
    const std::vector<double> a = dense(entering);
    for (size_t i = 0; i < m; ++i) {
      double value = 0;
      for (size_t r = 0; r < m; ++r) {
        if (a[r] != 0.0) value += inverse_[i * m + r] * a[r];
      }
      d[i] = value;
    }
    size_t leave = m;
    double step = 0;
    for (size_t i = 0; i < m; ++i) {
      if (d[i] <= kTolerance) continue;
      const double ratio = basicValue_[i] / d[i];
      if (leave == m || ratio < step - 1e-12) {
        leave = i;
        step = ratio;
      }
    }
    if (leave == m) return;  // unbounded: cannot happen for packing LPs
    for (size_t i = 0; i < m; ++i) {
      if (i != leave) basicValue_[i] = std::max(0.0, basicValue_[i] - step * d[i]);
    }
    basicValue_[leave] = step;
    const double pivot = d[leave];
    for (size_t k = 0; k < m; ++k) inverse_[leave * m + k] /= pivot;
    for (size_t i = 0; i < m; ++i) {
      if (i == leave || d[i] == 0.0) continue;
      const double factor = d[i];
      for (size_t k = 0; k < m; ++k) inverse_[i * m + k] -= factor * inverse_[leave * m + k];
    }
    basis_[leave] = entering;
  }
}

std::vector<double> ColumnLp::values() const {
  std::vector<double> value(columns_.size(), 0.0);
  for (size_t i = 0; i < basis_.size(); ++i) {
    if (basis_[i] >= 0) value[static_cast<size_t>(basis_[i])] = std::max(0.0, basicValue_[i]);
  }
  return value;
}

namespace {

std::vector<std::pair<int, double>> loadEntries(const RankGraph& graph, const LinkTree& tree) {
  std::vector<std::pair<int, double>> entries;
  for (const auto& [arc, count] : arcLoad(graph, tree)) entries.emplace_back(arc, count);
  return entries;
}

std::vector<double> linkWeights(const RankGraph& graph, const std::vector<double>& y) {
  std::vector<double> weight(graph.links.size(), 0.0);
  for (size_t l = 0; l < graph.links.size(); ++l) {
    for (int arc : graph.links[l].arcs) weight[l] += y[static_cast<size_t>(arc)];
  }
  return weight;
}

double treeCost(const LinkTree& tree, const std::vector<double>& weight) {
  double cost = 0;
  for (int link : tree) {
    if (link >= 0) cost += weight[static_cast<size_t>(link)];
  }
  return cost;
}

int iterationLimit(const ColumnLp& lp) { return 40 * lp.rows() + 1000; }

}  // namespace

std::vector<WeightedTree> packByLp(const RankGraph& graph, int root, bool spanning) {
  ColumnLp lp(graph.capacity);
  std::vector<LinkTree> trees;
  std::map<LinkTree, int> known;
  const std::vector<Edge> edges = spanning ? undirectedEdges(graph) : std::vector<Edge>{};
  auto generate = [&](const std::vector<double>& y) {
    const std::vector<double> weight = linkWeights(graph, y);
    std::optional<LinkTree> tree;
    if (spanning) {
      std::vector<double> edgeWeight;
      for (const Edge& edge : edges) {
        edgeWeight.push_back(weight[static_cast<size_t>(edge.forward)] +
                             weight[static_cast<size_t>(edge.backward)]);
      }
      std::optional<std::vector<int>> chosen = minSpanningTree(graph.ranks, edges, edgeWeight);
      if (chosen) tree = orientTree(graph, root, edges, *chosen);
    } else {
      tree = minArborescence(graph, root, weight);
    }
    if (!tree || 1.0 - treeCost(*tree, weight) <= kTolerance || known.count(*tree)) return;
    // Allreduce trees also carry the reduction up the same edges.
    std::vector<std::pair<int, double>> entries =
        loadEntries(graph, spanning ? withReverse(graph, *tree) : *tree);
    known.emplace(*tree, lp.addColumn(std::move(entries), 1.0));
    trees.push_back(*tree);
  };
  lp.solve(generate, iterationLimit(lp));
  const std::vector<double> value = lp.values();
  std::vector<WeightedTree> result;
  for (size_t c = 0; c < trees.size(); ++c) {
    if (value[c] > kTolerance) result.push_back(WeightedTree{trees[c], value[c]});
  }
  return result;
}

std::vector<std::vector<WeightedTree>> packRsAgByLp(const RankGraph& graph) {
  const int n = graph.ranks;
  const int arcs = static_cast<int>(graph.capacity.size());
  std::vector<double> rhs = graph.capacity;
  rhs.resize(static_cast<size_t>(arcs + n), 0.0);
  ColumnLp lp(rhs);
  std::vector<std::pair<int, double>> rate;
  for (int r = 0; r < n; ++r) rate.emplace_back(arcs + r, 1.0);
  lp.addColumn(std::move(rate), 1.0);           // column 0: the common rate z
  std::vector<std::pair<int, LinkTree>> trees;  // per column 1..: (root, tree)
  std::map<std::pair<int, LinkTree>, int> known;
  auto generate = [&](const std::vector<double>& y) {
    const std::vector<double> weight = linkWeights(graph, y);
    for (int r = 0; r < n; ++r) {
      std::optional<LinkTree> tree = minArborescence(graph, r, weight);
      if (!tree) return;
      if (y[static_cast<size_t>(arcs + r)] - treeCost(*tree, weight) <= kTolerance) continue;
      std::pair<int, LinkTree> key{r, *tree};
      if (known.count(key)) continue;
      std::vector<std::pair<int, double>> entries = loadEntries(graph, *tree);
      entries.emplace_back(arcs + r, -1.0);
      known.emplace(key, lp.addColumn(std::move(entries), 0.0));
      trees.push_back(std::move(key));
    }
  };
  lp.solve(generate, iterationLimit(lp));
  const std::vector<double> value = lp.values();
  std::vector<std::vector<WeightedTree>> result(static_cast<size_t>(n));
  for (size_t c = 0; c < trees.size(); ++c) {
    if (value[c + 1] > kTolerance) {
      result[static_cast<size_t>(trees[c].first)].push_back(
          WeightedTree{trees[c].second, value[c + 1]});
    }
  }
  return result;
}

}  // namespace grove::algo::packing_detail
