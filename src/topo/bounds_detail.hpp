// The pieces computeBounds() is made of, exposed for the unit tests and for the packer.
//
// Each bound is computed by a template over the capacity type: int64_t link units when the
// topology is integral (exact results, compared with Rational), double link units otherwise.
// Two algorithms exist for σ and for the RS+AG cut — an exhaustive one for small graphs and
// a max-flow based one for any size — so the tests can check one against the other.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "topo/topology.hpp"

namespace grove::topo::detail {

/// A topology reduced to what flows need: vertices 0..vertices-1 as in the topology, arcs
/// with capacities in link units.
template <class Cap>
struct Network {
  int vertices = 0;
  std::vector<int> rankVertex;  ///< Vertex of each rank.
  std::vector<char> isRank;     ///< Per vertex.
  std::vector<int> from;        ///< Per arc.
  std::vector<int> to;          ///< Per arc.
  std::vector<Cap> capacity;    ///< Per arc, link units.
  Cap epsilon{};                ///< Flow tolerance (0 for integers).

  int ranks() const { return static_cast<int>(rankVertex.size()); }
  bool hasSwitches() const { return ranks() != vertices; }
};

/// Integral capacities (requires topology.integral()).
Network<int64_t> integralNetwork(const Topology& topology);
/// Real capacities in link units.
Network<double> realNetwork(const Topology& topology);

/// Max flow between two vertices.
template <class Cap>
Cap maxFlowOf(const Network<Cap>& network, int source, int sink);

/// λ(r) for every rank r: min over other ranks v of maxflow(r → v); switches are Steiner.
template <class Cap>
std::vector<Cap> rootedConnectivities(const Network<Cap>& network);

/// The most crowded cut of RS+AG: a vertex set A holding `ranksInside` ranks (≥ 1, < all),
/// maximizing ranksInside / capacityOut. capacityOut == 0 means the graph is not strongly
/// connected (the ratio is infinite and RS+AG is 0).
template <class Cap>
struct CrowdedSet {
  int64_t ranksInside = 0;
  Cap capacityOut{};
  std::vector<char> inside;  ///< Per vertex.
};
/// Tries every vertex subset (2^vertices; for ≤ 20 vertices).
template <class Cap>
CrowdedSet<Cap> crowdedSetByEnumeration(const Network<Cap>& network);
/// Dinkelbach iterations over min cuts (any size).
template <class Cap>
CrowdedSet<Cap> crowdedSetByFlows(const Network<Cap>& network);

/// The undirected strength of a rank-only graph, edge {u,v} weighing min(c(u→v), c(v→u)):
/// σ = cut / (parts − 1) of the minimizing partition. Requires ≥ 2 ranks, no switches.
template <class Cap>
struct Strength {
  Cap cut{};
  int64_t parts = 0;
  std::vector<int> partOfRank;  ///< The minimizing partition.
};
/// Enumerates every set partition (Bell(n); for ≤ 11 ranks).
template <class Cap>
Strength<Cap> strengthByPartitions(const Network<Cap>& network);
/// Newton iterations over Dilworth truncations, n min cuts each (Cunningham's attack
/// problem, solved as in Barahona 1992); any size.
template <class Cap>
Strength<Cap> strengthByFlows(const Network<Cap>& network);

/// The most arc-disjoint directed Hamiltonian cycles over rank-to-rank arcs (an arc of u
/// units can carry u cycles). std::nullopt when the search visits more than `nodeBudget`
/// nodes in all (about a microsecond each) before it can answer.
std::optional<int> ringCount(const Network<int64_t>& network, int64_t nodeBudget);

}  // namespace grove::topo::detail
