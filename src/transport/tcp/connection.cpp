// The per-connection state machine of the TCP transport (see connection.hpp).
#include "transport/tcp/connection.hpp"

#include <fmt/format.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace grove::transport::tcp {
namespace {

/// Bytes one pump moves before it lets the other connections have a turn.
constexpr size_t kPumpBudget = 4 << 20;
constexpr size_t kDiscardChunk = 64 << 10;
/// Bytes each read takes ahead of the frame part it asked for (Connection::rxStage_).
constexpr size_t kStageBytes = 4 << 10;

}  // namespace

Connection::Connection(net::UniqueFd socket, int peer, int stream, int streams, Direction direction,
                       size_t slotBytes, LaneLookup lookup, int ranks, uint64_t corruptFrame,
                       int rails)
    : socket_(std::move(socket)),
      peer_(peer),
      stream_(stream),
      streams_(streams),
      direction_(direction),
      slotBytes_(slotBytes),
      lookup_(std::move(lookup)),
      ranks_(ranks),
      corruptFrame_(corruptFrame),
      acceptsData_(direction == Direction::kIncoming),
      rails_(rails) {}

void Connection::addSendLane(Fifo* fifo, uint16_t lane) { lanes_.push_back(SendLane{fifo, lane}); }

void Connection::sendControl(FrameKind kind, std::string payload) {
  if (sealed_ || controlQueued_) return;
  controlQueued_ = true;
  control_ = kind;
  controlPayload_ = std::move(payload);
}

void Connection::sendHeartbeat() {
  if (sealed_ || controlQueued_ || byeReceived_ || state_ != State::kOpen) return;
  heartbeatQueued_ = true;
}

bool Connection::hasUnsentData() {
  if (txActive_ && txFifo_ != nullptr) return true;
  size_t bytes = 0;
  return std::any_of(lanes_.begin(), lanes_.end(),
                     [&](const SendLane& lane) { return lane.fifo->tryPeek(&bytes) != nullptr; });
}

void Connection::fail(State state, std::string error) {
  if (state_ != State::kOpen) return;
  state_ = state;
  error_ = std::move(error);
}

bool Connection::startNextFrame(size_t maxFrameBytes) {
  FrameHeader header;
  if (controlQueued_) {
    controlQueued_ = false;
    header.kind = static_cast<uint16_t>(control_);
    header.bytes = controlPayload_.size();
    txFifo_ = nullptr;
    txPayload_ = controlPayload_.data();
    txBytes_ = controlPayload_.size();
    txPrimaryBytes_ = txBytes_;
  } else if (heartbeatQueued_) {
    heartbeatQueued_ = false;
    header.kind = static_cast<uint16_t>(FrameKind::kHeartbeat);
    txFifo_ = nullptr;
    txPayload_ = nullptr;
    txBytes_ = 0;
    txPrimaryBytes_ = 0;
    txHeartbeat_ = true;
  } else {
    size_t count = lanes_.size();
    size_t bytes = 0;
    const void* slot = nullptr;
    const MessageTag* tag = nullptr;
    size_t index = 0;
    for (size_t i = 0; i < count && slot == nullptr; ++i) {
      index = (nextLane_ + i) % count;
      slot = lanes_[index].fifo->tryPeek(&bytes, &tag);
    }
    if (slot == nullptr) return false;
    if (bytes > maxFrameBytes) {
      leftBulk_ = true;
      return false;
    }
    nextLane_ = (index + 1) % count;
    header.kind = static_cast<uint16_t>(FrameKind::kData);
    header.lane = lanes_[index].lane;
    header.bytes = bytes;
    header.tag = *tag;
    txFifo_ = lanes_[index].fifo;
    txPayload_ = static_cast<const char*>(slot);
    txBytes_ = bytes;
    txPrimaryBytes_ = rails_.planSend(txPayload_, bytes, header.railBytes, socket_.get());
  }
  header.encode(txHeader_);
  txDone_ = 0;
  txActive_ = true;
  return true;
}

void Connection::sampleDrain() {
  const Clock::time_point now = Clock::now();
  if (!drain_.due(txBytes_, now)) return;
  double rate = 0;
  bool appLimited = true;
  if (readDeliveryRate(socket_.get(), rate, appLimited)) drain_.onSample(rate, appLimited, now);
}

void Connection::finishFrame() {
  txActive_ = false;
  if (txFifo_ != nullptr) {
    txFifo_->release();
    txFifo_ = nullptr;
  } else if (txHeartbeat_) {
    txHeartbeat_ = false;
  } else {
    sealed_ = true;
  }
}

void Connection::finishWriting() {
  if (halfClosed_ || !sealed_ || state_ != State::kOpen) return;
  halfClosed_ = true;
  ::shutdown(socket_.get(), SHUT_WR);
  rails_.shutdownWrites();
}

size_t Connection::unacknowledgedBytes() const {
  int bytes = 0;
  if (::ioctl(socket_.get(), SIOCOUTQ, &bytes) != 0) bytes = 0;
  return static_cast<size_t>(std::max(bytes, 0)) + rails_.unacknowledgedBytes();
}

void Connection::failSending() {
  // Data for a peer that reset the connection cannot arrive. A peer that failed sent an
  // abort frame (with the failure's origin and cause) before closing: read what it sent
  // first, so that the reason wins over the pipe.
  readable_ = true;
  pumpRead();
  fail(State::kBroken, sendError_);
}

void Connection::onSendError(const std::string& why) {
  sendError_ = fmt::format("sending to rank {} failed: {}", peer_, why);
  // Only a heartbeat lost: a peer that left after its last message resets a connection it
  // had unread heartbeats on; its data and bye are still readable.
  if (hasUnsentData()) {
    failSending();
  } else {
    readable_ = true;
  }
}

bool Connection::pumpWrite(size_t maxFrameBytes) {
  leftBulk_ = false;
  if (!sendError_.empty()) {
    if (state_ == State::kOpen && hasUnsentData()) failSending();
    return false;
  }
  bool progress = false;
  size_t budget = kPumpBudget;
  while (state_ == State::kOpen && !sealed_ && sendError_.empty() && budget > 0) {
    if (txActive_ && txBytes_ > maxFrameBytes) {
      leftBulk_ = true;
      break;
    }
    // Data frames stop as soon as a control frame is queued (after the one in flight).
    if (!txActive_ && (!writable_ || !startNextFrame(maxFrameBytes))) break;
    std::string railError;
    size_t moved = rails_.pumpWrites(&railError);
    if (!railError.empty()) {
      onSendError(railError);
      continue;
    }
    const size_t primaryEnd = FrameHeader::kBytes + txPrimaryBytes_;
    if (txDone_ < primaryEnd && writable_) {
      iovec parts[2];
      int count = 0;
      if (txDone_ < FrameHeader::kBytes) {
        parts[count++] = {txHeader_ + txDone_, FrameHeader::kBytes - txDone_};
        if (txPrimaryBytes_ > 0) parts[count++] = {const_cast<char*>(txPayload_), txPrimaryBytes_};
      } else {
        size_t payloadDone = txDone_ - FrameHeader::kBytes;
        parts[count++] = {const_cast<char*>(txPayload_) + payloadDone,
                          txPrimaryBytes_ - payloadDone};
      }
      msghdr message{};
      message.msg_iov = parts;
      message.msg_iovlen = static_cast<size_t>(count);
      ssize_t sent = ::sendmsg(socket_.get(), &message, MSG_NOSIGNAL);
      const bool striped = txPrimaryBytes_ < txBytes_;
      if (sent < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          writable_ = false;
          if (striped) rails_.primaryBlocked();
        } else if (errno != EINTR) {
          onSendError(std::strerror(errno));
          continue;
        }
      } else {
        // A short write filled the socket's buffer: wait for EPOLLOUT rather than try again.
        size_t offered = 0;
        for (int i = 0; i < count; ++i) offered += parts[i].iov_len;
        if (static_cast<size_t>(sent) < offered) {
          writable_ = false;
          if (striped) rails_.primaryBlocked();
        }
        txDone_ += static_cast<size_t>(sent);
        moved += static_cast<size_t>(sent);
        if (txDone_ == primaryEnd && striped) rails_.primaryDone();
      }
    }
    if (moved > 0) {
      progress = true;
      lastSend_ = Clock::now();
      budget -= std::min(budget, moved);
    }
    if (txDone_ == primaryEnd && rails_.writesDone()) {
      sampleDrain();
      finishFrame();
    } else if (moved == 0) {
      break;  // waiting for the primary's or a rail's buffer to drain
    }
  }
  return progress;
}

bool Connection::onHeader() {
  rx_ = FrameHeader::decode(rxHeader_);
  rxHeaderDone_ = 0;
  FrameRules rules{acceptsData_ && !byeReceived_, slotBytes_, streams_, stream_, rails_.limit()};
  FrameCheck check = checkFrameHeader(rx_, rules);
  if (check != FrameCheck::kOk) {
    fail(State::kBroken, describeFrameProblem(check, rx_, rules, peer_));
    return false;
  }
  switch (static_cast<FrameKind>(rx_.kind)) {
    case FrameKind::kData:
      if (rx_.lane >= rxLanes_.size()) rxLanes_.resize(rx_.lane + 1u, nullptr);
      if (rxLanes_[rx_.lane] == nullptr) rxLanes_[rx_.lane] = lookup_(rx_.lane);
      rxFifo_ = rxLanes_[rx_.lane];
      rxPrimaryBytes_ = rx_.bytes - rx_.railTotal();
      if (!rails_.planReceive(rx_.railBytes, rxPrimaryBytes_)) {
        fail(State::kBroken,
             fmt::format("rank {} sent a frame with a piece for a rail it closed", peer_));
        return false;
      }
      rxState_ = ReadState::kSlot;
      return true;
    case FrameKind::kAbort:  // the notice (8.. bytes, checked) follows
      rxNotice_ = true;
      rxSlot_ = reinterpret_cast<char*>(rxNoticeBytes_);
      rxPrimaryBytes_ = rx_.bytes;
      rxDone_ = 0;
      rxState_ = ReadState::kPayload;
      return true;
    case FrameKind::kBye:
      byeReceived_ = true;
      return true;
    case FrameKind::kHeartbeat:
      return true;
  }
  return false;  // checkFrameHeader accepts no other kind.
}

void Connection::onAbortNotice() {
  rxNotice_ = false;
  AbortNotice notice;
  if (!AbortNotice::decode(rxNoticeBytes_, rx_.bytes, ranks_ > 0 ? ranks_ : 1 << 30, &notice)) {
    uint32_t origin = 0;
    uint32_t flags = 0;
    std::memcpy(&origin, rxNoticeBytes_, 4);
    std::memcpy(&flags, rxNoticeBytes_ + 4, 4);
    fail(State::kBroken, fmt::format("rank {} sent an abort notice naming rank {} with flags {:#x} "
                                     "(expected a rank below {} and flags 0 or {:#x})",
                                     peer_, origin, flags, ranks_, kAbortUsageError));
    return;
  }
  if (ranks_ <= 0) notice.origin = static_cast<uint32_t>(peer_);
  notice_ = std::move(notice);
  fail(State::kAborted, notice_.origin == static_cast<uint32_t>(peer_)
                            ? fmt::format("rank {} aborted: {}", peer_, notice_.cause)
                            : fmt::format("rank {} aborted because rank {} failed: {}", peer_,
                                          notice_.origin, notice_.cause));
}

void Connection::endOfStream(std::string unexpected) {
  // After a bye, between frames, the end is clean even when it is a reset: the peer left
  // after everything it sent had been read.
  if (byeReceived_ && rxState_ == ReadState::kHeader && rxHeaderDone_ == 0) {
    fail(State::kClosed, fmt::format("rank {} closed the connection", peer_));
  } else {
    fail(State::kBroken, sendError_.empty() ? std::move(unexpected) : sendError_);
  }
}

bool Connection::pumpRead(size_t maxFrameBytes) {
  bool progress = false;
  size_t budget = kPumpBudget;
  while (state_ == State::kOpen && budget > 0) {
    if (rxState_ != ReadState::kHeader && !rxNotice_ && rx_.bytes > maxFrameBytes) {
      leftBulk_ = true;
      return progress;
    }
    if (rxState_ == ReadState::kSlot) {
      rxSlot_ = nullptr;
      if (!discard_) {
        rxSlot_ = static_cast<char*>(rxFifo_->tryAcquire());
        if (rxSlot_ == nullptr) return progress;  // resumed when the rank releases a slot
      } else if (discardBuffer_.empty()) {
        discardBuffer_.resize(kDiscardChunk);
      }
      rxDone_ = 0;
      rxState_ = ReadState::kPayload;
    }
    if (rxState_ == ReadState::kPayload && !rxNotice_) {
      // The rails' pieces of this frame, straight into the slot.
      std::string railError;
      size_t moved =
          rails_.pumpReads(rxSlot_, discardBuffer_.data(), discardBuffer_.size(), &railError);
      if (moved > 0) {
        progress = true;
        lastReceive_ = Clock::now();
        budget -= std::min(budget, moved);
      }
      if (!railError.empty()) {
        fail(State::kBroken, fmt::format("receiving from rank {} failed: {}", peer_, railError));
        continue;
      }
    }
    if (rxState_ == ReadState::kPayload && rxDone_ == rxPrimaryBytes_) {
      if (!rails_.readsDone()) return progress;  // resumed when a rail becomes readable
      if (rxNotice_) {
        onAbortNotice();
        return true;
      }
      if (rxSlot_ != nullptr) {
        if (corruptFrame_ > 0 && rx_.bytes > 0 && ++dataFramesRead_ == corruptFrame_) {
          rxSlot_[rx_.bytes / 2] ^= 0x10;  // GROVE_FAULT_CORRUPT_FRAME: the wire flips a bit
        }
        rxFifo_->commit(rx_.bytes, rx_.tag);
      }
      rxState_ = ReadState::kHeader;
      progress = true;
      continue;
    }
    if (rxState_ == ReadState::kHeader && rxHeaderDone_ == FrameHeader::kBytes) {
      if (!onHeader()) return progress;
      continue;
    }
    // Bytes an earlier read took ahead come first.
    if (stageBegin_ < stageEnd_) {
      size_t staged = stageEnd_ - stageBegin_;
      const char* from = rxStage_.data() + stageBegin_;
      size_t taken = 0;
      if (rxState_ == ReadState::kHeader) {
        taken = std::min(staged, FrameHeader::kBytes - rxHeaderDone_);
        std::memcpy(rxHeader_ + rxHeaderDone_, from, taken);
        rxHeaderDone_ += taken;
      } else {
        taken = std::min(staged, rxPrimaryBytes_ - rxDone_);
        if (rxSlot_ != nullptr) std::memcpy(rxSlot_ + rxDone_, from, taken);
        rxDone_ += taken;
      }
      stageBegin_ += taken;
      progress = true;
      continue;
    }
    if (!readable_) return progress;

    // Read the rest of the header or of the payload, and ahead into the stage: a small
    // frame's header and payload (and the frames after it) then take one readv.
    if (rxStage_.empty()) rxStage_.resize(kStageBytes);
    iovec parts[2];
    int count = 0;
    size_t wanted = 0;
    if (rxState_ == ReadState::kHeader) {
      wanted = FrameHeader::kBytes - rxHeaderDone_;
      parts[count++] = {rxHeader_ + rxHeaderDone_, wanted};
    } else {
      size_t rest = rxPrimaryBytes_ - rxDone_;
      if (rxSlot_ != nullptr) {
        wanted = rest;
        parts[count++] = {rxSlot_ + rxDone_, rest};
      } else {
        if (discardBuffer_.empty()) discardBuffer_.resize(kDiscardChunk);
        wanted = std::min(rest, kDiscardChunk);
        parts[count++] = {discardBuffer_.data(), wanted};
      }
    }
    if (rxState_ == ReadState::kHeader || wanted == rxPrimaryBytes_ - rxDone_) {
      parts[count++] = {rxStage_.data(), rxStage_.size()};
    }
    ssize_t got = ::readv(socket_.get(), parts, count);
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        readable_ = false;
      } else if (errno != EINTR) {
        endOfStream(fmt::format("receiving from rank {} failed: {}", peer_, std::strerror(errno)));
      }
      continue;
    }
    if (got == 0) {
      endOfStream(fmt::format("connection to rank {} closed unexpectedly", peer_));
      continue;
    }
    progress = true;
    lastReceive_ = Clock::now();
    size_t bytes = static_cast<size_t>(got);
    budget -= std::min(budget, bytes);
    // A short read emptied the socket: the next byte to arrive is a new edge, so skip the
    // read that would only say EAGAIN (a syscall per message on the latency path). Not once
    // the peer's end closed: its EOF, already reported, raises no new edge.
    size_t offered = 0;
    for (int i = 0; i < count; ++i) offered += parts[i].iov_len;
    if (bytes < offered && !hangup_) readable_ = false;
    size_t direct = std::min(bytes, wanted);
    if (rxState_ == ReadState::kHeader) {
      rxHeaderDone_ += direct;
    } else {
      rxDone_ += direct;
    }
    stageBegin_ = 0;
    stageEnd_ = bytes - direct;
  }
  return progress;
}

}  // namespace grove::transport::tcp
