// Small topologies whose times a test can work out by hand (simulator tests), and an empty
// plan to fill with hand-written steps.
#pragma once

#include <string>

#include "algo/builder.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace grove::testing {

/// n rank vertices and no arcs.
inline topo::Topology ranksOnly(int n) {
  topo::Topology t;
  t.name = "test";
  for (int r = 0; r < n; ++r) {
    t.vertices.push_back({topo::VertexKind::kRank, "r" + std::to_string(r), r, "", -1});
  }
  return t;
}

/// Arcs a -> b and b -> a of `gbps` GB/s and `latencyUs`.
inline void link(topo::Topology& t, int a, int b, double gbps, double latencyUs) {
  t.arcs.push_back({a, b, gbps, latencyUs, topo::LinkKind::kNvlink, ""});
  t.arcs.push_back({b, a, gbps, latencyUs, topo::LinkKind::kNvlink, ""});
}

/// n ranks, every pair linked directly.
inline topo::Topology fullMesh(int n, double gbps, double latencyUs) {
  topo::Topology t = ranksOnly(n);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) link(t, a, b, gbps, latencyUs);
  }
  return t;
}

/// n ranks, each linked only to one switch vertex (index n).
inline topo::Topology star(int n, double gbps, double latencyUs) {
  topo::Topology t = ranksOnly(n);
  t.vertices.push_back({topo::VertexKind::kSwitch, "sw0", -1, "", -1});
  for (int r = 0; r < n; ++r) link(t, r, n, gbps, latencyUs);
  return t;
}

/// Rank `rank` of `n`'s plan of one block per buffer, algorithm "hand", no channels.
inline plan::Plan emptyPlan(plan::Collective collective, int rank, int n) {
  plan::PlanRequest request;
  request.collective = collective;
  request.rank = rank;
  request.nranks = n;
  return algo::build::makePlan(request, "hand", 1, 1, 1);
}

}  // namespace grove::testing
