// Named topologies for planning and simulation, and subsets of them.
//
// Most users never write a topology file: they plan for a machine they know by name (a DGX-1V,
// an 8 × H100 box, "32 hosts of 8 ranks") or for the GPUs a scheduler gave them out of one
// ("dgx1v:0,1,4"). The presets encode those machines once, from the reference facts in
// docs/topology.md:
//
// * dgx1v   8 ranks, NVLink 2 only: the hybrid cube-mesh with 1 or 2 links per pair (the
//           nvidia-smi matrix below), unit 25 GB/s per link per direction, 1 µs.
// * dgx1p   the same cube-mesh with 1 NVLink 1 link per connected pair, unit 20 GB/s.
// * dgx2    16 ranks + switch vertex "nvswitch", 150 GB/s per rank per direction.
// * h100x8  8 ranks + switch vertex "nvswitch", 450 GB/s per rank per direction.
// * cluster:HxK[:g1,...,gH]  H hosts ("host<i>") of K ranks (rank = host·K + local index).
//           Inside a host a full shared-memory mesh (20 GB/s, 0.3 µs per pair and direction).
//           When H > 1 the hosts meet at one network switch vertex "net": a host of K > 1 ranks
//           has a NIC switch vertex "nic<i>" that its ranks reach over PCIe (25 GB/s, 0.5 µs)
//           and that links to "net" at g_i Gbit/s (default 100; one value applies to every
//           host), 2.5 µs per hop (host to host ≈ 6 µs); a host of one rank links to "net"
//           directly. Modelling the NIC as its own vertex makes the K ranks of a host share
//           its bandwidth, as they do. The unit is the greatest common divisor of the
//           capacities (so the preset is integral), e.g. 2.5 GB/s for 100 Gbit/s NICs.
//           twoTier() builds the same for any placement of ranks on hosts (a communicator
//           without GROVE_TOPO_FILE whose ranks span hosts, core/comm_topology.cpp).
// * mesh:N  a full mesh of N ranks, unit links (1 GB/s, 1 µs, kind "other").
//
// "NAME:i,j,k" restricts a fixed preset to those ranks, renumbered in the order given.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "grove/error.hpp"
#include "topo/topology.hpp"

namespace grove::topo {

namespace {

// Number of NVLinks between GPUs i and j of a DGX-1 (nvidia-smi topo -m).
constexpr int kDgx1Links[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

constexpr double kShmGBps = 20.0;
constexpr double kShmLatencyUs = 0.3;
constexpr double kPcieGBps = 25.0;
constexpr double kPcieLatencyUs = 0.5;
constexpr double kNetHopLatencyUs = 2.5;
// GPU presets: a local copy or reduction in device memory, GB/s of output — about a third
// of the memory bandwidth (c = a + b moves three bytes per byte of output): HBM2 of a P100
// 732 GB/s, of a V100 900 GB/s, HBM3 of an H100 3350 GB/s. (CPU topologies leave it 0.)
constexpr double kP100LocalGBps = 240.0;
constexpr double kV100LocalGBps = 300.0;
constexpr double kH100LocalGBps = 1100.0;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

std::string presetHelp() {
  std::string text;
  for (const auto& [name, description] : presetList()) {
    text += fmt::format("\n  {:<26} {}", name, description);
  }
  return text;
}

void addRank(Topology& t, int rank, int numa = -1, std::string host = {}) {
  Vertex v;
  v.kind = VertexKind::kRank;
  v.name = fmt::format("r{}", rank);
  v.rank = rank;
  v.numa = numa;
  v.host = std::move(host);
  t.vertices.push_back(std::move(v));
}

int addSwitch(Topology& t, std::string name) {
  Vertex v;
  v.kind = VertexKind::kSwitch;
  v.name = std::move(name);
  t.vertices.push_back(std::move(v));
  return static_cast<int>(t.vertices.size()) - 1;
}

// Both directions of a link, forward arc first.
void addLink(Topology& t, int a, int b, double gbps, double latencyUs, LinkKind kind) {
  t.arcs.push_back(Arc{a, b, gbps, latencyUs, kind, {}});
  t.arcs.push_back(Arc{b, a, gbps, latencyUs, kind, {}});
}

Topology dgx1(bool volta) {
  Topology t;
  t.name = volta ? "dgx1v" : "dgx1p";
  t.unitGBps = volta ? 25.0 : 20.0;
  t.localGBps = volta ? kV100LocalGBps : kP100LocalGBps;
  for (int r = 0; r < 8; ++r) addRank(t, r, r < 4 ? 0 : 1);
  for (int i = 0; i < 8; ++i) {
    for (int j = i + 1; j < 8; ++j) {
      int links = kDgx1Links[i][j];
      if (links == 0) continue;
      addLink(t, i, j, t.unitGBps * (volta ? links : 1), 1.0, LinkKind::kNvlink);
    }
  }
  return t;
}

Topology switched(const char* name, int ranks, double gbps, double localGBps) {
  Topology t;
  t.name = name;
  t.unitGBps = gbps;
  t.localGBps = localGBps;
  for (int r = 0; r < ranks; ++r) addRank(t, r, r < ranks / 2 ? 0 : 1);
  int sw = addSwitch(t, "nvswitch");
  for (int r = 0; r < ranks; ++r) addLink(t, r, sw, gbps, 0.7, LinkKind::kNvlink);
  return t;
}

Topology mesh(int n) {
  Topology t;
  t.name = fmt::format("mesh:{}", n);
  t.unitGBps = 1.0;
  for (int r = 0; r < n; ++r) addRank(t, r);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) addLink(t, i, j, 1.0, 1.0, LinkKind::kOther);
  }
  return t;
}

// Parses a whole decimal integer in [lo, hi]; nullopt otherwise.
std::optional<int> parseInt(std::string_view text, int lo, int hi) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string_view> splitOn(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

Topology twoTier(std::string name, const std::vector<int>& hostOfRank,
                 const std::vector<double>& nicGbit, const std::vector<bool>& nicAssumed) {
  const int n = static_cast<int>(hostOfRank.size());
  const int h = static_cast<int>(nicGbit.size());
  std::vector<std::vector<int>> members(static_cast<size_t>(h));
  for (int r = 0; r < n; ++r) {
    const int host = hostOfRank[static_cast<size_t>(r)];
    if (host < 0 || host >= h) {
      invalid(
          fmt::format("two-tier topology \"{}\": rank {} is on host {} of {}", name, r, host, h));
    }
    members[static_cast<size_t>(host)].push_back(r);
  }
  Topology t;
  t.name = std::move(name);
  for (int r = 0; r < n; ++r) addRank(t, r, -1, fmt::format("host{}", hostOfRank[r]));
  for (const std::vector<int>& ranks : members) {
    for (size_t a = 0; a < ranks.size(); ++a) {
      for (size_t b = a + 1; b < ranks.size(); ++b) {
        addLink(t, ranks[a], ranks[b], kShmGBps, kShmLatencyUs, LinkKind::kShm);
      }
    }
  }
  if (h > 1) {
    int net = addSwitch(t, "net");
    for (int i = 0; i < h; ++i) {
      const std::vector<int>& ranks = members[static_cast<size_t>(i)];
      double nicGBps = nicGbit[static_cast<size_t>(i)] / 8.0;
      if (ranks.empty()) continue;
      int nicEnd = ranks[0];  // a host of one rank links to "net" directly
      if (ranks.size() > 1) {
        nicEnd = addSwitch(t, fmt::format("nic{}", i));
        for (int r : ranks) addLink(t, r, nicEnd, kPcieGBps, kPcieLatencyUs, LinkKind::kPcie);
      }
      addLink(t, nicEnd, net, nicGBps, kNetHopLatencyUs, LinkKind::kNet);
      t.arcs[t.arcs.size() - 1].lineRate = true;  // a Gbit/s figure, both directions
      t.arcs[t.arcs.size() - 2].lineRate = true;
      if (static_cast<size_t>(i) < nicAssumed.size() && nicAssumed[static_cast<size_t>(i)]) {
        t.arcs[t.arcs.size() - 1].rateAssumed = true;  // both directions of that link
        t.arcs[t.arcs.size() - 2].rateAssumed = true;
      }
    }
  }
  // The unit: the greatest common divisor of all capacities in Mbit/s, when they are whole.
  int64_t unitMbit = 0;
  bool whole = true;
  for (const Arc& arc : t.arcs) {
    double mbit = arc.capacityGBps * 8000.0;
    if (std::fabs(mbit - std::round(mbit)) > 1e-6) whole = false;
    unitMbit = std::gcd(unitMbit, static_cast<int64_t>(std::llround(mbit)));
  }
  t.unitGBps = whole && unitMbit > 0 ? static_cast<double>(unitMbit) / 8000.0 : kShmGBps;
  return t;
}

namespace {

Topology cluster(std::string_view spec, std::string_view args) {
  auto fail = [&](const std::string& what) -> void {
    invalid(
        fmt::format("topology spec \"{}\": {} (expected cluster:HxK[:g1,...,gH]: H >= 1 "
                    "hosts of K >= 1 ranks, optional NIC speeds in Gbit/s, one per host or "
                    "one for all; e.g. cluster:4x8 or cluster:2x4:100,25)",
                    spec, what));
  };
  std::vector<std::string_view> fields = splitOn(args, ':');
  if (fields.size() > 2) fail("too many ':' fields");
  std::vector<std::string_view> shape = splitOn(fields[0], 'x');
  if (shape.size() != 2) fail(fmt::format("\"{}\" is not of the form HxK", fields[0]));
  std::optional<int> hosts = parseInt(shape[0], 1, 1 << 16);
  std::optional<int> perHost = parseInt(shape[1], 1, 1 << 16);
  if (!hosts) fail(fmt::format("host count \"{}\" is not a whole number >= 1", shape[0]));
  if (!perHost) fail(fmt::format("ranks per host \"{}\" is not a whole number >= 1", shape[1]));
  const int h = *hosts;
  const int k = *perHost;
  if (static_cast<int64_t>(h) * k > (1 << 20)) fail("more than 2^20 ranks");

  std::vector<double> nicGbit(h, kDefaultNicGbit);
  if (fields.size() == 2) {
    std::vector<std::string_view> speeds = splitOn(fields[1], ',');
    if (speeds.size() != 1 && static_cast<int>(speeds.size()) != h) {
      fail(fmt::format("{} NIC speeds for {} hosts", speeds.size(), h));
    }
    for (size_t i = 0; i < speeds.size(); ++i) {
      double value = 0;
      auto [end, ec] =
          std::from_chars(speeds[i].data(), speeds[i].data() + speeds[i].size(), value);
      if (speeds[i].empty() || ec != std::errc() || end != speeds[i].data() + speeds[i].size() ||
          !(value > 0) || !std::isfinite(value) || value > 1e6) {
        fail(fmt::format("NIC speed \"{}\" is not a positive number of Gbit/s", speeds[i]));
      }
      if (speeds.size() == 1) {
        std::fill(nicGbit.begin(), nicGbit.end(), value);
      } else {
        nicGbit[i] = value;
      }
    }
  }

  std::vector<int> hostOfRank(static_cast<size_t>(h) * k);
  for (size_t r = 0; r < hostOfRank.size(); ++r) hostOfRank[r] = static_cast<int>(r) / k;
  return twoTier(std::string(spec), hostOfRank, nicGbit);
}

std::vector<int> parseRankList(std::string_view spec, std::string_view list, int n) {
  std::vector<int> ranks;
  std::set<int> seen;
  for (std::string_view part : splitOn(list, ',')) {
    std::optional<int> r = parseInt(part, 0, n - 1);
    if (!r) {
      invalid(
          fmt::format("topology spec \"{}\": \"{}\" is not a rank (expected a list of "
                      "distinct ranks in [0, {}], e.g. dgx1v:0,1,4)",
                      spec, part, n - 1));
    }
    if (!seen.insert(*r).second) {
      invalid(fmt::format("topology spec \"{}\": rank {} listed twice (expected distinct ranks)",
                          spec, *r));
    }
    ranks.push_back(*r);
  }
  return ranks;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> presetList() {
  return {
      {"dgx1v", "8 x V100, NVLink 2 hybrid cube-mesh (1-2 links per pair), unit 25 GB/s"},
      {"dgx1p", "8 x P100, NVLink 1 cube-mesh (1 link per pair), unit 20 GB/s"},
      {"dgx2", "16 x V100 behind an NVSwitch vertex, 150 GB/s per rank"},
      {"h100x8", "8 x H100 behind an NVSwitch vertex, 450 GB/s per rank"},
      {"cluster:HxK[:g1,...]", "H hosts of K ranks: shm mesh inside, NICs of g Gbit/s (100)"},
      {"mesh:N", "full mesh of N ranks, unit links of 1 GB/s"},
      {"NAME:i,j,k", "the ranks i,j,k of a fixed preset, renumbered 0,1,2 (e.g. dgx1v:0,1,4)"},
      {"FILE.json", "a topology file (see docs/topology.md)"},
  };
}

Topology fromSpec(std::string_view spec) {
  size_t colon = spec.find(':');
  std::string_view name = spec.substr(0, colon);
  std::string_view args =
      colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  bool hasArgs = colon != std::string_view::npos;

  std::optional<Topology> base;
  if (name == "dgx1v") base = dgx1(true);
  if (name == "dgx1p") base = dgx1(false);
  if (name == "dgx2") base = switched("dgx2", 16, 150.0, kV100LocalGBps);
  if (name == "h100x8") base = switched("h100x8", 8, 450.0, kH100LocalGBps);
  if (base) {
    if (!hasArgs) return *base;
    std::vector<int> ranks = parseRankList(spec, args, base->rankCount());
    Topology t = subset(*base, ranks);
    t.name = std::string(spec);
    return t;
  }
  if (name == "cluster") {
    if (!hasArgs) invalid(fmt::format("topology spec \"{}\": expected cluster:HxK", spec));
    return cluster(spec, args);
  }
  if (name == "mesh") {
    std::optional<int> n = hasArgs ? parseInt(args, 1, 4096) : std::nullopt;
    if (!n) {
      invalid(
          fmt::format("topology spec \"{}\": expected mesh:N with N a whole number in "
                      "[1, 4096]",
                      spec));
    }
    return mesh(*n);
  }
  std::error_code ec;
  std::string path(spec);
  if (!spec.empty() && std::filesystem::is_regular_file(path, ec)) return loadFile(path);
  invalid(
      fmt::format("topology spec \"{}\" is neither a preset nor a readable file; the "
                  "presets are:{}",
                  spec, presetHelp()));
}

Topology subset(const Topology& topology, std::span<const int> ranks) {
  const int n = topology.rankCount();
  std::vector<int> newIndex(topology.vertices.size(), -1);
  std::vector<int> oldRankOfNew;
  for (size_t i = 0; i < ranks.size(); ++i) {
    int r = ranks[i];
    if (r < 0 || r >= n) {
      invalid(
          fmt::format("subset of topology \"{}\": rank {} (position {}) is out of range "
                      "(expected ranks in [0, {}))",
                      topology.name, r, i, n));
    }
    int v = topology.vertexOfRank(r);
    if (newIndex[v] >= 0) {
      invalid(
          fmt::format("subset of topology \"{}\": rank {} listed twice (expected distinct "
                      "ranks)",
                      topology.name, r));
    }
    newIndex[v] = static_cast<int>(i);
  }

  // Keep switch vertices, then prune those that connect fewer than two kept vertices until
  // none is left dangling: what remains lies on switch paths between kept ranks.
  const size_t vertexCount = topology.vertices.size();
  std::vector<bool> kept(vertexCount, false);
  for (size_t v = 0; v < vertexCount; ++v) {
    kept[v] = newIndex[v] >= 0 || topology.vertices[v].kind == VertexKind::kSwitch;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < vertexCount; ++v) {
      if (!kept[v] || topology.vertices[v].kind != VertexKind::kSwitch) continue;
      std::set<int> neighbours;
      for (const Arc& arc : topology.arcs) {
        if (arc.from == static_cast<int>(v) && kept[arc.to]) neighbours.insert(arc.to);
        if (arc.to == static_cast<int>(v) && kept[arc.from]) neighbours.insert(arc.from);
      }
      if (neighbours.size() < 2) {
        kept[v] = false;
        changed = true;
      }
    }
  }

  Topology result;
  result.name = topology.name + ":" + fmt::format("{}", fmt::join(ranks, ","));
  result.unitGBps = topology.unitGBps;
  result.localGBps = topology.localGBps;
  for (size_t i = 0; i < ranks.size(); ++i) {
    Vertex v = topology.vertices[topology.vertexOfRank(ranks[i])];
    if (v.name == fmt::format("r{}", v.rank)) v.name = fmt::format("r{}", i);
    v.rank = static_cast<int>(i);
    result.vertices.push_back(std::move(v));
  }
  for (size_t v = 0; v < vertexCount; ++v) {
    if (kept[v] && topology.vertices[v].kind == VertexKind::kSwitch) {
      newIndex[v] = static_cast<int>(result.vertices.size());
      result.vertices.push_back(topology.vertices[v]);
    }
  }
  for (const Arc& arc : topology.arcs) {
    if (!kept[arc.from] || !kept[arc.to]) continue;
    Arc copy = arc;
    copy.from = newIndex[arc.from];
    copy.to = newIndex[arc.to];
    result.arcs.push_back(std::move(copy));
  }
  // A renamed rank may now collide with a vertex that kept its custom name "r<k>".
  result.validate();
  return result;
}

}  // namespace grove::topo
