// Max-min fair sharing of arcs, recomputed per connected group of flows (see wire.hpp).
#include "model/wire.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace grove::model {
namespace {

constexpr double kBytesPerUsPerGBps = 1e3;  // 1 GB/s = 10^3 bytes per microsecond.
constexpr double kInfinity = std::numeric_limits<double>::infinity();

void insertSorted(std::vector<int>& list, int value) {
  list.insert(std::lower_bound(list.begin(), list.end(), value), value);
}

void eraseSorted(std::vector<int>& list, int value) {
  auto at = std::lower_bound(list.begin(), list.end(), value);
  if (at != list.end() && *at == value) list.erase(at);
}

// Each arc's capacity in bytes per microsecond.
std::vector<double> arcCapacities(const topo::Topology& topology) {
  std::vector<double> capacity(topology.arcs.size());
  for (size_t a = 0; a < capacity.size(); ++a) {
    // A NIC's line rate carries TCP's payload at kTcpPayloadPerLineByte: the ring on four
    // emulated hosts at 1 Gbit/s measured 52.8 ms at 4 MiB against 50.4 predicted from the
    // line rate (53.5 from the payload rate).
    const topo::Arc& arc = topology.arcs[a];
    capacity[a] =
        arc.capacityGBps * kBytesPerUsPerGBps * (arc.lineRate ? topo::kTcpPayloadPerLineByte : 1.0);
  }
  return capacity;
}

}  // namespace

Wire::Wire(const topo::Topology& topology) : Wire(arcCapacities(topology)) {}

Wire::Wire(std::vector<double> capacityPerUs) : capacity_(std::move(capacityPerUs)) {
  const size_t arcs = capacity_.size();
  arcFlows_.resize(arcs);
  busyUs_.assign(arcs, 0.0);
  busySince_.assign(arcs, 0.0);
}

int Wire::addFlow(std::vector<int> route) {
  Flow& flow = flows_.emplace_back();
  flow.route = std::move(route);
  return static_cast<int>(flows_.size()) - 1;
}

void Wire::start(int flow, double bytes) {
  Flow& f = flows_[static_cast<size_t>(flow)];
  f.left = bytes;
  f.sending = true;
  if (!f.active) attach(flow);  // Otherwise it restarts at once and keeps its rate.
}

void Wire::attach(int flow) {
  Flow& f = flows_[static_cast<size_t>(flow)];
  f.active = true;
  insertSorted(active_, flow);
  if (f.route.empty()) f.rate = kInfinity;
  for (int arc : f.route) {
    std::vector<int>& users = arcFlows_[static_cast<size_t>(arc)];
    if (users.empty()) busySince_[static_cast<size_t>(arc)] = now_;
    insertSorted(users, flow);
    dirtyArcs_.push_back(arc);
  }
}

void Wire::detach(int flow) {
  Flow& f = flows_[static_cast<size_t>(flow)];
  f.active = false;
  eraseSorted(active_, flow);
  for (int arc : f.route) {
    std::vector<int>& users = arcFlows_[static_cast<size_t>(arc)];
    eraseSorted(users, flow);
    if (users.empty())
      busyUs_[static_cast<size_t>(arc)] += now_ - busySince_[static_cast<size_t>(arc)];
    dirtyArcs_.push_back(arc);
  }
}

double Wire::nextFinish() {
  for (int flow : stopped_) {
    const Flow& f = flows_[static_cast<size_t>(flow)];
    if (f.active && !f.sending) detach(flow);
  }
  stopped_.clear();
  if (!dirtyArcs_.empty()) recompute();
  double next = kInfinity;
  for (int flow : active_) {
    const Flow& f = flows_[static_cast<size_t>(flow)];
    next = std::min(next, f.left <= 0 ? now_ : now_ + f.left / f.rate);
  }
  return next;
}

std::vector<int> Wire::advance(double until) {
  const double dt = until - now_;
  const double slack = 1e-12 * std::max(1.0, until);
  std::vector<int> finished;
  for (int flow : active_) {
    Flow& f = flows_[static_cast<size_t>(flow)];
    if (f.left <= 0 || now_ + f.left / f.rate <= until + slack) {
      f.left = 0;
      f.sending = false;
      finished.push_back(flow);
    } else {
      f.left -= f.rate * dt;
    }
  }
  now_ = until;
  stopped_ = finished;
  return finished;
}

std::vector<double> Wire::arcBusyUs() const {
  std::vector<double> busy = busyUs_;
  for (size_t a = 0; a < busy.size(); ++a) {
    if (!arcFlows_[a].empty()) busy[a] += now_ - busySince_[a];
  }
  return busy;
}

// Progressive filling over the flows connected, through shared arcs, to an arc whose set
// of flows changed; every other flow keeps its rate.
void Wire::recompute() {
  std::vector<char> arcSeen(capacity_.size(), 0);
  std::vector<int> arcs;
  std::vector<int> group;
  std::vector<char> flowSeen(flows_.size(), 0);
  for (int arc : dirtyArcs_) {
    if (!arcSeen[static_cast<size_t>(arc)]) {
      arcSeen[static_cast<size_t>(arc)] = 1;
      arcs.push_back(arc);
    }
  }
  dirtyArcs_.clear();
  for (size_t i = 0; i < arcs.size(); ++i) {
    for (int flow : arcFlows_[static_cast<size_t>(arcs[i])]) {
      if (flowSeen[static_cast<size_t>(flow)]) continue;
      flowSeen[static_cast<size_t>(flow)] = 1;
      group.push_back(flow);
      for (int arc : flows_[static_cast<size_t>(flow)].route) {
        if (arcSeen[static_cast<size_t>(arc)]) continue;
        arcSeen[static_cast<size_t>(arc)] = 1;
        arcs.push_back(arc);
      }
    }
  }
  std::sort(arcs.begin(), arcs.end());
  std::vector<double> left(arcs.size());
  std::vector<size_t> users(arcs.size());
  for (size_t i = 0; i < arcs.size(); ++i) {
    left[i] = capacity_[static_cast<size_t>(arcs[i])];
    users[i] = arcFlows_[static_cast<size_t>(arcs[i])].size();
  }
  const auto slot = [&](int arc) {
    return static_cast<size_t>(std::lower_bound(arcs.begin(), arcs.end(), arc) - arcs.begin());
  };
  std::vector<char> frozen(flows_.size(), 0);
  size_t unfrozen = group.size();
  while (unfrozen > 0) {
    size_t bottleneck = arcs.size();
    double share = kInfinity;
    for (size_t i = 0; i < arcs.size(); ++i) {
      if (users[i] == 0) continue;
      const double fair =
          std::max(left[i], 1e-12 * capacity_[static_cast<size_t>(arcs[i])]) / users[i];
      if (fair < share) {
        share = fair;
        bottleneck = i;
      }
    }
    for (int flow : arcFlows_[static_cast<size_t>(arcs[bottleneck])]) {
      if (frozen[static_cast<size_t>(flow)]) continue;
      frozen[static_cast<size_t>(flow)] = 1;
      --unfrozen;
      flows_[static_cast<size_t>(flow)].rate = share;
      for (int arc : flows_[static_cast<size_t>(flow)].route) {
        const size_t i = slot(arc);
        left[i] -= share;
        --users[i];
      }
    }
  }
}

}  // namespace grove::model
