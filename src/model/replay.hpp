// The replay behind simulate(): every rank's plan, step by step, over the topology's links.
// The time model it implements is spelled out at the top of simulator.cpp, which adds the
// one-sided prologue and epilogue around it.
//
// Internal to src/model: replay.cpp sets it up and runs it (detail::replay), replay_events.cpp
// handles its events and fires its steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "model/simulator.hpp"
#include "model/wire.hpp"
#include "plan/cursor.hpp"

namespace grove::model::detail {

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
  bool compressed = false;       // Crosses a network arc with compression on (SimOptions).
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
  kIssue,     // A step's overhead is over: its reads start, or its work on a shared CPU
              // (target: channel).
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
         const SimOptions& options, const std::vector<double>& startUs);

  /// Runs every step; returns when each rank's last step completed (its start without one).
  std::vector<double> run();

  const std::vector<double>& arcBytes() const { return arcBytes_; }
  std::vector<double> arcBusyUs() const { return wire_.arcBusyUs(); }

 private:
  // Set-up (replay.cpp).
  void addPlan(const plan::Plan& plan);

  template <typename Where>
  void checkPeer(int peer, const Where& where) const;

  template <typename Where>
  Path path(int from, int to, const Where& where) const;

  template <typename Where>
  int connection(int from, int to, const plan::Step& step, const Where& where);

  /// Channel `channel`'s reader of rank `from`'s memory, on rank `to`.
  template <typename Where>
  int reader(int channel, int from, int to, const Where& where);

  int addFlow(const std::vector<int>& route, FlowOwner owner);

  // When each rank's last step completed, or throws if some channel is stuck.
  std::vector<double> lastStepUs() const;

  // Events and steps (replay_events.cpp).
  void wake(int c);

  void wakeAll(std::vector<int>& waiters);

  bool dependencyMet(const ChannelState& ch, const plan::Step& step) const;

  void moveCursor(int c);

  /// Bytes step `info` moves on the channel's current tile: none for signal and wait.
  size_t tileBytes(const StepInfo& info, const ChannelState& ch) const;

  // The bytes a message of `bytes` takes on the wire of `conn` (fewer when it compresses).
  double onWire(const Connection& conn, size_t bytes) const;
  // A flow's last byte left at `time`.
  void finished(int flow, double time);

  void handle(const Event& event);

  // Fires the channel's steps until one blocks or takes time.
  void advance(int c);

  // A reading step starts its reads of `bytes` each (the tile), one per reader.
  void issue(int c, size_t bytes);

  // Every read of channel c's step has arrived: its local work (on its rank's CPU when CPUs
  // are shared), then completion.
  void workDone(int c);

  bool cpusShared() const { return !options_.cpuGroup.empty(); }

  void complete(int c);

  const topo::Topology& topology_;
  const SimOptions& options_;
  Wire wire_;
  // Shared CPUs (SimOptions::cpuGroup): arcs 0..n-1 are the ranks' threads (one CPU each),
  // n + g group g's CPUs; flow c is channel c's step's work, in CPU-microseconds.
  Wire cpu_;
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

}  // namespace grove::model::detail
