// The topology model: a directed, capacitated graph of ranks and switches.
//
// Everything topology-aware in grove — the flow bounds, the tree packer, the simulator and
// the plans that run on a real network — reads this one structure. Vertices are ranks (one
// per rank of the communicator, rank r is the vertex with `rank == r`) and optional switch
// vertices (an NVSwitch, a PCIe switch, a network switch), which forward but never compute.
// An arc is one direction of a link: capacity in GB/s (parallel links add up into one arc),
// latency in microseconds, the kind of link and, for network links, the address the `from`
// side should connect to to reach `to` over this very link.
//
// Exactness. When every arc's capacity is a whole multiple of `unitGBps` (NVLink meshes:
// 1 or 2 links of 25 GB/s), the topology is *integral* and the flow analysis returns exact
// fractions in link units; otherwise rates are computed in floating point.
//
// Routing. A message from rank a to rank b uses the arc a→b when one exists (a direct link);
// otherwise the shortest path through switch vertices only (ranks never forward on behalf of
// others unless a plan says so). route() returns that path or throws when there is none.
//
// The JSON format (GROVE_TOPO_FILE) is documented in docs/topology.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace grove::topo {

enum class VertexKind : uint8_t { kRank, kSwitch };

/// What a link is made of; decides defaults and how plans may use it.
enum class LinkKind : uint8_t {
  kNvlink,  ///< "nvlink": GPU-to-GPU link.
  kPcie,    ///< "pcie": PCIe or CPU interconnect hop.
  kShm,     ///< "shm": shared memory between processes of one host.
  kNet,     ///< "net": a network link (NIC to switch or point to point).
  kOther,   ///< "other".
};

/// "nvlink", "pcie", "shm", "net", "other".
const char* toString(LinkKind kind);
/// Parses the names above; std::nullopt when unknown.
std::optional<LinkKind> parseLinkKind(std::string_view name);

struct Vertex {
  VertexKind kind = VertexKind::kRank;
  std::string name;  ///< Unique; ranks default to "r<rank>", e.g. "r3"; switches "sw0".
  int rank = -1;     ///< The rank for kRank vertices, -1 for switches.
  std::string host;  ///< Host name of a rank, when known (two-tier clusters, probes).
  int numa = -1;     ///< NUMA node of a rank, -1 when unknown.
};

struct Arc {
  int from = 0;             ///< Vertex index.
  int to = 0;               ///< Vertex index.
  double capacityGBps = 0;  ///< Per direction; parallel links summed.
  double latencyUs = 0;
  LinkKind kind = LinkKind::kOther;
  /// Network address of `to` reachable over this link (e.g. "198.18.1.2"); empty when the
  /// link is not a network link or any address works.
  std::string address;
  /// The capacity is a stand-in (a host whose NIC rate nobody knows gets kDefaultNicGbit),
  /// good for comparing plans but not for a decision that needs the real rate (whether
  /// compressing the link pays: core/link_compression.cpp).
  bool rateAssumed = false;
  /// The capacity is a NIC's nominal line rate (a Gbit/s figure: GROVE_NIC_SPEED, sysfs, the
  /// cluster preset, "line_rate" in a topology file), not a measured payload rate: the
  /// simulator moves kTcpPayloadPerLineByte of it (model/wire.cpp).
  bool lineRate = false;
};

/// The payload bytes TCP carries per byte of an Ethernet link's line rate at the default MTU
/// of 1500: 1448 bytes of a segment (1500 less 20 of IP, 20 of TCP and 12 of timestamps)
/// per 1538 on the wire (with the Ethernet header and FCS, preamble and inter-frame gap), so
/// a 1 Gbit/s NIC moves 0.941 Gbit/s (what iperf reports). Links shaped by tc count 1514
/// bytes per segment and run at 0.956 (bench/hosts measured 0.96).
inline constexpr double kTcpPayloadPerLineByte = 1448.0 / 1538.0;

class Topology {
 public:
  std::string name;       ///< E.g. "dgx1v:0,1,4"; informational.
  double unitGBps = 1.0;  ///< The link unit exact rates are expressed in.
  /// How fast one rank copies or reduces in its own memory, GB/s of output (GPU presets:
  /// device memory); 0 = unknown, the simulator assumes a CPU's rate.
  double localGBps = 0;
  std::vector<Vertex> vertices;
  std::vector<Arc> arcs;

  /// Number of rank vertices (they are ranks 0..rankCount()-1).
  int rankCount() const;
  /// Vertex index of `rank`; throws grove::Error(kInvalidArgument) when absent.
  int vertexOfRank(int rank) const;
  /// Index of the arc from vertex `from` to vertex `to`, or -1.
  int arcBetween(int fromVertex, int toVertex) const;
  /// Arc indices leaving / entering a vertex.
  std::vector<int> outArcs(int vertex) const;
  std::vector<int> inArcs(int vertex) const;

  /// True when every capacity is a whole multiple of unitGBps (within 1e-9 relative).
  bool integral() const;
  /// Capacity of `arc` in link units, rounded; meaningful when integral().
  int64_t units(int arc) const;

  /// The arcs a message from rank `from` to rank `to` travels (see file comment). Throws
  /// grove::Error(kInvalidArgument) naming both ranks when no route exists.
  std::vector<int> route(int fromRank, int toRank) const;

  /// Checks the structure: ranks numbered 0..n-1 exactly once, names unique, arcs between
  /// existing distinct vertices, capacities > 0 and finite, latencies >= 0, at most one arc
  /// per ordered pair. Throws grove::Error(kInvalidArgument) naming the offending element.
  void validate() const;
};

/// Parses the JSON format; `source` names the input in errors ("GROVE_TOPO_FILE=x.json").
/// Throws grove::Error(kInvalidArgument) naming the JSON path of the problem
/// ("links[3].gbps: expected a positive number"). The result is validated.
Topology readJson(std::string_view text, std::string_view source = "topology");
/// Reads and parses a file; errors name the path.
Topology loadFile(const std::string& path);
/// Writes the JSON format (readJson(toJson(t)) reproduces t).
std::string toJson(const Topology& topology);

/// A preset, optionally restricted to a subset of its ranks, renumbered in the order given:
/// "dgx1v", "dgx1p", "dgx2", "h100x8", "dgx1v:0,1,4", "cluster:HxK[:g1,g2,...]" (H hosts of K
/// ranks; optional per-host NIC speeds in Gbit/s, default 100; switch vertices "net" and, for
/// hosts of several ranks, one "nic<i>" per host that its ranks share), "mesh:N" (a full mesh
/// of N ranks, unit links). presets.cpp's file comment gives every preset's numbers. A value that
/// is not a preset name is read as a JSON file path. Throws grove::Error(kInvalidArgument) listing
/// the presets when the spec is not understood.
Topology fromSpec(std::string_view spec);

/// The NIC speed of the cluster preset and of twoTier topologies whose NICs nobody measured.
inline constexpr double kDefaultNicGbit = 100.0;

/// The cluster preset's shape for any placement of ranks: rank r on host hostOfRank[r]
/// (0..H-1, H = nicGbit.size()), a shared-memory mesh inside each host, and across hosts a
/// switch "net" reached through host i's NIC at nicGbit[i] Gbit/s (shared by its ranks; a
/// host of one rank links to "net" directly). Vertex::host names the host ("host<i>").
/// `nicAssumed[i]` (empty: none) marks host i's NIC rate a stand-in (Arc::rateAssumed).
Topology twoTier(std::string name, const std::vector<int>& hostOfRank,
                 const std::vector<double>& nicGbit, const std::vector<bool>& nicAssumed = {});
/// The preset names with a one-line description each, for help texts.
std::vector<std::pair<std::string, std::string>> presetList();
/// The sub-topology of `ranks` (vertex order and numbering follow `ranks`; switch vertices
/// are kept when they still connect two kept ranks).
Topology subset(const Topology& topology, std::span<const int> ranks);

}  // namespace grove::topo
