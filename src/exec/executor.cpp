#include "exec/executor.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "exec/link_codec.hpp"
#include "exec/message_tag.hpp"
#include "exec/reduce.hpp"
#include "fmt/format.h"

namespace grove::exec {

using plan::OpKind;

BoundPlan BoundPlan::bind(plan::Plan plan, transport::Transport& transport) {
  BoundPlan bound;
  bound.plan = std::move(plan);
  bound.rebind(transport);
  return bound;
}

void BoundPlan::rebind(transport::Transport& via) {
  oneSided = plan.oneSided;
  transport = &via;
  const auto n = static_cast<size_t>(plan.nranks);
  peerSend.assign(oneSided ? n : 0, nullptr);
  peerRecv.assign(oneSided ? n : 0, nullptr);
  peerReads.assign(oneSided ? n : 0, 0);
  readsOfPeers = 0;
  if (oneSided) {
    for (int q = 0; q < plan.nranks; ++q) {
      if (q == plan.rank) continue;
      peerSend[static_cast<size_t>(q)] = &via.sendFifo(q, 0);
      peerRecv[static_cast<size_t>(q)] = &via.recvFifo(q, 0);
    }
    for (const plan::Channel& channel : plan.channels) {
      for (const plan::Step& step : channel.steps) {
        const auto kind = static_cast<uint8_t>(1u << static_cast<unsigned>(step.src.buffer));
        for (int q = 0; q < plan.nranks; ++q) {
          const bool read = q != plan.rank && (plan::readsEveryRank(step.op) ||
                                               (plan::readsPeer(step.op) && step.recvPeer == q));
          if (read) peerReads[static_cast<size_t>(q)] |= kind;
        }
        if (plan::oneSided(step.op)) readsOfPeers |= kind;
      }
    }
  }
  channels.resize(plan.channels.size());
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    channels[c].clear();
    for (const plan::Step& step : plan.channels[c].steps) {
      BoundStep resolved{step};
      if (plan::receives(step.op)) resolved.recv = &via.recvFifo(step.recvPeer, step.lane);
      if (plan::sends(step.op)) resolved.send = &via.sendFifo(step.sendPeer, step.lane);
      channels[c].push_back(resolved);
    }
  }
}

void Execution::start(const BoundPlan& plan, const CallBuffers& buffers) {
  plan_ = &plan;
  buffers_ = &buffers;
  elementBytes_ = dataTypeSize(buffers.type);
  error_.clear();
  errorCode_ = ErrorCode::kInvalidUsage;
  tagged_ = buffers.tag.call != 0 || buffers.chunkTags != nullptr;
  finished_ = false;
  isOneSided_ = plan.oneSided;
  stage_ = isOneSided_ ? Stage::kPrologue : Stage::kSteps;
  if (isOneSided_) oneSided_.start(plan, buffers);
  cursors_.assign(plan.channels.size(), Cursor{});
  remainingChannels_ = 0;
  const auto chunkLength = [this](const BoundStep& bound) { return messageLength(bound.step); };
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    cursors_[c].tiles = plan::channelTiles(plan.channels[c], chunkLength, buffers.tileElems);
    if (!cursors_[c].done()) ++remainingChannels_;
  }
}

size_t Execution::messageLength(const plan::Step& step) const {
  const plan::ChunkRef& ref = plan::messageChunk(step);
  const BufferView& view = ref.buffer == plan::BufferKind::kInput    ? buffers_->input
                           : ref.buffer == plan::BufferKind::kOutput ? buffers_->output
                                                                     : buffers_->scratch;
  return view.chunk(ref.chunk).length;
}

size_t Execution::offsetOf(const plan::ChunkRef& ref, uint64_t tile) const {
  const BufferView& view = ref.buffer == plan::BufferKind::kInput    ? buffers_->input
                           : ref.buffer == plan::BufferKind::kOutput ? buffers_->output
                                                                     : buffers_->scratch;
  const Extent extent = view.chunk(ref.chunk);
  return (extent.offset + plan::tileSpan(extent.length, tile, buffers_->tileElems).begin) *
         elementBytes_;
}

char* Execution::address(const plan::ChunkRef& ref, uint64_t tile, size_t* elements) const {
  const BufferView& view = ref.buffer == plan::BufferKind::kInput    ? buffers_->input
                           : ref.buffer == plan::BufferKind::kOutput ? buffers_->output
                                                                     : buffers_->scratch;
  const Extent extent = view.chunk(ref.chunk);
  const plan::TileSpan span = plan::tileSpan(extent.length, tile, buffers_->tileElems);
  *elements = span.length;
  if (view.base == nullptr) return nullptr;
  return view.base + (extent.offset + span.begin) * elementBytes_;
}

Execution::StepResult Execution::fire(const BoundStep& bound, uint64_t tile) {
  const plan::Step& step = bound.step;
  if (!plan::exchangesOn(messageLength(step), tile, buffers_->tileElems)) return StepResult::kFired;

  size_t srcElems = 0;
  size_t dstElems = 0;
  char* src = plan::readsSrc(step.op) ? address(step.src, tile, &srcElems) : nullptr;
  char* dst = plan::writesDst(step.op) ? address(step.dst, tile, &dstElems) : nullptr;
  // The message carries the tile of the chunk that sets the step's message count.
  size_t elements = &plan::messageChunk(step) == &step.src ? srcElems : dstElems;
  if (plan::readsSrc(step.op) && plan::writesDst(step.op) && srcElems != dstElems) {
    error_ = fmt::format("plan step {} reads {} elements but writes {}", plan::toString(step.op),
                         srcElems, dstElems);
    return StepResult::kFailed;
  }
  // Signal and wait name a chunk without touching it; get reads its src from a peer.
  const bool localSrc =
      plan::readsSrc(step.op) && !plan::signals(step.op) && !plan::readsPeer(step.op);
  if (elements > 0 &&
      ((localSrc && src == nullptr) || (plan::writesDst(step.op) && dst == nullptr))) {
    error_ = fmt::format("plan step {} touches a buffer this rank did not provide",
                         plan::toString(step.op));
    return StepResult::kFailed;
  }
  if (plan::oneSided(step.op)) return fireOneSided(step, tile, src, dst, elements);
  size_t bytes = plan::signals(step.op) ? 0 : elements * elementBytes_;

  const transport::MessageTag& mine = buffers_->chunkTags != nullptr
                                          ? buffers_->chunkTags[plan::messageChunk(step).chunk]
                                          : buffers_->tag;
  const void* in = nullptr;
  size_t inBytes = 0;
  bool inCompressed = false;  // `in` is a codec frame (MessageTag::kCompressed)
  if (plan::receives(step.op)) {
    const transport::MessageTag* tag = nullptr;
    in = bound.recv->tryPeek(&inBytes, &tag);
    if (in == nullptr) return StepResult::kBlocked;
    if (tagged_ || tag->flags != 0) {
      if (Status received =
              checkReceived(mine, *tag, in, inBytes, step.recvPeer, step.lane, tagged_);
          !received.ok()) {
        error_ = received.message();
        errorCode_ = received.code();
        return StepResult::kFailed;
      }
    }
    inCompressed = (tag->flags & transport::MessageTag::kCompressed) != 0;
    if (!inCompressed && inBytes != bytes) {
      error_ = fmt::format(
          "message size mismatch from rank {}: received {} bytes, expected {} (do all ranks "
          "pass the same count and type?)",
          step.recvPeer, inBytes, bytes);
      return StepResult::kFailed;
    }
  }
  void* out = nullptr;
  if (plan::sends(step.op)) {
    out = bound.send->tryAcquire();
    if (out == nullptr) return StepResult::kBlocked;
  }

  const DataType type = buffers_->type;
  const ReduceOp op = buffers_->op;
  LinkCodec* codec = buffers_->codec;
  const void* frame = in;  // a compressed message as it arrived, for passing it on
  const size_t frameBytes = inBytes;
  if (inCompressed) {
    // Decoded where the step wants the values: a plain receive into its destination, a
    // reducing one into staging that then stands for the incoming message. (A rank without
    // a codec has no network peer, and only network peers compress.)
    const bool intoDst = step.op == OpKind::kRecv || step.op == OpKind::kRecvCopySend;
    void* target = codec == nullptr ? nullptr : intoDst ? dst : codec->decodedStaging();
    Status decoded = codec == nullptr
                         ? Status::failure(ErrorCode::kSystemError, "this rank has no codec")
                         : codec->decode(in, inBytes, target, elements, type);
    if (!decoded.ok()) {
      error_ = fmt::format(
          "compressed message from rank {} (lane {}, {} bytes) does not decode to {} {} "
          "values: {}",
          step.recvPeer, step.lane, inBytes, elements, toString(type), decoded.message());
      errorCode_ = ErrorCode::kSystemError;
      return StepResult::kFailed;
    }
    in = target;
  }
  // Whether this message leaves compressed: asked once per message (the codec counts).
  const bool encodeOut = out != nullptr && bytes > 0 && codec != nullptr &&
                         !(inCompressed && step.op == OpKind::kRecvCopySend) &&
                         codec->shouldCompress(step.sendPeer, type, bytes);
  size_t outBytes = bytes;
  bool outCompressed = false;
  // Sends `values` (the message's raw bytes) compressed when that pays, else raw.
  auto emit = [&](const void* values) {
    if (encodeOut) {
      if (size_t size = codec->encode(step.sendPeer, values, elements, type, out, bytes)) {
        outBytes = size;
        outCompressed = true;
        return;
      }
    }
    if (bytes && values != out) memcpy(out, values, bytes);
  };
  auto combine = [&](void* to, const void* a, const void* b) {
    if (step.finalize) {
      reduceFinalize(to, a, b, elements, type, op, buffers_->nranks);
    } else {
      reduce(to, a, b, elements, type, op);
    }
  };
  switch (step.op) {
    case OpKind::kSend:
      emit(src);
      break;
    case OpKind::kRecv:
      if (bytes && !inCompressed) memcpy(dst, in, bytes);
      break;
    case OpKind::kRecvReduce:
      combine(dst, dst, in);
      break;
    case OpKind::kCopy:
      if (bytes && dst != src) memmove(dst, src, bytes);
      if (step.finalize) finalize(dst, elements, type, op, buffers_->nranks);
      break;
    case OpKind::kReduce:
      combine(dst, dst, src);
      break;
    case OpKind::kRecvReduceSend:
      if (encodeOut) {
        combine(codec->combinedStaging(), src, in);
        emit(codec->combinedStaging());
      } else {
        combine(out, src, in);
      }
      break;
    case OpKind::kRecvCopySend:
      if (bytes && !inCompressed) memcpy(dst, in, bytes);
      if (inCompressed && codec->compressesTo(step.sendPeer)) {
        // Passed on as it came (UCCL-Zip's idea): no second encoding on the way.
        memcpy(out, frame, frameBytes);
        outBytes = frameBytes;
        outCompressed = true;
        codec->countForwarded();
      } else {
        emit(dst);
      }
      break;
    case OpKind::kRecvReduceCopy:
      combine(dst, src, in);
      break;
    case OpKind::kRecvReduceCopySend:
      combine(dst, src, in);
      emit(dst);
      break;
    case OpKind::kSignal:  // The empty message is all.
    case OpKind::kWait:
      break;
    case OpKind::kGet:  // fireOneSided
    case OpKind::kReduceAll:
      break;
  }
  if (plan::receives(step.op)) bound.recv->release();
  if (out != nullptr) {
    if (buffers_->faultDelay.count() > 0) std::this_thread::sleep_for(buffers_->faultDelay);
    transport::MessageTag sent = mine;
    if (outCompressed) sent.flags |= transport::MessageTag::kCompressed;
    bound.send->commit(outBytes, stamped(sent, buffers_->checksum, out, outBytes));
  }
  return StepResult::kFired;
}

Execution::StepResult Execution::fireOneSided(const plan::Step& step, uint64_t tile,
                                              const char* src, char* dst, size_t elements) {
  const size_t offset = offsetOf(step.src, tile);
  bool read = true;
  if (step.op == OpKind::kGet) {
    read = oneSided_.get(step.recvPeer, step.src.buffer, offset, elements * elementBytes_, dst);
  } else {
    read = oneSided_.reduceAll(step.src.buffer, offset, elements, src, dst, step.finalize);
  }
  return read ? StepResult::kFired : StepResult::kUnreadable;
}

Progress Execution::advance() {
  if (finished_) return Progress::kDone;
  if (stage_ == Stage::kPrologue) {
    const Progress prologue = oneSided_.prologue();
    if (prologue == Progress::kFailed) {
      error_ = oneSided_.error();
      errorCode_ = oneSided_.errorCode();
      return Progress::kFailed;
    }
    if (prologue != Progress::kDone) return prologue;
    if (oneSided_.declined()) {
      finished_ = true;
      return Progress::kDone;
    }
    stage_ = Stage::kSteps;
  }
  Progress progress = Progress::kDone;
  if (stage_ == Stage::kSteps) {
    progress = advanceSteps();
    if (progress != Progress::kDone) return progress;
    if (isOneSided_) stage_ = Stage::kEpilogue;
  }
  if (stage_ == Stage::kEpilogue) {
    progress = oneSided_.epilogue();
    if (progress == Progress::kFailed) {
      error_ = oneSided_.error();
      errorCode_ = oneSided_.errorCode();
    }
    if (progress != Progress::kDone) return progress;
  }
  finished_ = true;
  return Progress::kDone;
}

Progress Execution::advanceSteps() {
  if (remainingChannels_ == 0) return Progress::kDone;
  bool moved = false;
  const auto cursorOf = [this](int32_t channel) -> const plan::ChannelCursor& {
    return cursors_[static_cast<size_t>(channel)];
  };
  for (size_t c = 0; c < cursors_.size(); ++c) {
    Cursor& cursor = cursors_[c];
    const std::vector<BoundStep>& steps = plan_->channels[c];
    while (!cursor.done()) {
      const BoundStep& bound = steps[cursor.step];
      if (buffers_->trace != nullptr) {
        cursor.attemptNs = traceNowNs();
        if (cursor.readyNs == 0) cursor.readyNs = cursor.attemptNs;
      }
      if (!plan::dependencyMet(bound.step, cursor.tile, cursorOf)) break;
      StepResult result = fire(bound, cursor.tile);
      if (result == StepResult::kUnreadable) {
        if (oneSided_.unreadable() == Progress::kBlocked) {
          unreadable_ = true;
          break;
        }
        error_ = oneSided_.error();
        errorCode_ = oneSided_.errorCode();
        result = StepResult::kFailed;
      }
      unreadable_ = false;
      if (result == StepResult::kBlocked) break;
      if (buffers_->trace != nullptr && result == StepResult::kFired) {
        traceFired(c, cursor, bound.step);
      }
      if (result == StepResult::kFailed) {
        error_ = fmt::format("channel {} step {} tile {}: {}", c, cursor.step, cursor.tile, error_);
        return Progress::kFailed;
      }
      moved = true;
      if (cursor.next(steps.size())) --remainingChannels_;
    }
  }
  if (remainingChannels_ == 0) return Progress::kDone;
  return moved ? Progress::kMoved : Progress::kBlocked;
}

void Execution::traceFired(size_t channel, Cursor& cursor, const plan::Step& step) {
  const size_t length = messageLength(step);
  if (plan::exchangesOn(length, cursor.tile, buffers_->tileElems)) {
    StepRecord record;
    record.endNs = traceNowNs();
    record.readyNs = cursor.readyNs;
    record.attemptNs = cursor.attemptNs;
    record.sequence = buffers_->sequence;
    record.tile = cursor.tile;
    record.bytes = plan::tileSpan(length, cursor.tile, buffers_->tileElems).length * elementBytes_;
    record.channel = static_cast<int32_t>(channel);
    record.step = static_cast<int32_t>(cursor.step);
    record.recvPeer = plan::receives(step.op) ? step.recvPeer : -1;
    record.sendPeer = plan::sends(step.op) ? step.sendPeer : -1;
    record.op = static_cast<uint8_t>(step.op);
    buffers_->trace->addStep(record);
  }
  // The next step of this channel is current from now on.
  cursor.readyNs = 0;
}

WaitPoint Execution::waitPoint() const {
  if (isOneSided_ && (stage_ != Stage::kSteps || unreadable_)) {
    WaitPoint point;
    point.peer = oneSided_.waitingFor();
    point.what = oneSided_.waitingForWhat();
    return point;
  }
  for (size_t c = 0; c < cursors_.size(); ++c) {
    const Cursor& cursor = cursors_[c];
    if (cursor.done()) continue;
    const plan::Step& step = plan_->channels[c][cursor.step].step;
    WaitPoint point{static_cast<int>(c), static_cast<int>(cursor.step), cursor.tile, -1, false};
    if (plan::receives(step.op)) {
      point.peer = step.recvPeer;
    } else if (plan::sends(step.op)) {
      point.peer = step.sendPeer;
      point.sending = true;
    }
    return point;
  }
  return {};
}

}  // namespace grove::exec
