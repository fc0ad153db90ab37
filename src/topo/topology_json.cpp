// The topology file format (GROVE_TOPO_FILE, `grove topo --probe -o`), read and written.
//
// A topology file is how a user tells grove what the hardware looks like when detection
// cannot see it (NVLink meshes, switches, NIC speeds, which address reaches which link), in
// the spirit of NCCL_TOPO_FILE. Files are written by hand, so every known field is checked
// (type, range, duplicates) and each error names the JSON path and what was expected;
// unknown keys are ignored so that files can carry comments ("_note": ...) and future fields.
//
//   {
//     "name": "dgx1v",          // optional, informational
//     "unit_gbps": 25,          // optional link unit; default: the smallest link capacity
//     "local_gbps": 400,        // optional: a rank's local copy/reduce rate, GB/s of output
//                               //   (GPU memory); default: unknown (the simulator's CPU rate)
//     "vertices": [             // optional; without it "ranks": N makes r0..r{N-1}
//       {"name": "r0", "rank": 0, "host": "a", "numa": 0},  // name defaults to "r<rank>"
//       {"name": "sw", "switch": true}                      // switches forward only
//     ],
//     "links": [
//       {"from": "r0", "to": "r1",   // vertex names (a number n means rank n)
//        "gbps": 25,                 // GB/s per direction of one link (> 0)
//        "count": 2,                 // optional parallel links: capacity = count × gbps
//        "latency_us": 1.0,          // optional; default by kind: nvlink 1, pcie 1.5,
//                                    //   shm 0.3, net 5, other 1
//        "kind": "nvlink",           // nvlink | pcie | shm | net | other (default other)
//        "address": "198.18.1.2",    // optional: where `from` connects to reach `to`
//        "reverse_address": "198.18.1.1",  // optional: the same for the reverse arc
//        "line_rate": true,          // optional, net links: gbps is the NIC's nominal rate,
//                                    //   of which TCP carries 0.941 (default false: a
//                                    //   measured payload rate, as --probe writes)
//        "bidirectional": true}      // default true: also the arc to -> from
//     ]
//   }
//
// Every ordered pair of vertices has at most one arc: a second link between the same
// vertices in the same direction is an error (use "count" for parallel links). Ranks must be
// numbered 0..N-1, each exactly once. toJson() writes one bidirectional link for each pair of
// consecutive opposite arcs that agree in capacity, latency, kind and line rate, so
// readJson(toJson(t)) reproduces t exactly, arc order included.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grove/error.hpp"
#include "topo/topology.hpp"

namespace grove::topo {

namespace {

using Json = nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: {}: {}", source_, path, what));
  }
  [[noreturn]] void expected(const std::string& path, const std::string& what,
                             const Json& got) const {
    fail(path, fmt::format("expected {}, got {}", what, got.dump()));
  }

  const Json* field(const Json& object, const char* key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  std::string string(const Json& value, const std::string& path) const {
    if (!value.is_string()) expected(path, "a string", value);
    return value.get<std::string>();
  }
  double number(const Json& value, const std::string& path, const std::string& what) const {
    if (!value.is_number() || !std::isfinite(value.get<double>())) expected(path, what, value);
    return value.get<double>();
  }
  int64_t integer(const Json& value, const std::string& path, int64_t lo, int64_t hi,
                  const std::string& what) const {
    bool ok = value.is_number_integer() ||
              (value.is_number_float() && std::isfinite(value.get<double>()) &&
               value.get<double>() == std::floor(value.get<double>()) &&
               std::fabs(value.get<double>()) < 9e15);
    if (!ok) expected(path, what, value);
    int64_t v = value.is_number_unsigned()
                    ? static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), INT64_MAX))
                : value.is_number_integer() ? value.get<int64_t>()
                                            : static_cast<int64_t>(value.get<double>());
    if (v < lo || v > hi) expected(path, what, value);
    return v;
  }
  bool boolean(const Json& value, const std::string& path) const {
    if (!value.is_boolean()) expected(path, "true or false", value);
    return value.get<bool>();
  }

 private:
  std::string source_;
};

double defaultLatencyUs(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlink:
      return 1.0;
    case LinkKind::kPcie:
      return 1.5;
    case LinkKind::kShm:
      return 0.3;
    case LinkKind::kNet:
      return 5.0;
    case LinkKind::kOther:
      return 1.0;
  }
  return 1.0;
}

// The most ranks a topology file may describe. "ranks": N expands a few bytes into N
// vertices, so without a cap a tiny file could make every reader spend seconds and memory
// (the fuzzer found "ranks": 999991).
constexpr int64_t kMaxRanks = 1 << 16;

void readVertices(const Reader& in, const Json& root, Topology& t) {
  const Json* vertices = in.field(root, "vertices");
  const Json* ranks = in.field(root, "ranks");
  int64_t declaredRanks = -1;
  if (ranks) declaredRanks = in.integer(*ranks, "ranks", 1, kMaxRanks, "a rank count in 1..65536");
  if (!vertices) {
    if (!ranks) in.fail("vertices", "missing (expected a \"vertices\" array or \"ranks\": N)");
    for (int r = 0; r < declaredRanks; ++r) {
      t.vertices.push_back(Vertex{VertexKind::kRank, fmt::format("r{}", r), r, {}, -1});
    }
    return;
  }
  if (!vertices->is_array()) in.expected("vertices", "an array of vertex objects", *vertices);
  std::map<int, size_t> rankAt;
  std::map<std::string, size_t> nameAt;
  int switches = 0;
  for (size_t i = 0; i < vertices->size(); ++i) {
    const Json& item = (*vertices)[i];
    const std::string path = fmt::format("vertices[{}]", i);
    if (!item.is_object()) in.expected(path, "an object", item);
    Vertex v;
    const Json* isSwitch = in.field(item, "switch");
    const Json* rank = in.field(item, "rank");
    if (isSwitch && in.boolean(*isSwitch, path + ".switch")) {
      v.kind = VertexKind::kSwitch;
      if (rank) in.fail(path + ".rank", "a switch vertex has no rank (expected no \"rank\")");
      v.name = fmt::format("sw{}", switches);
      ++switches;
    } else {
      if (!rank) in.fail(path + ".rank", "missing (expected the rank of this vertex)");
      v.rank = static_cast<int>(
          in.integer(*rank, path + ".rank", 0, kMaxRanks - 1, "a rank number >= 0"));
      auto [it, inserted] = rankAt.emplace(v.rank, i);
      if (!inserted) {
        in.fail(path + ".rank", fmt::format("rank {} already belongs to vertices[{}] (expected "
                                            "each rank exactly once)",
                                            v.rank, it->second));
      }
      v.name = fmt::format("r{}", v.rank);
    }
    if (const Json* name = in.field(item, "name")) {
      v.name = in.string(*name, path + ".name");
      if (v.name.empty()) in.fail(path + ".name", "expected a non-empty name");
    }
    auto [it, inserted] = nameAt.emplace(v.name, i);
    if (!inserted) {
      in.fail(path + ".name", fmt::format("\"{}\" is already the name of vertices[{}] (expected "
                                          "unique names)",
                                          v.name, it->second));
    }
    if (const Json* host = in.field(item, "host")) v.host = in.string(*host, path + ".host");
    if (const Json* numa = in.field(item, "numa")) {
      v.numa = static_cast<int>(in.integer(*numa, path + ".numa", -1, 1 << 20,
                                           "a NUMA node number >= 0 (or -1 for unknown)"));
    }
    t.vertices.push_back(std::move(v));
  }
  const int n = static_cast<int>(rankAt.size());
  if (n == 0) in.fail("vertices", "no rank vertices (expected at least one vertex with a rank)");
  for (const auto& [rank, index] : rankAt) {
    if (rank >= n) {
      in.fail(
          fmt::format("vertices[{}].rank", index),
          fmt::format("rank {} with only {} rank vertices (expected ranks 0..{})", rank, n, n - 1));
    }
  }
  if (declaredRanks >= 0 && declaredRanks != n) {
    in.fail("ranks",
            fmt::format("says {} but \"vertices\" has {} rank vertices", declaredRanks, n));
  }
}

int vertexRef(const Reader& in, const Json& value, const std::string& path, const Topology& t,
              const std::map<std::string, int>& byName) {
  if (value.is_string()) {
    auto it = byName.find(value.get<std::string>());
    if (it == byName.end()) in.expected(path, "the name of a vertex", value);
    return it->second;
  }
  if (value.is_number()) {
    int64_t r = in.integer(value, path, 0, kMaxRanks, "a vertex name or a rank number");
    for (size_t v = 0; v < t.vertices.size(); ++v) {
      if (t.vertices[v].kind == VertexKind::kRank && t.vertices[v].rank == r) {
        return static_cast<int>(v);
      }
    }
    in.expected(path, "an existing rank", value);
  }
  in.expected(path, "a vertex name (string) or a rank number", value);
}

void readLinks(const Reader& in, const Json& root, Topology& t) {
  std::map<std::string, int> byName;
  for (size_t v = 0; v < t.vertices.size(); ++v) byName[t.vertices[v].name] = static_cast<int>(v);
  const Json* links = in.field(root, "links");
  if (!links) return;
  if (!links->is_array()) in.expected("links", "an array of link objects", *links);
  std::map<std::pair<int, int>, size_t> arcFrom;  // ordered pair -> link index
  auto addArc = [&](const Arc& arc, size_t link, const std::string& path) {
    auto [it, inserted] = arcFrom.emplace(std::make_pair(arc.from, arc.to), link);
    if (!inserted) {
      in.fail(path, fmt::format("a second arc from \"{}\" to \"{}\" (links[{}] has one; expected "
                                "at most one per direction, use \"count\" for parallel links)",
                                t.vertices[arc.from].name, t.vertices[arc.to].name, it->second));
    }
    t.arcs.push_back(arc);
  };
  for (size_t i = 0; i < links->size(); ++i) {
    const Json& item = (*links)[i];
    const std::string path = fmt::format("links[{}]", i);
    if (!item.is_object()) in.expected(path, "an object", item);
    auto required = [&](const char* key, const char* what) -> const Json& {
      const Json* value = in.field(item, key);
      if (!value) in.fail(path + "." + key, fmt::format("missing (expected {})", what));
      return *value;
    };
    Arc arc;
    arc.from = vertexRef(in, required("from", "a vertex name"), path + ".from", t, byName);
    arc.to = vertexRef(in, required("to", "a vertex name"), path + ".to", t, byName);
    if (arc.from == arc.to) {
      in.fail(path, fmt::format("links \"{}\" to itself (expected two distinct vertices)",
                                t.vertices[arc.from].name));
    }
    double gbps =
        in.number(required("gbps", "GB/s per direction"), path + ".gbps", "a positive number");
    if (!(gbps > 0)) in.expected(path + ".gbps", "a positive number", item["gbps"]);
    int64_t count = 1;
    if (const Json* c = in.field(item, "count")) {
      count = in.integer(*c, path + ".count", 1, 1 << 20, "a whole number of links >= 1");
    }
    arc.capacityGBps = gbps * static_cast<double>(count);
    arc.kind = LinkKind::kOther;
    if (const Json* kind = in.field(item, "kind")) {
      std::optional<LinkKind> parsed =
          kind->is_string() ? parseLinkKind(kind->get<std::string>()) : std::nullopt;
      if (!parsed) in.expected(path + ".kind", "one of nvlink, pcie, shm, net, other", *kind);
      arc.kind = *parsed;
    }
    arc.latencyUs = defaultLatencyUs(arc.kind);
    if (const Json* latency = in.field(item, "latency_us")) {
      arc.latencyUs = in.number(*latency, path + ".latency_us", "a number >= 0");
      if (arc.latencyUs < 0) in.expected(path + ".latency_us", "a number >= 0", *latency);
    }
    if (const Json* line = in.field(item, "line_rate")) {
      arc.lineRate = in.boolean(*line, path + ".line_rate");
      if (arc.lineRate && arc.kind != LinkKind::kNet) {
        in.fail(path + ".line_rate",
                fmt::format("given for a {} link (expected \"line_rate\" only on net links)",
                            toString(arc.kind)));
      }
    }
    if (const Json* a = in.field(item, "address")) arc.address = in.string(*a, path + ".address");
    std::string reverseAddress;
    if (const Json* a = in.field(item, "reverse_address")) {
      reverseAddress = in.string(*a, path + ".reverse_address");
    }
    bool bidirectional = true;
    if (const Json* b = in.field(item, "bidirectional")) {
      bidirectional = in.boolean(*b, path + ".bidirectional");
    }
    if (!bidirectional && !reverseAddress.empty()) {
      in.fail(path + ".reverse_address",
              "given for a one-way link (expected no reverse_address "
              "when \"bidirectional\" is false)");
    }
    addArc(arc, i, path);
    if (bidirectional) {
      Arc reverse = arc;
      std::swap(reverse.from, reverse.to);
      reverse.address = reverseAddress;
      addArc(reverse, i, path);
    }
  }
}

}  // namespace

Topology readJson(std::string_view text, std::string_view source) {
  Reader in(source);
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // syntax errors, and numbers beyond a double
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: not valid JSON ({})", source, e.what()));
  }
  if (!root.is_object()) in.expected("(top level)", "a JSON object", root);
  Topology t;
  t.name = "topology";
  if (const Json* name = in.field(root, "name")) t.name = in.string(*name, "name");
  readVertices(in, root, t);
  readLinks(in, root, t);
  if (const Json* unit = in.field(root, "unit_gbps")) {
    t.unitGBps = in.number(*unit, "unit_gbps", "a positive number of GB/s");
    if (!(t.unitGBps > 0)) in.expected("unit_gbps", "a positive number of GB/s", *unit);
  } else {
    double smallest = 0;
    for (const Arc& arc : t.arcs) {
      if (smallest == 0 || arc.capacityGBps < smallest) smallest = arc.capacityGBps;
    }
    t.unitGBps = smallest > 0 ? smallest : 1.0;
  }
  if (const Json* local = in.field(root, "local_gbps")) {
    t.localGBps = in.number(*local, "local_gbps", "a positive number of GB/s");
    if (!(t.localGBps > 0)) in.expected("local_gbps", "a positive number of GB/s", *local);
  }
  try {
    t.validate();
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{}: {}", source, e.what()));
  }
  return t;
}

Topology loadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("topology file \"{}\": cannot be opened (expected a readable JSON "
                            "file)",
                            path));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return readJson(text.str(), fmt::format("topology file \"{}\"", path));
}

std::string toJson(const Topology& topology) {
  // ordered_json keeps the fields in the documented order for people reading the file.
  using Out = nlohmann::ordered_json;
  Out root = Out::object();
  root["name"] = topology.name;
  root["unit_gbps"] = topology.unitGBps;
  if (topology.localGBps > 0) root["local_gbps"] = topology.localGBps;
  Out vertices = Out::array();
  for (const Vertex& v : topology.vertices) {
    Out item = Out::object();
    item["name"] = v.name;
    if (v.kind == VertexKind::kSwitch) {
      item["switch"] = true;
    } else {
      item["rank"] = v.rank;
      if (!v.host.empty()) item["host"] = v.host;
      if (v.numa >= 0) item["numa"] = v.numa;
    }
    vertices.push_back(std::move(item));
  }
  root["vertices"] = std::move(vertices);
  Out links = Out::array();
  const auto& arcs = topology.arcs;
  for (size_t i = 0; i < arcs.size(); ++i) {
    const Arc& a = arcs[i];
    Out item = Out::object();
    item["from"] = topology.vertices.at(a.from).name;
    item["to"] = topology.vertices.at(a.to).name;
    item["gbps"] = a.capacityGBps;
    item["latency_us"] = a.latencyUs;
    item["kind"] = toString(a.kind);
    if (a.lineRate) item["line_rate"] = true;
    if (!a.address.empty()) item["address"] = a.address;
    bool paired = i + 1 < arcs.size() && arcs[i + 1].from == a.to && arcs[i + 1].to == a.from &&
                  arcs[i + 1].capacityGBps == a.capacityGBps &&
                  arcs[i + 1].latencyUs == a.latencyUs && arcs[i + 1].kind == a.kind &&
                  arcs[i + 1].lineRate == a.lineRate;
    if (paired) {
      if (!arcs[i + 1].address.empty()) item["reverse_address"] = arcs[i + 1].address;
      ++i;
    } else {
      item["bidirectional"] = false;
    }
    links.push_back(std::move(item));
  }
  root["links"] = std::move(links);
  return root.dump(2) + "\n";
}

}  // namespace grove::topo
