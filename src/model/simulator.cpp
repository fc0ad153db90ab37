// The simulator: an event-driven replay of every rank's plan over the topology's links.
//
// It walks every channel with the executor's own cursor (plan/cursor.hpp: tiles, step order,
// messages per tile, `after`), so that what it predicts is what runs; a step is skipped, in
// no time, on tiles past its chunk's end.
//
// The time model, in one place:
// * A step fires when its message has been delivered (receiving kinds), its outgoing FIFO
//   has a free slot (sending kinds; fifoDepth slots per (from, to, lane), a slot is held from
//   the sending step's start until the receiving step completes) and its dependency is met.
//   It then keeps its channel busy for stepOverheadUs + local work: reductions at
//   reduceGBps, kCopy between distinct chunks at copyGBps; moving bytes into or out of a
//   FIFO is the link's work, not the step's.
// * When a sending step completes, its message joins its connection's queue. A connection
//   transmits its messages one after another (in order, like a socket); the head message
//   flows over every arc of Topology::route at once, at the max-min fair rate among all
//   transmitting connections (progressive filling, recomputed whenever one starts or stops;
//   wire.hpp), and is delivered the route's summed latency after its last byte left. A
//   rank's message to itself is delivered at once. Credits (freed slots) return at once.
// So a lone message of S bytes over a link of B GB/s and latency L takes
//   overhead (send) + S / B + L + overhead (recv),
// and pipelining over tiles overlaps everything but the first tile's latency and overheads.
// Ties are broken by a sequence number: the replay is deterministic.
#include "model/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

#include "grove/error.hpp"
#include "model/wire.hpp"
#include "plan/cursor.hpp"
#include "plan/layout.hpp"

namespace grove::model {
namespace {

using plan::OpKind;

constexpr double kBytesPerUsPerGBps = 1e3;  // 1 GB/s = 10^9 bytes/s = 10^3 bytes/us.
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// One connection (from, to, lane): its FIFO slots and its queue on the wire.
struct Connection {
  int from = 0;
  int to = 0;
  std::vector<int> route;  // Arcs; empty for a rank's message to itself.
  double latencyUs = 0;
  uint64_t acquired = 0;         // Slots taken by sending steps that started.
  uint64_t released = 0;         // Slots freed by receiving steps that completed.
  std::deque<size_t> wire;       // Messages waiting or (head) being transmitted.
  std::deque<size_t> delivered;  // Messages arrived and not yet taken by a step.
  std::vector<int> waiters;      // Channels blocked on this connection.
};

/// A step with everything the replay needs precomputed.
struct StepInfo {
  const plan::Step* step = nullptr;
  size_t length = 0;  // Elements of the chunk its messages carry.
  int recv = -1;      // Connection index.
  int send = -1;
  double workUsPerElement = 0;
};

struct ChannelState {
  int rank = 0;
  int index = 0;  // Channel index within its rank's plan.
  int first = 0;  // Index of the rank's channel 0 in the global channel list.
  std::vector<StepInfo> steps;
  plan::ChannelCursor cursor;
  bool busy = false;
  bool queued = false;
  double finishedUs = 0;
  std::vector<int> dependents;  // Channels waiting for this one to progress.
};

struct Event {
  double time;
  uint64_t sequence;
  bool delivery;  // Otherwise a step completion.
  int target;     // Connection (delivery) or channel (completion).
  size_t bytes;
  bool operator>(const Event& other) const {
    return std::tie(time, sequence) > std::tie(other.time, other.sequence);
  }
};

class Replay {
 public:
  Replay(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
         const SimOptions& options)
      : topology_(topology), options_(options), wire_(topology) {
    elementBytes_ = std::max<size_t>(1, options.elementSize);
    tileElems_ = std::max<size_t>(1, options.tileBytes / elementBytes_);
    blockElems_ = options.bytes / elementBytes_;
    arcBytes_.assign(topology.arcs.size(), 0.0);
    for (const plan::Plan& plan : plans) addPlan(plan);
  }

  double run() {
    for (size_t c = 0; c < channels_.size(); ++c) wake(static_cast<int>(c));
    while (true) {
      while (!work_.empty()) {
        const int c = work_.front();
        work_.pop_front();
        channels_[c].queued = false;
        advance(c);
      }
      const double next =
          std::min(events_.empty() ? kInfinity : events_.top().time, wire_.nextFinish());
      if (next == kInfinity) break;
      for (int k : wire_.advance(next)) {
        Connection& conn = connections_[k];
        events_.push({next + conn.latencyUs, sequence_++, true, k, conn.wire.front()});
        conn.wire.pop_front();
        if (!conn.wire.empty()) wire_.start(k, static_cast<double>(conn.wire.front()));
      }
      now_ = next;
      while (!events_.empty() && events_.top().time <= now_) {
        const Event event = events_.top();
        events_.pop();
        if (event.delivery) {
          Connection& conn = connections_[event.target];
          conn.delivered.push_back(event.bytes);
          wakeAll(conn.waiters);
        } else {
          complete(event.target);
        }
      }
    }
    double end = 0;
    for (const ChannelState& ch : channels_) {
      if (!ch.cursor.done()) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("simulate: the plans deadlock: rank {} channel {} waits at step "
                                "{} of tile {}",
                                ch.rank, ch.index, ch.cursor.step, ch.cursor.tile));
      }
      end = std::max(end, ch.finishedUs);
    }
    return end;
  }

  const std::vector<double>& arcBytes() const { return arcBytes_; }
  std::vector<double> arcBusyUs() const { return wire_.arcBusyUs(); }

 private:
  void addPlan(const plan::Plan& plan) {
    const exec::BufferView view{nullptr, blockElems_, std::max<uint32_t>(1, plan.chunksPerBlock)};
    const int first = static_cast<int>(channels_.size());
    for (size_t c = 0; c < plan.channels.size(); ++c) {
      ChannelState& ch = channels_.emplace_back();
      ch.rank = plan.rank;
      ch.index = static_cast<int>(c);
      ch.first = first;
      for (size_t s = 0; s < plan.channels[c].steps.size(); ++s) {
        const plan::Step& step = plan.channels[c].steps[s];
        StepInfo& info = ch.steps.emplace_back();
        info.step = &step;
        info.length = view.chunk(plan::messageChunk(step).chunk).length;
        const auto where = [&] {
          return fmt::format("rank {} channel {} step {}", plan.rank, c, s);
        };
        if (plan::receives(step.op)) info.recv = connection(step.recvPeer, plan.rank, step, where);
        if (plan::sends(step.op)) info.send = connection(plan.rank, step.sendPeer, step, where);
        if (plan::reduces(step.op)) {
          info.workUsPerElement = elementBytes_ / (options_.reduceGBps * kBytesPerUsPerGBps);
        } else if (step.op == OpKind::kCopy && !(step.src == step.dst)) {
          info.workUsPerElement = elementBytes_ / (options_.copyGBps * kBytesPerUsPerGBps);
        }
        if (step.after.channel >= 0 &&
            (static_cast<size_t>(step.after.channel) >= plan.channels.size() ||
             step.after.step < 0 ||
             static_cast<size_t>(step.after.step) >=
                 plan.channels[static_cast<size_t>(step.after.channel)].steps.size())) {
          throw Error(ErrorCode::kInvalidArgument,
                      fmt::format("simulate: {} waits for channel {} step {}, which does not exist",
                                  where(), step.after.channel, step.after.step));
        }
      }
      ch.cursor.tiles = plan::channelTiles(
          ch.steps, [](const StepInfo& info) { return info.length; }, tileElems_);
    }
  }

  template <typename Where>
  int connection(int from, int to, const plan::Step& step, const Where& where) {
    const int n = topology_.rankCount();
    if (from < 0 || from >= n || to < 0 || to >= n) {
      const int peer = from < 0 || from >= n ? from : to;
      throw Error(
          ErrorCode::kInvalidArgument,
          fmt::format("simulate: {} names peer {}, expected a rank in [0, {})", where(), peer, n));
    }
    const auto key = std::make_tuple(from, to, static_cast<int>(step.lane));
    auto found = index_.find(key);
    if (found != index_.end()) return found->second;
    Connection conn;
    conn.from = from;
    conn.to = to;
    if (from != to) {
      try {
        conn.route = topology_.route(from, to);
      } catch (const Error& error) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("simulate: {}: {}", where(), error.what()));
      }
      for (int arc : conn.route)
        conn.latencyUs += topology_.arcs[static_cast<size_t>(arc)].latencyUs;
    }
    const int k = wire_.addFlow(conn.route);
    connections_.push_back(std::move(conn));
    index_.emplace(key, k);
    return k;
  }

  void wake(int c) {
    if (channels_[c].queued) return;
    channels_[c].queued = true;
    work_.push_back(c);
  }

  void wakeAll(std::vector<int>& waiters) {
    for (int c : waiters) wake(c);
    waiters.clear();
  }

  bool dependencyMet(const ChannelState& ch, const plan::Step& step) const {
    return plan::dependencyMet(step, ch.cursor.tile,
                               [&](int32_t channel) -> const plan::ChannelCursor& {
                                 return channels_[static_cast<size_t>(ch.first + channel)].cursor;
                               });
  }

  void moveCursor(int c) {
    ChannelState& ch = channels_[c];
    if (ch.cursor.next(ch.steps.size())) ch.finishedUs = now_;
    wakeAll(ch.dependents);
  }

  // Fires the channel's steps until one blocks or takes time.
  void advance(int c) {
    ChannelState& ch = channels_[c];
    while (!ch.busy && !ch.cursor.done()) {
      const StepInfo& info = ch.steps[ch.cursor.step];
      const plan::Step& step = *info.step;
      if (!dependencyMet(ch, step)) {
        channels_[static_cast<size_t>(ch.first + step.after.channel)].dependents.push_back(c);
        return;
      }
      if (!plan::exchangesOn(info.length, ch.cursor.tile, tileElems_)) {
        moveCursor(c);
        continue;
      }
      const size_t elements = plan::tileSpan(info.length, ch.cursor.tile, tileElems_).length;
      const size_t bytes = elements * elementBytes_;
      if (info.recv >= 0) {
        Connection& in = connections_[info.recv];
        if (in.delivered.empty()) {
          in.waiters.push_back(c);
          return;
        }
        if (in.delivered.front() != bytes) {
          throw Error(ErrorCode::kInvalidArgument,
                      fmt::format("simulate: rank {} channel {} step {} tile {} expects {} bytes "
                                  "from rank {} but the message has {}",
                                  ch.rank, ch.index, ch.cursor.step, ch.cursor.tile, bytes, in.from,
                                  in.delivered.front()));
        }
      }
      if (info.send >= 0) {
        Connection& out = connections_[info.send];
        if (out.acquired - out.released >= static_cast<uint64_t>(std::max(1, options_.fifoDepth))) {
          out.waiters.push_back(c);
          return;
        }
        ++out.acquired;
      }
      if (info.recv >= 0) connections_[info.recv].delivered.pop_front();
      ch.busy = true;
      const double duration =
          options_.stepOverheadUs + static_cast<double>(elements) * info.workUsPerElement;
      events_.push({now_ + duration, sequence_++, false, c, bytes});
    }
  }

  void complete(int c) {
    ChannelState& ch = channels_[c];
    const StepInfo& info = ch.steps[ch.cursor.step];
    ch.busy = false;
    if (info.recv >= 0) {
      Connection& in = connections_[info.recv];
      ++in.released;
      wakeAll(in.waiters);
    }
    if (info.send >= 0) {
      const size_t bytes =
          plan::tileSpan(info.length, ch.cursor.tile, tileElems_).length * elementBytes_;
      Connection& out = connections_[info.send];
      out.wire.push_back(bytes);
      for (int arc : out.route) arcBytes_[static_cast<size_t>(arc)] += static_cast<double>(bytes);
      if (out.wire.size() == 1) wire_.start(info.send, static_cast<double>(bytes));
    }
    moveCursor(c);
    wake(c);
  }

  const topo::Topology& topology_;
  const SimOptions& options_;
  Wire wire_;
  size_t elementBytes_ = 1;
  size_t tileElems_ = 1;
  size_t blockElems_ = 0;
  std::vector<ChannelState> channels_;
  std::vector<Connection> connections_;
  std::map<std::tuple<int, int, int>, int> index_;
  std::deque<int> work_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t sequence_ = 0;
  double now_ = 0;
  std::vector<double> arcBytes_;
};

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
  Replay replay(plans, topology, options);
  Prediction prediction;
  prediction.timeUs = replay.run();
  prediction.arcBytes = replay.arcBytes();
  prediction.arcBusy = replay.arcBusyUs();
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
