// The verifier's replay: firing steps on symbolic values, with FIFOs, dependencies, vector
// clocks for race detection, and the ⊕ / finalize rules (see verifier_replay.hpp). The
// one-sided rules (remote reads and their happens-before checks) are in verifier_one_sided.cpp.
#include "plan/verifier_replay.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plan/printer.hpp"

namespace grove::plan::verifier_model {
namespace {

void join(Clock& into, const Clock& from) {
  for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}

uint64_t snapshotKey(int global, int32_t step, uint32_t tile) {
  return (static_cast<uint64_t>(global) << 42) | (static_cast<uint64_t>(step) << 11) | tile;
}

}  // namespace

std::string Replay::where(int r, int c, uint32_t s, uint32_t tile) const {
  return fmt::format("rank {} channel {} step {} ({}, tile {})", r, c, s, toText(stepAt(r, c, s)),
                     tile);
}

Replay::Replay(const std::vector<Plan>& plans, const VerifyOptions& options)
    : plans_(plans),
      nranks_(static_cast<int>(plans.size())),
      tiles_(static_cast<uint32_t>(options.tiles)),
      fifoDepth_(static_cast<size_t>(options.fifoDepth)),
      collective_(plans[0].collective),
      checkParts_(plans[0].collective != Collective::kAllToAllv),
      state_(plans.size()) {
  for (int r = 0; r < nranks_; ++r) {
    const Plan& p = plans_[r];
    RankState& st = state_[r];
    uint32_t cells = 0;
    std::vector<uint32_t>& in = st.cellOf[static_cast<int>(BufferKind::kInput)];
    std::vector<uint32_t>& out = st.cellOf[static_cast<int>(BufferKind::kOutput)];
    std::vector<uint32_t>& scratch = st.cellOf[static_cast<int>(BufferKind::kScratch)];
    for (uint32_t c = 0; c < p.chunks(BufferKind::kInput); ++c) in.push_back(cells++);
    for (uint32_t c = 0; c < p.chunks(BufferKind::kOutput); ++c) {
      const int64_t alias = options.inPlace ? aliasedInput(p, c) : -1;
      out.push_back(alias >= 0 && alias < static_cast<int64_t>(in.size())
                        ? in[static_cast<size_t>(alias)]
                        : cells++);
    }
    for (uint32_t c = 0; c < p.chunks(BufferKind::kScratch); ++c) scratch.push_back(cells++);
    st.values.resize(size_t{cells} * tiles_);
    st.access.resize(size_t{cells} * tiles_);
    for (uint32_t t = 0; t < tiles_; ++t) {
      for (uint32_t c = 0; c < in.size(); ++c) {
        st.values[size_t{in[c]} * tiles_ + t] = {true, false, {contribution(r, c)}};
      }
      if (collective_ == Collective::kBarrier && !out.empty()) {
        st.values[size_t{out[0]} * tiles_ + t] = {true, false, {contribution(r, 0)}};
      }
    }
    st.cursors.resize(p.channels.size());
    st.isAfterTarget.resize(p.channels.size());
    st.firstChannel = static_cast<int>(channelOwner_.size());
    for (size_t c = 0; c < p.channels.size(); ++c) {
      channelOwner_.emplace_back(r, static_cast<int>(c));
      st.isAfterTarget[c].resize(p.channels[c].steps.size());
      // Symbolically every chunk is one value per replayed tile: every step exchanges a
      // message on each of them, and a channel without steps has none.
      st.cursors[c].tiles = channelTiles(
          p.channels[c].steps, [this](const Step&) { return size_t{tiles_}; }, 1);
    }
    for (size_t c = 0; c < p.channels.size(); ++c) {
      for (const Step& step : p.channels[c].steps) {
        if (step.after.channel >= 0 && static_cast<size_t>(step.after.channel) != c) {
          st.isAfterTarget[static_cast<size_t>(step.after.channel)]
                          [static_cast<size_t>(step.after.step)] = true;
        }
      }
    }
  }
  clocks_.assign(channelOwner_.size(), Clock(channelOwner_.size(), 0));
}

Replay::Block Replay::blocker(int r, int c) const {
  const ChannelCursor& cur = state_[r].cursors[c];
  const Step& step = stepAt(r, c, cur.step);
  const auto cursorOf = [&](int32_t channel) -> const ChannelCursor& {
    return state_[r].cursors[static_cast<size_t>(channel)];
  };
  if (!dependencyMet(step, cur.tile, cursorOf)) return Block::kAfter;
  if (receives(step.op)) {
    auto it = fifos_.find(fifoKey(step.recvPeer, r, step.lane));
    if (it == fifos_.end() || it->second.empty()) return Block::kRecv;
  }
  if (sends(step.op)) {
    auto it = fifos_.find(fifoKey(r, step.sendPeer, step.lane));
    if (it != fifos_.end() && it->second.size() >= fifoDepth_) return Block::kSend;
  }
  return Block::kNone;
}

std::string Replay::blockedReason(int r, int c) const {
  const ChannelCursor& cur = state_[r].cursors[c];
  const Step& step = stepAt(r, c, cur.step);
  switch (blocker(r, c)) {
    case Block::kAfter:
      return fmt::format("waits for channel {} step {} of tile {}", step.after.channel,
                         step.after.step, cur.tile);
    case Block::kRecv:
      return fmt::format("waits for a message from rank {} on lane {}", step.recvPeer, step.lane);
    case Block::kSend:
      return fmt::format("waits for rank {} to take a message on lane {} ({} slot(s) full)",
                         step.sendPeer, step.lane, fifoDepth_);
    case Block::kNone:
      break;
  }
  return "can run";
}

Status Replay::run() {
  size_t remaining = 0;
  for (int r = 0; r < nranks_; ++r) {
    for (size_t c = 0; c < state_[r].cursors.size(); ++c) remaining += !done(r, int(c));
  }
  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int r = 0; r < nranks_; ++r) {
      const int channels = static_cast<int>(state_[r].cursors.size());
      for (int c = 0; c < channels; ++c) {
        while (!done(r, c) && blocker(r, c) == Block::kNone) {
          if (Status fired = fire(r, c); !fired.ok()) return fired;
          progress = true;
          if (done(r, c)) --remaining;
        }
      }
    }
  }
  if (remaining == 0) return Status();
  std::string message = fmt::format("deadlock: no step can run (FIFOs of {} slot(s), {} tile(s)); ",
                                    fifoDepth_, tiles_);
  size_t listed = 0;
  for (int r = 0; r < nranks_; ++r) {
    for (int c = 0; c < static_cast<int>(state_[r].cursors.size()); ++c) {
      if (done(r, c)) continue;
      if (listed == 8) {
        message += fmt::format("; ... ({} blocked channels in all)", remaining);
        return Status::failure(ErrorCode::kInvalidArgument, std::move(message));
      }
      const ChannelCursor& cur = state_[r].cursors[c];
      message +=
          fmt::format("{}{} {}", listed++ > 0 ? "; " : "",
                      where(r, c, cur.step, static_cast<uint32_t>(cur.tile)), blockedReason(r, c));
    }
  }
  return Status::failure(ErrorCode::kInvalidArgument, std::move(message));
}

Status Replay::checkOrdered(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref,
                            int32_t other, uint32_t otherClock, int32_t otherStep, bool otherWrites,
                            bool iWrite) const {
  const int me = state_[r].firstChannel + c;
  if (other < 0 || other == me || clocks_[me][other] >= otherClock) return Status();
  const int otherChannel = channelOwner_[other].second;
  return Status::failure(
      ErrorCode::kInvalidArgument,
      fmt::format(
          "{} {} {} while channel {} step {} ({}) {} it in the same tile, and nothing orders the "
          "two (add `after` or keep them on one channel)",
          where(r, c, s, tile), iWrite ? "writes" : "reads", chunkName(ref), otherChannel,
          otherStep, toText(stepAt(r, otherChannel, static_cast<uint32_t>(otherStep))),
          otherWrites ? "writes" : "reads"));
}

Status Replay::read(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref, Value* value) {
  const size_t at = slot(r, ref, tile);
  RankState& st = state_[r];
  const Value& held = st.values[at];
  if (!held.defined) {
    return Status::failure(ErrorCode::kInvalidArgument,
                           fmt::format("{} reads undefined {}: nothing has written it yet",
                                       where(r, c, s, tile), chunkName(ref)));
  }
  Access& access = st.access[at];
  if (Status ordered = checkOrdered(r, c, s, tile, ref, access.writer, access.writerClock,
                                    access.writerStep, true, false);
      !ordered.ok()) {
    return ordered;
  }
  const int me = st.firstChannel + c;
  auto mine = std::find_if(access.reads.begin(), access.reads.end(),
                           [me](const auto& read) { return read.first == me; });
  if (mine == access.reads.end()) {
    access.reads.emplace_back(me, clocks_[me][me]);
  } else {
    mine->second = clocks_[me][me];
  }
  *value = held;
  return Status();
}

Status Replay::write(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref,
                     const Value& value) {
  const size_t at = slot(r, ref, tile);
  RankState& st = state_[r];
  Access& access = st.access[at];
  if (Status ordered = checkOrdered(r, c, s, tile, ref, access.writer, access.writerClock,
                                    access.writerStep, true, true);
      !ordered.ok()) {
    return ordered;
  }
  // Reads record only the channel and clock; the step is recovered for the message.
  for (const auto& [reader, clock] : access.reads) {
    const int me = st.firstChannel + c;
    if (reader == me || clocks_[me][reader] >= clock) continue;
    const int readerChannel = channelOwner_[reader].second;
    const uint32_t readerLength = length(r, readerChannel);
    const auto readerStep = static_cast<int32_t>((clock - 1) % readerLength);
    if (Status ordered = checkOrdered(r, c, s, tile, ref, reader, clock, readerStep, false, true);
        !ordered.ok()) {
      return ordered;
    }
  }
  if (Status remote = checkRemoteReaders(r, c, s, tile, ref, access); !remote.ok()) return remote;
  const int me = st.firstChannel + c;
  access.writer = me;
  access.writerClock = clocks_[me][me];
  access.writerStep = static_cast<int32_t>(s);
  access.reads.clear();
  access.remoteReads.clear();
  st.values[at] = value;
  return Status();
}

Status Replay::combine(const Value& a, const Value& b, int r, int c, uint32_t s, uint32_t tile,
                       Value* result) const {
  if (a.finalized || b.finalized) {
    return Status::failure(
        ErrorCode::kInvalidArgument,
        fmt::format("{} reduces a value that is already finalized ({}); finalize "
                    "belongs on the last reduction only",
                    where(r, c, s, tile), describe(a.finalized ? a.items : b.items)));
  }
  Value combined{true, false, {}};
  combined.items.reserve(a.items.size() + b.items.size());
  if (collective_ == Collective::kBarrier) {
    std::set_union(a.items.begin(), a.items.end(), b.items.begin(), b.items.end(),
                   std::back_inserter(combined.items));
    *result = std::move(combined);
    return Status();
  }
  std::merge(a.items.begin(), a.items.end(), b.items.begin(), b.items.end(),
             std::back_inserter(combined.items));
  auto twice = std::adjacent_find(combined.items.begin(), combined.items.end());
  if (twice != combined.items.end()) {
    return Status::failure(
        ErrorCode::kInvalidArgument,
        fmt::format("{} double counts contribution ({},{}): {} ⊕ {}", where(r, c, s, tile),
                    contributorRank(*twice), contributorChunk(*twice), describe(a.items),
                    describe(b.items)));
  }
  *result = std::move(combined);
  return Status();
}

Status Replay::finalize(Value& value, int r, int c, uint32_t s, uint32_t tile) const {
  if (value.finalized) {
    return Status::failure(
        ErrorCode::kInvalidArgument,
        fmt::format("{} finalizes {} a second time", where(r, c, s, tile), describe(value.items)));
  }
  std::vector<bool> present(static_cast<size_t>(nranks_));
  for (Contribution item : value.items) {
    if (contributorRank(item) < present.size()) present[contributorRank(item)] = true;
  }
  std::string missing;
  for (int q = 0; q < nranks_; ++q) {
    if (!present[static_cast<size_t>(q)])
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", q);
  }
  if (!missing.empty()) {
    return Status::failure(
        ErrorCode::kInvalidArgument,
        fmt::format("{} finalizes an incomplete value {}: missing contribution of "
                    "rank(s) {}",
                    where(r, c, s, tile), describe(value.items), missing));
  }
  value.finalized = true;
  return Status();
}

Status Replay::fire(int r, int c) {
  ChannelCursor& cur = state_[r].cursors[c];
  const uint32_t s = cur.step;
  const auto tile = static_cast<uint32_t>(cur.tile);
  const Step& step = stepAt(r, c, s);
  const int me = state_[r].firstChannel + c;
  Clock& clock = clocks_[me];
  const uint32_t k = plans_[r].chunksPerBlock;
  const uint32_t part = readsSrc(step.op) ? step.src.chunk % k : step.dst.chunk % k;

  if (step.after.channel >= 0 && step.after.channel != c) {
    const int other = state_[r].firstChannel + step.after.channel;
    auto it = snapshots_.find(snapshotKey(other, step.after.step, tile));
    if (it != snapshots_.end()) join(clock, it->second);
  }
  Message incoming;
  if (receives(step.op)) {
    std::deque<Message>& fifo = fifos_[fifoKey(step.recvPeer, r, step.lane)];
    incoming = std::move(fifo.front());
    fifo.pop_front();
    auto sender = [&] {
      return fmt::format(
          "rank {} channel {} step {} ({})", step.recvPeer, incoming.channel, incoming.step,
          toText(stepAt(step.recvPeer, incoming.channel, static_cast<uint32_t>(incoming.step))));
    };
    if (incoming.tile != tile) {
      return Status::failure(
          ErrorCode::kInvalidArgument,
          fmt::format(
              "{} receives the tile {} message of {}: the two plans exchange different numbers of "
              "messages per tile on the connection from rank {} to rank {} lane {}",
              where(r, c, s, tile), incoming.tile, sender(), step.recvPeer, r, step.lane));
    }
    if (checkParts_ && incoming.part != part) {
      return Status::failure(
          ErrorCode::kInvalidArgument,
          fmt::format(
              "{} receives a part {} chunk from {} into part {} chunks: parts differ in size",
              where(r, c, s, tile), incoming.part, sender(), part));
    }
    if (incoming.empty != signals(step.op)) {
      return Status::failure(
          ErrorCode::kInvalidArgument,
          fmt::format("{} takes the {} message of {}: signals and data must "
                      "not share a connection (give them different lanes)",
                      where(r, c, s, tile), incoming.empty ? "empty (signal)" : "data", sender()));
    }
    join(clock, incoming.clock);
  }
  ++clock[me];

  Value value;
  Status status = Status();
  Value held;
  Value other;
  const bool skipped = skipsCopy(r, step);
  switch (step.op) {
    case OpKind::kSend:
    case OpKind::kCopy:
      if (!skipped) status = read(r, c, s, tile, step.src, &value);
      break;
    case OpKind::kRecv:
    case OpKind::kRecvCopySend:
      value = std::move(incoming.value);
      break;
    case OpKind::kRecvReduce:
      status = read(r, c, s, tile, step.dst, &held);
      if (status.ok()) status = combine(held, incoming.value, r, c, s, tile, &value);
      break;
    case OpKind::kReduce:
      status = read(r, c, s, tile, step.dst, &held);
      if (status.ok()) status = read(r, c, s, tile, step.src, &other);
      if (status.ok()) status = combine(held, other, r, c, s, tile, &value);
      break;
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      status = read(r, c, s, tile, step.src, &held);
      if (status.ok()) status = combine(held, incoming.value, r, c, s, tile, &value);
      break;
    case OpKind::kGet:
    case OpKind::kReduceAll:
      status = readPeers(r, c, s, tile, step, &value);
      break;
    case OpKind::kSignal:
    case OpKind::kWait:
      break;
  }
  if (status.ok() && step.finalize) status = finalize(value, r, c, s, tile);
  if (status.ok() && writesDst(step.op) && !skipped) {
    status = write(r, c, s, tile, step.dst, value);
  }
  if (!status.ok()) return status;
  if (sends(step.op)) {
    Message message{std::move(value), part, tile, c, static_cast<int>(s), clock, signals(step.op)};
    fifos_[fifoKey(r, step.sendPeer, step.lane)].push_back(std::move(message));
  }
  if (state_[r].isAfterTarget[c][s]) snapshots_[snapshotKey(me, int32_t(s), tile)] = clock;
  cur.next(length(r, c));
  return Status();
}

}  // namespace grove::plan::verifier_model
