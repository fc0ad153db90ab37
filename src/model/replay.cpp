// The replay's set-up (the plans' steps, connections, readers and flows) and its run loop;
// the replay and its model are described in replay.hpp.
#include "model/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "grove/error.hpp"
#include "plan/layout.hpp"

namespace grove::model {
namespace {

using plan::OpKind;

constexpr double kBytesPerUsPerGBps = 1e3;  // 1 GB/s = 10^9 bytes/s = 10^3 bytes/us.
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The CPU wire's arcs: one CPU per rank's thread, then each group's CPUs.
std::vector<double> cpuCapacities(const SimOptions& options) {
  if (options.cpuGroup.empty()) return {};
  std::vector<double> capacity(options.cpuGroup.size(), 1.0);
  capacity.insert(capacity.end(), options.groupCpus.begin(), options.groupCpus.end());
  return capacity;
}

}  // namespace

namespace detail {

Replay::Replay(const std::vector<plan::Plan>& plans, const topo::Topology& topology,
               const SimOptions& options, const std::vector<double>& startUs)
    : topology_(topology),
      options_(options),
      wire_(topology),
      cpu_(cpuCapacities(options)),
      startUs_(startUs) {
  elementBytes_ = std::max<size_t>(1, options.elementSize);
  tileElems_ = std::max<size_t>(1, options.tileBytes / elementBytes_);
  blockElems_ = options.bytes / elementBytes_;
  arcBytes_.assign(topology.arcs.size(), 0.0);
  rankChannels_.resize(plans.size());
  for (const plan::Plan& plan : plans) addPlan(plan);
}

std::vector<double> Replay::run() {
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
    const double next = std::min(
        {events_.empty() ? kInfinity : events_.top().time, wire_.nextFinish(), cpu_.nextFinish()});
    if (next == kInfinity) break;
    for (int k : wire_.advance(next)) finished(k, next);
    for (int c : cpu_.advance(next)) events_.push({next, sequence_++, EventKind::kComplete, c, 0});
    now_ = next;
    while (!events_.empty() && events_.top().time <= now_) {
      const Event event = events_.top();
      events_.pop();
      handle(event);
    }
  }
  return lastStepUs();
}

void Replay::addPlan(const plan::Plan& plan) {
  const exec::BufferView view{nullptr, blockElems_, std::max<uint32_t>(1, plan.chunksPerBlock)};
  const int first = static_cast<int>(channels_.size());
  rankChannels_[static_cast<size_t>(plan.rank)] = {first, static_cast<int>(plan.channels.size())};
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    const int global = static_cast<int>(channels_.size());
    if (cpusShared()) {  // flow `global`: added in the order of the channels
      const int ranks = static_cast<int>(options_.cpuGroup.size());
      cpu_.addFlow({plan.rank, ranks + options_.cpuGroup[static_cast<size_t>(plan.rank)]});
    }
    ChannelState& ch = channels_.emplace_back();
    ch.rank = plan.rank;
    ch.index = static_cast<int>(c);
    ch.first = first;
    for (size_t s = 0; s < plan.channels[c].steps.size(); ++s) {
      const plan::Step& step = plan.channels[c].steps[s];
      StepInfo& info = ch.steps.emplace_back();
      info.step = &step;
      info.length = view.chunk(plan::messageChunk(step).chunk).length;
      const auto where = [&] { return fmt::format("rank {} channel {} step {}", plan.rank, c, s); };
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
      if (options_.codecGBps > 0) {
        // Encoding what leaves compressed (a block passed on is sent as it came) and
        // decoding what arrives compressed, on this rank's time.
        const double codecUs = elementBytes_ / (options_.codecGBps * kBytesPerUsPerGBps);
        const bool received = info.recv >= 0 && connections_[info.recv].compressed;
        if (received) info.workUsPerElement += codecUs;
        if (info.send >= 0 && connections_[info.send].compressed &&
            !(received && step.op == OpKind::kRecvCopySend)) {
          info.workUsPerElement += codecUs;
        }
      }
      if (step.after.channel >= 0 &&
          (static_cast<size_t>(step.after.channel) >= plan.channels.size() || step.after.step < 0 ||
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
void Replay::checkPeer(int peer, const Where& where) const {
  const int n = topology_.rankCount();
  if (peer < 0 || peer >= n) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("simulate: {} names peer {}, expected a rank in [0, {})", where(), peer, n));
  }
}

template <typename Where>
Path Replay::path(int from, int to, const Where& where) const {
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
int Replay::connection(int from, int to, const plan::Step& step, const Where& where) {
  checkPeer(from, where);
  checkPeer(to, where);
  const auto key = std::make_tuple(from, to, static_cast<int>(step.lane));
  auto found = connectionIndex_.find(key);
  if (found != connectionIndex_.end()) return found->second;
  Connection conn;
  conn.from = from;
  conn.to = to;
  conn.path = path(from, to, where);
  if (options_.compressionRatio > 1.0) {
    for (int arc : conn.path.arcs) {
      conn.compressed =
          conn.compressed || topology_.arcs[static_cast<size_t>(arc)].kind == topo::LinkKind::kNet;
    }
  }
  conn.flow = addFlow(conn.path.arcs, {false, static_cast<int>(connections_.size())});
  connections_.push_back(std::move(conn));
  const int k = static_cast<int>(connections_.size()) - 1;
  connectionIndex_.emplace(key, k);
  return k;
}

template <typename Where>
int Replay::reader(int channel, int from, int to, const Where& where) {
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

int Replay::addFlow(const std::vector<int>& route, FlowOwner owner) {
  const int flow = wire_.addFlow(route);
  flowOwners_.push_back(owner);
  return flow;
}

std::vector<double> Replay::lastStepUs() const {
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
