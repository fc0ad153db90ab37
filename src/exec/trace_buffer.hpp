// Where GROVE_TRACE records go while a communicator runs.
//
// Tracing must cost nothing when off and next to nothing when on: no allocation, no lock, no
// system call on the latency path. So every event is a fixed-size record appended to storage
// reserved once when the communicator is created; when the storage is full, later events are
// counted as dropped instead of growing it. The executor and the communicator write records
// only through a pointer that is null when tracing is off (one predictable branch per step).
// Turning the records into Chrome trace JSON happens once, when the communicator goes away
// (core/trace.cpp).
#pragma once

#include <time.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "plan/call_shape.hpp"

namespace grove::exec {

/// Nanoseconds on the system-wide monotonic clock: comparable across the ranks of one host.
inline int64_t traceNowNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

/// One step of a plan fired on one tile.
struct StepRecord {
  int64_t readyNs = 0;    ///< The step became the channel's next step.
  int64_t attemptNs = 0;  ///< The attempt that fired began (before it: waiting for data or room).
  int64_t endNs = 0;      ///< It completed.
  uint64_t sequence = 0;  ///< The call it belongs to.
  uint64_t tile = 0;
  uint64_t bytes = 0;
  int32_t channel = 0;
  int32_t step = 0;
  int32_t recvPeer = -1;
  int32_t sendPeer = -1;
  uint8_t op = 0;  ///< plan::OpKind.
};

/// One call, from the moment it started executing to its end.
struct CallRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t sequence = 0;
  plan::CallShape shape;
  bool failed = false;
  std::string_view algorithm;  ///< Points into the registry (static storage).
};

class TraceBuffer {
 public:
  /// Reserves and touches room for `stepCapacity` step records (and a sixteenth as many
  /// calls) now, so that recording never allocates or faults a page.
  explicit TraceBuffer(size_t stepCapacity)
      : steps_(stepCapacity), calls_(stepCapacity / 16 + 16) {}

  void addStep(const StepRecord& record) {
    if (stepCount_ < steps_.size()) {
      steps_[stepCount_++] = record;
    } else {
      ++droppedSteps_;
    }
  }
  void addCall(const CallRecord& record) {
    if (callCount_ < calls_.size()) {
      calls_[callCount_++] = record;
    } else {
      ++droppedCalls_;
    }
  }

  size_t stepCount() const { return stepCount_; }
  size_t callCount() const { return callCount_; }
  const StepRecord& step(size_t i) const { return steps_[i]; }
  const CallRecord& call(size_t i) const { return calls_[i]; }
  uint64_t droppedSteps() const { return droppedSteps_; }
  uint64_t droppedCalls() const { return droppedCalls_; }

 private:
  std::vector<StepRecord> steps_;
  std::vector<CallRecord> calls_;
  size_t stepCount_ = 0;
  size_t callCount_ = 0;
  uint64_t droppedSteps_ = 0;
  uint64_t droppedCalls_ = 0;
};

}  // namespace grove::exec
