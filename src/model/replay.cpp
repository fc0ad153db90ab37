// The replay behind simulate(): every rank's plan, step by step, over the topology's links.
// The time model it implements is spelled out at the top of simulator.cpp, which adds the
// one-sided prologue and epilogue around it.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <utility>

#include "grove/error.hpp"
#include "model/simulator.hpp"
#include "model/wire.hpp"
#include "plan/cursor.hpp"
#include "plan/layout.hpp"

namespace grove::model {
namespace {

using plan::OpKind;

constexpr double kBytesPerUsPerGBps = 1e3;  // 1 GB/s = 10^9 bytes/s = 10^3 bytes/us.
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// A route between two ranks: its arcs (none from a rank to itself) and summed latency.
struct Path {
  std::vector<int> arcs;
  double latencyUs = 0;
};

/// One connection (from, to, lane): its FIFO slots and its queue on the wire.
struct Connection {
  int from = 0;
  int to = 0;
  int flow = 0;
  Path path;
  uint64_t acquired = 0;         // Slots taken by sending steps that started.
  uint64_t released = 0;         // Slots freed by receiving steps that completed.
  std::deque<size_t> wire;       // Messages waiting or (head) being transmitted.
  std::deque<size_t> delivered;  // Messages arrived and not yet taken by a step.
  std::vector<int> waiters;      // Channels blocked on this connection.
};

/// One channel's reads from one rank's memory (get, rall): at most one at a time, since a
/// channel runs one step at a time.
struct Reader {
  int channel = 0;
  int flow = 0;
  Path path;  // From the rank read to the channel's rank.
};

/// Who a flow of the wire belongs to.
struct FlowOwner {
  bool read = false;  // A Reader, otherwise a Connection.
  int index = 0;
};

/// A step with everything the replay needs precomputed.
struct StepInfo {
  const plan::Step* step = nullptr;
  size_t length = 0;  // Elements of the chunk its messages carry (or its reads move).
  int recv = -1;      // Connection index.
  int send = -1;
  std::vector<int> reads;  // Reader indices: get's peer, or every other rank for rall.
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
  int pendingReads = 0;  // Reads of the running step not arrived yet.
  double workUs = 0;     // Local work of the running step, done once its reads arrived.
  double finishedUs = 0;
  std::vector<int> dependents;  // Channels waiting for this one to progress.
};

enum class EventKind : uint8_t {
  kStart,     // A rank's channels may start (target: rank).
  kDelivery,  // A message arrives (target: connection).
  kIssue,     // A reading step's overhead is over: its reads start (target: channel).
  kArrival,   // A read's last byte arrives (target: reader).
  kComplete,  // A step completes (target: channel).
};

struct Event {
  double time;
  uint64_t sequence;
  EventKind kind;
  int target;
  size_t bytes;
  bool operator>(const Event& other) const {
    return std::tie(time, sequence) > std::tie(other.time, other.sequence);
  }
};

class Replay {
 public:
  Replay(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
         const SimOptions& options, const std::vector<double>& startUs)
      : topology_(topology), options_(options), wire_(topology), startUs_(startUs) {
    elementBytes_ = std::max<size_t>(1, options.elementSize);
    tileElems_ = std::max<size_t>(1, options.tileBytes / elementBytes_);
    blockElems_ = options.bytes / elementBytes_;
    arcBytes_.assign(topology.arcs.size(), 0.0);
    rankChannels_.resize(plans.size());
    for (const plan::Plan& plan : plans) addPlan(plan);
  }

  /// Runs every step; returns when each rank's last step completed (its start without one).
  std::vector<double> run() {
    for (size_t r = 0; r < startUs_.size(); ++r) {
      events_.push({startUs_[r], sequence_++, EventKind::kStart, static_cast<int>(r), 0});
    }
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
      for (int k : wire_.advance(next)) finished(k, next);
      now_ = next;
      while (!events_.empty() && events_.top().time <= now_) {
        const Event event = events_.top();
        events_.pop();
        handle(event);
      }
    }
    return lastStepUs();
  }

  const std::vector<double>& arcBytes() const { return arcBytes_; }
  std::vector<double> arcBusyUs() const { return wire_.arcBusyUs(); }

 private:
  void addPlan(const plan::Plan& plan) {
    const exec::BufferView view{nullptr, blockElems_, std::max<uint32_t>(1, plan.chunksPerBlock)};
    const int first = static_cast<int>(channels_.size());
    rankChannels_[static_cast<size_t>(plan.rank)] = {first, static_cast<int>(plan.channels.size())};
    for (size_t c = 0; c < plan.channels.size(); ++c) {
      const int global = static_cast<int>(channels_.size());
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
        if (plan::readsPeer(step.op)) {
          checkPeer(step.recvPeer, where);
          info.reads.push_back(reader(global, step.recvPeer, plan.rank, where));
        }
        if (plan::readsEveryRank(step.op)) {
          for (int q = 0; q < topology_.rankCount(); ++q) {
            if (q != plan.rank) info.reads.push_back(reader(global, q, plan.rank, where));
          }
        }
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
  void checkPeer(int peer, const Where& where) const {
    const int n = topology_.rankCount();
    if (peer < 0 || peer >= n) {
      throw Error(
          ErrorCode::kInvalidArgument,
          fmt::format("simulate: {} names peer {}, expected a rank in [0, {})", where(), peer, n));
    }
  }

  template <typename Where>
  Path path(int from, int to, const Where& where) const {
    Path p;
    if (from == to) return p;
    try {
      p.arcs = topology_.route(from, to);
    } catch (const Error& error) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("simulate: {}: {}", where(), error.what()));
    }
    for (int arc : p.arcs) p.latencyUs += topology_.arcs[static_cast<size_t>(arc)].latencyUs;
    return p;
  }

  template <typename Where>
  int connection(int from, int to, const plan::Step& step, const Where& where) {
    checkPeer(from, where);
    checkPeer(to, where);
    const auto key = std::make_tuple(from, to, static_cast<int>(step.lane));
    auto found = connectionIndex_.find(key);
    if (found != connectionIndex_.end()) return found->second;
    Connection conn;
    conn.from = from;
    conn.to = to;
    conn.path = path(from, to, where);
    conn.flow = addFlow(conn.path.arcs, {false, static_cast<int>(connections_.size())});
    connections_.push_back(std::move(conn));
    const int k = static_cast<int>(connections_.size()) - 1;
    connectionIndex_.emplace(key, k);
    return k;
  }

  /// Channel `channel`'s reader of rank `from`'s memory, on rank `to`.
  template <typename Where>
  int reader(int channel, int from, int to, const Where& where) {
    const auto key = std::make_pair(channel, from);
    auto found = readerIndex_.find(key);
    if (found != readerIndex_.end()) return found->second;
    Reader rd;
    rd.channel = channel;
    rd.path = path(from, to, where);
    rd.flow = addFlow(rd.path.arcs, {true, static_cast<int>(readers_.size())});
    readers_.push_back(std::move(rd));
    const int k = static_cast<int>(readers_.size()) - 1;
    readerIndex_.emplace(key, k);
    return k;
  }

  int addFlow(const std::vector<int>& route, FlowOwner owner) {
    const int flow = wire_.addFlow(route);
    flowOwners_.push_back(owner);
    return flow;
  }

  // When each rank's last step completed, or throws if some channel is stuck.
  std::vector<double> lastStepUs() const {
    std::vector<double> last = startUs_;
    for (const ChannelState& ch : channels_) {
      if (!ch.cursor.done()) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("simulate: the plans deadlock: rank {} channel {} waits at step "
                                "{} of tile {}",
                                ch.rank, ch.index, ch.cursor.step, ch.cursor.tile));
      }
      double& rank = last[static_cast<size_t>(ch.rank)];
      rank = std::max(rank, ch.finishedUs);
    }
    return last;
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

  /// Bytes step `info` moves on the channel's current tile: none for signal and wait.
  size_t tileBytes(const StepInfo& info, const ChannelState& ch) const {
    if (plan::signals(info.step->op)) return 0;
    return plan::tileSpan(info.length, ch.cursor.tile, tileElems_).length * elementBytes_;
  }

  // A flow's last byte left at `time`.
  void finished(int flow, double time) {
    const FlowOwner owner = flowOwners_[static_cast<size_t>(flow)];
    if (owner.read) {
      const Reader& rd = readers_[static_cast<size_t>(owner.index)];
      events_.push({time + rd.path.latencyUs, sequence_++, EventKind::kArrival, owner.index, 0});
      return;
    }
    Connection& conn = connections_[static_cast<size_t>(owner.index)];
    events_.push({time + conn.path.latencyUs, sequence_++, EventKind::kDelivery, owner.index,
                  conn.wire.front()});
    conn.wire.pop_front();
    if (!conn.wire.empty()) wire_.start(conn.flow, static_cast<double>(conn.wire.front()));
  }

  void handle(const Event& event) {
    switch (event.kind) {
      case EventKind::kStart: {
        const auto [first, count] = rankChannels_[static_cast<size_t>(event.target)];
        for (int c = first; c < first + count; ++c) wake(c);
        break;
      }
      case EventKind::kDelivery: {
        Connection& conn = connections_[static_cast<size_t>(event.target)];
        conn.delivered.push_back(event.bytes);
        wakeAll(conn.waiters);
        break;
      }
      case EventKind::kIssue:
        issue(event.target, event.bytes);
        break;
      case EventKind::kArrival: {
        const int c = readers_[static_cast<size_t>(event.target)].channel;
        if (--channels_[c].pendingReads == 0) workDone(c);
        break;
      }
      case EventKind::kComplete:
        complete(event.target);
        break;
    }
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
      const size_t bytes = tileBytes(info, ch);
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
      ch.workUs = static_cast<double>(elements) * info.workUsPerElement;
      if (info.reads.empty()) {
        events_.push(
            {now_ + options_.stepOverheadUs + ch.workUs, sequence_++, EventKind::kComplete, c, 0});
      } else {
        events_.push({now_ + options_.stepOverheadUs, sequence_++, EventKind::kIssue, c, bytes});
      }
    }
  }

  // A reading step starts its reads of `bytes` each (the tile), one per reader.
  void issue(int c, size_t bytes) {
    ChannelState& ch = channels_[c];
    const StepInfo& info = ch.steps[ch.cursor.step];
    ch.pendingReads = 0;
    if (bytes > 0) {
      for (int k : info.reads) {
        const Reader& rd = readers_[static_cast<size_t>(k)];
        for (int arc : rd.path.arcs) {
          arcBytes_[static_cast<size_t>(arc)] += static_cast<double>(bytes);
        }
        wire_.start(rd.flow, static_cast<double>(bytes));
        ++ch.pendingReads;
      }
    }
    if (ch.pendingReads == 0) workDone(c);
  }

  // Every read of channel c's step has arrived: its local work, then completion.
  void workDone(int c) {
    events_.push({now_ + channels_[c].workUs, sequence_++, EventKind::kComplete, c, 0});
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
      const size_t bytes = tileBytes(info, ch);
      Connection& out = connections_[info.send];
      out.wire.push_back(bytes);
      for (int arc : out.path.arcs) {
        arcBytes_[static_cast<size_t>(arc)] += static_cast<double>(bytes);
      }
      if (out.wire.size() == 1) wire_.start(out.flow, static_cast<double>(bytes));
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
  std::vector<std::pair<int, int>> rankChannels_;  // Per rank: first channel, channel count.
  std::vector<Connection> connections_;
  std::map<std::tuple<int, int, int>, int> connectionIndex_;
  std::vector<Reader> readers_;
  std::map<std::pair<int, int>, int> readerIndex_;  // (channel, rank read) -> reader.
  std::vector<FlowOwner> flowOwners_;               // Per flow of wire_.
  std::vector<double> startUs_;                     // Per rank: when its channels may start.
  std::deque<int> work_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t sequence_ = 0;
  double now_ = 0;
  std::vector<double> arcBytes_;
};

}  // namespace

namespace detail {

Replayed replay(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
                const SimOptions& options, const std::vector<double>& startUs) {
  Replay replay(plans, topology, options, startUs);
  Replayed result;
  result.lastStepUs = replay.run();
  result.arcBytes = replay.arcBytes();
  result.arcBusyUs = replay.arcBusyUs();
  return result;
}

}  // namespace detail
}  // namespace grove::model
