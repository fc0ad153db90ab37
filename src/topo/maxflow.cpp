// Max flow on a topology and the broadcast rate λ(r) of every root.
//
// λ(r) = min over ranks v ≠ r of maxflow(r → v) (switch vertices forward but are never
// sinks). Done naively that is n(n−1) flows — 65,280 for a 256-rank cluster. Connectivity
// obeys a triangle inequality, λ(r,v) ≥ min(λ(r,r0), λ(r0,v)), so after the 2(n−1) flows to
// and from one pivot rank r0, a pair (r,v) whose lower bound already reaches the best cut
// found for r cannot lower λ(r) and is skipped; the remaining flows stop as soon as they
// reach that best cut. The result is exact, and on symmetric fabrics nearly every pair is
// skipped.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "grove/error.hpp"
#include "topo/bounds.hpp"
#include "topo/bounds_detail.hpp"
#include "topo/dinic.hpp"

namespace grove::topo {
namespace detail {
namespace {

template <class Cap>
Network<Cap> skeleton(const Topology& topology) {
  Network<Cap> network;
  network.vertices = static_cast<int>(topology.vertices.size());
  network.isRank.assign(topology.vertices.size(), 0);
  network.rankVertex.assign(static_cast<size_t>(topology.rankCount()), -1);
  for (size_t v = 0; v < topology.vertices.size(); ++v) {
    const Vertex& vertex = topology.vertices[v];
    if (vertex.kind != VertexKind::kRank) continue;
    network.isRank[v] = 1;
    network.rankVertex[static_cast<size_t>(vertex.rank)] = static_cast<int>(v);
  }
  for (const Arc& arc : topology.arcs) {
    network.from.push_back(arc.from);
    network.to.push_back(arc.to);
  }
  return network;
}

template <class Cap>
Dinic<Cap> flowNetwork(const Network<Cap>& network) {
  Dinic<Cap> dinic(network.vertices, network.epsilon);
  for (size_t a = 0; a < network.capacity.size(); ++a) {
    dinic.addArc(network.from[a], network.to[a], network.capacity[a]);
  }
  return dinic;
}

}  // namespace

Network<int64_t> integralNetwork(const Topology& topology) {
  if (!topology.integral()) {
    throw Error(ErrorCode::kInvalidArgument,
                "topology '" + topology.name +
                    "': capacities are not whole multiples of unitGBps, expected an integral "
                    "topology");
  }
  Network<int64_t> network = skeleton<int64_t>(topology);
  for (size_t a = 0; a < topology.arcs.size(); ++a) {
    network.capacity.push_back(topology.units(static_cast<int>(a)));
  }
  return network;
}

Network<double> realNetwork(const Topology& topology) {
  Network<double> network = skeleton<double>(topology);
  double largest = 0;
  for (const Arc& arc : topology.arcs) {
    network.capacity.push_back(arc.capacityGBps / topology.unitGBps);
    largest = std::max(largest, network.capacity.back());
  }
  network.epsilon = 1e-12 * std::max(1.0, largest);
  return network;
}

template <class Cap>
Cap maxFlowOf(const Network<Cap>& network, int source, int sink) {
  Dinic<Cap> dinic = flowNetwork(network);
  return dinic.augment(source, sink);
}

template <class Cap>
std::vector<Cap> rootedConnectivities(const Network<Cap>& network) {
  const int n = network.ranks();
  std::vector<Cap> lambda(static_cast<size_t>(n), Cap{});
  if (n < 2) return lambda;
  const Dinic<Cap> pristine = flowNetwork(network);
  auto flow = [&](int fromRank, int toRank, Cap limit) {
    Dinic<Cap> dinic = pristine;
    return dinic.augment(network.rankVertex[static_cast<size_t>(fromRank)],
                         network.rankVertex[static_cast<size_t>(toRank)], limit);
  };
  constexpr Cap kNoLimit = std::numeric_limits<Cap>::max();
  // Pivot rank 0: fromPivot[v] = λ(0,v), toPivot[v] = λ(v,0).
  std::vector<Cap> fromPivot(static_cast<size_t>(n), Cap{});
  std::vector<Cap> toPivot(static_cast<size_t>(n), Cap{});
  for (int v = 1; v < n; ++v) {
    fromPivot[static_cast<size_t>(v)] = flow(0, v, kNoLimit);
    toPivot[static_cast<size_t>(v)] = flow(v, 0, kNoLimit);
  }
  lambda[0] = *std::min_element(fromPivot.begin() + 1, fromPivot.end());
  for (int r = 1; r < n; ++r) {
    Cap best = toPivot[static_cast<size_t>(r)];
    for (int v = 1; v < n; ++v) {
      if (v == r) continue;
      const Cap lower =
          std::min(toPivot[static_cast<size_t>(r)], fromPivot[static_cast<size_t>(v)]);
      if (lower >= best) continue;
      best = std::min(best, flow(r, v, best));
    }
    lambda[static_cast<size_t>(r)] = best;
  }
  return lambda;
}

template int64_t maxFlowOf(const Network<int64_t>&, int, int);
template double maxFlowOf(const Network<double>&, int, int);
template std::vector<int64_t> rootedConnectivities(const Network<int64_t>&);
template std::vector<double> rootedConnectivities(const Network<double>&);

}  // namespace detail

namespace {

void checkVertex(const Topology& topology, int vertex, const char* what) {
  if (vertex < 0 || vertex >= static_cast<int>(topology.vertices.size())) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("maxFlow: ") + what + " " + std::to_string(vertex) +
                    " is not a vertex of topology '" + topology.name + "' (expected 0.." +
                    std::to_string(static_cast<int>(topology.vertices.size()) - 1) + ")");
  }
}

}  // namespace

double maxFlow(const Topology& topology, int sourceVertex, int sinkVertex) {
  checkVertex(topology, sourceVertex, "sourceVertex");
  checkVertex(topology, sinkVertex, "sinkVertex");
  return detail::maxFlowOf(detail::realNetwork(topology), sourceVertex, sinkVertex);
}

int64_t maxFlowUnits(const Topology& topology, int sourceVertex, int sinkVertex) {
  checkVertex(topology, sourceVertex, "sourceVertex");
  checkVertex(topology, sinkVertex, "sinkVertex");
  return detail::maxFlowOf(detail::integralNetwork(topology), sourceVertex, sinkVertex);
}

}  // namespace grove::topo
