// The simulator: an event-driven replay of every rank's plan over the topology's links.
//
// It walks every channel with the executor's own cursor (plan/cursor.hpp: tiles, step order,
// messages per tile, `after`), so that what it predicts is what runs; a step is skipped, in
// no time, on tiles past its chunk's end.
// The replay itself is in replay.cpp; this file runs it, adds the one-sided prologue and
// epilogue around it and turns its result into a Prediction.
//
// The time model, in one place:
// * A step fires when its message has been delivered (receiving kinds), its outgoing FIFO
//   has a free slot (sending kinds; fifoDepth slots per (from, to, lane), a slot is held from
//   the sending step's start until the receiving step completes) and its dependency is met.
//   It then keeps its channel busy for stepOverheadUs + local work: reductions at
//   reduceGBps, kCopy between distinct chunks at copyGBps; moving bytes into or out of a
//   FIFO is the link's work, not the step's. With shared CPUs (SimOptions::cpuGroup) the
//   local work, after the overhead, is a flow of CPU-microseconds over two "arcs": its
//   rank's thread (1 CPU, shared by the rank's channels) and its group's CPUs, shared
//   max-min fairly by every busy channel of the group (the wire's progressive filling).
// * When a sending step completes, its message joins its connection's queue. A connection
//   transmits its messages one after another (in order, like a socket); the head message
//   flows over every arc of Topology::route at once, at the max-min fair rate among all
//   transmitting flows (progressive filling, recomputed whenever one starts or stops;
//   wire.hpp), and is delivered the route's summed latency after its last byte left. A
//   rank's message to itself is delivered at once. Credits (freed slots) return at once.
// * signal and wait are a sending and a receiving step whose messages are empty: 0 bytes
//   flow, the message still costs its route's latency and holds a FIFO slot of its
//   connection like any other, one per tile of the chunk they name.
// * get reads its tile of rank recvPeer's buffer in place: after the step's overhead the
//   tile's bytes flow over Topology::route(recvPeer, rank) (a flow of its own per channel
//   and peer, sharing arcs with every other flow), and the step completes the route's
//   latency after the last byte left. No message, no FIFO slot. rall reads its tile from
//   every other rank the same way, all at once (its own locally, free), and once every read
//   has arrived reduces the tile at reduceGBps; it completes then. A read of an empty tile
//   moves nothing and costs nothing but the overhead.
// * A call is one-sided when some rank's plan is (Plan::oneSided); every rank then runs a
//   prologue and an epilogue around its plan, as the executor does. Prologue: at time 0
//   every rank sends every other an empty message over its route; a rank's channels start
//   once it has all n - 1 of them. Epilogue: when a rank's last channel has finished (its
//   prologue's end, if it has no step), it sends every other rank an empty "done" message;
//   a rank finishes when it has all of them. Neither pays step overheads, and the call ends
//   when the last rank finishes.
// So a lone message of S bytes over a link of B GB/s and latency L takes
//   overhead (send) + S / B + L + overhead (recv),
// a lone get of one tile of S bytes between two ranks, prologue and epilogue included,
//   L + overhead + S / B + L + L,
// and pipelining over tiles overlaps everything but the first tile's latency and overheads.
// Ties are broken by a sequence number: the replay is deterministic.
#include "model/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "grove/error.hpp"

namespace grove::model {
namespace {

constexpr double kBytesPerUsPerGBps = 1e3;  // 1 GB/s = 10^9 bytes/s = 10^3 bytes/us.

/// Summed latency of the route from rank `from` to rank `to` (0 to itself), for the
/// one-sided prologue's and epilogue's empty messages.
double routeLatencyUs(const topo::Topology& topology, int from, int to) {
  if (from == to) return 0;
  double latency = 0;
  try {
    for (int arc : topology.route(from, to)) {
      latency += topology.arcs[static_cast<size_t>(arc)].latencyUs;
    }
  } catch (const Error& error) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("simulate: the prologue of a one-sided call, rank {}: {}", from, error.what()));
  }
  return latency;
}

/// Bytes nccl-tests reports as a call's size: max(send, recv) buffer bytes.
double callBytes(plan::Collective collective, size_t blockBytes, int nranks) {
  switch (collective) {
    case plan::Collective::kAllGather:
    case plan::Collective::kReduceScatter:
    case plan::Collective::kAllToAll:
    case plan::Collective::kAllToAllv:
    case plan::Collective::kGather:
    case plan::Collective::kScatter:
      return static_cast<double>(blockBytes) * nranks;
    default:
      return static_cast<double>(blockBytes);
  }
}

}  // namespace

Prediction simulate(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
                    const SimOptions& options) {
  const int n = topology.rankCount();
  if (static_cast<int>(plans.size()) != n) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("simulate: {} plans for a topology of {} ranks (expected one plan "
                            "per rank)",
                            plans.size(), n));
  }
  for (int r = 0; r < n; ++r) {
    const plan::Plan& p = plans[static_cast<size_t>(r)];
    if (p.rank != r || p.nranks != n || p.collective != plans[0].collective) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("simulate: plans[{}] is rank {} of {} ({}), expected rank {} of "
                              "{} ({})",
                              r, p.rank, p.nranks, plan::toString(p.collective), r, n,
                              plan::toString(plans[0].collective)));
    }
  }
  if (options.reduceGBps <= 0 || options.copyGBps <= 0 || options.stepOverheadUs < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "simulate: reduceGBps and copyGBps must be > 0 and stepOverheadUs >= 0");
  }
  if (!options.cpuGroup.empty() || !options.groupCpus.empty()) {
    if (static_cast<int>(options.cpuGroup.size()) != n) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("simulate: cpuGroup names the CPU group of {} ranks, expected {}",
                              options.cpuGroup.size(), n));
    }
    const auto groups = static_cast<int>(options.groupCpus.size());
    for (int r = 0; r < n; ++r) {
      const int g = options.cpuGroup[static_cast<size_t>(r)];
      if (g < 0 || g >= groups) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("simulate: rank {} is in CPU group {}, expected one in [0, {})", r,
                                g, groups));
      }
    }
    for (int g = 0; g < groups; ++g) {
      if (!(options.groupCpus[static_cast<size_t>(g)] > 0)) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("simulate: CPU group {} has {} CPUs, expected more than 0", g,
                                options.groupCpus[static_cast<size_t>(g)]));
      }
    }
  }
  // A one-sided call: rank r starts once every peer's prologue message has arrived, and
  // finishes once every peer's epilogue message, sent after that peer's last step, has.
  const bool oneSided = std::any_of(plans.begin(), plans.end(), [](const plan::Plan& p) {
    return p.oneSided || p.hasOneSidedSteps();
  });
  const auto un = static_cast<size_t>(n);
  std::vector<double> latencyUs(un * un, 0.0);  // From rank a to rank b at a * n + b.
  std::vector<double> startUs(un, 0.0);
  if (oneSided) {
    for (int from = 0; from < n; ++from) {
      for (int to = 0; to < n; ++to) {
        const double latency = routeLatencyUs(topology, from, to);
        latencyUs[static_cast<size_t>(from * n + to)] = latency;
        startUs[static_cast<size_t>(to)] = std::max(startUs[static_cast<size_t>(to)], latency);
      }
    }
  }
  detail::Replayed replayed = detail::replay(plans, topology, options, startUs);
  Prediction prediction;
  for (size_t to = 0; to < un; ++to) {
    for (size_t from = 0; from < un; ++from) {
      if (from != to && !oneSided) continue;
      prediction.timeUs =
          std::max(prediction.timeUs, replayed.lastStepUs[from] + latencyUs[from * un + to]);
    }
  }
  prediction.arcBytes = std::move(replayed.arcBytes);
  prediction.arcBusy = std::move(replayed.arcBusyUs);
  for (double& busy : prediction.arcBusy) {
    busy = prediction.timeUs > 0 ? busy / prediction.timeUs : 0.0;
  }
  if (prediction.timeUs > 0) {
    const plan::Collective collective = n > 0 ? plans[0].collective : plan::Collective::kAllReduce;
    prediction.algbwGBps =
        callBytes(collective, options.bytes, n) / (prediction.timeUs * kBytesPerUsPerGBps);
    prediction.busbwGBps = prediction.algbwGBps * busbwFactor(collective, n);
  }
  return prediction;
}

double busbwFactor(plan::Collective collective, int nranks) {
  if (nranks <= 0) return 1.0;
  const double n = nranks;
  switch (collective) {
    case plan::Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case plan::Collective::kAllGather:
    case plan::Collective::kReduceScatter:
    case plan::Collective::kAllToAll:
    case plan::Collective::kAllToAllv:
    case plan::Collective::kGather:
    case plan::Collective::kScatter:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

}  // namespace grove::model
