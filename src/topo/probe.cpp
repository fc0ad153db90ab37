// Measuring a running job's topology (see probe.hpp for the method).
//
// The measurement goes through the public Communicator API only (send/recv between the two
// ranks of a pair, barrier between pairs so that each pair runs on an idle network,
// allGather to share), so it measures what grove's own transports deliver, shared memory and
// TCP alike. Each rank measures the arcs that leave it; the rows are then gathered and every
// rank builds the topology from the same numbers, so all ranks return identical topologies.
#include "topo/probe.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "grove/error.hpp"

namespace grove::topo {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kSmallBytes = 8;
constexpr size_t kHostNameBytes = 64;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t m = values.size() / 2;
  return values.size() % 2 == 1 ? values[m] : (values[m - 1] + values[m]) / 2;
}

// Measurements of the arcs leaving this rank, one slot per peer.
struct Row {
  std::vector<double> latencyUs;
  std::vector<double> gbps;
};

// Round trips of a small message started by `initiator`; returns its half round trip in µs
// on the initiator (0 elsewhere).
double pingPong(Communicator& comm, int initiator, int responder, int repetitions,
                std::vector<uint8_t>& small) {
  std::vector<double> halfTrips;
  for (int i = 0; i <= repetitions; ++i) {  // the first round trip warms up
    if (comm.rank() == initiator) {
      auto start = Clock::now();
      comm.send(small.data(), kSmallBytes, DataType::kUint8, responder);
      comm.recv(small.data(), kSmallBytes, DataType::kUint8, responder);
      if (i > 0) halfTrips.push_back(seconds(start, Clock::now()) / 2 * 1e6);
    } else {
      comm.recv(small.data(), kSmallBytes, DataType::kUint8, initiator);
      comm.send(small.data(), kSmallBytes, DataType::kUint8, initiator);
    }
  }
  return comm.rank() == initiator ? median(halfTrips) : 0;
}

// One-way transfers of `large` bytes from `sender`, each acknowledged by a small message;
// returns the bandwidth in GB/s on the sender (0 elsewhere). `latencyUs` is the sender's
// measured one-way latency, subtracted for the acknowledgement.
double stream(Communicator& comm, int sender, int receiver, int repetitions, double latencyUs,
              std::vector<uint8_t>& large, std::vector<uint8_t>& small) {
  std::vector<double> rates;
  for (int i = 0; i <= repetitions; ++i) {
    if (comm.rank() == sender) {
      auto start = Clock::now();
      comm.send(large.data(), large.size(), DataType::kUint8, receiver);
      comm.recv(small.data(), kSmallBytes, DataType::kUint8, receiver);
      double elapsed = seconds(start, Clock::now());
      double transfer = elapsed - latencyUs * 1e-6;
      if (transfer <= elapsed / 2) transfer = elapsed;
      if (i > 0) rates.push_back(static_cast<double>(large.size()) / transfer / 1e9);
    } else {
      comm.recv(large.data(), large.size(), DataType::kUint8, sender);
      comm.send(small.data(), kSmallBytes, DataType::kUint8, sender);
    }
  }
  return comm.rank() == sender ? median(rates) : 0;
}

// The largest bandwidth rounded to two significant digits (the link unit).
double roundedUnit(double gbps) {
  if (!(gbps > 0)) return 1.0;
  double scale = std::pow(10.0, std::floor(std::log10(gbps)) - 1);
  return std::max(scale, std::round(gbps / scale) * scale);
}

std::string localHostName() {
  char name[kHostNameBytes + 1] = {};
  if (gethostname(name, kHostNameBytes) != 0) return "unknown";
  return name;
}

}  // namespace

Topology probe(Communicator& comm, const ProbeOptions& options) {
  const int n = comm.size();
  const int me = comm.rank();
  if (options.largeBytes == 0 || options.repetitions < 1 || options.unitGBps < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("probe on rank {}: largeBytes {} and repetitions {} must be >= 1 and "
                            "unitGBps {} >= 0",
                            me, options.largeBytes, options.repetitions, options.unitGBps));
  }

  std::vector<char> hostNames(kHostNameBytes * n, 0);
  std::string host = localHostName();
  std::vector<char> myName(kHostNameBytes, 0);
  std::memcpy(myName.data(), host.data(), std::min(host.size(), kHostNameBytes - 1));
  comm.allGather(myName.data(), hostNames.data(), kHostNameBytes, DataType::kUint8);

  Row row{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  std::vector<uint8_t> large(options.largeBytes, 0x5A);
  std::vector<uint8_t> small(kSmallBytes, 0);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      comm.barrier();
      if (me != a && me != b) continue;
      const int peer = me == a ? b : a;
      double latency = pingPong(comm, a, b, options.repetitions, small);
      latency += pingPong(comm, b, a, options.repetitions, small);
      row.latencyUs[peer] = latency;
      double forward = stream(comm, a, b, options.repetitions, latency, large, small);
      double backward = stream(comm, b, a, options.repetitions, latency, large, small);
      row.gbps[peer] = me == a ? forward : backward;
    }
  }

  // Share the rows: rank q's row lands at [q * 2n, (q + 1) * 2n).
  std::vector<double> mine(2 * n);
  std::copy(row.latencyUs.begin(), row.latencyUs.end(), mine.begin());
  std::copy(row.gbps.begin(), row.gbps.end(), mine.begin() + n);
  std::vector<double> all(static_cast<size_t>(2) * n * n);
  comm.allGather(mine.data(), all.data(), 2 * n, DataType::kFloat64);

  Topology t;
  t.name = fmt::format("probe:{}", n);
  std::vector<std::string> hosts(n);
  for (int r = 0; r < n; ++r) {
    const char* name = hostNames.data() + static_cast<size_t>(r) * kHostNameBytes;
    hosts[r] = std::string(name, strnlen(name, kHostNameBytes));
    t.vertices.push_back(Vertex{VertexKind::kRank, fmt::format("r{}", r), r, hosts[r], -1});
  }
  double largest = 0;
  auto addArc = [&](int from, int to) {
    Arc arc;
    arc.from = from;
    arc.to = to;
    const double* rowOf = all.data() + static_cast<size_t>(2) * n * from;
    arc.latencyUs = std::max(0.0, rowOf[to]);
    arc.capacityGBps = rowOf[n + to];
    if (!(arc.capacityGBps > 0) || !std::isfinite(arc.capacityGBps)) arc.capacityGBps = 1e-9;
    arc.kind = hosts[from] == hosts[to] ? LinkKind::kShm : LinkKind::kNet;
    largest = std::max(largest, arc.capacityGBps);
    t.arcs.push_back(std::move(arc));
  };
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      addArc(a, b);
      addArc(b, a);
    }
  }
  t.unitGBps = options.unitGBps > 0 ? options.unitGBps : roundedUnit(largest);
  t.validate();
  return t;
}

}  // namespace grove::topo
