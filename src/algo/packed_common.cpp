// Helpers shared by the topology-aware generators: does the request carry a usable topology,
// a content key for caches (packings are expensive and build() runs once per rank), and the
// latency and bottleneck of a routed message for the cost estimates.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "algo/builder.hpp"
#include "algo/packed_trees.hpp"
#include "grove/error.hpp"

namespace grove::algo {
namespace {

template <typename T>
void appendRaw(std::string& key, const T& value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  key.append(bytes, sizeof(T));
}

}  // namespace

Status topologyMatches(const plan::PlanRequest& request) {
  if (request.topology == nullptr) return build::declines("needs a topology (GROVE_TOPO_FILE)");
  const int ranks = request.topology->rankCount();
  if (ranks != request.nranks) {
    return build::declines(fmt::format("the topology \"{}\" has {} ranks, the communicator has {}",
                                       request.topology->name, ranks, request.nranks));
  }
  return {};
}

std::string topologyKey(const topo::Topology& topology) {
  std::string key;
  key.reserve(16 + topology.vertices.size() * 16 + topology.arcs.size() * 32);
  appendRaw(key, topology.unitGBps);
  appendRaw(key, topology.vertices.size());
  for (const topo::Vertex& v : topology.vertices) {
    appendRaw(key, v.kind);
    appendRaw(key, v.rank);
    appendRaw(key, v.host.size());
    key += v.host;
  }
  appendRaw(key, topology.arcs.size());
  for (const topo::Arc& arc : topology.arcs) {
    appendRaw(key, arc.from);
    appendRaw(key, arc.to);
    appendRaw(key, arc.capacityGBps);
    appendRaw(key, arc.latencyUs);
  }
  return key;
}

double routeLatencyUs(const topo::Topology& topology, int from, int to) {
  try {
    double sum = 0;
    for (int arc : topology.route(from, to)) sum += topology.arcs[arc].latencyUs;
    return sum;
  } catch (const Error&) {
    return 0;
  }
}

double routeCapacityGBps(const topo::Topology& topology, int from, int to) {
  try {
    double least = std::numeric_limits<double>::infinity();
    for (int arc : topology.route(from, to)) {
      least = std::min(least, topology.arcs[arc].capacityGBps);
    }
    return std::isfinite(least) ? least : 0;
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace grove::algo
