// The packer's view of a topology (ranks joined by links) and its two tree oracles: the
// minimum-weight arborescence (Chu–Liu/Edmonds) for broadcast and RS+AG trees, and the
// minimum spanning tree (Kruskal) for reduce-up/broadcast-down allreduce trees. Both are
// asked again and again by the LP and the multiplicative-weights loop with changing arc
// weights, so they are plain and allocation-light; ties always go to the lower index so that
// every rank computes the same trees.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include "algo/packing_internal.hpp"

namespace grove::algo::packing_detail {
namespace {

constexpr int kRailRanks = 64;

}  // namespace

RankGraph buildRankGraph(const topo::Topology& topology, bool allowSwitches) {
  RankGraph graph;
  const int n = topology.rankCount();
  const size_t vertices = topology.vertices.size();
  graph.ranks = n;
  graph.linkIndex.assign(static_cast<size_t>(n) * static_cast<size_t>(n), -1);
  for (const topo::Arc& arc : topology.arcs) {
    graph.capacity.push_back(arc.capacityGBps / topology.unitGBps);
  }
  std::vector<std::vector<int>> out(vertices);
  for (size_t a = 0; a < topology.arcs.size(); ++a) {
    out[static_cast<size_t>(topology.arcs[a].from)].push_back(static_cast<int>(a));
  }
  std::vector<int> rankVertex(static_cast<size_t>(n), -1);
  for (size_t v = 0; v < vertices; ++v) {
    if (topology.vertices[v].kind == topo::VertexKind::kRank) {
      rankVertex[static_cast<size_t>(topology.vertices[v].rank)] = static_cast<int>(v);
    }
  }
  auto isRank = [&](int v) {
    return topology.vertices[static_cast<size_t>(v)].kind == topo::VertexKind::kRank;
  };
  // Large graphs keep switch routes between hosts only along "rails" (the j-th rank of one
  // host to the j-th rank of another): n·hosts links instead of n², and trees of the same
  // quality on uniform hosts (a host's ranks share its NIC anyway).
  const bool rails = n > kRailRanks;
  std::vector<std::string> host(static_cast<size_t>(n));
  std::vector<int> local(static_cast<size_t>(n), 0);
  if (rails) {
    std::map<std::string, int> seenHosts;
    for (int r = 0; r < n; ++r) {
      host[static_cast<size_t>(r)] =
          topology.vertices[static_cast<size_t>(rankVertex[static_cast<size_t>(r)])].host;
      if (!host[static_cast<size_t>(r)].empty()) {
        local[static_cast<size_t>(r)] = seenHosts[host[static_cast<size_t>(r)]]++;
      }
    }
  }
  std::vector<int> via(vertices, -1);  // BFS: arc that reached a vertex
  std::vector<char> seen(vertices, 0);
  for (int u = 0; u < n; ++u) {
    const int source = rankVertex[static_cast<size_t>(u)];
    std::vector<std::vector<int>> path(static_cast<size_t>(n));
    for (int a : out[static_cast<size_t>(source)]) {
      const int head = topology.arcs[static_cast<size_t>(a)].to;
      if (isRank(head)) path[static_cast<size_t>(topology.vertices[head].rank)] = {a};
    }
    if (allowSwitches) {
      std::fill(seen.begin(), seen.end(), 0);
      std::vector<int> queue{source};
      seen[static_cast<size_t>(source)] = 1;
      for (size_t i = 0; i < queue.size(); ++i) {
        const int x = queue[i];
        if (x != source && isRank(x)) continue;  // ranks do not forward
        for (int a : out[static_cast<size_t>(x)]) {
          const int head = topology.arcs[static_cast<size_t>(a)].to;
          if (seen[static_cast<size_t>(head)]) continue;
          seen[static_cast<size_t>(head)] = 1;
          via[static_cast<size_t>(head)] = a;
          queue.push_back(head);
        }
      }
      for (int v = 0; v < n; ++v) {
        const int target = rankVertex[static_cast<size_t>(v)];
        if (v == u || !path[static_cast<size_t>(v)].empty() || !seen[static_cast<size_t>(target)])
          continue;
        if (rails && host[static_cast<size_t>(u)] != host[static_cast<size_t>(v)] &&
            local[static_cast<size_t>(u)] != local[static_cast<size_t>(v)])
          continue;
        std::vector<int> arcs;
        for (int x = target; x != source; x = topology.arcs[static_cast<size_t>(arcs.back())].from)
          arcs.push_back(via[static_cast<size_t>(x)]);
        std::reverse(arcs.begin(), arcs.end());
        path[static_cast<size_t>(v)] = std::move(arcs);
      }
    }
    for (int v = 0; v < n; ++v) {
      if (path[static_cast<size_t>(v)].empty()) continue;
      if (path[static_cast<size_t>(v)].size() > 1) graph.direct = false;
      graph.linkIndex[static_cast<size_t>(u) * static_cast<size_t>(n) + static_cast<size_t>(v)] =
          static_cast<int>(graph.links.size());
      graph.links.push_back(Link{u, v, std::move(path[static_cast<size_t>(v)])});
    }
  }
  return graph;
}

std::vector<std::pair<int, int>> arcLoad(const RankGraph& graph, const LinkTree& tree) {
  std::vector<std::pair<int, int>> load;
  for (int link : tree) {
    if (link < 0) continue;
    for (int arc : graph.links[static_cast<size_t>(link)].arcs) load.emplace_back(arc, 1);
  }
  std::sort(load.begin(), load.end());
  std::vector<std::pair<int, int>> merged;
  for (const auto& [arc, count] : load) {
    if (!merged.empty() && merged.back().first == arc) {
      merged.back().second += count;
    } else {
      merged.emplace_back(arc, count);
    }
  }
  return merged;
}

Tree toTree(const RankGraph& graph, int root, const LinkTree& tree) {
  Tree result;
  result.root = root;
  result.parent.assign(static_cast<size_t>(graph.ranks), -1);
  for (int v = 0; v < graph.ranks; ++v) {
    const int link = tree[static_cast<size_t>(v)];
    if (link >= 0)
      result.parent[static_cast<size_t>(v)] = graph.links[static_cast<size_t>(link)].from;
  }
  return result;
}

namespace {

struct WeightedArc {
  int from;
  int to;
  double weight;
};

// Chu–Liu/Edmonds by contraction; returns per vertex the index of its chosen in-arc.
std::optional<std::vector<int>> chuLiu(int n, int root, const std::vector<WeightedArc>& arcs) {
  std::vector<int> in(static_cast<size_t>(n), -1);
  for (size_t i = 0; i < arcs.size(); ++i) {
    const WeightedArc& arc = arcs[i];
    if (arc.from == arc.to || arc.to == root) continue;
    int& best = in[static_cast<size_t>(arc.to)];
    if (best < 0 || arc.weight < arcs[static_cast<size_t>(best)].weight) best = static_cast<int>(i);
  }
  for (int v = 0; v < n; ++v) {
    if (v != root && in[static_cast<size_t>(v)] < 0) return std::nullopt;
  }
  // Cycles of the chosen in-arcs.
  std::vector<int> comp(static_cast<size_t>(n), -1);
  std::vector<int> mark(static_cast<size_t>(n), -1);
  std::vector<char> onCycle(static_cast<size_t>(n), 0);
  int components = 0;
  for (int start = 0; start < n; ++start) {
    int v = start;
    while (v != root && mark[static_cast<size_t>(v)] < 0 && comp[static_cast<size_t>(v)] < 0) {
      mark[static_cast<size_t>(v)] = start;
      v = arcs[static_cast<size_t>(in[static_cast<size_t>(v)])].from;
    }
    if (v != root && mark[static_cast<size_t>(v)] == start && comp[static_cast<size_t>(v)] < 0) {
      for (int x = v;;) {  // a new cycle through v
        comp[static_cast<size_t>(x)] = components;
        onCycle[static_cast<size_t>(x)] = 1;
        x = arcs[static_cast<size_t>(in[static_cast<size_t>(x)])].from;
        if (x == v) break;
      }
      ++components;
    }
  }
  if (components == 0) return in;
  for (int v = 0; v < n; ++v) {
    if (comp[static_cast<size_t>(v)] < 0) comp[static_cast<size_t>(v)] = components++;
  }
  std::vector<WeightedArc> contracted;
  std::vector<int> original;
  for (size_t i = 0; i < arcs.size(); ++i) {
    const WeightedArc& arc = arcs[i];
    const int cu = comp[static_cast<size_t>(arc.from)];
    const int cv = comp[static_cast<size_t>(arc.to)];
    if (cu == cv) continue;
    double weight = arc.weight;
    if (onCycle[static_cast<size_t>(arc.to)]) {
      weight -= arcs[static_cast<size_t>(in[static_cast<size_t>(arc.to)])].weight;
    }
    contracted.push_back({cu, cv, weight});
    original.push_back(static_cast<int>(i));
  }
  std::optional<std::vector<int>> sub =
      chuLiu(components, comp[static_cast<size_t>(root)], contracted);
  if (!sub) return std::nullopt;
  std::vector<int> result = in;
  for (int c = 0; c < components; ++c) {
    const int chosen = (*sub)[static_cast<size_t>(c)];
    if (chosen < 0) continue;
    const int arc = original[static_cast<size_t>(chosen)];
    result[static_cast<size_t>(arcs[static_cast<size_t>(arc)].to)] = arc;
  }
  return result;
}

int findRoot(std::vector<int>& parent, int x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

}  // namespace

std::optional<LinkTree> minArborescence(const RankGraph& graph, int root,
                                        const std::vector<double>& weight) {
  std::vector<WeightedArc> arcs;
  arcs.reserve(graph.links.size());
  for (size_t i = 0; i < graph.links.size(); ++i) {
    arcs.push_back({graph.links[i].from, graph.links[i].to, weight[i]});
  }
  std::optional<std::vector<int>> in = chuLiu(graph.ranks, root, arcs);
  if (!in) return std::nullopt;
  (*in)[static_cast<size_t>(root)] = -1;
  return in;  // arc indices are link indices
}

std::vector<Edge> undirectedEdges(const RankGraph& graph) {
  std::vector<Edge> edges;
  for (int a = 0; a < graph.ranks; ++a) {
    for (int b = a + 1; b < graph.ranks; ++b) {
      const int forward = graph.link(a, b);
      const int backward = graph.link(b, a);
      if (forward >= 0 && backward >= 0) edges.push_back(Edge{a, b, forward, backward});
    }
  }
  return edges;
}

std::optional<std::vector<int>> minSpanningTree(int ranks, const std::vector<Edge>& edges,
                                                const std::vector<double>& weight) {
  std::vector<int> order(edges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return weight[static_cast<size_t>(x)] < weight[static_cast<size_t>(y)];
  });
  std::vector<int> parent(static_cast<size_t>(ranks));
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> chosen;
  for (int e : order) {
    const int ra = findRoot(parent, edges[static_cast<size_t>(e)].a);
    const int rb = findRoot(parent, edges[static_cast<size_t>(e)].b);
    if (ra == rb) continue;
    parent[static_cast<size_t>(std::max(ra, rb))] = std::min(ra, rb);
    chosen.push_back(e);
    if (static_cast<int>(chosen.size()) == ranks - 1) break;
  }
  if (static_cast<int>(chosen.size()) != ranks - 1) return std::nullopt;
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

LinkTree orientTree(const RankGraph& graph, int root, const std::vector<Edge>& edges,
                    const std::vector<int>& treeEdges) {
  std::vector<std::vector<int>> adjacent(static_cast<size_t>(graph.ranks));
  for (int e : treeEdges) {
    adjacent[static_cast<size_t>(edges[static_cast<size_t>(e)].a)].push_back(e);
    adjacent[static_cast<size_t>(edges[static_cast<size_t>(e)].b)].push_back(e);
  }
  LinkTree tree(static_cast<size_t>(graph.ranks), -1);
  std::vector<char> seen(static_cast<size_t>(graph.ranks), 0);
  std::vector<int> queue{root};
  seen[static_cast<size_t>(root)] = 1;
  for (size_t i = 0; i < queue.size(); ++i) {
    const int u = queue[i];
    for (int e : adjacent[static_cast<size_t>(u)]) {
      const Edge& edge = edges[static_cast<size_t>(e)];
      const int v = edge.a == u ? edge.b : edge.a;
      if (seen[static_cast<size_t>(v)]) continue;
      seen[static_cast<size_t>(v)] = 1;
      tree[static_cast<size_t>(v)] = edge.a == u ? edge.forward : edge.backward;
      queue.push_back(v);
    }
  }
  return tree;
}

}  // namespace grove::algo::packing_detail
