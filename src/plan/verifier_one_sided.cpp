// The verifier's one-sided rules: structure of get, rall, signal and wait, and the replay's
// remote reads with their happens-before checks across ranks (see verifier_replay.hpp).
//
// A remote read of rank q's cell X by rank r is proven against q's writes of X in both
// directions, whichever the replay happens to run first: the write the read sees must
// happen-before it (a), and every later write must happen-after it (b). Vector clocks are the
// replay's (one entry per channel of every rank, carried by messages, signals included), so a
// happens-before path may run through any number of ranks.
#include <fmt/format.h>

#include <algorithm>

#include "plan/printer.hpp"
#include "plan/verifier_model.hpp"
#include "plan/verifier_replay.hpp"

namespace grove::plan::verifier_model {
namespace {

Status invalid(std::string problem) {
  return Status::failure(ErrorCode::kInvalidArgument, std::move(problem));
}

}  // namespace

Status checkOneSidedStep(const Plan& p, const Step& step) {
  if (readsPeer(step.op)) {
    if (step.recvPeer < 0 || step.recvPeer >= p.nranks) {
      return invalid(fmt::format("recvPeer {} is not a rank in [0, {})", step.recvPeer, p.nranks));
    }
    if (step.recvPeer == p.rank) {
      return invalid(
          fmt::format("recvPeer {} is the step's own rank; {} reads a peer's buffer (use copy)",
                      step.recvPeer, toString(step.op)));
    }
  }
  if (readsEveryRank(step.op) && (step.recvPeer != -1 || step.sendPeer != -1)) {
    return invalid(fmt::format(
        "{} reads every rank's src and takes no peer, but recvPeer is {} and sendPeer {} "
        "(both must be -1)",
        toString(step.op), step.recvPeer, step.sendPeer));
  }
  if (oneSided(step.op) && step.src.buffer == BufferKind::kScratch) {
    return invalid(fmt::format(
        "src {} is scratch, but {} reads peers' buffers in place and only in and out are "
        "exposed to peers (scratch never is)",
        chunkName(step.src), toString(step.op)));
  }
  return {};
}

Status checkOneSidedAgreement(const std::vector<Plan>& plans) {
  for (const Plan& p : plans) {
    if (p.oneSided != plans[0].oneSided) {
      return invalid(fmt::format(
          "rank {}'s plan is {}one-sided but rank 0's is {}: every rank of a one-sided call "
          "runs its prologue and epilogue",
          p.rank, p.oneSided ? "" : "not ", plans[0].oneSided ? "" : "not"));
    }
    if (!p.oneSided && p.hasOneSidedSteps()) {
      return invalid(
          fmt::format("rank {} reads peers' memory but its plan is not marked "
                      "one-sided (Plan::oneSided): its peers would leave the call "
                      "while it reads their buffers",
                      p.rank));
    }
  }
  return {};
}

bool Replay::skipsCopy(int r, const Step& step) const {
  const RankState& st = state_[r];
  return step.op == OpKind::kCopy && !step.finalize &&
         st.cellOf[static_cast<int>(step.src.buffer)][step.src.chunk] ==
             st.cellOf[static_cast<int>(step.dst.buffer)][step.dst.chunk];
}

Status Replay::readPeers(int r, int c, uint32_t s, uint32_t tile, const Step& step, Value* value) {
  if (readsPeer(step.op)) return remoteRead(r, c, s, tile, step.recvPeer, step.src, value);
  // rall: every rank's src in rank order, this rank's own read locally.
  Value sum;
  for (int q = 0; q < nranks_; ++q) {
    Value operand;
    Status status = q == r ? read(r, c, s, tile, step.src, &operand)
                           : remoteRead(r, c, s, tile, q, step.src, &operand);
    if (status.ok() && q > 0) {
      Value combined;
      status = combine(sum, operand, r, c, s, tile, &combined);
      operand = std::move(combined);
    }
    if (!status.ok()) return status;
    sum = std::move(operand);
  }
  *value = std::move(sum);
  return Status();
}

Status Replay::remoteRead(int r, int c, uint32_t s, uint32_t tile, int q, const ChunkRef& ref,
                          Value* value) {
  const size_t at = slot(q, ref, tile);
  RankState& owner = state_[q];
  Access& access = owner.access[at];
  const int me = state_[r].firstChannel + c;
  auto unordered = [&](int writerChannel, int32_t writerStep) {
    return Status::failure(
        ErrorCode::kInvalidArgument,
        fmt::format("{} reads rank {}'s {} before rank {}'s write by channel {} step {} ({}) "
                    "happens-before it: add a signal/wait",
                    where(r, c, s, tile), q, chunkName(ref), q, writerChannel, writerStep,
                    toText(stepAt(q, writerChannel, static_cast<uint32_t>(writerStep)))));
  };
  // (a) The write this read sees must be ordered before it.
  if (access.writer >= 0 && clocks_[me][access.writer] < access.writerClock) {
    return unordered(channelOwner_[access.writer].second, access.writerStep);
  }
  if (!owner.values[at].defined) {
    // Nothing has written the cell yet, so no write of it happens-before this read: name one
    // that could have been meant (no tile's write has run, and a write runs on every tile).
    const uint32_t cell = owner.cellOf[static_cast<int>(ref.buffer)][ref.chunk];
    const Plan& p = plans_[q];
    for (size_t wc = 0; wc < p.channels.size(); ++wc) {
      const std::vector<Step>& steps = p.channels[wc].steps;
      for (size_t ws = 0; ws < steps.size(); ++ws) {
        const Step& w = steps[ws];
        if (writesDst(w.op) && !skipsCopy(q, w) &&
            owner.cellOf[static_cast<int>(w.dst.buffer)][w.dst.chunk] == cell) {
          return unordered(static_cast<int>(wc), static_cast<int32_t>(ws));
        }
      }
    }
    return Status::failure(ErrorCode::kInvalidArgument,
                           fmt::format("{} reads rank {}'s undefined {}: no step of rank {} "
                                       "writes it",
                                       where(r, c, s, tile), q, chunkName(ref), q));
  }
  // Record it for (b); a channel's later read is ordered after its earlier ones, so its
  // latest read is the one a write must follow.
  auto mine = std::find_if(access.remoteReads.begin(), access.remoteReads.end(),
                           [me](const RemoteRead& read) { return read.channel == me; });
  if (mine == access.remoteReads.end()) {
    access.remoteReads.push_back({me, clocks_[me][me], static_cast<int32_t>(s)});
  } else {
    mine->clock = clocks_[me][me];
    mine->step = static_cast<int32_t>(s);
  }
  *value = owner.values[at];
  return Status();
}

Status Replay::checkRemoteReaders(int r, int c, uint32_t s, uint32_t tile, const ChunkRef& ref,
                                  const Access& access) const {
  const int me = state_[r].firstChannel + c;
  for (const RemoteRead& read : access.remoteReads) {
    if (clocks_[me][read.channel] >= read.clock) continue;
    const auto [readerRank, readerChannel] = channelOwner_[read.channel];
    return Status::failure(
        ErrorCode::kInvalidArgument,
        fmt::format("{} writes {} while {} may still read it: nothing orders that read before "
                    "this write (add a signal/wait)",
                    where(r, c, s, tile), chunkName(ref),
                    where(readerRank, readerChannel, static_cast<uint32_t>(read.step), tile)));
  }
  return Status();
}

}  // namespace grove::plan::verifier_model
