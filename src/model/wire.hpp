// The simulator's network: messages in flight sharing the topology's arcs.
//
// Each flow (one connection of the plans) transmits at most one message at a time over a
// fixed route. Transmitting flows share every arc by max-min fairness, computed by
// progressive filling: raise all rates together until an arc is full, freeze the flows
// crossing it, repeat. Rates change only when a flow starts or stops transmitting, and then
// only for the flows connected to it through shared arcs, so a pipelined plan (a flow that
// starts its next message the moment the previous one leaves) costs no recomputation and a
// large sparse topology stays cheap.
#pragma once

#include <cstdint>
#include <vector>

#include "topo/topology.hpp"

namespace grove::model {

class Wire {
 public:
  explicit Wire(const topo::Topology& topology);
  /// A wire of arcs of these capacities (units per microsecond), for resources other than
  /// links that are shared the same way (the replay's CPUs).
  explicit Wire(std::vector<double> capacityPerUs);

  /// Registers a flow over `route` (arc indices; empty: delivered instantly).
  int addFlow(std::vector<int> route);

  /// Flow `flow` (idle) starts transmitting `bytes` at the current time.
  void start(int flow, double bytes);

  /// When the earliest transmitting message's last byte leaves (infinity when none). Flows
  /// that finished and did not start again stop here, so rates are brought up to date.
  double nextFinish();

  /// Moves time forward to `until` (<= nextFinish()); returns, ascending, the flows whose
  /// message finished then. They may start() again before the next nextFinish().
  std::vector<int> advance(double until);

  double now() const { return now_; }

  /// Time each arc carried at least one transmitting message (call after the last advance).
  std::vector<double> arcBusyUs() const;

 private:
  struct Flow {
    std::vector<int> route;
    double left = 0;       // Bytes of the current message still to send.
    double rate = 0;       // Bytes per microsecond.
    bool active = false;   // Counted on its arcs.
    bool sending = false;  // Has a message (false while finished and not restarted).
  };

  void attach(int flow);
  void detach(int flow);
  void recompute();

  std::vector<Flow> flows_;
  std::vector<int> active_;                 // Active flows, ascending.
  std::vector<std::vector<int>> arcFlows_;  // Active flows per arc, ascending.
  std::vector<double> capacity_;            // Bytes per microsecond.
  std::vector<double> busyUs_;
  std::vector<double> busySince_;
  std::vector<int> dirtyArcs_;
  std::vector<int> stopped_;  // Finished at the last advance, not restarted yet.
  double now_ = 0;
};

}  // namespace grove::model
