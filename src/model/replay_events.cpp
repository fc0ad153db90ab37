// The replay's events and steps: waking channels, handling deliveries, reads and
// completions, and firing each channel's steps (see replay.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "grove/error.hpp"
#include "model/replay.hpp"

namespace grove::model::detail {

void Replay::wake(int c) {
  if (channels_[c].queued) return;
  channels_[c].queued = true;
  work_.push_back(c);
}

void Replay::wakeAll(std::vector<int>& waiters) {
  for (int c : waiters) wake(c);
  waiters.clear();
}

bool Replay::dependencyMet(const ChannelState& ch, const plan::Step& step) const {
  return plan::dependencyMet(step, ch.cursor.tile,
                             [&](int32_t channel) -> const plan::ChannelCursor& {
                               return channels_[static_cast<size_t>(ch.first + channel)].cursor;
                             });
}

void Replay::moveCursor(int c) {
  ChannelState& ch = channels_[c];
  if (ch.cursor.next(ch.steps.size())) ch.finishedUs = now_;
  wakeAll(ch.dependents);
}

size_t Replay::tileBytes(const StepInfo& info, const ChannelState& ch) const {
  if (plan::signals(info.step->op)) return 0;
  return plan::tileSpan(info.length, ch.cursor.tile, tileElems_).length * elementBytes_;
}

void Replay::finished(int flow, double time) {
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
  if (!conn.wire.empty()) wire_.start(conn.flow, onWire(conn, conn.wire.front()));
}

double Replay::onWire(const Connection& conn, size_t bytes) const {
  const auto raw = static_cast<double>(bytes);
  return conn.compressed ? raw / options_.compressionRatio : raw;
}

void Replay::handle(const Event& event) {
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

void Replay::advance(int c) {
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
    if (info.reads.empty() && !cpusShared()) {
      events_.push(
          {now_ + options_.stepOverheadUs + ch.workUs, sequence_++, EventKind::kComplete, c, 0});
    } else {
      events_.push({now_ + options_.stepOverheadUs, sequence_++, EventKind::kIssue, c, bytes});
    }
  }
}

void Replay::issue(int c, size_t bytes) {
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

void Replay::workDone(int c) {
  const double workUs = channels_[c].workUs;
  if (cpusShared() && workUs > 0) {
    cpu_.start(c, workUs);
  } else {
    events_.push({now_ + workUs, sequence_++, EventKind::kComplete, c, 0});
  }
}

void Replay::complete(int c) {
  ChannelState& ch = channels_[c];
  const StepInfo& info = ch.steps[ch.cursor.step];
  ch.busy = false;
  if (info.recv >= 0) {
    Connection& in = connections_[info.recv];
    ++in.released;
    wakeAll(in.waiters);
  }
  if (info.send >= 0) {
    Connection& out = connections_[info.send];
    const size_t bytes = tileBytes(info, ch);
    out.wire.push_back(bytes);
    for (int arc : out.path.arcs) arcBytes_[static_cast<size_t>(arc)] += onWire(out, bytes);
    if (out.wire.size() == 1) wire_.start(out.flow, onWire(out, bytes));
  }
  moveCursor(c);
  wake(c);
}

}  // namespace grove::model::detail
