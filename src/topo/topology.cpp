// The topology graph's own rules: lookups, exactness, routing and structural validation.
//
// Everything here is a pure function of the Topology's data, so every rank that holds the same
// topology gets the same answers: lookups scan arcs in index order and routing breaks ties by
// arc index, never by hash order or by who is asking.
#include "topo/topology.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "grove/error.hpp"

namespace grove::topo {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

std::string describeVertex(const Topology& t, int v) {
  if (v < 0 || v >= static_cast<int>(t.vertices.size())) return fmt::format("vertex {}", v);
  const Vertex& vertex = t.vertices[v];
  if (vertex.kind == VertexKind::kRank) {
    return fmt::format("vertex {} (\"{}\", rank {})", v, vertex.name, vertex.rank);
  }
  return fmt::format("vertex {} (\"{}\", switch)", v, vertex.name);
}

}  // namespace

const char* toString(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kShm:
      return "shm";
    case LinkKind::kNet:
      return "net";
    case LinkKind::kOther:
      return "other";
  }
  return "other";
}

std::optional<LinkKind> parseLinkKind(std::string_view name) {
  if (name == "nvlink") return LinkKind::kNvlink;
  if (name == "pcie") return LinkKind::kPcie;
  if (name == "shm") return LinkKind::kShm;
  if (name == "net") return LinkKind::kNet;
  if (name == "other") return LinkKind::kOther;
  return std::nullopt;
}

int Topology::rankCount() const {
  int count = 0;
  for (const Vertex& v : vertices) count += v.kind == VertexKind::kRank ? 1 : 0;
  return count;
}

int Topology::vertexOfRank(int rank) const {
  for (size_t i = 0; i < vertices.size(); ++i) {
    if (vertices[i].kind == VertexKind::kRank && vertices[i].rank == rank) {
      return static_cast<int>(i);
    }
  }
  invalid(fmt::format("topology \"{}\": no vertex for rank {} (expected a rank in [0, {}))", name,
                      rank, rankCount()));
}

int Topology::arcBetween(int fromVertex, int toVertex) const {
  for (size_t i = 0; i < arcs.size(); ++i) {
    if (arcs[i].from == fromVertex && arcs[i].to == toVertex) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Topology::outArcs(int vertex) const {
  std::vector<int> result;
  for (size_t i = 0; i < arcs.size(); ++i) {
    if (arcs[i].from == vertex) result.push_back(static_cast<int>(i));
  }
  return result;
}

std::vector<int> Topology::inArcs(int vertex) const {
  std::vector<int> result;
  for (size_t i = 0; i < arcs.size(); ++i) {
    if (arcs[i].to == vertex) result.push_back(static_cast<int>(i));
  }
  return result;
}

bool Topology::integral() const {
  if (!(unitGBps > 0) || !std::isfinite(unitGBps)) return false;
  for (const Arc& arc : arcs) {
    double ratio = arc.capacityGBps / unitGBps;
    double rounded = std::round(ratio);
    if (rounded < 1 || std::fabs(ratio - rounded) > 1e-9 * std::max(1.0, std::fabs(ratio))) {
      return false;
    }
  }
  return true;
}

int64_t Topology::units(int arc) const {
  if (arc < 0 || arc >= static_cast<int>(arcs.size())) {
    invalid(fmt::format("topology \"{}\": arc {} out of range (expected [0, {}))", name, arc,
                        arcs.size()));
  }
  return static_cast<int64_t>(std::llround(arcs[arc].capacityGBps / unitGBps));
}

std::vector<int> Topology::route(int fromRank, int toRank) const {
  int source = -1;
  int target = -1;
  for (size_t v = 0; v < vertices.size(); ++v) {
    if (vertices[v].kind != VertexKind::kRank) continue;
    if (vertices[v].rank == fromRank) source = static_cast<int>(v);
    if (vertices[v].rank == toRank) target = static_cast<int>(v);
  }
  if (source < 0) vertexOfRank(fromRank);  // throws naming the rank
  if (target < 0) vertexOfRank(toRank);
  if (source == target) return {};

  // One pass over the arcs finds a direct link and counts the arcs leaving each vertex.
  const size_t vertexCount = vertices.size();
  std::vector<int> start(vertexCount + 1, 0);
  for (size_t a = 0; a < arcs.size(); ++a) {
    if (arcs[a].from == source && arcs[a].to == target) return {static_cast<int>(a)};
    ++start[arcs[a].from + 1];
  }
  for (size_t v = 0; v < vertexCount; ++v) start[v + 1] += start[v];
  std::vector<int> out(arcs.size());
  std::vector<int> fill(start.begin(), start.end() - 1);
  for (size_t a = 0; a < arcs.size(); ++a) out[fill[arcs[a].from]++] = static_cast<int>(a);

  // Breadth-first search in which only switch vertices may be passed through; arcs are
  // examined in index order, so the first shortest path found is the same everywhere.
  std::vector<int> via(vertexCount, -1);  // arc that reached each vertex
  std::vector<int> queue{source};
  via[source] = -2;
  for (size_t head = 0; head < queue.size(); ++head) {
    int v = queue[head];
    for (int i = start[v]; i < start[v + 1]; ++i) {
      int a = out[i];
      int w = arcs[a].to;
      if (via[w] != -1) continue;
      via[w] = a;
      if (w == target) {
        std::vector<int> path;
        for (int x = target; x != source; x = arcs[via[x]].from) path.push_back(via[x]);
        return {path.rbegin(), path.rend()};
      }
      if (vertices[w].kind == VertexKind::kSwitch) queue.push_back(w);
    }
  }
  invalid(fmt::format(
      "topology \"{}\": no route from rank {} to rank {} (expected a direct link or a path "
      "through switch vertices)",
      name, fromRank, toRank));
}

void Topology::validate() const {
  const std::string where = fmt::format("topology \"{}\"", name);
  if (!(unitGBps > 0) || !std::isfinite(unitGBps)) {
    invalid(
        fmt::format("{}: unit_gbps is {} (expected a positive finite number)", where, unitGBps));
  }
  int n = rankCount();
  std::vector<int> vertexOf(n, -1);
  std::map<std::string, int> names;
  for (size_t i = 0; i < vertices.size(); ++i) {
    const Vertex& v = vertices[i];
    if (v.name.empty()) invalid(fmt::format("{}: vertex {} has an empty name", where, i));
    auto [it, inserted] = names.emplace(v.name, static_cast<int>(i));
    if (!inserted) {
      invalid(fmt::format("{}: vertices {} and {} are both named \"{}\" (expected unique names)",
                          where, it->second, i, v.name));
    }
    if (v.kind == VertexKind::kRank) {
      if (v.rank < 0 || v.rank >= n) {
        invalid(
            fmt::format("{}: vertex {} (\"{}\") has rank {} (expected ranks 0..{} for {} "
                        "rank vertices)",
                        where, i, v.name, v.rank, n - 1, n));
      }
      if (vertexOf[v.rank] >= 0) {
        invalid(
            fmt::format("{}: rank {} appears twice, vertices {} and {} (expected each rank "
                        "exactly once)",
                        where, v.rank, vertexOf[v.rank], i));
      }
      vertexOf[v.rank] = static_cast<int>(i);
    } else if (v.rank != -1) {
      invalid(fmt::format("{}: switch vertex {} (\"{}\") has rank {} (expected -1)", where, i,
                          v.name, v.rank));
    }
  }
  const int vertexCount = static_cast<int>(vertices.size());
  std::set<std::pair<int, int>> pairs;
  for (size_t i = 0; i < arcs.size(); ++i) {
    const Arc& a = arcs[i];
    if (a.from < 0 || a.from >= vertexCount || a.to < 0 || a.to >= vertexCount) {
      invalid(
          fmt::format("{}: arc {} goes from vertex {} to vertex {} (expected vertices in "
                      "[0, {}))",
                      where, i, a.from, a.to, vertexCount));
    }
    if (a.from == a.to) {
      invalid(fmt::format("{}: arc {} is a loop at {} (expected distinct vertices)", where, i,
                          describeVertex(*this, a.from)));
    }
    if (!(a.capacityGBps > 0) || !std::isfinite(a.capacityGBps)) {
      invalid(
          fmt::format("{}: arc {} from {} to {} has capacity {} GB/s (expected a positive "
                      "finite number)",
                      where, i, vertices[a.from].name, vertices[a.to].name, a.capacityGBps));
    }
    if (!(a.latencyUs >= 0) || !std::isfinite(a.latencyUs)) {
      invalid(
          fmt::format("{}: arc {} from {} to {} has latency {} us (expected a finite number "
                      ">= 0)",
                      where, i, vertices[a.from].name, vertices[a.to].name, a.latencyUs));
    }
    if (!pairs.emplace(a.from, a.to).second) {
      invalid(
          fmt::format("{}: arc {} duplicates the arc from \"{}\" to \"{}\" (expected at most "
                      "one arc per ordered pair; parallel links add up into one arc)",
                      where, i, vertices[a.from].name, vertices[a.to].name));
    }
  }
}

}  // namespace grove::topo
